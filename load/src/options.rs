//! The command line: `dbsweep-load sysbench STEP`, `dbsweep-load ibench STEP`, `dbsweep-load list`.

use crate::driver::Endpoint;
use crate::suites::{ibench, sysbench};
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

/// The engines this client has a driver for.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq)]
pub enum Engine {
    Postgres,
}

/// Which engine, where and how to connect. The password comes from the environment so it never
/// shows in the process list.
#[derive(Args, Debug, Clone)]
pub struct Target {
    #[arg(long, value_enum, default_value_t = Engine::Postgres)]
    pub engine: Engine,
    /// Host name, IP address, or the directory of the server's Unix socket.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    #[arg(long, default_value_t = 5432)]
    pub port: u16,
    #[arg(long, default_value = "dbsweep")]
    pub user: String,
    #[arg(long, default_value = "dbsweep")]
    pub dbname: String,
    /// Password (read from the environment only).
    #[arg(long = "password-env-unused", env = "DBSWEEP_PGPASSWORD", hide = true, default_value = "")]
    pub password: String,
}

impl Target {
    pub fn endpoint(&self) -> Endpoint {
        Endpoint {
            host: self.host.clone(),
            port: self.port,
            user: self.user.clone(),
            dbname: self.dbname.clone(),
            password: self.password.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            ("point-query", Some(2), 5555, Engine::Postgres)
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
}
