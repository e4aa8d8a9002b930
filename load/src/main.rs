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
use options::{Analytics, Cli, Command, Engine, Target};
use output::{emit, ErrorLine};
use serde::Serialize;
use suites::sysbench::workloads;
use suites::{analytics, ibench, sysbench};

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
        Command::Analytics { action: Analytics::Load { opts, .. } } => analytics::load::run(driver, opts),
        Command::Analytics { action: Analytics::Query { opts, .. } } => analytics::query::run(driver, opts),
        Command::List { .. } | Command::Analytics { action: Analytics::Sql { .. } } => {
            unreachable!("connects to nothing")
        }
    }
}

/// Runs a measuring subcommand on the driver of `target`'s engine.
fn run_on(target: &Target, command: &Command) -> Result<(), String> {
    match target.engine {
        Engine::Postgres => target.postgres().and_then(|e| run_step(&PgDriver::new(e), command)),
        Engine::Mysql => target.mysql().and_then(|e| run_step(&MysqlDriver::new(e), command)),
        Engine::Sqlite => target.sqlite.config().and_then(SqliteDriver::new).and_then(|d| run_step(&d, command)),
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
        Command::Analytics { action: Analytics::Sql { engine, opts } } => analytics::print_sql(engine.dialect(), opts),
        Command::Sysbench { target, .. }
        | Command::Ibench { target, .. }
        | Command::Analytics { action: Analytics::Load { target, .. } | Analytics::Query { target, .. } } => {
            run_on(target, &cli.command)
        }
    };
    if let Err(message) = result {
        emit(&ErrorLine { message: &message });
        eprintln!("dbsweep-load: {message}");
        std::process::exit(2);
    }
}
