//! SQLite, embedded: the client opens an SQLite shared library at run time (`ffi`, the path from
//! the command line), so one binary compares any two builds (3.34 and later). One connection per
//! client thread, each with the `--pragma`s applied, its own busy handler (`busy`), and when
//! `DBSWEEP_SQLITE_STATEMENTS` names a file, a statement trace (`capture`). SQLite's SQL is in
//! `dialect`, its command-line options (flattened into the load client's) in `options`.

mod busy;
mod capture;
mod dialect;
mod ffi;
mod options;

pub use dialect::DIALECT;
pub use options::Options;

/// The result code of a statement the session's time limit interrupted.
pub const TIMEOUT_CODES: &[&str] = &["SQLITE_INTERRUPT"];

use super::lost::{Lost, LOST};
use super::{describe, DbError, Dialect, Driver, LockWaits, OnRow, Outcome, Param, ParamValue, ServerError, Session};
use busy::BusyState;
use capture::Capture;
use ffi::{Bind, Connection, Library, StmtId};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The busy timeout when --busy-timeout-ms is not given.
pub const DEFAULT_BUSY_TIMEOUT_MS: u64 = 10_000;

/// How to open the database.
#[derive(Debug, Clone)]
pub struct Config {
    /// The SQLite shared library.
    pub library: PathBuf,
    /// The database file (created when missing).
    pub database: PathBuf,
    /// (name, value): `PRAGMA name=value` on every new connection, in order.
    pub pragmas: Vec<(String, String)>,
    /// How long a statement waits for a lock before it fails with SQLITE_BUSY.
    pub busy_timeout: Duration,
    /// Each new connection reads every table and index once.
    pub prewarm: bool,
}

/// Parses `--pragma NAME=VALUE`: NAME a pragma's name (optionally schema.name), VALUE one value
/// (no `;`: a pragma option runs one statement).
pub fn parse_pragma(arg: &str) -> Result<(String, String), String> {
    let bad = |why: &str| format!("--pragma {arg:?}: {why}; the form is --pragma NAME=VALUE, e.g. journal_mode=wal");
    let (name, value) = arg.split_once('=').ok_or_else(|| bad("no '='"))?;
    let (name, value) = (name.trim(), value.trim());
    let word = |w: &str| {
        w.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    if !name.split('.').all(word) || name.split('.').count() > 2 {
        return Err(bad("the name is not a pragma's name"));
    }
    if value.is_empty() {
        return Err(bad("no value"));
    }
    if value.contains(';') {
        return Err(bad("the value holds a ';'"));
    }
    if name.rsplit('.').next().is_some_and(|n| n.eq_ignore_ascii_case("busy_timeout")) {
        return Err(format!(
            "--pragma {arg:?}: the client installs its own busy handler; give the timeout as --busy-timeout-ms"
        ));
    }
    Ok((name.to_string(), value.to_string()))
}

/// Opens sessions on one SQLite database through one loaded library.
#[derive(Clone)]
pub struct SqliteDriver {
    lib: Arc<Library>,
    config: Arc<Config>,
    /// Where the statement counts go (DBSWEEP_SQLITE_STATEMENTS), read once.
    capture: Option<PathBuf>,
    lost: &'static Lost,
}

impl SqliteDriver {
    /// Loads the library; the error is one line naming its path.
    pub fn new(config: Config) -> Result<SqliteDriver, String> {
        let capture = std::env::var_os(capture::ENV).filter(|v| !v.is_empty()).map(PathBuf::from);
        SqliteDriver::with(config, capture, &LOST)
    }

    fn with(config: Config, capture: Option<PathBuf>, lost: &'static Lost) -> Result<SqliteDriver, String> {
        let lib = Library::load(&config.library)?;
        if lib.threadsafe() == 0 {
            return Err(format!(
                "the SQLite library {} was built with SQLITE_THREADSAFE=0: its connections cannot be used \
                 from several threads; build it with SQLITE_THREADSAFE=1 or 2",
                lib.path()
            ));
        }
        Ok(SqliteDriver { lib, config: Arc::new(config), capture, lost })
    }

    fn open(&self) -> Result<SqliteSession, String> {
        let c = &self.config;
        let db = c.database.display();
        let flags = ffi::OPEN_READWRITE | ffi::OPEN_CREATE | ffi::OPEN_NOMUTEX;
        let mut conn = Connection::open(&self.lib, &c.database, flags, BusyState::new(c.busy_timeout))
            .map_err(|e| format!("cannot open the SQLite database {db}: {}", describe(&server_error(e, false))))?;
        if let Some(path) = &self.capture {
            conn.trace(Capture::new(path.clone()))
                .map_err(|e| format!("cannot trace the statements on {db}: {}", e.message))?;
        }
        for (name, value) in &c.pragmas {
            conn.exec(&format!("PRAGMA {name}={value}"))
                .map_err(|e| format!("PRAGMA {name}={value} failed on {db}: {}", describe(&server_error(e, false))))?;
        }
        let mut s = SqliteSession {
            conn,
            statements: HashMap::new(),
            control: [None; 4],
            closed: false,
            lost: self.lost,
            prewarmed: 0,
        };
        if c.prewarm {
            s.prewarmed = s.prewarm().map_err(|e| format!("prewarming {db}: {e}"))?;
        }
        // Waits during the setup are not the step's.
        s.conn.statement_done();
        Ok(s)
    }
}

impl Driver for SqliteDriver {
    type Session = SqliteSession;

    fn connect(&self) -> Result<SqliteSession, String> {
        self.open()
    }

    fn dialect(&self) -> &'static dyn Dialect {
        &DIALECT
    }

    fn describe(&self) -> Option<serde_json::Value> {
        Some(serde_json::json!({
            "path": self.lib.path(),
            "version": self.lib.version(),
            "source_id": self.lib.source_id(),
        }))
    }
}

