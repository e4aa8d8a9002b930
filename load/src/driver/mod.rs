//! The engine behind a small interface: a `Driver` opens `Session`s (one per client thread), and a
//! `Dialect` holds the SQL that differs between engines. The suites use only these traits, so no
//! engine's name or catalog appears outside its own module (`pg/` for Postgres, `mysql/` for
//! MariaDB and MySQL).
//!
//! The traits are used as generics (`D: Driver`, `S: Session`), never as trait objects on the
//! hot path: every suite is compiled once per engine, and a statement costs what the engine's own
//! client costs, with no virtual call or boxing per query. Only the `Dialect`, which makes SQL
//! text before a step starts, is a trait object.
//!
//! The engines: Postgres (`pg/`) and MariaDB or MySQL (`mysql/`), servers spoken to over their wire
//! protocols (over `net`'s streams, with `link` and `readbuf` for what both do alike), and SQLite (`sqlite/`, an embedded library opened at run time).

pub mod bulk;
mod link;
pub mod lost;
pub mod mysql;
mod net;
pub mod pg;
mod readbuf;
pub mod sqlite;

use std::io::{self, BufRead};

/// Where and how to connect: engine-neutral data the options fill in.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// Host name, IP address, or an absolute path: the directory of Postgres's Unix socket, the
    /// socket file of MariaDB's or MySQL's.
    pub host: String,
    pub port: u16,
    pub user: String,
    pub dbname: String,
    /// Empty when the server asks for none.
    pub password: String,
}

/// Opens sessions on one database. Cloned into every thread that connects.
pub trait Driver: Clone + Send + Sync + 'static {
    type Session: Session;

    /// A new session, authenticated and ready for statements; the error is one line that names
    /// the endpoint.
    fn connect(&self) -> Result<Self::Session, String>;

    /// The engine's SQL.
    fn dialect(&self) -> &'static dyn Dialect;

    /// What the step ran on, for the summaries' `engine_library` (an embedded engine's library:
    /// its path and version), or None.
    fn describe(&self) -> Option<serde_json::Value> {
        None
    }
}

/// Time a session's statements spent waiting for locks (an embedded engine's busy handler).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct LockWaits {
    /// Statements that waited at least once.
    pub statements: u64,
    /// Seconds they waited, in all.
    pub seconds: f64,
}

impl LockWaits {
    pub fn add(&mut self, other: LockWaits) {
        self.statements += other.statements;
        self.seconds += other.seconds;
    }
}

