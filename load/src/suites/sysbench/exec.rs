//! The generic executor: one thread and one connection per client, each
//! running events of a declared workload until the step's time is up.

use super::gen::{Domain, Value};
use super::{Pick, Shape, Workload};
use crate::driver::lost::{EndedEarly, LOST};
use crate::driver::{describe, error_kind, existing_tables, DbError, Dialect, Driver, LockWaits, Session};
use crate::output::emit;
use crate::output::seconds::{report_seconds, Live, Phase};
use crate::output::summary::{ClientUsage, Counts, EngineDetail, OpsName, Suite, Summary};
use crate::output::tally::Tally;
use crate::output::usage::{own_cpu, own_max_rss_kb};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
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
    /// Each client stops after this many events (warm-up ones included), or at the end of the seconds:
    /// a fixed amount of work, for counting instructions.
    pub events: Option<u64>,
    /// A run to count instructions by: no line per second (see `report_seconds`), no latencies kept
    /// (summarising a histogram costs more the wider the latencies spread, which a busy machine does).
    pub counting: bool,
}

impl RunOpts {
    /// Rejects impossible options, in one line, before anything connects.
    pub fn check(&self, w: &Workload) -> Result<(), String> {
        if self.tables == 0 || self.rows <= 0 || self.clients == 0 || self.seconds == 0 || self.events == Some(0) {
            return Err("tables, rows, clients, seconds and events must all be positive".into());
        }
        if !(self.zipf_exp.is_finite() && self.zipf_exp > 0.0) {
            return Err(format!("--zipf-exp must be a positive number, not {}", self.zipf_exp));
        }
        w.check(self.rows, self.range)
    }
}

/// The `detail` of a microbenchmark's summary (the envelope holds seconds, events, tps, latency,
/// errors, client CPU and ended_early; see `output::summary::Summary`).
///
/// `seconds` in the envelope is the measured time: from the end of the warm-up to the end of the
/// step (0 when the step ended during the warm-up), and `qps` (= the envelope's `rate`, except for
/// the scan) and `tps` are per measured second. A client whose connection is lost stops; when all
/// have, the step ends at once, so `seconds` is then shorter than asked. `lock_waits` and
/// `lock_wait_s` (see EngineDetail) count the whole step, warm-up included.
#[derive(Serialize, Debug)]
pub struct RunDetail {
    pub workload: &'static str,
    /// The report group: point, range-noagg, range-agg or write.
    pub group: &'static str,
    pub clients: u32,
    pub tables: u32,
    /// Rows per table.
    pub rows: i32,
    pub prepared: bool,
    pub seed: u64,
    pub range: u32,
    pub zipf_exp: f64,
    pub statements_per_event: u64,
    pub explicit_trx: bool,
    pub warmup_seconds: u64,
    /// Statements run in the measured time, BEGIN and COMMIT included.
    pub queries: u64,
    /// Rows the SELECTs returned.
    pub rows_returned: u64,
    /// Rows the writes inserted, updated or deleted.
    pub rows_affected: u64,
    /// Queries per measured second.
    pub qps: f64,
    /// Events completed during the warm-up (not measured).
    pub warmup_events: u64,
    /// The client's CPU (user + system) per query, µs.
    pub client_cpu_us_per_query: f64,
    /// scan only: rows per table / mean scan latency in ms (§1.7), i.e. thousands of rows per second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scan_krows_per_sec: Option<f64>,
    /// lock_waits, lock_wait_s, engine_library.
    #[serde(flatten)]
    pub engine: EngineDetail,
}

