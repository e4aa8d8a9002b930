//! The generic executor: one thread and one connection per client, each
//! running events of a declared workload until the step's time is up.

use super::{render, Value, Workload};
use crate::db::{describe, error_kind, ConnOpts};
use crate::metrics::{self, emit, Latency, Live, Phase, Tally};
use postgres::{Client, Statement};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub struct RunOpts {
    pub tables: u32,
    pub rows: i32,
    pub clients: u32,
    pub seconds: u64,
    pub warmup: u64,
    pub prepared: bool,
    pub seed: u64,
}

#[derive(Serialize)]
struct Summary<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    workload: &'a str,
    group: &'a str,
    clients: u32,
    tables: u32,
    rows: i32,
    prepared: bool,
    seed: u64,
    warmup_seconds: u64,
    seconds: f64,
    events: u64,
    queries: u64,
    rows_returned: u64,
    qps: f64,
    tps: f64,
    warmup_events: u64,
    errors: BTreeMap<String, u64>,
    error_count: u64,
    error_samples: Vec<String>,
    latency_us: Latency,
    histogram: String,
    client_cpu_user_s: f64,
    client_cpu_sys_s: f64,
    client_cpu_us_per_query: f64,
    client_max_rss_kb: u64,
}

/// Checks that the tables the step needs exist, so a bad option fails before
/// any work starts.
pub fn check_tables(client: &mut Client, tables: u32) -> Result<(), String> {
    let have: i64 = client
        .query_one(
            "SELECT count(*) FROM pg_class WHERE relkind = 'r' AND relname = ANY($1)",
            &[&(1..=tables).map(|t| format!("sbtest{t}")).collect::<Vec<_>>()],
        )
        .map_err(|e| describe(&e))?
        .get(0);
    if have != tables as i64 {
        return Err(format!(
            "the step needs tables sbtest1..sbtest{tables} but only {have} of them exist; run the prepare step with --tables {tables}"
        ));
    }
    Ok(())
}

struct Worker {
    client: Client,
    /// Prepared statements, indexed [table - 1][statement].
    prepared: Vec<Vec<Statement>>,
    rng: SmallRng,
}

impl Worker {
    fn new(conn: &ConnOpts, w: &Workload, opts: &RunOpts, index: u32) -> Result<Self, String> {
        let mut client = conn.connect()?;
        let mut prepared = Vec::new();
        if opts.prepared {
            for t in 1..=opts.tables {
                let mut per_table = Vec::new();
                for s in w.stmts {
                    let st = client.prepare(&render(s.sql, t, None)).map_err(|e| describe(&e))?;
                    per_table.push(st);
                }
                prepared.push(per_table);
            }
        }
        // Each client gets its own stream, reproducible from the seed.
        let rng = SmallRng::seed_from_u64(opts.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(index as u64));
        Ok(Worker { client, prepared, rng })
    }

    /// Runs one event; returns the number of rows the statements returned.
    fn event(&mut self, w: &Workload, opts: &RunOpts) -> Result<u64, postgres::Error> {
        let table = self.rng.gen_range(1..=opts.tables);
        if w.explicit_trx {
            self.client.simple_query("BEGIN")?;
        }
        let mut rows = 0u64;
        let mut values: Vec<Value> = Vec::with_capacity(4);
        for (si, s) in w.stmts.iter().enumerate() {
            for _ in 0..s.repeat {
                values.clear();
                for g in s.params {
                    values.push(Value::draw(*g, &mut self.rng, opts.rows));
                }
                if opts.prepared {
                    let params: Vec<&(dyn postgres::types::ToSql + Sync)> =
                        values.iter().map(|v| v as &(dyn postgres::types::ToSql + Sync)).collect();
                    rows += self.client.query(&self.prepared[table as usize - 1][si], &params)?.len() as u64;
                } else {
                    let sql = render(s.sql, table, Some(&values));
                    for m in self.client.simple_query(&sql)? {
                        if let postgres::SimpleQueryMessage::Row(_) = m {
                            rows += 1;
                        }
                    }
                }
            }
        }
        if w.explicit_trx {
            self.client.simple_query("COMMIT")?;
        }
        Ok(rows)
    }
}

