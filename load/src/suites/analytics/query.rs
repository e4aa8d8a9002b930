//! `analytics query`: one query run W times to warm up (the first run is the cold one), then N times
//! measured, each timed from sending it to having read its last row (the rows are read and hashed,
//! not kept). A timeout or an error stops the query: it is counted among the summary's errors, and
//! the step ends normally with what was measured.

use super::QueryOptions;
use crate::driver::lost::LOST;
use crate::driver::{describe, error_kind, Driver, LockWaits, Session, TIMEOUT_KIND};
use crate::output::emit;
use crate::output::seconds::{report_seconds, Live, Phase};
use crate::output::summary::{ClientUsage, Counts, EngineDetail, OpsName, Suite, Summary};
use crate::output::tally::Tally;
use crate::output::usage::{own_cpu, own_max_rss_kb};
use serde::Serialize;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A 64-bit FNV-1a hash of a result: the rows' fields joined by '|', the rows by '\n', NULL as `\N`.
/// The same rows hash the same on any engine that writes its values the same.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ResultHash {
    hash: u64,
    rows: u64,
}

impl Default for ResultHash {
    fn default() -> Self {
        ResultHash { hash: 0xcbf2_9ce4_8422_2325, rows: 0 }
    }
}

impl ResultHash {
    fn bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.hash = (self.hash ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }

    /// Adds a row.
    pub fn row(&mut self, values: &[Option<&[u8]>]) {
        if self.rows > 0 {
            self.bytes(b"\n");
        }
        for (i, v) in values.iter().enumerate() {
            if i > 0 {
                self.bytes(b"|");
            }
            self.bytes(v.unwrap_or(b"\\N"));
        }
        self.rows += 1;
    }

    /// The hash in 16 hex digits.
    pub fn hex(&self) -> String {
        format!("{:016x}", self.hash)
    }
}

/// The `detail` of `analytics query`'s summary. The envelope's `operations` and `events` are the
/// measured runs that succeeded, `seconds` the sum of their times, `rate` and `tps` runs per second of
/// that; its latency histogram holds each measured run's time (µs), and its errors the one that
/// stopped the query (kind `timeout` for the statement timeout, else the engine's code).
#[derive(Serialize, Debug, PartialEq)]
pub struct QueryDetail {
    /// "tpch" or "tpcds".
    pub set: &'static str,
    pub query: String,
    pub scale: f64,
    /// Each measured run's seconds, in order.
    pub runs_s: Vec<f64>,
    /// Each warm-up run's seconds (the first is the cold run).
    pub warmup_s: Vec<f64>,
    /// Rows of the last run that succeeded; null when none did.
    pub rows: Option<u64>,
    /// `ResultHash` of that run's rows; null when none succeeded.
    pub result_hash: Option<String>,
    /// null when every run succeeded; else "timeout after T s" or "error: <message>".
    pub failed: Option<String>,
    /// The statement timeout, s (0: none).
    pub timeout_s: u64,
    /// The SQL as the engine received it.
    pub sql: String,
    /// lock_waits, lock_wait_s, engine_library.
    #[serde(flatten)]
    pub engine: EngineDetail,
}

/// What the runs measured.
pub struct Ran {
    pub warmup_s: Vec<f64>,
    pub runs_s: Vec<f64>,
    pub last: Option<ResultHash>,
    pub tally: Tally,
    pub failed: Option<String>,
    pub lock_waits: LockWaits,
}