/// The summary of a microbenchmark from the merged tally: `seconds` measured, `usage` over them.
pub fn summary(
    w: &'static Workload,
    opts: &RunOpts,
    tally: &Tally,
    seconds: f64,
    usage: ClientUsage,
    ended_early: Option<EndedEarly>,
    engine: EngineDetail,
) -> Summary<RunDetail> {
    let per_second = |n: u64| if seconds > 0.0 { n as f64 / seconds } else { 0.0 };
    let qps = per_second(tally.queries);
    let tps = per_second(tally.events);
    let cpu = usage.cpu_user_s + usage.cpu_sys_s;
    let scan_krows_per_sec = w.is_scan().then(|| {
        let mean_ms = tally.latency.mean() / 1000.0;
        if tally.events > 0 && mean_ms > 0.0 {
            opts.rows as f64 / mean_ms
        } else {
            0.0
        }
    });
    // The method reports the scan as thousands of rows scanned per second, not queries per second.
    let (ops_name, rate) = match scan_krows_per_sec {
        Some(k) => (OpsName::Krows, k),
        None => (OpsName::Queries, qps),
    };
    let counts = Counts { ops_name, operations: tally.queries, events: tally.events, seconds, rate, tps };
    let detail = RunDetail {
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
        queries: tally.queries,
        rows_returned: tally.rows,
        rows_affected: tally.rows_affected,
        qps,
        warmup_events: tally.warmup_events,
        client_cpu_us_per_query: if tally.queries > 0 { cpu * 1e6 / tally.queries as f64 } else { 0.0 },
        scan_krows_per_sec,
        engine,
    };
    Summary::new(Suite::Sysbench, w.name, counts, detail)
        .latency(&tally.latency)
        .errors(tally)
        .usage(usage)
        .ended_early(ended_early)
}

/// Checks that the tables the step needs exist, so a bad option fails before
/// any work starts.
pub fn check_tables<S: Session>(conn: &mut S, dialect: &dyn Dialect, tables: u32) -> Result<(), String> {
    let have = existing_tables(conn, dialect, "sbtest")?;
    let missing = (1..=tables).filter(|t| !have.contains(&format!("sbtest{t}"))).count() as u32;
    if missing > 0 {
        return Err(format!(
            "the step needs tables sbtest1..sbtest{tables} but only {} of them exist: the load step makes them",
            tables - missing
        ));
    }
    Ok(())
}

struct Worker<S> {
    conn: S,
    /// Each statement's SQL, indexed [table - 1][statement].
    shapes: Vec<Vec<Shape>>,
    /// The prepared statements' names, same indexing; empty with --no-prepared.
    prepared: Vec<Vec<String>>,
    /// An unprepared statement's SQL, rewritten in place for each execution.
    sql: String,
    /// The table a Pick::Client statement runs on.
    own_table: u32,
    /// The workload writes: its transactions start with begin_write.
    writes: bool,
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

impl<S: Session> Worker<S> {
    fn new<D: Driver<Session = S>>(driver: &D, w: &Workload, opts: &RunOpts, index: u32) -> Result<Self, String> {
        let mut conn = driver.connect()?;
        let shapes: Vec<Vec<Shape>> =
            (1..=opts.tables).map(|t| w.stmts.iter().map(|s| Shape::new(s, t, opts.range)).collect()).collect();
        let mut prepared = Vec::new();
        if opts.prepared {
            // Every (table, statement) prepared once, all in one round trip.
            let mut parse = Vec::new();
            for (t, per_table) in shapes.iter().enumerate() {
                let names: Vec<String> = (0..per_table.len()).map(|si| format!("s{}_{si}", t + 1)).collect();
                parse
                    .extend(names.iter().cloned().zip(per_table.iter().map(|s| s.with_placeholders(driver.dialect()))));
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
            writes: w.writes(),
            rng,
            values: Vec::new(),
            prev: Vec::new(),
        })
    }

