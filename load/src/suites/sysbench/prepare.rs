//! The sysbench load step: create the sbtest tables, insert rows in id order
//! with multi-row INSERTs, then create the secondary index on k.

use super::ddl;
use crate::driver::lost::LOST;
use crate::driver::{describe, existing_tables, Driver, LockWaits, Session};
use crate::output::emit;
use crate::output::histogram::new_histogram;
use crate::output::seconds::{report_seconds, Live, Phase};
use crate::output::summary::{ClientUsage, Counts, EngineDetail, OpsName, Suite, Summary};
use crate::output::usage::{own_cpu, own_max_rss_kb};
use hdrhistogram::Histogram;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use std::fmt::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Rows per INSERT statement: about 200 KB of SQL, under sysbench's 512 KB cap.
const ROWS_PER_INSERT: i32 = 1000;

#[derive(Debug, Clone)]
pub struct PrepareOpts {
    pub tables: u32,
    pub rows: i32,
    pub primary_key: bool,
    pub seed: u64,
    /// A load to count instructions by: no line per second, no latencies kept (see `exec::RunOpts`).
    pub counting: bool,
}

/// The `detail` of prepare's summary. The envelope's `operations` and `events` are the rows
/// loaded, `rate` and `tps` rows per second of the whole step (`seconds`: tables, inserts and
/// indexes), and its latency the INSERT statements' (1000 rows each). `ended_early` is always null:
/// a lost connection fails the step with an error instead.
#[derive(Serialize, Debug)]
pub struct PrepareDetail {
    /// "prepare".
    pub workload: &'static str,
    pub tables: u32,
    /// Rows in all tables.
    pub rows: i64,
    pub primary_key: bool,
    /// Creating the tables and inserting the rows.
    pub insert_seconds: f64,
    /// Creating the secondary indexes on k.
    pub index_seconds: f64,
    pub rows_per_sec: f64,
    /// lock_waits, lock_wait_s, engine_library.
    #[serde(flatten)]
    pub engine: EngineDetail,
}

/// What the load measured.
pub struct Loaded {
    pub insert_seconds: f64,
    pub index_seconds: f64,
    /// The INSERT statements' latencies, µs.
    pub latency: Histogram<u64>,
    /// The loading session's lock waits.
    pub lock_waits: LockWaits,
}

/// The summary of prepare: `seconds` is the whole step.
pub fn summary(
    opts: &PrepareOpts,
    loaded: &Loaded,
    seconds: f64,
    usage: ClientUsage,
    library: Option<serde_json::Value>,
) -> Summary<PrepareDetail> {
    let rows = opts.tables as i64 * opts.rows as i64;
    let rows_per_sec = if seconds > 0.0 { rows as f64 / seconds } else { 0.0 };
    let counts = Counts {
        ops_name: OpsName::Rows,
        operations: rows as u64,
        events: rows as u64,
        seconds,
        rate: rows_per_sec,
        tps: rows_per_sec,
    };
    let detail = PrepareDetail {
        workload: super::PREPARE,
        tables: opts.tables,
        rows,
        primary_key: opts.primary_key,
        insert_seconds: loaded.insert_seconds,
        index_seconds: loaded.index_seconds,
        rows_per_sec,
        engine: EngineDetail::new(library, loaded.lock_waits),
    };
    Summary::new(Suite::Sysbench, super::PREPARE, counts, detail).latency(&loaded.latency).usage(usage)
}

/// `groups` groups of 11 random digits joined by '-', as sysbench fills c and pad, one byte at a time.
#[inline]
pub fn digit_groups(rng: &mut SmallRng, groups: usize, mut push: impl FnMut(u8)) {
    for g in 0..groups {
        if g > 0 {
            push(b'-');
        }
        for _ in 0..11 {
            push(b'0' + rng.gen_range(0..10u8));
        }
    }
}

fn exec<S: Session>(client: &mut S, sql: &str) -> Result<(), String> {
    client
        .simple(sql)
        .map(|_| ())
        .map_err(|e| format!("{}: {}", sql.chars().take(80).collect::<String>(), describe(&e)))
}

