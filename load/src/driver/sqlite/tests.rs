//! The driver against Debian's SQLite library (skipped, with a word, where it is not installed).

use super::ffi::{Bind, Connection, Library};
use super::*;
use crate::driver::{error_kind, existing_tables};
use std::path::Path;
use std::time::Instant;

pub const SYSTEM_LIB: &str = "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0";

fn system_lib() -> Option<PathBuf> {
    let p = PathBuf::from(SYSTEM_LIB);
    if p.is_file() {
        Some(p)
    } else {
        eprintln!("skipped: {SYSTEM_LIB} is absent");
        None
    }
}

/// A directory of its own under the system's temporary directory, removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!("dbsweep-sqlite-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn config(lib: &Path, db: &Path) -> Config {
    Config {
        library: lib.to_path_buf(),
        database: db.to_path_buf(),
        pragmas: Vec::new(),
        busy_timeout: Duration::from_secs(10),
        prewarm: false,
    }
}

fn driver(c: Config, lost: &'static Lost) -> SqliteDriver {
    SqliteDriver::with(c, None, lost).unwrap()
}

fn texts(rows: &[&[Option<&str>]]) -> Vec<Vec<Option<String>>> {
    rows.iter().map(|r| r.iter().map(|v| v.map(str::to_string)).collect()).collect()
}

#[test]
fn a_library_that_cannot_be_loaded_is_one_line_naming_it() {
    let dir = TempDir::new("load");
    let missing = dir.path("no-such-libsqlite3.so");
    let err = Library::load(&missing).err().unwrap();
    assert!(err.starts_with(&format!("cannot load the SQLite library {}: ", missing.display())), "{err}");
    assert!(!err.contains('\n'), "{err}");
    let text = dir.path("libtext.so");
    std::fs::write(&text, "not a shared library\n").unwrap();
    let err = Library::load(&text).err().unwrap();
    assert!(err.starts_with(&format!("cannot load the SQLite library {}: ", text.display())), "{err}");
    // A shared library that is not SQLite lacks its functions.
    let libm = Path::new("/lib/x86_64-linux-gnu/libm.so.6");
    if libm.is_file() {
        let err = Library::load(libm).err().unwrap();
        assert!(
            err.starts_with("/lib/x86_64-linux-gnu/libm.so.6 is not an SQLite library of version 3.34 or later: it lacks sqlite3_open_v2"),
            "{err}"
        );
    }
    // Through the driver, the same.
    let c = config(&missing, &dir.path("x.db"));
    assert!(SqliteDriver::new(c).err().unwrap().contains(&missing.display().to_string()));
}

#[test]
fn the_library_describes_itself() {
    let Some(lib) = system_lib() else { return };
    let l = Library::load(&lib).unwrap();
    assert!(l.version().starts_with("3."), "{}", l.version());
    assert!(l.source_id().len() > 20, "{}", l.source_id());
    assert_ne!(l.threadsafe(), 0);
    assert!(l.has_prepare_v3());
    let dir = TempDir::new("describe");
    let d = SqliteDriver::new(config(&lib, &dir.path("x.db"))).unwrap();
    let v = d.describe().unwrap();
    assert_eq!(v["path"], SYSTEM_LIB);
    assert_eq!(v["version"], l.version());
    assert_eq!(v["source_id"], l.source_id());
}

#[test]
fn pragmas_are_applied_in_order_and_a_bad_one_fails_the_connect() {
    let Some(lib) = system_lib() else { return };
    static LOST_HERE: Lost = Lost::new();
    let dir = TempDir::new("pragmas");
    let db = dir.path("p.db");
    let mut c = config(&lib, &db);
    c.pragmas = vec![
        ("journal_mode".into(), "wal".into()),
        ("cache_size".into(), "-4000".into()),
        ("main.synchronous".into(), "1".into()),
    ];
    let mut s = driver(c.clone(), &LOST_HERE).connect().unwrap();
    assert_eq!(s.rows("PRAGMA journal_mode").unwrap(), texts(&[&[Some("wal")]]));
    assert_eq!(s.rows("PRAGMA cache_size").unwrap(), texts(&[&[Some("-4000")]]));
    assert_eq!(s.rows("PRAGMA synchronous").unwrap(), texts(&[&[Some("1")]]));
    drop(s);
    // SQLite ignores a pragma it does not know, but not a malformed one.
    c.pragmas.push(("synchronous".into(), "normal normal".into()));
    let err = driver(c, &LOST_HERE).connect().err().unwrap();
    assert!(
        err.starts_with(&format!("PRAGMA synchronous=normal normal failed on {}: SQLITE_ERROR: ", db.display())),
        "{err}"
    );
    assert!(err.contains("syntax error"), "{err}");
    assert_eq!(LOST_HERE.count(), 0);
}

