//! The command line: `dbsweep-load sysbench STEP`, `dbsweep-load ibench STEP`, `dbsweep-load
//! analytics load|query|sql`, `dbsweep-load list`.

use crate::driver::{mysql, pg, sqlite, Dialect, Endpoint};
use crate::suites::{analytics, ibench, sysbench};
use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Parser)]
#[command(name = "dbsweep-load", version, about = "Native load client of dbsweep: one benchmark step, JSON lines out")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Run one sysbench step: `prepare` (create and load the sbtest tables) or a microbenchmark
    /// for a fixed time (point-query, read-only, scan, ...: see `list`).
    Sysbench {
        /// prepare, or the microbenchmark, e.g. point-query.
        step: String,
        #[command(flatten)]
        target: Target,
        #[command(flatten)]
        opts: sysbench::Options,
    },
    /// Run one Insert Benchmark step (l.i0, l.x, l.i1, l.i2, qr100, qp100, qr500, qp500, qr1000, qp1000).
    Ibench {
        /// The step: l.i0 creates and loads the tables, l.x indexes them, l.i1/l.i2 insert and delete
        /// as fast as possible, qrNNN/qpNNN run range/point queries with NNN inserts/s per client.
        step: String,
        #[command(flatten)]
        target: Target,
        #[command(flatten)]
        opts: ibench::Options,
    },
    /// The analytic data sets derived from TPC-H and TPC-DS: load one, time a query, or show the SQL.
    Analytics {
        #[command(subcommand)]
        action: Analytics,
    },
    /// List the sysbench microbenchmarks this client knows.
    List {
        /// One JSON object per line instead of a table.
        #[arg(long)]
        json: bool,
        /// The --range the statement counts are for.
        #[arg(long, default_value_t = 100)]
        range: u32,
    },
}

/// `dbsweep-load analytics ...`.
#[derive(Subcommand)]
pub enum Analytics {
    /// Create the set's tables, stream each table's rows from the generator into the engine's bulk
    /// path, add the keys, analyze.
    Load {
        #[command(flatten)]
        target: Target,
        #[command(flatten)]
        opts: analytics::LoadOptions,
    },
    /// Run one query: warm-up runs, then measured ones, each until its last row is read.
    Query {
        #[command(flatten)]
        target: Target,
        #[command(flatten)]
        opts: analytics::QueryOptions,
    },
    /// Print, one JSON line each, the statements the engine would receive (connects to nothing).
    Sql {
        #[arg(long, value_enum)]
        engine: Engine,
        #[command(flatten)]
        opts: analytics::SqlOptions,
    },
}

/// The engines this client has a driver for. An engine's own options belong to its driver, which
/// `Target` flattens in (SQLite's); the servers share `Target`'s.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq)]
pub enum Engine {
    /// A Postgres server (--host, --port, --user, --dbname).
    Postgres,
    /// A server of the MySQL protocol, MariaDB or Oracle's MySQL (--host, --port, --user, --dbname), over
    /// TCP or its Unix socket; `mariadb` is another name for it (the server's greeting tells the two apart).
    #[value(alias = "mariadb")]
    Mysql,
    /// An SQLite library opened in this process (--library, --database, --pragma, ...).
    Sqlite,
}

impl Engine {
    /// The engine's SQL, known without a connection.
    pub fn dialect(self) -> &'static dyn Dialect {
        match self {
            Engine::Postgres => &pg::DIALECT,
            Engine::Mysql => &mysql::DIALECT,
            Engine::Sqlite => &sqlite::DIALECT,
        }
    }

    /// The engine's value of --engine (an alias given is named by the engine's own name).
    pub fn name(self) -> String {
        self.to_possible_value().map_or_else(|| format!("{self:?}"), |v| v.get_name().to_string())
    }
}

