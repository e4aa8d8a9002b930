//! The sysbench load step: create the sbtest tables, insert rows in id order
//! with multi-row INSERTs, then create the secondary index on k.

use crate::db::lost::{EndedEarly, LOST};
use crate::db::{describe, Conn, ConnOpts};
use crate::metrics::{self, emit, Live, Phase};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use std::fmt::Write;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Rows per INSERT statement: about 200 KB of SQL, under sysbench's 512 KB cap.
const ROWS_PER_INSERT: i32 = 1000;

pub struct PrepareOpts {
    pub tables: u32,
    pub rows: i32,
    pub primary_key: bool,
    pub seed: u64,
}

/// The last line of a `prepare` step. `ended_early` is the field every summary has (see `run`'s):
/// always null here, since a lost connection fails the step with an error instead.
#[derive(Serialize)]
struct Summary {
    #[serde(rename = "type")]
    kind: &'static str,
    workload: &'static str,
    tables: u32,
    rows: i64,
    primary_key: bool,
    seconds: f64,
    insert_seconds: f64,
    index_seconds: f64,
    rows_per_sec: f64,
    client_cpu_user_s: f64,
    client_cpu_sys_s: f64,
    ended_early: Option<EndedEarly>,
}

/// `groups` groups of 11 random digits joined by '-', as sysbench fills c and pad, one byte at a time.
#[inline]
pub fn digit_groups(rng: &mut SmallRng, groups: usize, mut push: impl FnMut(u8)) {
    for g in 0..groups {
        if g > 0 {
            push(b'-');
        }
        for _ in 0..11 {
            push(b'0' + rng.gen_range(0..10u8));
        }
    }
}

fn exec(client: &mut Conn, sql: &str) -> Result<(), String> {
    client
        .simple(sql)
        .map(|_| ())
        .map_err(|e| format!("{}: {}", sql.chars().take(80).collect::<String>(), describe(&e)))
}

fn load(client: &mut Conn, opts: &PrepareOpts, live: &Live) -> Result<(f64, f64), String> {
    // Drop every sbtest table, not only the ones this load makes, as sysbench's driver script does.
    let old: Vec<String> = client
        .simple_rows("SELECT relname::text FROM pg_class WHERE relkind = 'r' AND relname ~ '^sbtest[0-9]+$'")
        .map_err(|e| describe(&e))?
        .into_iter()
        .filter_map(|mut r| r.pop().flatten())
        .collect();
    for t in old {
        exec(client, &format!("DROP TABLE IF EXISTS {t}"))?;
    }
    let mut rng = SmallRng::seed_from_u64(opts.seed);
    let t0 = Instant::now();
    let mut sql = String::with_capacity(ROWS_PER_INSERT as usize * 200);
    for t in 1..=opts.tables {
        let key = if opts.primary_key { ", PRIMARY KEY (id)" } else { "" };
        exec(
            client,
            &format!(
                "CREATE TABLE sbtest{t} (id SERIAL, k INTEGER NOT NULL DEFAULT 0, \
                 c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT ''{key})"
            ),
        )?;
        if !opts.primary_key {
            exec(client, &format!("CREATE INDEX xid{t} ON sbtest{t} (id)"))?;
        }
        let mut done = 0;
        while done < opts.rows {
            let n = ROWS_PER_INSERT.min(opts.rows - done);
            sql.clear();
            write!(sql, "INSERT INTO sbtest{t} (k, c, pad) VALUES ").unwrap();
            for i in 0..n {
                if i > 0 {
                    sql.push(',');
                }
                write!(sql, "({}, '", rng.gen_range(1..=opts.rows)).unwrap();
                digit_groups(&mut rng, 10, |b| sql.push(char::from(b)));
                sql.push_str("', '");
                digit_groups(&mut rng, 5, |b| sql.push(char::from(b)));
                sql.push_str("')");
            }
            let s0 = Instant::now();
            client.simple(&sql).map_err(|e| format!("loading sbtest{t}: {}", describe(&e)))?;
            live.record(n as u64, s0.elapsed().as_micros() as u64);
            done += n;
        }
    }
    let insert_seconds = t0.elapsed().as_secs_f64();
    let i0 = Instant::now();
    for t in 1..=opts.tables {
        exec(client, &format!("CREATE INDEX k_{t} ON sbtest{t} (k)"))?;
    }
    Ok((insert_seconds, i0.elapsed().as_secs_f64()))
}

pub fn run(conn: &ConnOpts, opts: PrepareOpts) -> Result<(), String> {
    if opts.tables == 0 || opts.rows <= 0 {
        return Err("prepare needs at least one table and one row per table".into());
    }
    let mut client = conn.connect()?;
    let live = Arc::new(vec![Live::default()]);
    let phase = Arc::new(Phase::default());
    let start = Instant::now();
    let cpu0 = metrics::own_cpu();
    let loader = {
        let (live, phase) = (live.clone(), phase.clone());
        std::thread::spawn(move || {
            let r = load(&mut client, &opts, &live[0]);
            phase.stop.store(true, Relaxed);
            r.map(|t| (t, opts))
        })
    };
    metrics::report_seconds(&live, &phase, start, Duration::ZERO, None, &mut || {});
    let loaded = loader.join().map_err(|_| "the loader panicked".to_string())?;
    // A broken connection leaves the tables half made: an error, which says that the connection was lost.
    let ((insert_seconds, index_seconds), opts) = loaded.map_err(|e| match LOST.ended_early(start) {
        Some(lost) => format!("lost the connection to the server {:.3} s into prepare: {e}", lost.at_s),
        None => e,
    })?;
    let seconds = start.elapsed().as_secs_f64();
    let (u, s) = metrics::own_cpu();
    let rows = opts.tables as i64 * opts.rows as i64;
    emit(&Summary {
        kind: "summary",
        workload: "prepare",
        tables: opts.tables,
        rows,
        primary_key: opts.primary_key,
        seconds,
        insert_seconds,
        index_seconds,
        rows_per_sec: rows as f64 / seconds,
        client_cpu_user_s: u - cpu0.0,
        client_cpu_sys_s: s - cpu0.1,
        ended_early: LOST.ended_early(start),
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_and_pad_have_sysbench_format() {
        let mut rng = SmallRng::seed_from_u64(7);
        let mut c = String::new();
        digit_groups(&mut rng, 10, |b| c.push(char::from(b)));
        assert_eq!(c.len(), 119);
        assert_eq!(c.split('-').count(), 10);
        assert!(c.split('-').all(|g| g.len() == 11 && g.bytes().all(|b| b.is_ascii_digit())));
        let mut pad = String::new();
        digit_groups(&mut rng, 5, |b| pad.push(char::from(b)));
        assert_eq!(pad.len(), 59);
    }
}
