//! dbsweep-load on SQLite, end to end: the built binary as a subprocess, against Debian's library
//! (each test is skipped, with a word, where it is not installed).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const SYSTEM_LIB: &str = "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0";
const CAPTURE_ENV: &str = "DBSWEEP_SQLITE_STATEMENTS";

fn system_lib() -> Option<&'static str> {
    if Path::new(SYSTEM_LIB).is_file() {
        Some(SYSTEM_LIB)
    } else {
        eprintln!("skipped: {SYSTEM_LIB} is absent");
        None
    }
}

struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!("dbsweep-load-e2e-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What a run printed last (its summary or error line) and its exit code.
struct Run {
    last: Value,
    code: i32,
    stderr: String,
}

fn run(args: &[&str], env: &[(&str, &Path)]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dbsweep-load"));
    cmd.args(args).env_remove(CAPTURE_ENV);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let last = stdout.lines().last().unwrap_or_else(|| panic!("no output from {args:?}; stderr: {stderr}"));
    let last: Value = serde_json::from_str(last).unwrap();
    Run { last, code: out.status.code().unwrap_or(-1), stderr }
}

/// Runs a step that must succeed; returns its summary.
fn summary(args: &[&str], env: &[(&str, &Path)]) -> Value {
    let r = run(args, env);
    assert_eq!((r.code, r.last["type"].as_str()), (0, Some("summary")), "{args:?}: {} {}", r.last, r.stderr);
    r.last
}

fn sqlite_args<'a>(lib: &'a str, db: &'a str) -> Vec<&'a str> {
    vec!["--engine", "sqlite", "--library", lib, "--database", db, "--pragma", "journal_mode=wal"]
}

fn with<'a>(head: &[&'a str], common: &[&'a str], tail: &[&'a str]) -> Vec<&'a str> {
    head.iter().chain(common).chain(tail).copied().collect()
}

fn assert_clean(s: &Value) {
    assert_eq!(s["error_count"], 0, "{s}");
    assert_eq!(s["ended_early"], Value::Null, "{s}");
    assert_eq!(s["detail"]["engine_library"]["version"], "3.40.1", "{s}");
    assert_eq!(s["detail"]["engine_library"]["path"], SYSTEM_LIB);
    assert!(s["detail"]["engine_library"]["source_id"].as_str().unwrap().starts_with("20"), "{s}");
    assert!(s["detail"]["lock_waits"].is_u64() && s["detail"]["lock_wait_s"].is_f64(), "{s}");
}

/// The statement counts the capture file holds, per SQL text (summed over sessions).
fn captured(path: &Path) -> Vec<(String, u64, u64)> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out: Vec<(String, u64, u64)> = Vec::new();
    for l in text.lines() {
        let v: Value = serde_json::from_str(l).unwrap();
        let (sql, calls, rows) =
            (v["sql"].as_str().unwrap().to_string(), v["calls"].as_u64().unwrap(), v["rows"].as_u64().unwrap());
        match out.iter_mut().find(|e| e.0 == sql) {
            Some(e) => {
                e.1 += calls;
                e.2 += rows;
            }
            None => out.push((sql, calls, rows)),
        }
    }
    out
}

fn count_of(c: &[(String, u64, u64)], sql: &str) -> (u64, u64) {
    c.iter().find(|e| e.0 == sql).map(|e| (e.1, e.2)).unwrap_or_else(|| panic!("{sql} not captured: {c:?}"))
}