#[test]
fn statements_round_trip_with_numbered_placeholders() {
    let Some(lib) = system_lib() else { return };
    static LOST_HERE: Lost = Lost::new();
    let dir = TempDir::new("roundtrip");
    let mut s = driver(config(&lib, &dir.path("r.db")), &LOST_HERE).connect().unwrap();
    let o = s
        .simple(
            "CREATE TABLE t1 (id INTEGER PRIMARY KEY, k INTEGER NOT NULL, c TEXT CHECK (c <> 'bad'));\n\
             -- a comment between statements\n;; INSERT INTO t1 (k, c) VALUES (5, 'five'), (6, NULL);",
        )
        .unwrap();
    assert_eq!(o, Outcome { rows: 0, affected: 2 });
    // Parameters out of order in the text: ?2 comes first.
    s.prepare(&[
        ("ins", "INSERT INTO t1 (c, id, k) VALUES (?2, ?1, ?3)"),
        ("sel", "SELECT id, k, c FROM t1 WHERE id >= ?1 ORDER BY id"),
        ("upd", "UPDATE t1 SET k = k + 1 WHERE id <= ?1"),
    ])
    .unwrap();
    struct V<'a>(ParamValue<'a>);
    impl Param for V<'_> {
        fn value(&self) -> ParamValue<'_> {
            self.0
        }
    }
    let params = [V(ParamValue::Int(10)), V(ParamValue::Text(b"ten")), V(ParamValue::Int(100))];
    assert_eq!(s.execute("ins", &params).unwrap(), Outcome { rows: 0, affected: 1 });
    assert_eq!(s.execute("sel", &[2i64]).unwrap(), Outcome { rows: 2, affected: 0 });
    assert_eq!(s.execute("upd", &[100i64]).unwrap(), Outcome { rows: 0, affected: 3 });
    assert_eq!(
        s.rows("SELECT id, k, c FROM t1 ORDER BY id").unwrap(),
        texts(&[
            &[Some("1"), Some("6"), Some("five")],
            &[Some("2"), Some("7"), None],
            &[Some("10"), Some("101"), Some("ten")]
        ])
    );
    // Errors carry the extended code's name, and leave the session usable.
    let e = s.execute("ins", &params).unwrap_err();
    assert_eq!(error_kind(&e), "sqlite_constraint_primarykey", "{e:?}");
    let bad = [V(ParamValue::Int(11)), V(ParamValue::Text(b"bad")), V(ParamValue::Int(1))];
    let e = s.execute("ins", &bad).unwrap_err();
    assert_eq!(error_kind(&e), "sqlite_constraint_check");
    assert!(describe(&e).starts_with("SQLITE_CONSTRAINT_CHECK: CHECK constraint failed"), "{}", describe(&e));
    assert_eq!(error_kind(&s.simple("SELECT * FROM nowhere").unwrap_err()), "sqlite_error");
    assert!(matches!(s.execute("nope", &[1i64]), Err(DbError::Client(_))));
    assert!(!s.is_closed());
    // Transactions.
    assert!(!s.in_transaction());
    s.begin_write().unwrap();
    assert!(s.in_transaction());
    s.execute("upd", &[1i64]).unwrap();
    s.rollback().unwrap();
    assert!(!s.in_transaction());
    s.begin().unwrap();
    s.execute("upd", &[1i64]).unwrap();
    s.commit().unwrap();
    assert_eq!(s.rows("SELECT k FROM t1 WHERE id = 1").unwrap(), texts(&[&[Some("7")]]));
    // The catalog query of the dialect, through the generic filter.
    s.simple("CREATE TABLE sbtest2 (x); CREATE TABLE sbtest10 (x); CREATE TABLE sbtestx1 (x)").unwrap();
    assert_eq!(existing_tables(&mut s, &DIALECT, "sbtest").unwrap(), ["sbtest2", "sbtest10"]);
    assert_eq!(s.lock_waits(), LockWaits::default());
    // A NULL parameter, at the ffi level.
    let conn = Connection::open(
        &Library::load(&lib).unwrap(),
        &dir.path("r.db"),
        ffi::OPEN_READWRITE,
        BusyState::new(Duration::ZERO),
    )
    .unwrap();
    let (stmt, rest) = conn.once("SELECT ?1 IS NULL, ?2; SELECT 1").unwrap();
    assert_eq!(rest.trim(), "SELECT 1");
    let mut got = Vec::new();
    stmt.unwrap().run([Bind::Null, Bind::Int(-3)], |r| got.push((r.int(0), r.text(1)))).unwrap();
    assert_eq!(got, [(1, Some("-3".to_string()))]);
    assert_eq!(LOST_HERE.count(), 0);
}