/// Which engine, where and how to connect. The password comes from the environment so it never
/// shows in the process list.
#[derive(Args, Debug, Clone)]
pub struct Target {
    #[arg(long, value_enum, default_value_t = Engine::Postgres)]
    pub engine: Engine,
    /// Host name or IP address; or the Unix socket: for postgres the directory it is in, for
    /// mysql the socket file's absolute path (the port is then unused).
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// TCP port (default 5432 for postgres, 3306 for mysql).
    #[arg(long)]
    pub port: Option<u16>,
    #[arg(long, default_value = "dbsweep")]
    pub user: String,
    #[arg(long, default_value = "dbsweep")]
    pub dbname: String,
    /// Password (read from the environment only).
    #[arg(long = "password-env-unused", env = "DBSWEEP_PASSWORD", hide = true, default_value = "")]
    pub password: String,
    #[command(flatten)]
    pub sqlite: sqlite::Options,
}

/// The servers' usual ports, where --port is not given.
pub const POSTGRES_PORT: u16 = 5432;
pub const MYSQL_PORT: u16 = 3306;

impl Target {
    /// The server's endpoint, or a usage error when an embedded engine's options were given.
    fn server(&self, default_port: u16) -> Result<Endpoint, String> {
        self.sqlite.refuse_with(&self.engine.name())?;
        Ok(Endpoint {
            host: self.host.clone(),
            port: self.port.unwrap_or(default_port),
            user: self.user.clone(),
            dbname: self.dbname.clone(),
            password: self.password.clone(),
        })
    }

    /// Postgres's endpoint, or a usage error when SQLite's options were given.
    pub fn postgres(&self) -> Result<Endpoint, String> {
        self.server(POSTGRES_PORT)
    }

    /// The MySQL-protocol server's endpoint (MariaDB or MySQL), or a usage error when SQLite's
    /// options were given or the socket is not an absolute path to its file.
    pub fn mysql(&self) -> Result<Endpoint, String> {
        let e = self.server(MYSQL_PORT)?;
        if e.host.contains('/') && !e.host.starts_with('/') {
            return Err(format!("--host {}: a socket is given by its absolute path", e.host));
        }
        Ok(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use std::time::Duration;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("dbsweep-load").chain(args.iter().copied()))
    }

    #[test]
    fn subcommands_parse() {
        let Command::Sysbench { step, target, opts } =
            parse(&["sysbench", "point-query", "--clients", "2", "--port", "5555"]).unwrap().command
        else {
            panic!("not sysbench")
        };
        assert_eq!(
            (step.as_str(), opts.clients, target.port, target.engine),
            ("point-query", Some(2), Some(5555), Engine::Postgres)
        );
        assert_eq!(
            (target.host.as_str(), target.user.as_str(), target.dbname.as_str()),
            ("127.0.0.1", "dbsweep", "dbsweep")
        );
        let Command::Sysbench { step, opts, .. } =
            parse(&["sysbench", "prepare", "--tables", "4", "--rows", "100", "--no-pk"]).unwrap().command
        else {
            panic!("not sysbench")
        };
        assert_eq!((step.as_str(), opts.tables, opts.rows, opts.no_pk), ("prepare", 4, 100, true));
        let Command::Ibench { step, opts, .. } = parse(&["ibench", "l.i0", "--rows", "10"]).unwrap().command else {
            panic!("not ibench")
        };
        assert_eq!((step.as_str(), opts.rows), ("l.i0", Some(10)));
        assert!(matches!(parse(&["list", "--json"]).unwrap().command, Command::List { json: true, range: 100 }));
        // The old subcommands are gone, and an engine without a driver is refused.
        assert!(parse(&["run", "point-query"]).is_err());
        assert!(parse(&["prepare"]).is_err());
        assert!(parse(&["sysbench", "point-query", "--engine", "oracle"]).is_err());
    }

    fn target(args: &[&str]) -> Target {
        let mut all = vec!["sysbench", "point-query"];
        all.extend(args);
        match parse(&all).unwrap().command {
            Command::Sysbench { target, .. } => target,
            _ => panic!("not sysbench"),
        }
    }

