//! The generic executor: one thread and one connection per client, each
//! running events of a declared workload until the step's time is up.

use super::gen::{Domain, Value};
use super::{Pick, Shape, Workload};
use crate::db::lost::{EndedEarly, LOST};
use crate::db::{describe, error_kind, Conn, ConnOpts, DbError};
use crate::metrics::{self, emit, Latency, Live, Phase, Tally};
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
    /// sysbench's --range-size, and --random-points where the workload takes it.
    pub range: u32,
    /// The exponent of the zipfian id distribution (update-zipf).
    pub zipf_exp: f64,
}

impl RunOpts {
    /// Rejects impossible options, in one line, before anything connects.
    pub fn check(&self, w: &Workload) -> Result<(), String> {
        if self.tables == 0 || self.rows <= 0 || self.clients == 0 || self.seconds == 0 {
            return Err("tables, rows, clients and seconds must all be positive".into());
        }
        if !(self.zipf_exp.is_finite() && self.zipf_exp > 0.0) {
            return Err(format!("--zipf-exp must be a positive number, not {}", self.zipf_exp));
        }
        w.check(self.rows, self.range)
    }
}

/// The last line of a `run` step.
///
/// `seconds` is the measured time: from the end of the warm-up to the end of the step (0 when the
/// step ended during the warm-up), and `qps`/`tps` are per measured second. `ended_early` is
/// null when every connection lasted to the end; else `{"connections_lost": N, "at_s": F,
/// "reason": "..."}`: how many connections broke during the step (an I/O error, EOF or reset,
/// or a FATAL from the server, e.g. "57P01: terminating connection due to administrator
/// command"), the seconds from the start of the step, warm-up included (the origin of the
/// per-second lines' `t`), to the first loss, and that first loss's reason. A client whose
/// connection is lost stops; when all have, the step ends at once, so `seconds` is then shorter
/// than asked.
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
    range: u32,
    zipf_exp: f64,
    statements_per_event: u64,
    explicit_trx: bool,
    warmup_seconds: u64,
    seconds: f64,
    events: u64,
    queries: u64,
    rows_returned: u64,
    rows_affected: u64,
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
    /// scan only: rows per table / mean scan latency in ms (§1.7), i.e. thousands of rows per second.
    #[serde(skip_serializing_if = "Option::is_none")]
    scan_krows_per_sec: Option<f64>,
    ended_early: Option<EndedEarly>,
}

/// Checks that the tables the step needs exist, so a bad option fails before
/// any work starts.
pub fn check_tables(conn: &mut Conn, tables: u32) -> Result<(), String> {
    let names: Vec<String> = (1..=tables).map(|t| format!("'sbtest{t}'")).collect();
    let sql =
        format!("SELECT count(*) FROM pg_class WHERE relkind = 'r' AND relname = ANY(ARRAY[{}])", names.join(", "));
    let rows = conn.simple_rows(&sql).map_err(|e| describe(&e))?;
    let have: i64 = rows
        .first()
        .and_then(|r| r.first())
        .and_then(|v| v.as_deref())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("no count from: {sql}"))?;
    if have != tables as i64 {
        return Err(format!(
            "the step needs tables sbtest1..sbtest{tables} but only {have} of them exist; run the prepare step with --tables {tables}"
        ));
    }
    Ok(())
}

struct Worker {
    conn: Conn,
    /// Each statement's SQL, indexed [table - 1][statement].
    shapes: Vec<Vec<Shape>>,
    /// The prepared statements' names, same indexing; empty with --no-prepared.
    prepared: Vec<Vec<String>>,
    /// An unprepared statement's SQL, rewritten in place for each execution.
    sql: String,
    /// The table a Pick::Client statement runs on.
    own_table: u32,
    rng: SmallRng,
    /// The values of the statement being run and of the one before it.
    values: Vec<Value>,
    prev: Vec<Value>,
}

/// What one event's statements did.
#[derive(Default)]
struct Done {
    returned: u64,
    affected: u64,
}

impl Worker {
    fn new(conn: &ConnOpts, w: &Workload, opts: &RunOpts, index: u32) -> Result<Self, String> {
        let mut conn = conn.connect()?;
        let shapes: Vec<Vec<Shape>> =
            (1..=opts.tables).map(|t| w.stmts.iter().map(|s| Shape::new(s, t, opts.range)).collect()).collect();
        let mut prepared = Vec::new();
        if opts.prepared {
            // Every (table, statement) prepared once, all in one round trip.
            let mut parse = Vec::new();
            for (t, per_table) in shapes.iter().enumerate() {
                let names: Vec<String> = (0..per_table.len()).map(|si| format!("s{}_{si}", t + 1)).collect();
                parse.extend(names.iter().cloned().zip(per_table.iter().map(Shape::with_placeholders)));
                prepared.push(names);
            }
            let parse: Vec<(&str, &str)> = parse.iter().map(|(n, sql)| (n.as_str(), sql.as_str())).collect();
            conn.prepare(&parse).map_err(|e| describe(&e))?;
        }
        // Each client gets its own stream, reproducible from the seed.
        let rng = SmallRng::seed_from_u64(opts.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(index as u64));
        let own_table = index % opts.tables + 1;
        Ok(Worker {
            conn,
            shapes,
            prepared,
            sql: String::with_capacity(1024),
            own_table,
            rng,
            values: Vec::new(),
            prev: Vec::new(),
        })
    }