/// One connection, used by one thread at a time.
///
/// A session that breaks (an I/O error, EOF, a FATAL from the server) after it was established
/// records itself once in `lost::LOST` and is closed from then on: every later call fails with
/// `DbError::Closed` without touching the network.
pub trait Session: Send + 'static {
    /// Prepares named statements, (name, SQL) each, the SQL with the dialect's placeholders.
    fn prepare(&mut self, statements: &[(&str, &str)]) -> Result<(), DbError>;

    /// Runs a prepared statement with its parameters.
    fn execute<'a, P: Param + 'a>(
        &mut self,
        statement: &str,
        params: impl IntoIterator<Item = &'a P>,
    ) -> Result<Outcome, DbError>;

    /// Runs SQL text as it is (values written in as literals).
    fn simple(&mut self, sql: &str) -> Result<Outcome, DbError>;

    /// Runs one query and returns its rows as text, NULL as None. Allocates: for checks before and
    /// after a step, not for the load.
    fn rows(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, DbError>;

    /// Starts an explicit transaction.
    fn begin(&mut self) -> Result<(), DbError> {
        self.simple("BEGIN").map(|_| ())
    }

    /// Starts an explicit transaction that will write. An engine that locks the whole database
    /// takes the write lock here, so that a transaction that reads first never has to upgrade.
    fn begin_write(&mut self) -> Result<(), DbError> {
        self.begin()
    }

    fn commit(&mut self) -> Result<(), DbError> {
        self.simple("COMMIT").map(|_| ())
    }

    fn rollback(&mut self) -> Result<(), DbError> {
        self.simple("ROLLBACK").map(|_| ())
    }

    /// Inside a transaction block, failed or not.
    fn in_transaction(&self) -> bool;

    /// The session broke and runs nothing more.
    fn is_closed(&self) -> bool;

    /// The lock waits of the session so far (none where the engine's sessions never wait for one
    /// in the client).
    fn lock_waits(&self) -> LockWaits {
        LockWaits::default()
    }

    /// The engine's SQL, as this session's driver has it.
    fn dialect(&self) -> &'static dyn Dialect;

    /// Runs one query and hands each row to `row` as text (NULL as None), keeping none of them;
    /// returns how many there were. The default reads them all first (`rows`); the drivers stream.
    fn each_row(&mut self, sql: &str, row: &mut OnRow<'_>) -> Result<u64, DbError> {
        let rows = self.rows(sql)?;
        let mut fields = Vec::new();
        for r in &rows {
            fields.clear();
            fields.extend(r.iter().map(|v| v.as_deref().map(str::as_bytes)));
            row(&fields);
        }
        Ok(rows.len() as u64)
    }

    /// Loads `rows` into `table` (of `columns` columns) by the engine's fastest bulk path; returns the
    /// rows loaded. `rows` are lines of '|'-separated fields, each line ending with a '|' after its
    /// last field, an empty field meaning NULL (`bulk`). A line of another form, or an error reading
    /// `rows`, fails the load as the server's errors do.
    ///
    /// This default prepares `INSERT INTO table VALUES (...)` and runs it once per row, in explicit
    /// transactions of `bulk::ROWS_PER_TRANSACTION` rows (an embedded engine's fastest path, with no
    /// round trip to save); the server engines override it with their own bulk protocol. The rows of
    /// the transactions committed before an error stay loaded.
    fn bulk_load(&mut self, table: &str, columns: usize, rows: &mut dyn BufRead) -> Result<u64, DbError> {
        let name = format!("dbsweep_bulk_{table}");
        let mut sql = format!("INSERT INTO {table} VALUES (");
        for i in 0..columns {
            if i > 0 {
                sql.push_str(", ");
            }
            self.dialect().placeholder(i, &mut sql);
        }
        sql.push(')');
        self.prepare(&[(&name, &sql)])?;
        let mut line = Vec::new();
        let mut loaded = 0u64;
        let result = loop {
            line.clear();
            match rows.read_until(b'\n', &mut line) {
                Ok(0) => break Ok(()),
                Ok(_) => {}
                Err(e) => break Err(DbError::Client(bulk::read_error(&e, loaded + 1))),
            }
            let mut fields = Vec::with_capacity(columns);
            if let Err(e) = bulk::split_row(&line, columns, loaded + 1, &mut fields) {
                break Err(DbError::Client(e));
            }
            if loaded.is_multiple_of(bulk::ROWS_PER_TRANSACTION) {
                if let Err(e) = self.begin_write() {
                    break Err(e);
                }
            }
            if let Err(e) = self.execute(&name, &fields) {
                break Err(e);
            }
            loaded += 1;
            if loaded.is_multiple_of(bulk::ROWS_PER_TRANSACTION) {
                if let Err(e) = self.commit() {
                    break Err(e);
                }
            }
        };
        match result {
            Ok(()) if self.in_transaction() => self.commit().map(|()| loaded),
            Ok(()) => Ok(loaded),
            Err(e) => {
                if self.in_transaction() && !self.is_closed() {
                    let _ = self.rollback();
                }
                Err(e)
            }
        }
    }

    /// Makes every later statement of this session fail once it has run `seconds` (0: no limit),
    /// with an error whose kind (`error_kind`) is `timeout`.
    fn set_statement_timeout(&mut self, seconds: u64) -> Result<(), DbError>;
}

/// An engine's SQL family: what a suite's own DDL matches on where the SQL differs between engines
/// (each suite owns its tables and queries, with a variant per family where needed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    Postgres,
    Mysql,
    Sqlite,
}

/// The facts of an engine's SQL that every suite may need: its family, placeholders, how to list its
/// tables and ask a table's storage engine, index hints and how an INT column takes a decimal. A suite's
/// tables and statements are the suite's own (`suites/<name>/ddl.rs`), so a new suite touches no driver.
pub trait Dialect: Sync {
    /// Which family the engine's SQL belongs to.
    fn family(&self) -> Family;