#[test]
fn an_unusable_database_closes_the_session_and_is_lost() {
    let Some(lib) = system_lib() else { return };
    static LOST_HERE: Lost = Lost::new();
    let dir = TempDir::new("notadb");
    let db = dir.path("junk.db");
    std::fs::write(&db, vec![b'x'; 8192]).unwrap();
    // Opening does not read the file: the connect succeeds, the first statement that reads fails.
    let mut s = driver(config(&lib, &db), &LOST_HERE).connect().unwrap();
    let e = s.rows("SELECT count(*) FROM sqlite_master").unwrap_err();
    let DbError::Server(se) = &e else { panic!("{e:?}") };
    assert_eq!((se.code.as_str(), se.fatal), ("SQLITE_NOTADB", true));
    assert!(se.message.contains("file is not a database") && se.message.contains("the session is closed"), "{se:?}");
    assert!(s.is_closed() && !s.in_transaction());
    assert_eq!(error_kind(&s.simple("SELECT 1").unwrap_err()), "connection-closed");
    assert_eq!(error_kind(&s.execute("x", &[1i64]).unwrap_err()), "connection-closed");
    drop(s);
    assert_eq!(LOST_HERE.count(), 1);
    assert!(LOST_HERE.ended_early(Instant::now()).unwrap().reason.starts_with("SQLITE_NOTADB: file is not a database"));
    // With a pragma, the connect itself fails, and nothing is lost.
    let mut c = config(&lib, &db);
    c.pragmas = vec![("journal_mode".into(), "wal".into())];
    let err = driver(c, &LOST_HERE).connect().err().unwrap();
    assert!(err.contains("SQLITE_NOTADB"), "{err}");
    // A database that cannot be opened at all.
    let err = driver(config(&lib, &dir.path("no/such/dir/x.db")), &LOST_HERE).connect().err().unwrap();
    assert!(err.starts_with("cannot open the SQLite database ") && err.contains("SQLITE_CANTOPEN"), "{err}");
    assert_eq!(LOST_HERE.count(), 1);
}

#[test]
fn a_writer_waits_for_the_lock_then_gives_up_with_sqlite_busy() {
    let Some(lib) = system_lib() else { return };
    static LOST_HERE: Lost = Lost::new();
    let dir = TempDir::new("busy");
    let mut c = config(&lib, &dir.path("b.db"));
    c.pragmas = vec![("journal_mode".into(), "wal".into())];
    c.busy_timeout = Duration::from_millis(150);
    let d = driver(c, &LOST_HERE);
    let mut a = d.connect().unwrap();
    let mut b = d.connect().unwrap();
    a.simple("CREATE TABLE t (x)").unwrap();
    a.begin_write().unwrap();
    a.simple("INSERT INTO t VALUES (1)").unwrap();
    // b waits the whole timeout, then fails.
    let t0 = Instant::now();
    let e = b.simple("INSERT INTO t VALUES (2)").unwrap_err();
    let waited = t0.elapsed();
    assert_eq!(error_kind(&e), "sqlite_busy", "{e:?}");
    assert!(waited >= Duration::from_millis(150) && waited < Duration::from_secs(2), "{waited:?}");
    let w = b.lock_waits();
    assert_eq!(w.statements, 1);
    assert!(w.seconds >= 0.14 && w.seconds <= waited.as_secs_f64(), "{w:?}");
    // Reads do not wait in WAL mode.
    assert_eq!(b.rows("SELECT count(*) FROM t").unwrap(), texts(&[&[Some("0")]]));
    assert_eq!(b.lock_waits().statements, 1);
    // A writer that finishes while b waits lets it through.
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(40));
        a.commit().unwrap();
        a
    });
    b.begin_write().unwrap();
    b.simple("INSERT INTO t VALUES (3)").unwrap();
    b.commit().unwrap();
    let a = t.join().unwrap();
    let w = b.lock_waits();
    assert_eq!(w.statements, 2);
    assert_eq!(a.lock_waits(), LockWaits::default());
    assert_eq!(b.rows("SELECT count(*) FROM t").unwrap(), texts(&[&[Some("2")]]));
    assert!(!b.is_closed());
    assert_eq!(LOST_HERE.count(), 0);
}

