//! dbsweep-load: runs one benchmark step against one database and streams
//! JSON lines on stdout: one per second, then a summary.

mod db;
mod metrics;
mod workloads;

use clap::{Parser, Subcommand};
use db::ConnOpts;
use serde::Serialize;

#[derive(Parser)]
#[command(name = "dbsweep-load", version, about = "Native load client of dbsweep: one benchmark step, JSON lines out")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Create and load the sbtest tables (the sysbench prepare step).
    Prepare {
        #[command(flatten)]
        conn: ConnOpts,
        #[arg(long, default_value_t = 1)]
        tables: u32,
        #[arg(long, default_value_t = 10_000)]
        rows: i32,
        /// Give id a secondary index instead of a primary key (sysbench --secondary).
        #[arg(long)]
        no_pk: bool,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Run one microbenchmark for a fixed time.
    Run {
        /// The microbenchmark, e.g. point-query.
        workload: String,
        #[command(flatten)]
        conn: ConnOpts,
        #[arg(long, default_value_t = 1)]
        tables: u32,
        #[arg(long, default_value_t = 10_000)]
        rows: i32,
        /// Client threads, one connection each.
        #[arg(long, default_value_t = 1)]
        clients: u32,
        /// Measured seconds (after the warm-up).
        #[arg(long, default_value_t = 10)]
        seconds: u64,
        /// Warm-up seconds, excluded from the statistics.
        #[arg(long, default_value_t = 5)]
        warmup: u64,
        /// Send statements as plain text instead of preparing them.
        #[arg(long)]
        no_prepared: bool,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// List the workloads this client knows.
    List,
}

#[derive(Serialize)]
struct ErrorLine<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    message: &'a str,
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Prepare { conn, tables, rows, no_pk, seed } => {
            workloads::prepare::run(&conn, workloads::prepare::PrepareOpts { tables, rows, primary_key: !no_pk, seed })
        }
        Command::Run { workload, conn, tables, rows, clients, seconds, warmup, no_prepared, seed } => {
            match workloads::sysbench::find(&workload) {
                None => Err(format!(
                    "unknown workload '{workload}'; have: {}",
                    workloads::sysbench::names().join(", ")
                )),
                Some(w) => workloads::exec::run(
                    &conn,
                    w,
                    workloads::exec::RunOpts { tables, rows, clients, seconds, warmup, prepared: !no_prepared, seed },
                ),
            }
        }
        Command::List => {
            for w in workloads::sysbench::ALL {
                println!("{}\t{}\t{}", w.name, w.group, w.queries_per_event());
            }
            Ok(())
        }
    };
    if let Err(message) = result {
        metrics::emit(&ErrorLine { kind: "error", message: &message });
        eprintln!("dbsweep-load: {message}");
        std::process::exit(2);
    }
}