    #[test]
    fn sqlite_options() {
        let t = target(&[
            "--engine",
            "sqlite",
            "--library",
            "/lib/libsqlite3.so",
            "--database",
            "/tmp/x.db",
            "--pragma",
            "journal_mode=wal",
            "--pragma",
            "main.cache_size = -200000",
            "--prewarm",
        ]);
        assert_eq!(t.engine, Engine::Sqlite);
        let c = t.sqlite.config().unwrap();
        assert_eq!(c.library, PathBuf::from("/lib/libsqlite3.so"));
        assert_eq!(c.database, PathBuf::from("/tmp/x.db"));
        assert_eq!(
            c.pragmas,
            [("journal_mode".to_string(), "wal".to_string()), ("main.cache_size".to_string(), "-200000".to_string())]
        );
        assert_eq!((c.busy_timeout, c.prewarm), (Duration::from_secs(10), true));
        assert_eq!(
            target(&["--engine", "sqlite", "--library", "l", "--database", "d", "--busy-timeout-ms", "250"])
                .sqlite
                .config()
                .unwrap()
                .busy_timeout,
            Duration::from_millis(250)
        );
        // What is missing or wrong is one sentence.
        assert_eq!(
            target(&["--engine", "sqlite", "--database", "d"]).sqlite.config().unwrap_err(),
            "--engine sqlite needs --library PATH, the SQLite shared library to open"
        );
        assert_eq!(
            target(&["--engine", "sqlite", "--library", "l"]).sqlite.config().unwrap_err(),
            "--engine sqlite needs --database PATH, the database file"
        );
        let bad = |p: &str| {
            target(&["--engine", "sqlite", "--library", "l", "--database", "d", "--pragma", p]).sqlite.config()
        };
        assert!(bad("journal_mode").unwrap_err().contains("the form is --pragma NAME=VALUE"));
        assert!(bad("journal mode=wal").unwrap_err().contains("not a pragma's name"));
        assert!(bad("synchronous=").unwrap_err().contains("no value"));
        assert!(bad("synchronous=1; DROP TABLE sbtest1").unwrap_err().contains("';'"));
        assert!(bad("busy_timeout=5").unwrap_err().contains("--busy-timeout-ms"));
        // Postgres keeps its options and refuses SQLite's.
        let pg = target(&["--port", "5433"]);
        assert_eq!(pg.postgres().unwrap().port, 5433);
        assert_eq!(target(&[]).postgres().unwrap().port, 5432);
        assert_eq!(
            target(&["--library", "l", "--prewarm"]).postgres().unwrap_err(),
            "--library, --prewarm are options of --engine sqlite, not of postgres"
        );
    }

    #[test]
    fn mysql_options() {
        let t = target(&["--engine", "mysql", "--host", "/tmp/x/mysqld.sock", "--user", "u", "--dbname", "d"]);
        assert_eq!(t.engine, Engine::Mysql);
        let e = t.mysql().unwrap();
        assert_eq!(
            (e.host.as_str(), e.port, e.user.as_str(), e.dbname.as_str()),
            ("/tmp/x/mysqld.sock", 3306, "u", "d")
        );
        // mariadb is the same engine: one protocol, and the server's greeting tells MariaDB from MySQL.
        let t = target(&["--engine", "mariadb", "--port", "13306"]);
        assert_eq!(t.engine, Engine::Mysql);
        let e = t.mysql().unwrap();
        assert_eq!((e.host.as_str(), e.port), ("127.0.0.1", 13306));
        assert_eq!((Engine::Mysql.name(), Engine::Postgres.name()), ("mysql".to_string(), "postgres".to_string()));
        // SQLite's options are refused, as for postgres; a socket is an absolute path.
        assert_eq!(
            target(&["--engine", "mariadb", "--pragma", "a=b"]).mysql().unwrap_err(),
            "--pragma are options of --engine sqlite, not of mysql"
        );
        assert_eq!(
            target(&["--engine", "mysql", "--host", "x/mysqld.sock"]).mysql().unwrap_err(),
            "--host x/mysqld.sock: a socket is given by its absolute path"
        );
        assert!(parse(&["ibench", "l.i0", "--engine", "mariadb", "--rows", "5"]).is_ok());
        assert!(parse(&["ibench", "l.i0", "--engine", "mysql", "--rows", "5"]).is_ok());
        assert!(parse(&["sysbench", "prepare", "--engine", "MariaDB"]).is_err());
    }