/// A prepared statement kept by a session.
#[derive(Debug, Clone, Copy)]
struct Kept {
    id: StmtId,
    /// An INSERT, UPDATE or DELETE: its Outcome's `affected` is sqlite3_changes.
    dml: bool,
}

/// The transaction statements, kept prepared once used.
const CONTROL: [&str; 4] = ["BEGIN", "BEGIN IMMEDIATE", "COMMIT", "ROLLBACK"];

/// One connection.
pub struct SqliteSession {
    conn: Connection,
    statements: HashMap<String, Kept>,
    /// CONTROL's statements, prepared on first use.
    control: [Option<StmtId>; 4],
    closed: bool,
    lost: &'static Lost,
    /// Rows and index entries --prewarm read.
    prewarmed: u64,
}

/// Whether `sql` is an INSERT, UPDATE, DELETE or REPLACE (after spaces, comments and empty statements).
pub fn is_dml(sql: &str) -> bool {
    fn skip(s: &str) -> &str {
        s.trim_start_matches(|c: char| c.is_whitespace() || c == ';')
    }
    let mut s = skip(sql);
    loop {
        if let Some(rest) = s.strip_prefix("--") {
            s = skip(rest.split_once('\n').map_or("", |(_, r)| r));
        } else if let Some(rest) = s.strip_prefix("/*") {
            s = skip(rest.split_once("*/").map_or("", |(_, r)| r));
        } else {
            break;
        }
    }
    let word: String = s.chars().take_while(|c| c.is_ascii_alphabetic()).collect();
    ["INSERT", "UPDATE", "DELETE", "REPLACE"].iter().any(|w| w.eq_ignore_ascii_case(&word))
}

/// SQLite's primary result codes, by number.
const PRIMARY: [&str; 29] = [
    "OK",
    "ERROR",
    "INTERNAL",
    "PERM",
    "ABORT",
    "BUSY",
    "LOCKED",
    "NOMEM",
    "READONLY",
    "INTERRUPT",
    "IOERR",
    "CORRUPT",
    "NOTFOUND",
    "FULL",
    "CANTOPEN",
    "PROTOCOL",
    "EMPTY",
    "SCHEMA",
    "TOOBIG",
    "CONSTRAINT",
    "MISMATCH",
    "MISUSE",
    "NOLFS",
    "AUTH",
    "FORMAT",
    "RANGE",
    "NOTADB",
    "NOTICE",
    "WARNING",
];