/// Runs `sql` `warmups` then `repeats` times on `s`, until the first failure.
pub fn runs<S: Session>(s: &mut S, sql: &str, warmups: u32, repeats: u32, timeout_s: u64, live: &Live) -> Ran {
    let mut ran = Ran {
        warmup_s: Vec::new(),
        runs_s: Vec::new(),
        last: None,
        tally: Tally::new(),
        failed: None,
        lock_waits: LockWaits::default(),
    };
    for i in 0..warmups + repeats {
        let measured = i >= warmups;
        let mut hash = ResultHash::default();
        let t0 = Instant::now();
        let r = s.each_row(sql, &mut |row| hash.row(row));
        let took = t0.elapsed();
        match r {
            Ok(_) => {
                ran.last = Some(hash);
                if measured {
                    let us = (took.as_micros() as u64).max(1);
                    ran.tally.latency.saturating_record(us);
                    ran.runs_s.push(took.as_secs_f64());
                    live.record(1, us);
                } else {
                    ran.warmup_s.push(took.as_secs_f64());
                }
            }
            Err(e) => {
                let kind = error_kind(&e);
                ran.failed = Some(if kind == TIMEOUT_KIND {
                    format!("timeout after {timeout_s} s")
                } else {
                    format!("error: {}", describe(&e))
                });
                ran.tally.error(kind, describe(&e));
                live.errors.fetch_add(1, Relaxed);
                break;
            }
        }
    }
    ran.lock_waits = s.lock_waits();
    ran
}

/// What the summary says of the query besides its runs.
pub struct Asked {
    pub set: &'static str,
    pub query: String,
    pub scale: f64,
    pub timeout_s: u64,
    pub sql: String,
}

/// The summary of a query's runs.
pub fn summary(asked: Asked, ran: Ran, usage: ClientUsage, library: Option<serde_json::Value>) -> Summary<QueryDetail> {
    let ok = ran.runs_s.len() as u64;
    // Summed from +0.0 (an empty f64 sum is -0.0).
    let seconds = ran.runs_s.iter().fold(0.0, |a, b| a + b);
    let rate = if seconds > 0.0 { ok as f64 / seconds } else { 0.0 };
    let counts = Counts { ops_name: OpsName::Queries, operations: ok, events: ok, seconds, rate, tps: rate };
    let step = asked.query.clone();
    let detail = QueryDetail {
        set: asked.set,
        query: asked.query,
        scale: asked.scale,
        runs_s: ran.runs_s,
        warmup_s: ran.warmup_s,
        rows: ran.last.map(|h| h.rows),
        result_hash: ran.last.map(|h| h.hex()),
        failed: ran.failed,
        timeout_s: asked.timeout_s,
        sql: asked.sql,
        engine: EngineDetail::new(library, ran.lock_waits),
    };
    Summary::new(Suite::Analytics, &step, counts, detail).latency(&ran.tally.latency).errors(&ran.tally).usage(usage)
}