    /// Appends the placeholder of parameter `index` (0-based) of a prepared statement.
    fn placeholder(&self, index: usize, out: &mut String);

    /// A query with one text column: the names of the base tables named `prefix` followed by
    /// digits (sbtest1, pi2, ...) in the database connected to.
    fn list_tables(&self, prefix: &str) -> String;

    /// Creates index `name` on `table` (`columns` comma-separated).
    fn create_index(&self, name: &str, table: &str, columns: &str) -> String {
        format!("CREATE INDEX {name} ON {table} ({columns})")
    }

    /// A query with one text column and one row: the storage engine of `table`, where the engine
    /// has several (MySQL's InnoDB, RocksDB); None where it has one.
    fn table_storage(&self, _table: &str) -> Option<String> {
        None
    }

    /// Whether a decimal literal (12.34) stored into an INT column becomes an integer (rounded).
    /// Where it does not, the Insert Benchmark writes its price already rounded, so every engine
    /// stores the same integers.
    fn int_column_rounds_decimals(&self) -> bool;

    /// The hint that makes a query read `table`'s index `index`, written after the table's name
    /// in FROM; empty where the engine takes none (the SQL is then as without it).
    fn index_hint(&self, _index: &str) -> String {
        String::new()
    }

    /// Whether the engine has a DATE type, with `date 'YYYY-MM-DD'` literals and `extract(year from
    /// ...)`; where it has none, dates are kept as text.
    fn typed_dates(&self) -> bool;

    /// Whether `ALTER TABLE t ADD PRIMARY KEY (...)` adds a primary key to a loaded table; where it
    /// cannot, a unique index stands in.
    fn adds_primary_key(&self) -> bool;

    /// The statements that make a freshly loaded `table` ready for queries (its statistics, and
    /// whatever else a first query would otherwise pay for).
    fn after_load(&self, table: &str) -> Vec<String>;
}

/// The names of the tables `prefix` followed by digits that exist, sorted by their number.
pub fn existing_tables<S: Session>(s: &mut S, dialect: &dyn Dialect, prefix: &str) -> Result<Vec<String>, String> {
    let sql = dialect.list_tables(prefix);
    let rows = s.rows(&sql).map_err(|e| format!("listing the {prefix} tables: {}", describe(&e)))?;
    // The dialect's filter may be looser (a LIKE's '_', say): keep exactly prefix + digits.
    let number = |name: &str| {
        let digits = name.strip_prefix(prefix)?;
        (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())).then(|| digits.parse::<u64>().ok())?
    };
    let mut names: Vec<(u64, String)> =
        rows.into_iter().filter_map(|mut r| r.pop().flatten()).filter_map(|n| Some((number(&n)?, n))).collect();
    names.sort();
    names.dedup();
    Ok(names.into_iter().map(|(_, n)| n).collect())
}

/// What takes a query's rows one at a time: each row's values as text, NULL as None.
pub type OnRow<'a> = dyn FnMut(&[Option<&[u8]>]) + 'a;

/// What one statement did.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Outcome {
    /// Rows returned.
    pub rows: u64,
    /// Rows inserted, updated or deleted (the row count of a command's tag).
    pub affected: u64,
}

/// A statement parameter's value, as a driver binds it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ParamValue<'a> {
    Int(i64),
    /// UTF-8 text.
    Text(&'a [u8]),
    /// SQL's NULL.
    Null,
}

/// Something a prepared statement takes as a parameter.
pub trait Param {
    fn value(&self) -> ParamValue<'_>;
}

impl Param for i64 {
    #[inline]
    fn value(&self) -> ParamValue<'_> {
        ParamValue::Int(*self)
    }
}

/// An error the server (or the embedded engine) reported.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerError {
    /// Postgres's SQLSTATE (five characters), SQLite's result code name (SQLITE_BUSY, ...), or
    /// MariaDB's error number as MYSQL_<errno> (its SQLSTATE is then in the message).
    pub code: String,
    pub message: String,
    /// The server ends the session after it.
    pub fatal: bool,
}

/// Why a request failed.
#[derive(Debug)]
pub enum DbError {
    /// The server reported an error.
    Server(ServerError),
    /// The connection is gone (closed by the server, reset, or never made).
    Closed(String),
    /// The client failed on its own: a protocol violation, a bad value, an unsupported request.
    Client(String),
}