    /// Runs one event: every statement of the workload, in order.
    fn event(&mut self, w: &Workload, opts: &RunOpts, dom: &Domain) -> Result<Done, DbError> {
        // BEGIN and COMMIT go as simple queries, as sysbench sends them: one short message each.
        // A transaction that writes says so at its start (SQLite then takes the write lock at once).
        if w.explicit_trx {
            if self.writes {
                self.conn.begin_write()?;
            } else {
                self.conn.begin()?;
            }
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
            self.conn.commit()?;
        }
        Ok(done)
    }
}

/// Runs events until the step ends; returns what the client measured and its session's lock waits.
fn work<S: Session>(
    mut worker: Worker<S>,
    w: &Workload,
    opts: &RunOpts,
    live: &Live,
    phase: &Phase,
) -> (Tally, LockWaits) {
    let dom = Domain::new(opts.rows, opts.range, opts.zipf_exp);
    let mut tally = Tally::new();
    let qpe = w.queries_per_event();
    // One clock read per event: an event's end is the next one's start (the bookkeeping between
    // them takes tens of nanoseconds, against tens of microseconds per event).
    let mut t0 = Instant::now();
    let mut left = opts.events.unwrap_or(u64::MAX);
    while !phase.stop.load(Relaxed) {
        if left == 0 {
            phase.finish();
            break;
        }
        left -= 1;
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
                    if !opts.counting {
                        tally.latency.saturating_record(us);
                    }
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
                    let _ = worker.conn.rollback();
                    // The rollback is not part of the next event.
                    t0 = Instant::now();
                }
                if measuring {
                    tally.error(error_kind(&e), describe(&e));
                }
                if worker.conn.is_closed() {
                    // The error above already counted it; a closed connection cannot run more events.
                    // (The connection recorded itself as lost; this tells the reporter a worker is gone.)
                    phase.lose();
                    break;
                }
            }
        }
    }
    (tally, worker.conn.lock_waits())
}