/// `dbsweep-load analytics query`: checks the options and renders the query before connecting, sets
/// the statement timeout, runs it while printing a line a second (the measured runs that ended in
/// it), then prints the summary.
pub fn run<D: Driver>(driver: &D, opts: &QueryOptions) -> Result<(), String> {
    let scale = opts.data.scale()?;
    if opts.repeats == 0 {
        return Err("--repeats must be at least 1: the measured runs of the query".into());
    }
    let files = opts.data.files();
    let sql = files.query(&opts.query, scale, driver.dialect())?;
    let mut session = driver.connect()?;
    if opts.timeout_s > 0 {
        session
            .set_statement_timeout(opts.timeout_s)
            .map_err(|e| format!("setting a statement timeout of {} s: {}", opts.timeout_s, describe(&e)))?;
    }
    let live = Arc::new(vec![Live::default()]);
    let phase = Arc::new(Phase::default());
    let start = Instant::now();
    let cpu0 = own_cpu();
    let runner = {
        let (live, phase, sql) = (live.clone(), phase.clone(), sql.clone());
        let (warmups, repeats, timeout_s) = (opts.warmup_runs, opts.repeats, opts.timeout_s);
        std::thread::spawn(move || {
            let r = runs(&mut session, &sql, warmups, repeats, timeout_s, &live[0]);
            phase.end();
            r
        })
    };
    report_seconds(&live, &phase, start, Duration::ZERO, None, true, &mut || {});
    let ran = runner.join().map_err(|_| "the query runner panicked".to_string())?;
    let (u, s) = own_cpu();
    let usage = ClientUsage { cpu_user_s: u - cpu0.0, cpu_sys_s: s - cpu0.1, max_rss_kb: own_max_rss_kb() };
    let asked = Asked { set: opts.data.set.name(), query: opts.query.clone(), scale, timeout_s: opts.timeout_s, sql };
    emit(&summary(asked, ran, usage, driver.describe()).ended_early(LOST.ended_early(start)));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(rows: &[&[Option<&str>]]) -> String {
        let mut h = ResultHash::default();
        for r in rows {
            let v: Vec<Option<&[u8]>> = r.iter().map(|v| v.map(str::as_bytes)).collect();
            h.row(&v);
        }
        h.hex()
    }

    #[test]
    fn the_result_hash_is_fnv1a_of_the_rows_as_text() {
        // FNV-1a 64 of "" and of "a" (the published test vectors).
        assert_eq!(hash(&[]), "cbf29ce484222325");
        assert_eq!(hash(&[&[Some("a")]]), "af63dc4c8601ec8c");
        // Fields by '|', rows by '\n', NULL as \N: "1|\N\n2|x" either way it is cut.
        let h = hash(&[&[Some("1"), None], &[Some("2"), Some("x")]]);
        assert_eq!(h, hash(&[&[Some("1|\\N\n2|x")]]));
        assert_ne!(h, hash(&[&[Some("1"), Some("")], &[Some("2"), Some("x")]]));
        assert_eq!(h.len(), 16);
    }

    fn ran(runs_s: Vec<f64>, failed: Option<&str>) -> Ran {
        let mut tally = Tally::new();
        for s in &runs_s {
            tally.latency.record((s * 1e6) as u64).unwrap();
        }
        if let Some(f) = failed {
            tally.error("timeout".into(), f.into());
        }
        let mut last = ResultHash::default();
        last.row(&[Some(b"42")]);
        Ran {
            warmup_s: vec![1.5],
            runs_s,
            last: Some(last),
            tally,
            failed: failed.map(str::to_string),
            lock_waits: LockWaits::default(),
        }
    }

    fn asked() -> Asked {
        Asked { set: "tpch", query: "q06".into(), scale: 0.01, timeout_s: 30, sql: "select 42".into() }
    }

    #[test]
    fn a_query_reports_its_measured_runs() {
        let usage = ClientUsage::default();
        let v = crate::output::summary::check_envelope(&summary(asked(), ran(vec![0.5, 1.5], None), usage, None));
        let want = serde_json::json!({
            "suite": "analytics", "step": "q06", "ops_name": "queries", "operations": 2, "events": 2,
            "seconds": 2.0, "rate": 1.0, "tps": 1.0, "error_count": 0, "errors": {},
        });
        for (k, x) in want.as_object().unwrap() {
            assert_eq!(&v[k], x, "{k}");
        }
        assert_eq!(v["latency_us"]["max"].as_u64().unwrap() / 1000, 1500);
        let d = &v["detail"];
        assert_eq!(
            (&d["set"], &d["query"], &d["scale"], &d["runs_s"], &d["warmup_s"]),
            (
                &serde_json::json!("tpch"),
                &serde_json::json!("q06"),
                &serde_json::json!(0.01),
                &serde_json::json!([0.5, 1.5]),
                &serde_json::json!([1.5])
            )
        );
        assert_eq!((&d["rows"], &d["failed"]), (&serde_json::json!(1), &serde_json::Value::Null));
        assert_eq!(d["result_hash"].as_str().unwrap().len(), 16);
        // Stopped by the timeout after one run: counted as an error, the run kept.
        let v = crate::output::summary::check_envelope(&summary(
            asked(),
            ran(vec![0.5], Some("timeout after 30 s")),
            usage,
            None,
        ));
        assert_eq!((&v["operations"], &v["errors"]), (&serde_json::json!(1), &serde_json::json!({"timeout": 1})));
        assert_eq!(v["detail"]["failed"], "timeout after 30 s");
        // Nothing measured: no rate.
        let s = summary(asked(), ran(vec![], Some("x")), usage, None);
        assert!(serde_json::to_string(&s).unwrap().contains(r#""seconds":0.0,"#));
        let v = crate::output::summary::check_envelope(&s);
        assert_eq!((&v["operations"], &v["rate"]), (&serde_json::json!(0), &serde_json::json!(0.0)));
    }
}