/// The extended result codes: (primary code, number, suffix) = SQLITE_<primary>_<suffix>, the code
/// being primary | number << 8.
const EXTENDED: &[(i32, i32, &str)] = &[
    (1, 1, "MISSING_COLLSEQ"),
    (1, 2, "RETRY"),
    (1, 3, "SNAPSHOT"),
    (4, 2, "ROLLBACK"),
    (5, 1, "RECOVERY"),
    (5, 2, "SNAPSHOT"),
    (5, 3, "TIMEOUT"),
    (6, 1, "SHAREDCACHE"),
    (6, 2, "VTAB"),
    (8, 1, "RECOVERY"),
    (8, 2, "CANTLOCK"),
    (8, 3, "ROLLBACK"),
    (8, 4, "DBMOVED"),
    (8, 5, "CANTINIT"),
    (8, 6, "DIRECTORY"),
    (10, 1, "READ"),
    (10, 2, "SHORT_READ"),
    (10, 3, "WRITE"),
    (10, 4, "FSYNC"),
    (10, 5, "DIR_FSYNC"),
    (10, 6, "TRUNCATE"),
    (10, 7, "FSTAT"),
    (10, 8, "UNLOCK"),
    (10, 9, "RDLOCK"),
    (10, 10, "DELETE"),
    (10, 11, "BLOCKED"),
    (10, 12, "NOMEM"),
    (10, 13, "ACCESS"),
    (10, 14, "CHECKRESERVEDLOCK"),
    (10, 15, "LOCK"),
    (10, 16, "CLOSE"),
    (10, 17, "DIR_CLOSE"),
    (10, 18, "SHMOPEN"),
    (10, 19, "SHMSIZE"),
    (10, 20, "SHMLOCK"),
    (10, 21, "SHMMAP"),
    (10, 22, "SEEK"),
    (10, 23, "DELETE_NOENT"),
    (10, 24, "MMAP"),
    (10, 25, "GETTEMPPATH"),
    (10, 26, "CONVPATH"),
    (10, 27, "VNODE"),
    (10, 28, "AUTH"),
    (10, 29, "BEGIN_ATOMIC"),
    (10, 30, "COMMIT_ATOMIC"),
    (10, 31, "ROLLBACK_ATOMIC"),
    (10, 32, "DATA"),
    (10, 33, "CORRUPTFS"),
    (11, 1, "VTAB"),
    (11, 2, "SEQUENCE"),
    (11, 3, "INDEX"),
    (14, 1, "NOTEMPDIR"),
    (14, 2, "ISDIR"),
    (14, 3, "FULLPATH"),
    (14, 4, "CONVPATH"),
    (14, 6, "SYMLINK"),
    (19, 1, "CHECK"),
    (19, 2, "COMMITHOOK"),
    (19, 3, "FOREIGNKEY"),
    (19, 4, "FUNCTION"),
    (19, 5, "NOTNULL"),
    (19, 6, "PRIMARYKEY"),
    (19, 7, "TRIGGER"),
    (19, 8, "UNIQUE"),
    (19, 9, "VTAB"),
    (19, 10, "ROWID"),
    (19, 11, "PINNED"),
    (19, 12, "DATATYPE"),
    (23, 1, "USER"),
    (27, 1, "RECOVER_WAL"),
    (27, 2, "RECOVER_ROLLBACK"),
    (28, 1, "AUTOINDEX"),
];

/// The name of an (extended) result code: SQLITE_BUSY, SQLITE_CONSTRAINT_CHECK, or SQLITE_<number>.
pub fn code_name(code: i32) -> String {
    let primary = code & 0xff;
    let Some(base) = usize::try_from(primary).ok().and_then(|p| PRIMARY.get(p)) else {
        return format!("SQLITE_{code}");
    };
    if code == primary {
        return format!("SQLITE_{base}");
    }
    match EXTENDED.iter().find(|(p, n, _)| p | (n << 8) == code) {
        Some((_, _, suffix)) => format!("SQLITE_{base}_{suffix}"),
        None => format!("SQLITE_{code}"),
    }
}