    /// Runs one event: every statement of the workload, in order.
    fn event(&mut self, w: &Workload, opts: &RunOpts, dom: &Domain) -> Result<Done, DbError> {
        // BEGIN and COMMIT go as simple queries, as sysbench sends them: one short message each.
        if w.explicit_trx {
            self.conn.simple("BEGIN")?;
        }
        let mut done = Done::default();
        let mut table = 0;
        for (si, s) in w.stmts.iter().enumerate() {
            table = match s.table {
                Pick::Random => self.rng.gen_range(1..=opts.tables),
                Pick::Same => table,
                Pick::Client => self.own_table,
            };
            let shape = &self.shapes[table as usize - 1][si];
            for _ in 0..s.repeat {
                std::mem::swap(&mut self.values, &mut self.prev);
                self.values.clear();
                for g in s.params {
                    g.draw(&mut self.rng, dom, &self.prev, &mut self.values);
                }
                let out = if opts.prepared {
                    self.conn.execute(&self.prepared[table as usize - 1][si], &self.values)?
                } else {
                    shape.write_literals(&self.values, &mut self.sql);
                    self.conn.simple(&self.sql)?
                };
                if shape.query {
                    done.returned += out.rows;
                } else {
                    done.affected += out.affected;
                }
            }
        }
        if w.explicit_trx {
            self.conn.simple("COMMIT")?;
        }
        Ok(done)
    }
}

fn work(mut worker: Worker, w: &Workload, opts: &RunOpts, live: &Live, phase: &Phase) -> Tally {
    let dom = Domain::new(opts.rows, opts.range, opts.zipf_exp);
    let mut tally = Tally::new();
    let qpe = w.queries_per_event();
    // One clock read per event: an event's end is the next one's start (the bookkeeping between
    // them takes tens of nanoseconds, against tens of microseconds per event).
    let mut t0 = Instant::now();
    while !phase.stop.load(Relaxed) {
        let result = worker.event(w, opts, &dom);
        let t1 = Instant::now();
        let us = (t1.duration_since(t0).as_micros() as u64).max(1);
        t0 = t1;
        let measuring = phase.measuring.load(Relaxed);
        match result {
            Ok(done) => {
                live.record(qpe, us);
                if measuring {
                    tally.events += 1;
                    tally.queries += qpe;
                    tally.rows += done.returned;
                    tally.rows_affected += done.affected;
                    // Values beyond the histogram's range are clamped, never dropped.
                    tally.latency.saturating_record(us);
                } else {
                    tally.warmup_events += 1;
                }
            }
            // One error per failed event; a failed transaction is rolled back and
            // the client goes on (deadlocks and serialization failures included,
            // which sysbench would retry silently: here they are counted).
            Err(e) => {
                live.errors.fetch_add(1, Relaxed);
                if w.explicit_trx && !worker.conn.is_closed() && worker.conn.in_transaction() {
                    let _ = worker.conn.simple("ROLLBACK");
                    // The rollback is not part of the next event.
                    t0 = Instant::now();
                }
                if measuring {
                    tally.error(error_kind(&e), describe(&e));
                }
                if worker.conn.is_closed() {
                    // The error above already counted it; a closed connection cannot run more events.
                    // (The connection recorded itself as lost; this tells the reporter a worker is gone.)
                    phase.lost.fetch_add(1, Relaxed);
                    break;
                }
            }
        }
    }
    tally
}

pub fn run(conn: &ConnOpts, w: &'static Workload, opts: RunOpts) -> Result<(), String> {
    opts.check(w)?;
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
    // Nothing was measured when the step ended in its warm-up.
    let seconds = measure_start.map_or(0.0, |m| m.elapsed().as_secs_f64());
    let (cu, cs) = match measure_start {
        Some(_) => {
            let (user, sys) = metrics::own_cpu();
            (user - cpu0.0, sys - cpu0.1)
        }
        None => (0.0, 0.0),
    };
    let per_second = |n: u64| if seconds > 0.0 { n as f64 / seconds } else { 0.0 };
    let error_count = tally.errors.values().sum();
    let ended_early = LOST.ended_early(start);
    if let Some(e) = &ended_early {
        eprintln!(
            "dbsweep-load: {} connection(s) lost, the first {:.3} s into the step: {}",
            e.connections_lost, e.at_s, e.reason
        );
    }
    emit(&Summary {
        kind: "summary",
        workload: w.name,
        group: w.group,
        clients: opts.clients,
        tables: opts.tables,
        rows: opts.rows,
        prepared: opts.prepared,
        seed: opts.seed,
        range: opts.range,
        zipf_exp: opts.zipf_exp,
        statements_per_event: w.queries_per_event(),
        explicit_trx: w.explicit_trx,
        warmup_seconds: opts.warmup,
        seconds,
        events: tally.events,
        queries: tally.queries,
        rows_returned: tally.rows,
        rows_affected: tally.rows_affected,
        qps: per_second(tally.queries),
        tps: per_second(tally.events),
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
        scan_krows_per_sec: w.is_scan().then(|| {
            let mean_ms = tally.latency.mean() / 1000.0;
            if tally.events > 0 && mean_ms > 0.0 {
                opts.rows as f64 / mean_ms
            } else {
                0.0
            }
        }),
        ended_early,
    });
    Ok(())
}
