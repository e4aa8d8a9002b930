//! dbsweep-load: runs one benchmark step against one database and streams
//! JSON lines on stdout: one per second, then a summary.

mod db;
mod ibench;
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
        /// sysbench's --range-size, also its --random-points for the IN-list and range workloads.
        #[arg(long, default_value_t = 100)]
        range: u32,
        /// Exponent of the zipfian id distribution of update-zipf.
        #[arg(long, default_value_t = 0.8)]
        zipf_exp: f64,
    },
    /// Run one Insert Benchmark step (l.i0, l.x, l.i1, l.i2, qr100, qp100, qr500, qp500, qr1000, qp1000).
    Ibench {
        /// The step: l.i0 creates and loads the tables, l.x indexes them, l.i1/l.i2 insert and delete
        /// as fast as possible, qrNNN/qpNNN run range/point queries with NNN inserts/s per client.
        step: String,
        #[command(flatten)]
        conn: ConnOpts,
        #[command(flatten)]
        opts: ibench::Options,
    },
    /// List the workloads this client knows.
    List {
        /// One JSON object per line instead of a table.
        #[arg(long)]
        json: bool,
        /// The --range the statement counts are for.
        #[arg(long, default_value_t = 100)]
        range: u32,
    },
}

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
        Command::Run { workload, conn, tables, rows, clients, seconds, warmup, no_prepared, seed, range, zipf_exp } => {
            match workloads::sysbench::find(&workload) {
                None => {
                    Err(format!("unknown workload '{workload}'; have: {}", workloads::sysbench::names().join(", ")))
                }
                Some(w) => workloads::exec::run(
                    &conn,
                    w,
                    workloads::exec::RunOpts {
                        tables,
                        rows,
                        clients,
                        seconds,
                        warmup,
                        prepared: !no_prepared,
                        seed,
                        range,
                        zipf_exp,
                    },
                ),
            }
        }
        Command::Ibench { step, conn, opts } => ibench::run(&conn, &step, &opts),
        Command::List { json, range } => {
            for w in workloads::sysbench::ALL {
                if json {
                    metrics::emit(&WorkloadLine {
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
            Ok(())
        }
    };
    if let Err(message) = result {
        metrics::emit(&ErrorLine { kind: "error", message: &message });
        eprintln!("dbsweep-load: {message}");
        std::process::exit(2);
    }
}