fn load<D: Driver>(driver: &D, client: &mut D::Session, opts: &PrepareOpts, live: &Live) -> Result<Loaded, String> {
    let dialect = driver.dialect();
    // Drop every sbtest table, not only the ones this load makes, as sysbench's driver script does.
    for t in existing_tables(client, dialect, "sbtest")? {
        exec(client, &format!("DROP TABLE IF EXISTS {t}"))?;
    }
    let mut rng = SmallRng::seed_from_u64(opts.seed);
    let t0 = Instant::now();
    let mut sql = String::with_capacity(ROWS_PER_INSERT as usize * 200);
    let mut latency = new_histogram();
    for t in 1..=opts.tables {
        for ddl in ddl::create_sbtest(dialect, &format!("sbtest{t}"), opts.primary_key)? {
            exec(client, &ddl)?;
        }
        let mut done = 0;
        while done < opts.rows {
            let n = ROWS_PER_INSERT.min(opts.rows - done);
            sql.clear();
            write!(sql, "INSERT INTO sbtest{t} (k, c, pad) VALUES ").unwrap();
            for i in 0..n {
                if i > 0 {
                    sql.push(',');
                }
                write!(sql, "({}, '", rng.gen_range(1..=opts.rows)).unwrap();
                digit_groups(&mut rng, 10, |b| sql.push(char::from(b)));
                sql.push_str("', '");
                digit_groups(&mut rng, 5, |b| sql.push(char::from(b)));
                sql.push_str("')");
            }
            let s0 = Instant::now();
            client.simple(&sql).map_err(|e| format!("loading sbtest{t}: {}", describe(&e)))?;
            let us = (s0.elapsed().as_micros() as u64).max(1);
            live.record(n as u64, us);
            if !opts.counting {
                latency.saturating_record(us);
            }
            done += n;
        }
    }
    let insert_seconds = t0.elapsed().as_secs_f64();
    let i0 = Instant::now();
    for t in 1..=opts.tables {
        exec(client, &dialect.create_index(&format!("k_{t}"), &format!("sbtest{t}"), "k"))?;
    }
    Ok(Loaded { insert_seconds, index_seconds: i0.elapsed().as_secs_f64(), latency, lock_waits: client.lock_waits() })
}

pub fn run<D: Driver>(driver: &D, opts: PrepareOpts) -> Result<(), String> {
    if opts.tables == 0 || opts.rows <= 0 {
        return Err("prepare needs at least one table and one row per table".into());
    }
    // A table the engine cannot make fails the step before anything is dropped or created.
    ddl::create_sbtest(driver.dialect(), "sbtest1", opts.primary_key)?;
    let mut client = driver.connect()?;
    let live = Arc::new(vec![Live::default()]);
    let phase = Arc::new(Phase::default());
    let start = Instant::now();
    let cpu0 = own_cpu();
    let lines = !opts.counting;
    let loader = {
        let (live, phase, driver) = (live.clone(), phase.clone(), driver.clone());
        std::thread::spawn(move || {
            let r = load(&driver, &mut client, &opts, &live[0]);
            phase.end();
            r.map(|t| (t, opts))
        })
    };
    report_seconds(&live, &phase, start, Duration::ZERO, None, lines, &mut || {});
    let loaded = loader.join().map_err(|_| "the loader panicked".to_string())?;
    // A broken connection leaves the tables half made: an error, which says that the connection was lost.
    let (loaded, opts) = loaded.map_err(|e| match LOST.ended_early(start) {
        Some(lost) => format!("lost the connection to the server {:.3} s into prepare: {e}", lost.at_s),
        None => e,
    })?;
    let seconds = start.elapsed().as_secs_f64();
    let (u, s) = own_cpu();
    let usage = ClientUsage { cpu_user_s: u - cpu0.0, cpu_sys_s: s - cpu0.1, max_rss_kb: own_max_rss_kb() };
    emit(&summary(&opts, &loaded, seconds, usage, driver.describe()).ended_early(LOST.ended_early(start)));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_and_pad_have_sysbench_format() {
        let mut rng = SmallRng::seed_from_u64(7);
        let mut c = String::new();
        digit_groups(&mut rng, 10, |b| c.push(char::from(b)));
        assert_eq!(c.len(), 119);
        assert_eq!(c.split('-').count(), 10);
        assert!(c.split('-').all(|g| g.len() == 11 && g.bytes().all(|b| b.is_ascii_digit())));
        let mut pad = String::new();
        digit_groups(&mut rng, 5, |b| pad.push(char::from(b)));
        assert_eq!(pad.len(), 59);
    }

    #[test]
    fn prepare_reports_rows_per_second() {
        let opts = PrepareOpts { tables: 2, rows: 5000, primary_key: false, seed: 1, counting: false };
        let mut latency = new_histogram();
        for us in [1000, 3000] {
            latency.record(us).unwrap();
        }
        let loaded = Loaded { insert_seconds: 1.5, index_seconds: 0.5, latency, lock_waits: LockWaits::default() };
        let usage = ClientUsage { cpu_user_s: 0.2, cpu_sys_s: 0.1, max_rss_kb: 9000 };
        let v = crate::output::summary::check_envelope(&summary(&opts, &loaded, 2.5, usage, None));
        let want = serde_json::json!({
            "suite": "sysbench", "step": "prepare", "ops_name": "rows", "operations": 10000, "events": 10000,
            "seconds": 2.5, "rate": 4000.0, "tps": 4000.0, "error_count": 0, "errors": {}, "ended_early": null,
            "client_max_rss_kb": 9000,
        });
        for (k, x) in want.as_object().unwrap() {
            assert_eq!(&v[k], x, "{k}");
        }
        assert_eq!(v["latency_us"]["max"].as_u64().unwrap() / 10, 300);
        assert_eq!(
            v["detail"],
            serde_json::json!({"workload": "prepare", "tables": 2, "rows": 10000, "primary_key": false,
                "insert_seconds": 1.5, "index_seconds": 0.5, "rows_per_sec": 4000.0,
                "lock_waits": 0, "lock_wait_s": 0.0})
        );
    }
}
