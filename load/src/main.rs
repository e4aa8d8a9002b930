//! dbsweep-load: runs one benchmark step against one database and streams
//! JSON lines on stdout: one per second, then a summary envelope
//! (`output::summary::Summary`), or an error line.

mod driver;
mod options;
mod output;
mod suites;

use clap::Parser;
use driver::mysql::MysqlDriver;
use driver::pg::PgDriver;
use driver::sqlite::SqliteDriver;
use driver::Driver;
use options::{Cli, Command, Engine};
use output::{emit, ErrorLine};
use serde::Serialize;
use suites::sysbench::workloads;
use suites::{ibench, sysbench};

#[derive(Serialize)]
struct WorkloadLine {
    name: &'static str,
    group: &'static str,
    range: u32,
    statements_per_event: u64,
    explicit_trx: bool,
    writes: bool,
    /// Whether --range changes the SQL; otherwise it is only part of the result's name.
    uses_range: bool,
}

/// Runs a measuring subcommand on the engine's driver (compiled once per engine).
fn run_step<D: Driver>(driver: &D, command: &Command) -> Result<(), String> {
    match command {
        Command::Sysbench { step, opts, .. } => sysbench::run(driver, step, opts),
        Command::Ibench { step, opts, .. } => ibench::run(driver, step, opts),
        Command::List { .. } => unreachable!("list connects to nothing"),
    }
}

fn list(json: bool, range: u32) {
    for w in workloads::ALL {
        if json {
            emit(&WorkloadLine {
                name: w.name,
                group: w.group,
                range,
                statements_per_event: w.queries_per_event(),
                explicit_trx: w.explicit_trx,
                writes: w.writes(),
                uses_range: w.uses_range(),
            });
        } else {
            println!("{}\t{}\t{}", w.name, w.group, w.queries_per_event());
        }
    }
}

fn main() {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::List { json, range } => {
            list(*json, *range);
            Ok(())
        }
        Command::Sysbench { target, .. } | Command::Ibench { target, .. } => match target.engine {
            Engine::Postgres => target.postgres().and_then(|e| run_step(&PgDriver::new(e), &cli.command)),
            Engine::Mariadb => target.mariadb().and_then(|e| run_step(&MysqlDriver::new(e), &cli.command)),
            Engine::Sqlite => target.sqlite().and_then(SqliteDriver::new).and_then(|d| run_step(&d, &cli.command)),
        },
    };
    if let Err(message) = result {
        emit(&ErrorLine { message: &message });
        eprintln!("dbsweep-load: {message}");
        std::process::exit(2);
    }
}