/// Errors after which the database file cannot be used: corrupt, not a database, I/O errors, a
/// full disk, a file that cannot be opened.
pub fn is_fatal(code: i32) -> bool {
    matches!(code & 0xff, 10 | 11 | 13 | 14 | 26)
}

fn server_error(e: ffi::Error, fatal: bool) -> DbError {
    DbError::Server(ServerError { code: code_name(e.code), message: e.message, fatal })
}

/// Double-quotes an identifier.
fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

impl SqliteSession {
    /// Turns SQLite's error into the session's: a fatal one closes the session and records it lost.
    #[cold]
    fn fail(&mut self, e: ffi::Error) -> DbError {
        if !is_fatal(e.code) {
            return server_error(e, false);
        }
        let mut e = e;
        e.message.push_str("; the database file cannot be used any more, so the session is closed");
        let err = server_error(e, true);
        if !self.closed {
            self.closed = true;
            self.lost.record(describe(&err));
        }
        err
    }

    #[inline]
    fn open(&self) -> Result<(), DbError> {
        if self.closed {
            return Err(DbError::Closed(
                "the session was closed after an error that left the database unusable".into(),
            ));
        }
        Ok(())
    }

    /// Ends a statement: counts a lock wait, and makes its outcome.
    #[inline]
    fn finish(&mut self, r: Result<u64, ffi::Error>, dml: bool) -> Result<Outcome, DbError> {
        self.conn.statement_done();
        match r {
            Ok(rows) => Ok(Outcome { rows, affected: if dml { self.conn.changes() } else { 0 } }),
            Err(e) => Err(self.fail(e)),
        }
    }

    /// Runs each statement of `sql` in turn, calling `row` for every row.
    fn script(&mut self, sql: &str, mut row: impl FnMut(&ffi::Row<'_>)) -> Result<Outcome, DbError> {
        self.open()?;
        let mut rest = sql;
        let mut out = Outcome::default();
        while !rest.trim().is_empty() {
            let step = self.conn.once(rest).and_then(|(stmt, tail)| match stmt {
                // Only spaces, comments or an empty statement (";") before the tail.
                None => Ok((None, tail)),
                Some(stmt) => Ok((Some((stmt.run([], &mut row)?, is_dml(rest))), tail)),
            });
            match step {
                Ok((Some((rows, dml)), tail)) => {
                    let o = self.finish(Ok(rows), dml)?;
                    out.rows += o.rows;
                    out.affected = o.affected;
                    rest = tail;
                }
                Ok((None, tail)) if tail.len() < rest.len() => rest = tail,
                Ok((None, _)) => break,
                Err(e) => {
                    self.conn.statement_done();
                    return Err(self.fail(e));
                }
            }
        }
        Ok(out)
    }

    /// Runs one of CONTROL's statements, prepared once.
    fn control(&mut self, which: usize) -> Result<(), DbError> {
        self.open()?;
        let id = match self.control[which] {
            Some(id) => id,
            None => {
                let id = self.conn.keep(CONTROL[which]).map_err(|e| self.fail(e))?;
                self.control[which] = Some(id);
                id
            }
        };
        let r = self.conn.kept(id).run([], |_| {});
        self.finish(r, false).map(|_| ())
    }

    /// Reads every table and every index completely; returns the rows and index entries read.
    fn prewarm(&mut self) -> Result<u64, String> {
        let catalog = "SELECT type, name, tbl_name FROM sqlite_master WHERE type IN ('table', 'index') \
                       ORDER BY type DESC, name";
        let objects = self.rows(catalog).map_err(|e| format!("reading the catalog: {}", describe(&e)))?;
        let mut read = 0;
        for o in objects {
            let [Some(kind), Some(name), Some(table)] = [&o[0], &o[1], &o[2]] else { continue };
            let sql = if kind == "table" {
                format!("SELECT * FROM {}", quoted(name))
            } else {
                // With no WHERE, count(*) would read the smallest index instead of this one.
                format!("SELECT count(*) FROM {} INDEXED BY {} WHERE 1", quoted(table), quoted(name))
            };
            let mut entries = 0u64;
            let counted = kind != "table";
            self.script(&sql, |r| {
                entries += if counted { r.int(0).max(0) as u64 } else { 1 };
            })
            .map_err(|e| format!("reading {kind} {name}: {}", describe(&e)))?;
            read += entries;
        }
        Ok(read)
    }
}

impl Session for SqliteSession {
    /// Prepares each statement for the session's life (persistent where the library can).
    fn prepare(&mut self, statements: &[(&str, &str)]) -> Result<(), DbError> {
        self.open()?;
        for &(name, sql) in statements {
            let id = self.conn.keep(sql).map_err(|e| self.fail(e))?;
            self.statements.insert(name.to_string(), Kept { id, dml: is_dml(sql) });
        }
        Ok(())
    }