pub fn run<D: Driver>(driver: &D, w: &'static Workload, opts: RunOpts) -> Result<(), String> {
    opts.check(w)?;
    {
        let mut c = driver.connect()?;
        check_tables(&mut c, driver.dialect(), opts.tables)?;
    }
    // Connect and prepare every client before the clock starts.
    let mut workers = Vec::new();
    for i in 0..opts.clients {
        workers.push(Worker::new(driver, w, &opts, i)?);
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
    let warmup = Duration::from_secs(opts.warmup);
    let measure_start =
        report_seconds(&live, &phase, start, warmup, Some(total), !opts.counting, &mut || cpu0 = own_cpu());
    let mut tally = Tally::new();
    let mut waits = LockWaits::default();
    for h in handles {
        let (t, lw) = h.join().map_err(|_| "a client thread panicked".to_string())?;
        tally.merge(t);
        waits.add(lw);
    }
    // Nothing was measured when the step ended in its warm-up.
    let seconds = measure_start.map_or(0.0, |m| m.elapsed().as_secs_f64());
    let (cu, cs) = match measure_start {
        Some(_) => {
            let (user, sys) = own_cpu();
            (user - cpu0.0, sys - cpu0.1)
        }
        None => (0.0, 0.0),
    };
    let ended_early = LOST.ended_early(start);
    if let Some(e) = &ended_early {
        eprintln!(
            "dbsweep-load: {} connection(s) lost, the first {:.3} s into the step: {}",
            e.connections_lost, e.at_s, e.reason
        );
    }
    let usage = ClientUsage { cpu_user_s: cu, cpu_sys_s: cs, max_rss_kb: own_max_rss_kb() };
    let engine = EngineDetail::new(driver.describe(), waits);
    emit(&summary(w, &opts, &tally, seconds, usage, ended_early, engine));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::summary::check_envelope;
    use crate::suites::sysbench::workloads::find;
    use serde_json::json;

    fn opts(rows: i32) -> RunOpts {
        RunOpts {
            tables: 2,
            rows,
            clients: 4,
            seconds: 10,
            warmup: 5,
            prepared: true,
            seed: 1,
            range: 100,
            zipf_exp: 0.8,
            events: None,
            counting: false,
        }
    }

    /// 100 events of `qpe` queries, each taking `us`, a few rows each, and one error.
    fn tally(qpe: u64, us: u64) -> Tally {
        let mut t = Tally::new();
        for _ in 0..100 {
            t.events += 1;
            t.queries += qpe;
            t.rows += 3;
            t.latency.record(us).unwrap();
        }
        t.warmup_events = 7;
        t.error("sqlstate-40001".into(), "40001: could not serialize access".into());
        t
    }

    const USAGE: ClientUsage = ClientUsage { cpu_user_s: 0.3, cpu_sys_s: 0.1, max_rss_kb: 4096 };

    #[test]
    fn a_microbenchmark_reports_queries_per_second() {
        let w = find("read-only").unwrap();
        let s = summary(w, &opts(1000), &tally(16, 2000), 10.0, USAGE, None, EngineDetail::default());
        let v = check_envelope(&s);
        assert_eq!(
            (&v["suite"], &v["step"], &v["ops_name"]),
            (&json!("sysbench"), &json!("read-only"), &json!("queries"))
        );
        assert_eq!((&v["operations"], &v["events"]), (&json!(1600), &json!(100)));
        assert_eq!((&v["seconds"], &v["rate"], &v["tps"]), (&json!(10.0), &json!(160.0), &json!(10.0)));
        assert_eq!((&v["latency_us"]["p50"], &v["error_count"]), (&json!(2000), &json!(1)));
        assert_eq!(v["errors"], json!({"sqlstate-40001": 1}));
        assert_eq!(
            (&v["client_cpu_user_s"], &v["client_max_rss_kb"], &v["ended_early"]),
            (&json!(0.3), &json!(4096), &json!(null))
        );
        let d = &v["detail"];
        assert_eq!(
            (&d["workload"], &d["group"], &d["qps"], &d["queries"]),
            (&json!("read-only"), &json!("range-agg"), &json!(160.0), &json!(1600))
        );
        assert_eq!(
            (&d["statements_per_event"], &d["explicit_trx"], &d["rows_returned"], &d["warmup_events"]),
            (&json!(16), &json!(true), &json!(300), &json!(7))
        );
        assert_eq!((&d["range"], &d["clients"], &d["warmup_seconds"]), (&json!(100), &json!(4), &json!(5)));
        assert!((d["client_cpu_us_per_query"].as_f64().unwrap() - 0.4e6 / 1600.0).abs() < 1e-9);
        // Only the scan has scan_krows_per_sec.
        assert!(d.get("scan_krows_per_sec").is_none());
        // Postgres: no lock waits in the client, no library.
        assert_eq!((&d["lock_waits"], &d["lock_wait_s"]), (&json!(0), &json!(0.0)));
        assert!(d.get("engine_library").is_none());
        let lib = json!({"path": "/x/libsqlite3.so", "version": "3.40.1", "source_id": "2022-12-28 abc"});
        let waits = LockWaits { statements: 3, seconds: 0.25 };
        let s =
            summary(w, &opts(1000), &tally(16, 2000), 10.0, USAGE, None, EngineDetail::new(Some(lib.clone()), waits));
        let d = &check_envelope(&s)["detail"];
        assert_eq!((&d["lock_waits"], &d["lock_wait_s"], &d["engine_library"]), (&json!(3), &json!(0.25), &lib));
    }

    #[test]
    fn the_scan_reports_thousands_of_rows_per_second() {
        let w = find("scan").unwrap();
        // 100 scans of 50 ms over 10000 rows: 200 Krows/s.
        let s = summary(w, &opts(10_000), &tally(1, 50_000), 5.0, USAGE, None, EngineDetail::default());
        let v = check_envelope(&s);
        assert_eq!(
            (&v["step"], &v["ops_name"], &v["operations"], &v["events"]),
            (&json!("scan"), &json!("Krows"), &json!(100), &json!(100))
        );
        let krows = v["detail"]["scan_krows_per_sec"].as_f64().unwrap();
        assert!((krows - 200.0).abs() < 1.0, "{krows}");
        assert_eq!(v["rate"].as_f64().unwrap(), krows);
        assert_eq!((&v["tps"], &v["detail"]["qps"]), (&json!(20.0), &json!(20.0)));
    }

    #[test]
    fn a_step_that_ended_in_its_warmup_measured_nothing() {
        let w = find("point-query").unwrap();
        let lost = EndedEarly { connections_lost: 4, at_s: 1.0, reason: "57P01: terminating connection".into() };
        let s =
            summary(w, &opts(1000), &Tally::new(), 0.0, ClientUsage::default(), Some(lost), EngineDetail::default());
        let v = check_envelope(&s);
        assert_eq!(
            (&v["operations"], &v["rate"], &v["tps"], &v["seconds"]),
            (&json!(0), &json!(0.0), &json!(0.0), &json!(0.0))
        );
        assert_eq!(v["ended_early"]["connections_lost"], 4);
    }
}
