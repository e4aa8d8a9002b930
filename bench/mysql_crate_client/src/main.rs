//! The same closed loop dbsweep-load runs for sysbench's point-query and update-nonindex, written on the
//! `mysql` crate (server-side prepared statements, one connection per thread), so that
//! bench/client_overhead.py can weigh the crate's cost per query against dbsweep-load's own driver.
//!
//! mysql-crate-client WORKLOAD CLIENTS SECONDS ROWS HOST|SOCKET PORT USER DBNAME  (password: DBSWEEP_PASSWORD)
//! prints `queries N seconds S`.

use std::env;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use mysql::{Conn, OptsBuilder};

#[derive(Clone, Copy)]
enum Workload {
    PointQuery,
    UpdateNonindex,
}

/// xorshift64*: uniform ids without a dependency; statistical quality does not matter here.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

/// sysbench's `c` column: eleven groups of digits joined by dashes, 119 characters.
fn c_value(rng: &mut Rng) -> String {
    let mut s = String::with_capacity(120);
    for group in 0..11 {
        if group > 0 {
            s.push('-');
        }
        for _ in 0..10 {
            s.push(char::from(b'0' + rng.below(10) as u8));
        }
    }
    s
}

fn client(
    opts: OptsBuilder,
    workload: Workload,
    rows: u64,
    seed: u64,
    stop: &AtomicBool,
) -> mysql::Result<u64> {
    let mut conn = Conn::new(opts)?;
    let mut rng = Rng(seed | 1);
    let mut done = 0u64;
    match workload {
        Workload::PointQuery => {
            let stmt = conn.prep("SELECT c FROM sbtest1 WHERE id=?")?;
            while !stop.load(Ordering::Relaxed) {
                let id = rng.below(rows) + 1;
                let c: Option<Vec<u8>> = conn.exec_first(&stmt, (id,))?;
                if c.is_none() {
                    return Err(mysql::Error::DriverError(mysql::DriverError::SetupError));
                }
                done += 1;
            }
        }
        Workload::UpdateNonindex => {
            let stmt = conn.prep("UPDATE sbtest1 SET c=? WHERE id=?")?;
            while !stop.load(Ordering::Relaxed) {
                let id = rng.below(rows) + 1;
                conn.exec_drop(&stmt, (c_value(&mut rng), id))?;
                done += 1;
            }
        }
    }
    Ok(done)
}

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    if args.len() != 8 {
        eprintln!("usage: mysql-crate-client point-query|update-nonindex CLIENTS SECONDS ROWS HOST PORT USER DBNAME");
        return ExitCode::from(2);
    }
    let workload = match args[0].as_str() {
        "point-query" => Workload::PointQuery,
        "update-nonindex" => Workload::UpdateNonindex,
        other => {
            eprintln!("unknown workload {other}");
            return ExitCode::from(2);
        }
    };
    let numbers: Result<Vec<u64>, _> = args[1..4].iter().map(|a| a.parse::<u64>()).collect();
    let Ok([clients, seconds, rows]) = numbers.as_deref().map(|n| [n[0], n[1], n[2]]) else {
        eprintln!("CLIENTS, SECONDS and ROWS must be whole numbers");
        return ExitCode::from(2);
    };
    let Ok(port) = args[5].parse::<u16>() else {
        eprintln!("PORT must be a port number");
        return ExitCode::from(2);
    };
    let opts = OptsBuilder::new()
        .user(Some(args[6].clone()))
        .pass(env::var("DBSWEEP_PASSWORD").ok())
        .db_name(Some(args[7].clone()));
    // HOST is the loopback address, or the server's Unix socket when it is a path (--transport unix).
    let opts = if args[4].starts_with('/') {
        opts.socket(Some(args[4].clone())).prefer_socket(true)
    } else {
        opts.ip_or_hostname(Some(args[4].clone()))
            .tcp_port(port)
            .prefer_socket(false)
    };
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let threads: Vec<_> = (0..clients)
        .map(|i| {
            let (opts, stop) = (opts.clone(), Arc::clone(&stop));
            thread::spawn(move || client(opts, workload, rows, 0x9e37_79b9 * (i + 1), &stop))
        })
        .collect();
    thread::sleep(Duration::from_secs(seconds));
    stop.store(true, Ordering::Relaxed);
    let mut queries = 0;
    for t in threads {
        match t.join() {
            Ok(Ok(n)) => queries += n,
            Ok(Err(e)) => {
                eprintln!("client failed: {e}");
                return ExitCode::FAILURE;
            }
            Err(_) => {
                eprintln!("a client thread panicked");
                return ExitCode::FAILURE;
            }
        }
    }
    println!(
        "queries {queries} seconds {:.3}",
        started.elapsed().as_secs_f64()
    );
    ExitCode::SUCCESS
}