    #[inline]
    fn execute<'a, P: Param + 'a>(
        &mut self,
        statement: &str,
        params: impl IntoIterator<Item = &'a P>,
    ) -> Result<Outcome, DbError> {
        self.open()?;
        let Some(&Kept { id, dml }) = self.statements.get(statement) else {
            return Err(DbError::Client(format!("no prepared statement named {statement}")));
        };
        let binds = params.into_iter().map(|p| match p.value() {
            ParamValue::Int(v) => Bind::Int(v),
            ParamValue::Text(t) => Bind::Text(t),
            ParamValue::Null => Bind::Null,
        });
        let r = self.conn.kept(id).run(binds, |_| {});
        self.finish(r, dml)
    }

    /// Every statement of `sql` in turn: rows add up, `affected` is the last statement's.
    fn simple(&mut self, sql: &str) -> Result<Outcome, DbError> {
        self.script(sql, |_| {})
    }

    fn rows(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, DbError> {
        let mut rows = Vec::new();
        self.script(sql, |r| rows.push((0..r.columns()).map(|i| r.text(i)).collect()))?;
        Ok(rows)
    }

    /// Every statement of `sql` in turn, each row handed to `row` as SQLite steps to it.
    fn each_row(&mut self, sql: &str, row: &mut OnRow<'_>) -> Result<u64, DbError> {
        let out = self.script(sql, |r| {
            let values: Vec<Option<&[u8]>> = (0..r.columns()).map(|i| r.bytes(i)).collect();
            row(&values);
        })?;
        Ok(out.rows)
    }

    fn dialect(&self) -> &'static dyn Dialect {
        &DIALECT
    }

    /// A statement that has run `seconds` is interrupted (SQLITE_INTERRUPT) by the progress handler.
    fn set_statement_timeout(&mut self, seconds: u64) -> Result<(), DbError> {
        self.open()?;
        self.conn.set_time_limit((seconds > 0).then(|| Duration::from_secs(seconds)));
        Ok(())
    }

    fn begin(&mut self) -> Result<(), DbError> {
        self.control(0)
    }

    /// BEGIN IMMEDIATE: takes the write lock at once (waiting in the busy handler), where a
    /// deferred transaction that reads first would fail with SQLITE_BUSY, without waiting, when
    /// another writer got there in between.
    fn begin_write(&mut self) -> Result<(), DbError> {
        self.control(1)
    }

    fn commit(&mut self) -> Result<(), DbError> {
        self.control(2)
    }

    fn rollback(&mut self) -> Result<(), DbError> {
        self.control(3)
    }

    fn in_transaction(&self) -> bool {
        !self.closed && !self.conn.autocommit()
    }

    fn is_closed(&self) -> bool {
        self.closed
    }

    fn lock_waits(&self) -> LockWaits {
        self.conn.busy().counts()
    }
}

#[cfg(test)]
mod tests;
