//! The one summary envelope: the last line of every step that measures, whatever its suite.

use super::histogram::{encode_histogram, new_histogram, Latency};
use super::tally::Tally;
use crate::driver::lost::EndedEarly;
use hdrhistogram::Histogram;
use serde::Serialize;
use std::collections::BTreeMap;

/// The suite a step belongs to.
#[derive(Serialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "lowercase")]
pub enum Suite {
    Sysbench,
    Ibench,
    Analytics,
}

/// What a summary's `operations` counts, and so what its `rate` is per second of.
#[derive(Serialize, Debug, Clone, Copy, PartialEq)]
pub enum OpsName {
    /// Statements, BEGIN and COMMIT included, as sysbench counts queries.
    #[serde(rename = "queries")]
    Queries,
    /// Rows inserted (loads).
    #[serde(rename = "rows")]
    Rows,
    /// Rows in the tables when their indexes were built (the Insert Benchmark's l.x).
    #[serde(rename = "indexed rows")]
    IndexedRows,
    /// The scan: `operations` counts the scans, `rate` is thousands of rows scanned per second.
    #[serde(rename = "Krows")]
    Krows,
}

/// The counts of a step, as its method reports it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Counts {
    pub ops_name: OpsName,
    pub operations: u64,
    pub events: u64,
    pub seconds: f64,
    pub rate: f64,
    pub tps: f64,
}

/// What every step's `detail` says of the engine's side (flattened into it):
///
/// * `lock_waits`: statements that waited for a lock at least once (SQLite's busy handler), summed
///   over the step's connections; `lock_wait_s`: the seconds they waited. Always 0 for Postgres,
///   whose waits happen in the server.
/// * `engine_library`: an embedded engine's library, `{"path", "version", "source_id"}` (SQLite:
///   the file opened, sqlite3_libversion(), sqlite3_sourceid()); absent for Postgres.
#[derive(Serialize, Debug, Clone, Default, PartialEq)]
pub struct EngineDetail {
    pub lock_waits: u64,
    pub lock_wait_s: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine_library: Option<serde_json::Value>,
}

impl EngineDetail {
    pub fn new(library: Option<serde_json::Value>, waits: crate::driver::LockWaits) -> EngineDetail {
        EngineDetail { lock_waits: waits.statements, lock_wait_s: waits.seconds, engine_library: library }
    }
}

/// The client process's own resource use during a step.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ClientUsage {
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    pub max_rss_kb: u64,
}