impl DbError {
    pub fn io(e: io::Error) -> DbError {
        use io::ErrorKind::*;
        match e.kind() {
            UnexpectedEof | ConnectionReset | ConnectionAborted | BrokenPipe | NotConnected => {
                DbError::Closed(e.to_string())
            }
            _ => DbError::Client(e.to_string()),
        }
    }

    pub fn client(e: impl std::fmt::Display) -> DbError {
        DbError::Client(e.to_string())
    }
}

/// The kind of an error that a statement timeout caused.
pub const TIMEOUT_KIND: &str = "timeout";

/// Whether `code` (a `ServerError`'s) is an engine's statement timeout.
fn is_timeout(code: &str) -> bool {
    [pg::TIMEOUT_CODES, mysql::TIMEOUT_CODES, sqlite::TIMEOUT_CODES].iter().any(|codes| codes.contains(&code))
}

/// One line for an error: the server's message when there is one.
pub fn describe(e: &DbError) -> String {
    match e {
        DbError::Server(s) => format!("{}: {}", s.code, s.message),
        DbError::Closed(m) => format!("connection closed: {m}"),
        DbError::Client(m) => m.clone(),
    }
}

/// The kind an error is counted under: "sqlstate-XXXXX" when Postgres sent a SQLSTATE, SQLite's
/// result code in lower case (sqlite_busy, sqlite_constraint_check), MariaDB's error number as
/// mysql_<errno> (mysql_1213), else a short name for the client-side failure.
///
/// A statement the session's `set_statement_timeout` stopped is of kind "timeout", whatever the engine
/// (each driver names the codes its engine stops such a statement with).
pub fn error_kind(e: &DbError) -> String {
    match e {
        DbError::Server(s) if is_timeout(&s.code) => TIMEOUT_KIND.to_string(),
        DbError::Server(s) if s.code.starts_with("SQLITE_") || s.code.starts_with("MYSQL_") => {
            s.code.to_ascii_lowercase()
        }
        DbError::Server(s) => format!("sqlstate-{}", s.code),
        DbError::Closed(_) => "connection-closed".to_string(),
        DbError::Client(_) => "client".to_string(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::path::{Path, PathBuf};

    /// A session that answers `rows` with a fixed table and fails everything else.
    struct Rows(Vec<Vec<Option<String>>>);

    impl Session for Rows {
        fn prepare(&mut self, _: &[(&str, &str)]) -> Result<(), DbError> {
            Err(DbError::Client("no".into()))
        }
        fn execute<'a, P: Param + 'a>(
            &mut self,
            _: &str,
            _: impl IntoIterator<Item = &'a P>,
        ) -> Result<Outcome, DbError> {
            Err(DbError::Client("no".into()))
        }
        fn simple(&mut self, _: &str) -> Result<Outcome, DbError> {
            Err(DbError::Client("no".into()))
        }
        fn rows(&mut self, _: &str) -> Result<Vec<Vec<Option<String>>>, DbError> {
            Ok(self.0.clone())
        }
        fn in_transaction(&self) -> bool {
            false
        }
        fn is_closed(&self) -> bool {
            false
        }
        fn dialect(&self) -> &'static dyn Dialect {
            &pg::DIALECT
        }
        fn set_statement_timeout(&mut self, _: u64) -> Result<(), DbError> {
            Err(DbError::Client("no".into()))
        }
    }

    #[test]
    fn existing_tables_keep_only_prefix_and_digits_in_number_order() {
        let names = ["sbtest10", "sbtest2", "sbtest1", "sbtest_x", "sbtest", "sbtest3a", "pi1"];
        let mut s = Rows(names.iter().map(|n| vec![Some(n.to_string())]).chain([vec![None]]).collect());
        let got = existing_tables(&mut s, &pg::DIALECT, "sbtest").unwrap();
        assert_eq!(got, ["sbtest1", "sbtest2", "sbtest10"]);
    }

    fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    /// An engine's facts live in its driver: no file outside `driver/pg/` names Postgres's catalog,
    /// none outside `driver/sqlite/` SQLite's, none outside `driver/mysql/` MySQL's catalog or index
    /// hints. A suite's tables are its own: the generated-id forms of its DDL appear only in a
    /// suite's `ddl.rs`, never in a driver. (The words are assembled here so that this file does not
    /// contain them.)
    #[test]
    fn engine_facts_stay_in_their_driver_and_tables_in_their_suite() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        sources(&src, &mut files);
        assert!(files.len() > 10, "found the sources: {files:?}");
        // Each file read once: its whole text, and its code without the comment lines (a driver's notes may say
        // where the tables went).
        let texts: Vec<(PathBuf, String, String)> = files
            .iter()
            .map(|f| {
                let text = std::fs::read_to_string(f).unwrap();
                let code = text.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<String>();
                (f.clone(), text, code)
            })
            .collect();
        let catalogs = [
            (src.join("driver").join("pg"), vec![["pg", "_class"].concat()]),
            (src.join("driver").join("sqlite"), vec![["sqlite", "_master"].concat()]),
            (src.join("driver").join("mysql"), vec![["information", "_schema"].concat(), ["FORCE ", "INDEX"].concat()]),
        ];
        for (dir, words) in &catalogs {
            let found: Vec<String> = texts
                .iter()
                .filter(|(f, _, _)| !f.starts_with(dir))
                .flat_map(|(f, text, _)| {
                    words.iter().filter(|w| text.contains(w.as_str())).map(move |w| format!("{f:?}: {w}"))
                })
                .collect();
            assert!(found.is_empty(), "{found:?}");
            let inside: String =
                texts.iter().filter(|(f, _, _)| f.starts_with(dir)).map(|(_, t, _)| t.as_str()).collect();
            assert!(words.iter().all(|w| inside.contains(w.as_str())), "{}", dir.display());
        }
        let ddl_words = [["BIG", "SERIAL"].concat(), ["ALTER ", "SEQUENCE"].concat(), ["AUTO_", "INCREMENT"].concat()];
        let is_ddl = |f: &PathBuf| f.starts_with(src.join("suites")) && f.file_name().is_some_and(|n| n == "ddl.rs");
        for w in &ddl_words {
            let outside: Vec<&PathBuf> = texts
                .iter()
                .filter(|(f, _, code)| !is_ddl(f) && code.contains(w.as_str()))
                .map(|(f, _, _)| f)
                .collect();
            assert!(outside.is_empty(), "{w} outside the suites' ddl.rs: {outside:?}");
            assert!(
                texts.iter().any(|(f, _, code)| is_ddl(f) && code.contains(w.as_str())),
                "{w}: the test looks nowhere"
            );
        }
    }

    #[test]
    fn error_kinds_name_the_engine_code() {
        let server = |code: &str| DbError::Server(ServerError { code: code.into(), message: "m".into(), fatal: false });
        assert_eq!(error_kind(&server("40001")), "sqlstate-40001");
        assert_eq!(error_kind(&server("SQLITE_BUSY")), "sqlite_busy");
        assert_eq!(error_kind(&server("SQLITE_CONSTRAINT_CHECK")), "sqlite_constraint_check");
        assert_eq!(describe(&server("SQLITE_BUSY")), "SQLITE_BUSY: m");
        assert_eq!(error_kind(&server("MYSQL_1213")), "mysql_1213");
        assert_eq!(error_kind(&server("MYSQL_1927")), "mysql_1927");
        let mysql = ServerError {
            code: "MYSQL_1146".into(),
            message: "(42S02) Table 'x.t' doesn't exist".into(),
            fatal: false,
        };
        assert_eq!(describe(&DbError::Server(mysql)), "MYSQL_1146: (42S02) Table 'x.t' doesn't exist");
        assert_eq!(error_kind(&DbError::Closed("gone".into())), "connection-closed");
    }

    #[test]
    fn a_statement_timeout_is_of_kind_timeout_on_every_engine() {
        let server = |code: &str| DbError::Server(ServerError { code: code.into(), message: "m".into(), fatal: false });
        // Postgres's query_canceled, MariaDB's max_statement_time, MySQL's max_execution_time, SQLite's interrupt.
        for code in ["57014", "MYSQL_1969", "MYSQL_3024", "SQLITE_INTERRUPT"] {
            assert_eq!(error_kind(&server(code)), "timeout", "{code}");
        }
        // Other interruptions keep their own kind.
        assert_eq!(error_kind(&server("MYSQL_1317")), "mysql_1317");
        assert_eq!(error_kind(&server("57P01")), "sqlstate-57P01");
        assert_eq!(error_kind(&server("SQLITE_ERROR")), "sqlite_error");
    }

    #[test]
    fn the_default_bulk_load_streams_rows_as_parameters() {
        use std::io::Cursor;
        /// Records what the default bulk path asks of a session.
        #[derive(Default)]
        struct Record {
            log: Vec<String>,
            in_trx: bool,
            fail_at: Option<usize>,
        }
        impl Session for Record {
            fn prepare(&mut self, s: &[(&str, &str)]) -> Result<(), DbError> {
                self.log.push(format!("prepare {} {}", s[0].0, s[0].1));
                Ok(())
            }
            fn execute<'a, P: Param + 'a>(
                &mut self,
                name: &str,
                params: impl IntoIterator<Item = &'a P>,
            ) -> Result<Outcome, DbError> {
                let values: Vec<String> = params
                    .into_iter()
                    .map(|p| match p.value() {
                        ParamValue::Null => "NULL".to_string(),
                        ParamValue::Text(t) => String::from_utf8_lossy(t).into_owned(),
                        ParamValue::Int(i) => i.to_string(),
                    })
                    .collect();
                self.log.push(format!("{name}({})", values.join(",")));
                if self.fail_at == Some(self.log.len()) {
                    return Err(DbError::Client("refused".into()));
                }
                Ok(Outcome { rows: 0, affected: 1 })
            }
            fn simple(&mut self, _: &str) -> Result<Outcome, DbError> {
                Ok(Outcome::default())
            }
            fn rows(&mut self, _: &str) -> Result<Vec<Vec<Option<String>>>, DbError> {
                Ok(Vec::new())
            }
            fn begin(&mut self) -> Result<(), DbError> {
                self.in_trx = true;
                self.log.push("BEGIN".into());
                Ok(())
            }
            fn commit(&mut self) -> Result<(), DbError> {
                self.in_trx = false;
                self.log.push("COMMIT".into());
                Ok(())
            }
            fn rollback(&mut self) -> Result<(), DbError> {
                self.in_trx = false;
                self.log.push("ROLLBACK".into());
                Ok(())
            }
            fn in_transaction(&self) -> bool {
                self.in_trx
            }
            fn is_closed(&self) -> bool {
                false
            }
            fn dialect(&self) -> &'static dyn Dialect {
                &sqlite::DIALECT
            }
            fn set_statement_timeout(&mut self, _: u64) -> Result<(), DbError> {
                Ok(())
            }
        }
        let mut s = Record::default();
        let n = s.bulk_load("t", 3, &mut Cursor::new(b"1|a||\n2||b|\n".to_vec())).unwrap();
        assert_eq!(n, 2);
        assert_eq!(
            s.log,
            [
                "prepare dbsweep_bulk_t INSERT INTO t VALUES (?1, ?2, ?3)",
                "BEGIN",
                "dbsweep_bulk_t(1,a,NULL)",
                "dbsweep_bulk_t(2,NULL,b)",
                "COMMIT"
            ]
        );
        // A bad line rolls back the open transaction, and says which row.
        let mut s = Record::default();
        let e = s.bulk_load("t", 2, &mut Cursor::new(b"1|a|\n2|b\n".to_vec())).unwrap_err();
        assert_eq!(describe(&e), "row 2 does not end with '|' after its last field: \"2|b\"");
        assert_eq!(s.log.last().unwrap(), "ROLLBACK");
        // So does a statement that fails.
        let mut s = Record { fail_at: Some(3), ..Record::default() };
        assert!(s.bulk_load("t", 1, &mut Cursor::new(b"1|\n".to_vec())).is_err());
        assert_eq!(s.log[1..], ["BEGIN", "dbsweep_bulk_t(1)", "ROLLBACK"]);
        // Nothing to load: no transaction.
        let mut s = Record::default();
        assert_eq!(s.bulk_load("t", 1, &mut Cursor::new(Vec::new())).unwrap(), 0);
        assert_eq!(s.log.len(), 1);
    }
}