fn work(mut worker: Worker, w: &Workload, opts: &RunOpts, live: &Live, phase: &Phase) -> Tally {
    let mut tally = Tally::new();
    let qpe = w.queries_per_event();
    while !phase.stop.load(Relaxed) {
        let t0 = Instant::now();
        let result = worker.event(w, opts);
        let us = (t0.elapsed().as_micros() as u64).max(1);
        let measuring = phase.measuring.load(Relaxed);
        match result {
            Ok(rows) => {
                live.record(qpe, us);
                if measuring {
                    tally.events += 1;
                    tally.queries += qpe;
                    tally.rows += rows;
                    // Values beyond the histogram's range are clamped, never dropped.
                    tally.latency.saturating_record(us);
                } else {
                    tally.warmup_events += 1;
                }
            }
            Err(e) => {
                live.errors.fetch_add(1, Relaxed);
                if w.explicit_trx && !worker.client.is_closed() {
                    let _ = worker.client.simple_query("ROLLBACK");
                }
                if measuring {
                    tally.error(error_kind(&e), describe(&e));
                }
                if worker.client.is_closed() {
                    tally.error("connection-closed".into(), "the server closed the connection".into());
                    break;
                }
            }
        }
    }
    tally
}

pub fn run(conn: &ConnOpts, w: &'static Workload, opts: RunOpts) -> Result<(), String> {
    if opts.tables == 0 || opts.rows <= 0 || opts.clients == 0 || opts.seconds == 0 {
        return Err("tables, rows, clients and seconds must all be positive".into());
    }
    {
        let mut c = conn.connect()?;
        check_tables(&mut c, opts.tables)?;
    }
    // Connect and prepare every client before the clock starts.
    let mut workers = Vec::new();
    for i in 0..opts.clients {
        workers.push(Worker::new(conn, w, &opts, i)?);
    }
    let live: Arc<Vec<Live>> = Arc::new((0..opts.clients).map(|_| Live::default()).collect());
    let phase = Arc::new(Phase::default());
    let opts = Arc::new(opts);
    let start = Instant::now();
    let mut handles = Vec::new();
    for (i, worker) in workers.into_iter().enumerate() {
        let (live, phase, opts) = (live.clone(), phase.clone(), opts.clone());
        handles.push(std::thread::spawn(move || work(worker, w, &opts, &live[i], &phase)));
    }
    let total = Duration::from_secs(opts.warmup + opts.seconds);
    // The client's own CPU is counted from the end of warm-up, like everything else.
    let mut cpu0 = (0.0, 0.0);
    let measure_start =
        metrics::report_seconds(&live, &phase, start, Duration::from_secs(opts.warmup), Some(total), &mut || {
            cpu0 = metrics::own_cpu()
        });
    let mut tally = Tally::new();
    for h in handles {
        tally.merge(h.join().map_err(|_| "a client thread panicked".to_string())?);
    }
    let seconds = measure_start.elapsed().as_secs_f64();
    let (user, sys) = metrics::own_cpu();
    let (cu, cs) = (user - cpu0.0, sys - cpu0.1);
    let error_count = tally.errors.values().sum();
    emit(&Summary {
        kind: "summary",
        workload: w.name,
        group: w.group,
        clients: opts.clients,
        tables: opts.tables,
        rows: opts.rows,
        prepared: opts.prepared,
        seed: opts.seed,
        warmup_seconds: opts.warmup,
        seconds,
        events: tally.events,
        queries: tally.queries,
        rows_returned: tally.rows,
        qps: tally.queries as f64 / seconds,
        tps: tally.events as f64 / seconds,
        warmup_events: tally.warmup_events,
        errors: tally.errors,
        error_count,
        error_samples: tally.error_samples,
        latency_us: Latency::of(&tally.latency),
        histogram: metrics::encode_histogram(&tally.latency),
        client_cpu_user_s: cu,
        client_cpu_sys_s: cs,
        client_cpu_us_per_query: if tally.queries > 0 { (cu + cs) * 1e6 / tally.queries as f64 } else { 0.0 },
        client_max_rss_kb: metrics::own_max_rss_kb(),
    });
    Ok(())
}