#[test]
fn prewarm_reads_every_table_and_index() {
    let Some(lib) = system_lib() else { return };
    static LOST_HERE: Lost = Lost::new();
    let dir = TempDir::new("prewarm");
    let mut c = config(&lib, &dir.path("w.db"));
    let mut s = driver(c.clone(), &LOST_HERE).connect().unwrap();
    s.simple(
        "CREATE TABLE \"odd \"\"name\" (id INTEGER PRIMARY KEY, k INT UNIQUE, c TEXT);\
         CREATE INDEX k_c ON \"odd \"\"name\" (k, c);\
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 500) \
         INSERT INTO \"odd \"\"name\" (k, c) SELECT i, 'c' || i FROM n;\
         CREATE TABLE w (a TEXT PRIMARY KEY, b) WITHOUT ROWID; INSERT INTO w VALUES ('x', 1), ('y', 2);",
    )
    .unwrap();
    assert_eq!(s.prewarmed, 0);
    drop(s);
    c.prewarm = true;
    let s = driver(c, &LOST_HERE).connect().unwrap();
    // 500 rows, 500 entries in each of its two indexes, and w's 2 rows (its key is the table).
    assert_eq!(s.prewarmed, 500 + 500 + 500 + 2);
    assert_eq!(s.lock_waits(), LockWaits::default());
}

#[test]
fn captured_statements_are_counted_per_text() {
    let Some(lib) = system_lib() else { return };
    static LOST_HERE: Lost = Lost::new();
    let dir = TempDir::new("capture");
    let out = dir.path("statements.jsonl");
    let d = SqliteDriver::with(config(&lib, &dir.path("c.db")), Some(out.clone()), &LOST_HERE).unwrap();
    let mut s = d.connect().unwrap();
    s.simple("CREATE TABLE t (id INTEGER PRIMARY KEY, k INT)").unwrap();
    s.prepare(&[("ins", "INSERT INTO t (k) VALUES (?1)"), ("sel", "SELECT k FROM t WHERE id <= ?1")]).unwrap();
    for k in 0..5i64 {
        s.execute("ins", &[k]).unwrap();
    }
    s.execute("sel", &[3i64]).unwrap();
    s.execute("sel", &[10i64]).unwrap();
    s.simple("UPDATE t SET k = 0 WHERE id > 1").unwrap();
    s.begin().unwrap();
    s.commit().unwrap();
    assert!(!out.exists(), "written only at the end");
    drop(s);
    let text = std::fs::read_to_string(&out).unwrap();
    let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let find = |sql: &str| lines.iter().find(|l| l["sql"] == sql).unwrap_or_else(|| panic!("{sql} in {text}")).clone();
    assert_eq!(
        find("INSERT INTO t (k) VALUES (?1)"),
        serde_json::json!({"sql": "INSERT INTO t (k) VALUES (?1)", "calls": 5, "rows": 5})
    );
    assert_eq!(find("SELECT k FROM t WHERE id <= ?1")["rows"], 8);
    assert_eq!(find("SELECT k FROM t WHERE id <= ?1")["calls"], 2);
    assert_eq!(find("UPDATE t SET k = 0 WHERE id > 1")["rows"], 4);
    assert_eq!(find("BEGIN")["calls"], 1);
    assert_eq!(find("COMMIT")["rows"], 0);
    // A second session appends its own lines.
    let mut s = d.connect().unwrap();
    s.rows("SELECT count(*) FROM t").unwrap();
    drop(s);
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(text.lines().filter(|l| l.contains("count(*)")).count(), 1);
    assert_eq!(text.lines().count(), lines.len() + 1);
}

#[test]
fn code_names_and_statement_kinds() {
    assert_eq!(code_name(5), "SQLITE_BUSY");
    assert_eq!(code_name(5 | 2 << 8), "SQLITE_BUSY_SNAPSHOT");
    assert_eq!(code_name(19 | 1 << 8), "SQLITE_CONSTRAINT_CHECK");
    assert_eq!(code_name(10 | 33 << 8), "SQLITE_IOERR_CORRUPTFS");
    assert_eq!(code_name(10 | 99 << 8), format!("SQLITE_{}", 10 | 99 << 8));
    assert_eq!(code_name(77), "SQLITE_77");
    for fatal in [11, 26, 10, 10 | 3 << 8, 13, 14] {
        assert!(is_fatal(fatal), "{}", code_name(fatal));
    }
    for not in [1, 5, 6, 19 | 6 << 8, 8] {
        assert!(!is_fatal(not), "{}", code_name(not));
    }
    for dml in [
        "INSERT INTO t VALUES (1)",
        "  update t set x=1",
        "/* c */ DELETE FROM t",
        "-- c\nREPLACE INTO t VALUES (1)",
        ";\n; INSERT INTO t VALUES (2)",
    ] {
        assert!(is_dml(dml), "{dml}");
    }
    for not in ["SELECT 1", "BEGIN IMMEDIATE", "CREATE TABLE insert_x (a)", "PRAGMA x=1", "", "/* unterminated"] {
        assert!(!is_dml(not), "{not}");
    }
}