#[test]
fn sysbench_prepare_then_runs() {
    let Some(lib) = system_lib() else { return };
    let dir = TempDir::new("sysbench");
    let db = dir.path("sb.db");
    let db = db.to_str().unwrap();
    let mut common = sqlite_args(lib, db);
    common.extend(["--tables", "1", "--rows", "5000"]);
    let s = summary(&with(&["sysbench", "prepare"], &common, &[]), &[]);
    assert_clean(&s);
    assert_eq!((&s["events"], &s["detail"]["primary_key"]), (&Value::from(5000), &Value::from(true)));

    // A point-query second, with the statements captured.
    let cap = dir.path("point.jsonl");
    let s = summary(
        &with(&["sysbench", "point-query"], &common, &["--seconds", "1", "--warmup", "0"]),
        &[(CAPTURE_ENV, &cap)],
    );
    assert_clean(&s);
    let events = s["events"].as_u64().unwrap();
    assert!(events > 0, "{s}");
    let c = captured(&cap);
    let (calls, rows) = count_of(&c, "SELECT c FROM sbtest1 WHERE id=?1");
    assert!(calls >= events, "{calls} calls, {events} events");
    assert_eq!(rows, calls, "every id exists");
    // The catalog and the pragmas show too.
    assert!(c.iter().any(|e| e.0.starts_with("PRAGMA journal_mode=wal")), "{c:?}");

    // --events: a fixed amount of work per client, however long it takes, the same statements every time.
    let fixed = |name: &str| {
        let cap = dir.path(name);
        let s = summary(
            &with(&["sysbench", "update-index"], &common, &["--seconds", "100", "--warmup", "0", "--events", "37"]),
            &[(CAPTURE_ENV, &cap)],
        );
        assert_clean(&s);
        let done = s["events"].as_u64().unwrap() + s["detail"]["warmup_events"].as_u64().unwrap();
        assert_eq!(done, 37, "{s}");
        assert!(s["seconds"].as_f64().unwrap() < 100.0, "{s}");
        captured(&cap)
    };
    let first = fixed("events1.jsonl");
    assert_eq!(count_of(&first, "UPDATE sbtest1 SET k=k+1 WHERE id=?1"), (37, 37));
    assert_eq!(fixed("events2.jsonl"), first, "the same statements the second time");

    // read-write: a transaction that writes starts with BEGIN IMMEDIATE.
    let cap = dir.path("rw.jsonl");
    let s = summary(
        &with(&["sysbench", "read-write"], &common, &["--seconds", "1", "--warmup", "0", "--range", "10"]),
        &[(CAPTURE_ENV, &cap)],
    );
    assert_clean(&s);
    let events = s["events"].as_u64().unwrap();
    assert!(events > 0 && s["detail"]["rows_affected"].as_u64().unwrap() > 0, "{s}");
    let c = captured(&cap);
    assert!(count_of(&c, "BEGIN IMMEDIATE").0 >= events);
    assert!(count_of(&c, "COMMIT").0 >= events);
    let (updates, changed) = count_of(&c, "UPDATE sbtest1 SET k=k+1 WHERE id=?1");
    assert_eq!(updates, changed);
    assert!(c.iter().all(|e| e.0 != "BEGIN"), "{c:?}");

    // read-only: a plain BEGIN.
    let cap = dir.path("ro.jsonl");
    let s = summary(
        &with(&["sysbench", "read-only-sum"], &common, &["--seconds", "1", "--warmup", "0", "--no-prepared"]),
        &[(CAPTURE_ENV, &cap)],
    );
    assert_clean(&s);
    assert!(count_of(&captured(&cap), "BEGIN").0 >= s["events"].as_u64().unwrap());

    // Two writers on a WAL database: they wait for each other, and nothing fails.
    let s = summary(
        &with(&["sysbench", "update-index"], &common, &["--seconds", "1", "--warmup", "0", "--clients", "2"]),
        &[],
    );
    assert_clean(&s);
    assert!(s["events"].as_u64().unwrap() > 0, "{s}");
    eprintln!(
        "update-index, 2 clients: lock_waits {} lock_wait_s {}",
        s["detail"]["lock_waits"], s["detail"]["lock_wait_s"]
    );

    // With --prewarm every connection reads the database first; the step runs as before.
    let s = summary(
        &with(
            &["sysbench", "point-query"],
            &common,
            &["--seconds", "1", "--warmup", "0", "--prewarm", "--clients", "2"],
        ),
        &[],
    );
    assert_clean(&s);
}