/// The last line of every subcommand that measures (`sysbench STEP`, `ibench STEP`, `analytics load`,
/// `analytics query`), one JSON object:
///
/// ```text
/// {"type": "summary", "suite": "sysbench" | "ibench" | "analytics",
///  "step": "<the STEP argument>" | "load" | "<the query, q01 ...>",
///  "ops_name": "queries" | "rows" | "indexed rows" | "Krows", "operations": N, "events": N,
///  "seconds": F, "rate": F, "tps": F,
///  "latency_us": {"min", "mean", "p50", "p90", "p95", "p99", "p999", "max"}, "histogram": "...",
///  "errors": {"<kind>": N}, "error_count": N, "error_samples": ["..."],
///  "client_cpu_user_s": F, "client_cpu_sys_s": F, "client_max_rss_kb": N,
///  "ended_early": null | {"connections_lost": N, "at_s": F, "reason": "..."},
///  "detail": {...}}
/// ```
///
/// * `operations`: what the step's throughput counts, named by `ops_name`: sysbench's prepare
///   "rows" (rows loaded); its microbenchmarks "queries" (statements, BEGIN and COMMIT included);
///   the scan "Krows" (operations = scans run, rate = thousands of rows scanned per second);
///   the Insert Benchmark's read-write steps (qrNNN, qpNNN) "queries", l.x "indexed rows" (rows
///   in the tables when indexed), its other load steps "rows" (rows inserted); analytics' load
///   "rows" (rows loaded in all tables), its queries "queries" (measured runs that succeeded).
/// * `events`: sysbench's events (transactions, or statements outside one; rows for prepare);
///   for the Insert Benchmark and analytics equal to `operations`.
/// * `seconds`: the measured time, s: after the warm-up for sysbench microbenchmarks, the whole
///   step for prepare, for the Insert Benchmark (index builds included) and analytics' load; the sum
///   of the measured runs for an analytic query.
/// * `rate`: the step's throughput as the method reports it, per second: queries/s (qps),
///   rows/s, indexed rows/s, or Krows/s for the scan.
/// * `tps`: events per second (for the Insert Benchmark and prepare equal to `rate`).
/// * `latency_us`: the latency of the main operation, µs, from `histogram` (HdrHistogram V2,
///   deflated, base64, µs): sysbench's events (for prepare its INSERT statements), the Insert
///   Benchmark's insert statements in load steps and its queries in read-write steps, analytics'
///   bulk load of each table and its measured query runs.
/// * `errors`: failed statements (or events) by kind, "timeout" for a statement the session's
///   statement timeout stopped, "sqlstate-XXXXX" when the server gave one,
///   SQLite's result code in lower case (sqlite_busy, sqlite_constraint_primarykey, ...),
///   else "connection-closed" or "client"; `error_count` their sum; `error_samples` up to five
///   distinct messages.
/// * `client_cpu_user_s`, `client_cpu_sys_s`: this process's CPU seconds over `seconds`;
///   `client_max_rss_kb` its peak resident memory, KB.
/// * `ended_early`: null when every connection lasted to the end; else how many connections were
///   lost during the step (I/O error, EOF or reset, or a FATAL from the server; for SQLite an error
///   that leaves the database unusable: SQLITE_CORRUPT, _NOTADB, _IOERR*, _FULL, _CANTOPEN), the seconds from
///   the step's start (the per-second lines' origin, warm-up included) to the first loss, and its
///   reason ("SQLSTATE: message" or "connection closed: ..."). Such a step measured less than it
///   was asked to.
/// * `detail`: everything else the suite reports for the step (see each suite's detail type).
#[derive(Serialize, Debug)]
#[serde(tag = "type", rename = "summary")]
pub struct Summary<D> {
    pub suite: Suite,
    pub step: String,
    pub ops_name: OpsName,
    pub operations: u64,
    pub events: u64,
    pub seconds: f64,
    pub rate: f64,
    pub tps: f64,
    pub latency_us: Latency,
    pub histogram: String,
    pub errors: BTreeMap<String, u64>,
    pub error_count: u64,
    pub error_samples: Vec<String>,
    pub client_cpu_user_s: f64,
    pub client_cpu_sys_s: f64,
    pub client_max_rss_kb: u64,
    pub ended_early: Option<EndedEarly>,
    pub detail: D,
}

impl<D: Serialize> Summary<D> {
    /// A summary of `counts` with no latency, errors, CPU or loss yet; the methods below add them.
    pub fn new(suite: Suite, step: &str, counts: Counts, detail: D) -> Self {
        let empty = new_histogram();
        Summary {
            suite,
            step: step.to_string(),
            ops_name: counts.ops_name,
            operations: counts.operations,
            events: counts.events,
            seconds: counts.seconds,
            rate: counts.rate,
            tps: counts.tps,
            latency_us: Latency::of(&empty),
            histogram: encode_histogram(&empty),
            errors: BTreeMap::new(),
            error_count: 0,
            error_samples: Vec::new(),
            client_cpu_user_s: 0.0,
            client_cpu_sys_s: 0.0,
            client_max_rss_kb: 0,
            ended_early: None,
            detail,
        }
    }

    /// The main operation's latencies.
    pub fn latency(mut self, h: &Histogram<u64>) -> Self {
        self.latency_us = Latency::of(h);
        self.histogram = encode_histogram(h);
        self
    }

    /// The errors counted in `t`.
    pub fn errors(mut self, t: &Tally) -> Self {
        self.errors = t.errors.clone();
        self.error_count = t.error_count();
        self.error_samples = t.error_samples.clone();
        self
    }