    #[test]
    fn the_help_shows_sqlites_options_under_their_heading() {
        use clap::CommandFactory;
        let mut cli = Cli::command();
        let help = cli.find_subcommand_mut("sysbench").unwrap().render_long_help().to_string();
        let heading = help.find("SQLite (--engine sqlite):").expect(&help);
        for flag in
            ["--library <PATH>", "--database <PATH>", "--pragma <NAME=VALUE>", "--busy-timeout-ms <MS>", "--prewarm"]
        {
            assert!(help.find(flag).expect(flag) > heading, "{flag} is not under SQLite's heading:\n{help}");
        }
        // The servers' options and the step's own come before it, under the general heading.
        for flag in ["--engine <ENGINE>", "--host <HOST>", "--clients <CLIENTS>"] {
            assert!(help.find(flag).expect(flag) < heading, "{flag} is under SQLite's heading:\n{help}");
        }
        assert!(help.contains("mysql") && help.contains("mariadb"), "{help}");
    }

    #[test]
    fn analytics_subcommands_parse() {
        let data = ["--set", "tpch", "--dir", "/d", "--scale", "0.01"];
        let args = |sub: &'static str, more: &[&'static str]| {
            let mut a = vec!["analytics", sub];
            a.extend(data);
            a.extend(more);
            a
        };
        let Command::Analytics { action: Analytics::Load { target, opts } } =
            parse(&args("load", &["--generator", "/g/tpcgen-cli", "--engine", "mariadb", "--port", "3307"]))
                .unwrap()
                .command
        else {
            panic!("not analytics load")
        };
        assert_eq!((target.engine, target.port), (Engine::Mysql, Some(3307)));
        assert_eq!((opts.data.set, opts.data.scale.as_str()), (analytics::DataSet::Tpch, "0.01"));
        assert_eq!((opts.data.dir, opts.generator), (PathBuf::from("/d"), PathBuf::from("/g/tpcgen-cli")));
        let Command::Analytics { action: Analytics::Query { target, opts } } =
            parse(&args("query", &["--query", "q05", "--repeats", "3", "--engine", "sqlite", "--library", "l"]))
                .unwrap()
                .command
        else {
            panic!("not analytics query")
        };
        assert_eq!(target.engine, Engine::Sqlite);
        assert_eq!((opts.query.as_str(), opts.repeats, opts.warmup_runs, opts.timeout_s), ("q05", 3, 1, 0));
        let Command::Analytics { action: Analytics::Query { opts, .. } } =
            parse(&args("query", &["--query", "q01", "--repeats", "1", "--warmup-runs", "0", "--timeout-s", "60"]))
                .unwrap()
                .command
        else {
            panic!("not analytics query")
        };
        assert_eq!((opts.warmup_runs, opts.timeout_s), (0, 60));
        let Command::Analytics { action: Analytics::Sql { engine, opts } } =
            parse(&args("sql", &["--engine", "sqlite", "--query", "q02"])).unwrap().command
        else {
            panic!("not analytics sql")
        };
        assert_eq!((engine, opts.query.as_deref()), (Engine::Sqlite, Some("q02")));
        assert!(!engine.dialect().typed_dates() && Engine::Postgres.dialect().typed_dates());
        // The generator is the load's, the repeats the query's; sql takes no connection's options.
        assert!(parse(&args("load", &[])).is_err());
        assert!(parse(&args("query", &["--query", "q01"])).is_err());
        assert!(parse(&args("sql", &["--engine", "postgres", "--port", "5"])).is_err());
        assert!(
            parse(&["analytics", "load", "--set", "tpcx", "--dir", "/d", "--scale", "1", "--generator", "g"]).is_err()
        );
    }
}