#[test]
fn sqlite_refusals_are_one_sentence() {
    let Some(lib) = system_lib() else { return };
    let dir = TempDir::new("refusals");
    let db = dir.path("never.db");
    let db_s = db.to_str().unwrap();
    let r = run(&["sysbench", "prepare", "--engine", "sqlite", "--library", lib, "--database", db_s, "--no-pk"], &[]);
    assert_eq!(r.code, 2);
    assert_eq!(r.last["type"], "error");
    assert_eq!(
        r.last["message"],
        "SQLite cannot make sysbench's table without a primary key (--no-pk): only an INTEGER PRIMARY KEY \
         (the rowid) is generated on insert, so id is always the primary key"
    );
    assert!(!db.exists(), "prepare did nothing");
    let r = run(&["sysbench", "point-query", "--engine", "sqlite", "--database", db_s], &[]);
    assert_eq!(
        (r.code, r.last["message"].as_str()),
        (2, Some("--engine sqlite needs --library PATH, the SQLite shared library to open"))
    );
    let r = run(&["sysbench", "point-query", "--engine", "sqlite", "--library", lib], &[]);
    assert_eq!(
        (r.code, r.last["message"].as_str()),
        (2, Some("--engine sqlite needs --database PATH, the database file"))
    );
    let missing = dir.path("libsqlite3-missing.so");
    let r = run(
        &["sysbench", "point-query", "--engine", "sqlite", "--library", missing.to_str().unwrap(), "--database", db_s],
        &[],
    );
    assert_eq!(r.code, 2);
    let m = r.last["message"].as_str().unwrap();
    assert!(m.starts_with(&format!("cannot load the SQLite library {}: ", missing.display())), "{m}");
    // The step needs its tables (and a bad pragma fails the connect).
    let r = run(&["sysbench", "point-query", "--engine", "sqlite", "--library", lib, "--database", db_s], &[]);
    assert!(r.last["message"].as_str().unwrap().contains("the load step makes them"), "{}", r.last);
    let r = run(
        &[
            "sysbench",
            "point-query",
            "--engine",
            "sqlite",
            "--library",
            lib,
            "--database",
            db_s,
            "--pragma",
            "synchronous=normal x",
        ],
        &[],
    );
    assert!(r.last["message"].as_str().unwrap().starts_with("PRAGMA synchronous=normal x failed on "), "{}", r.last);
    // Postgres does not take SQLite's options.
    let r = run(&["sysbench", "point-query", "--library", lib], &[]);
    assert_eq!(r.last["message"], "--library are options of --engine sqlite, not of postgres");
}

#[test]
fn ibench_steps() {
    let Some(lib) = system_lib() else { return };
    let dir = TempDir::new("ibench");
    let db = dir.path("ib.db");
    let db = db.to_str().unwrap();
    let common = sqlite_args(lib, db);
    let s = summary(&with(&["ibench", "l.i0"], &common, &["--clients", "2", "--rows", "3000"]), &[]);
    assert_clean(&s);
    assert_eq!(s["detail"]["rows_after"], serde_json::json!({"pi1": 3000, "pi2": 3000}));
    assert_eq!(s["detail"]["sql"]["alter_sequence"], Value::Null);
    assert!(s["detail"]["sql"]["insert"].as_str().unwrap().contains(",productid,price,'data'),"));
    let s = summary(&with(&["ibench", "l.x"], &common, &["--clients", "2"]), &[]);
    assert_clean(&s);
    assert_eq!(s["detail"]["indexed_rows"], 6200);
    let cap = dir.path("li1.jsonl");
    let s = summary(&with(&["ibench", "l.i1"], &common, &["--clients", "2", "--rows", "1000"]), &[(CAPTURE_ENV, &cap)]);
    assert_clean(&s);
    let d = &s["detail"];
    assert_eq!((&d["inserted_rows"], &d["deleted_rows"]), (&Value::from(2000), &Value::from(2000)), "{s}");
    assert_eq!(d["rows_after"], serde_json::json!({"pi1": 3100, "pi2": 3100}));
    let c = captured(&cap);
    let del = "DELETE FROM pi1 WHERE transactionid IN \
               (SELECT transactionid FROM pi1 WHERE transactionid >= ?1 ORDER BY transactionid ASC LIMIT ?2)";
    assert_eq!(count_of(&c, del), (20, 1000));
    let s = summary(&with(&["ibench", "qr100"], &common, &["--clients", "2", "--seconds", "1"]), &[]);
    assert_clean(&s);
    assert!(s["detail"]["queries"].as_u64().unwrap() > 0, "{s}");
    let s = summary(&with(&["ibench", "qp100"], &common, &["--clients", "1", "--seconds", "1"]), &[]);
    assert_clean(&s);
    assert!(s["detail"]["query_rows"].as_u64().unwrap() > 0, "{s}");
}