    pub fn usage(mut self, u: ClientUsage) -> Self {
        self.client_cpu_user_s = u.cpu_user_s;
        self.client_cpu_sys_s = u.cpu_sys_s;
        self.client_max_rss_kb = u.max_rss_kb;
        self
    }

    pub fn ended_early(mut self, e: Option<EndedEarly>) -> Self {
        self.ended_early = e;
        self
    }
}

/// The fields every summary has, in order, for the tests of each suite's summary.
#[cfg(test)]
pub const COMMON_FIELDS: [&str; 19] = [
    "type",
    "suite",
    "step",
    "ops_name",
    "operations",
    "events",
    "seconds",
    "rate",
    "tps",
    "latency_us",
    "histogram",
    "errors",
    "error_count",
    "error_samples",
    "client_cpu_user_s",
    "client_cpu_sys_s",
    "client_max_rss_kb",
    "ended_early",
    "detail",
];

/// Checks that `s` serialises to an envelope with exactly the common fields, in order; returns it as JSON.
#[cfg(test)]
pub fn check_envelope<D: Serialize>(s: &Summary<D>) -> serde_json::Value {
    let text = serde_json::to_string(s).unwrap();
    // serde_json keeps the fields in order only in its text; check the order there.
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    let mut sorted_want = COMMON_FIELDS.to_vec();
    sorted_want.sort_unstable();
    assert_eq!(keys, sorted_want, "{text}");
    let mut at = 0;
    for f in COMMON_FIELDS {
        let pos = text[at..].find(&format!("\"{f}\":")).unwrap_or_else(|| panic!("{f} out of order in {text}"));
        at += pos;
    }
    assert_eq!(v["type"], "summary");
    assert!(v["detail"].is_object());
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_envelope_has_every_common_field() {
        #[derive(Serialize)]
        struct D {
            x: u32,
        }
        let counts =
            Counts { ops_name: OpsName::IndexedRows, operations: 10, events: 10, seconds: 2.0, rate: 5.0, tps: 5.0 };
        let mut h = new_histogram();
        h.record(100).unwrap();
        let mut t = Tally::new();
        t.error("sqlstate-40P01".into(), "deadlock".into());
        t.error("sqlstate-40P01".into(), "deadlock".into());
        let lost = EndedEarly { connections_lost: 1, at_s: 1.5, reason: "x".into() };
        let s = Summary::new(Suite::Ibench, "l.x", counts, D { x: 7 })
            .latency(&h)
            .errors(&t)
            .usage(ClientUsage { cpu_user_s: 0.5, cpu_sys_s: 0.25, max_rss_kb: 1000 })
            .ended_early(Some(lost));
        let v = check_envelope(&s);
        assert_eq!(
            (&v["suite"], &v["step"], &v["ops_name"], &v["operations"], &v["rate"]),
            (&json!("ibench"), &json!("l.x"), &json!("indexed rows"), &json!(10), &json!(5.0))
        );
        assert_eq!(v["latency_us"]["p50"], 100);
        assert_eq!((&v["errors"], &v["error_count"]), (&json!({"sqlstate-40P01": 2}), &json!(2)));
        assert_eq!(v["error_samples"], json!(["deadlock"]));
        assert_eq!(v["client_max_rss_kb"], 1000);
        assert_eq!(v["ended_early"]["at_s"], 1.5);
        assert_eq!(v["detail"], json!({"x": 7}));
        // The names the orchestrator reads.
        for (o, name) in [
            (OpsName::Queries, "queries"),
            (OpsName::Rows, "rows"),
            (OpsName::Krows, "Krows"),
            (OpsName::IndexedRows, "indexed rows"),
        ] {
            assert_eq!(serde_json::to_value(o).unwrap(), name);
        }
        assert_eq!(serde_json::to_value(Suite::Sysbench).unwrap(), "sysbench");
        assert_eq!(serde_json::to_value(Suite::Analytics).unwrap(), "analytics");
    }
}
