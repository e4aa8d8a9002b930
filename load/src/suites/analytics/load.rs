//! `analytics load`: the tables dropped and created (schema.sql), each table's rows streamed from the
//! generator into the engine's bulk path (`Session::bulk_load`), in schema order and timed apart,
//! then the keys (keys.sql) and each table made ready for queries (`Dialect::after_load`), each of
//! those two timed as one phase. A line a second says how many rows were read in it.

use super::ddl::{LoadPlan, Planned};
use super::generator::{Counted, Generator};
use super::{LoadOptions, STEP_LOAD};
use crate::driver::lost::LOST;
use crate::driver::{describe, Driver, LockWaits, Session};
use crate::output::emit;
use crate::output::histogram::new_histogram;
use crate::output::seconds::{report_seconds, Live, Phase};
use crate::output::summary::{ClientUsage, Counts, EngineDetail, OpsName, Suite, Summary};
use crate::output::usage::{own_cpu, own_max_rss_kb};
use hdrhistogram::Histogram;
use serde::Serialize;
use std::io::BufRead;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One table's load.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct TableLoad {
    pub table: String,
    /// Rows the engine loaded (its own count).
    pub rows: u64,
    /// From the generator's start to the last row loaded (and the generator's exit).
    pub seconds: f64,
}

/// The generator that made the data.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct GeneratorDetail {
    pub path: String,
    /// `PATH --version`'s answer.
    pub version: String,
}

/// The phases of a load, seconds each.
#[derive(Serialize, Debug, Clone, Copy, PartialEq)]
pub struct Phases {
    /// Every table's rows (the tables' creation before it is not counted here).
    pub load_s: f64,
    /// keys.sql's primary keys (or the unique indexes that stand in).
    pub keys_s: f64,
    /// `Dialect::after_load` of every table (statistics, and what else the engine does then).
    pub analyze_s: f64,
}

/// The `detail` of `analytics load`'s summary. The envelope's `operations` and `events` are the rows
/// loaded in all tables, `seconds` the whole step (dropping and creating the tables, the load, the
/// keys and the analysis), `rate` and `tps` rows per second of it; its latency histogram holds each
/// table's load time (µs: one bulk load per table). A failure ends the step with an error line
/// instead (`ended_early` is then null in no summary).
#[derive(Serialize, Debug)]
pub struct LoadDetail {
    /// "tpch" or "tpcds".
    pub set: &'static str,
    pub scale: f64,
    pub generator: GeneratorDetail,
    pub phases: Phases,
    /// In load order.
    pub tables: Vec<TableLoad>,
    /// lock_waits, lock_wait_s, engine_library.
    #[serde(flatten)]
    pub engine: EngineDetail,
}

/// What the load measured.
#[derive(Debug)]
pub struct Loaded {
    pub tables: Vec<TableLoad>,
    pub phases: Phases,
    /// Each table's load time, µs.
    pub latency: Histogram<u64>,
    pub lock_waits: LockWaits,
}

fn exec<S: Session>(s: &mut S, p: &Planned) -> Result<(), String> {
    s.simple(&p.sql).map(|_| ()).map_err(|e| format!("{}: {}", p.sql, describe(&e)))
}

/// Runs the plan on `s`, counting rows into `live`.
fn load<S: Session>(s: &mut S, plan: &LoadPlan, generator: &Generator, live: &Live) -> Result<Loaded, String> {
    for p in &plan.schema {
        exec(s, p)?;
    }
    let mut tables = Vec::with_capacity(plan.tables.len());
    let mut latency = new_histogram();
    let mut load_s = 0.0;
    // Every table's generator is started, and has given its first row, before any clock starts: TPC-H's takes
    // about a second of CPU to start (its text pool, ~300 MB), even for 5 rows. Started one after the other
    // that was 8 s of a 9 s load at scale 0.01; started together the start-ups overlap, and none of them runs
    // beside a table being timed. Each waits on its full pipe until its table's turn.
    let mut streams = Vec::with_capacity(plan.tables.len());
    for t in &plan.tables {
        streams.push(generator.rows(&t.name)?);
    }
    for (t, rows) in plan.tables.iter().zip(streams.iter_mut()) {
        rows.fill_buf().map_err(|e| format!("reading the generator's rows of {}: {e}", t.name))?;
    }
    for (t, mut rows) in plan.tables.iter().zip(streams) {
        let t0 = Instant::now();
        let loaded = s.bulk_load(&t.name, t.columns, &mut Counted::new(&mut rows, live));
        // The generator's own failure is the error, whatever the engine made of the end of its rows.
        if let Some(why) = rows.failure() {
            return Err(why.to_string());
        }
        let loaded = loaded.map_err(|e| format!("loading table {}: {}", t.name, describe(&e)))?;
        if !rows.succeeded() {
            return Err(format!("loading table {}: the engine stopped before the generator's last row", t.name));
        }
        drop(rows);
        let took = t0.elapsed();
        latency.saturating_record((took.as_micros() as u64).max(1));
        load_s += took.as_secs_f64();
        tables.push(TableLoad { table: t.name.clone(), rows: loaded, seconds: took.as_secs_f64() });
    }
    let k0 = Instant::now();
    for p in &plan.keys {
        exec(s, p)?;
    }
    let keys_s = k0.elapsed().as_secs_f64();
    let a0 = Instant::now();
    for p in &plan.after_load {
        exec(s, p)?;
    }
    let analyze_s = a0.elapsed().as_secs_f64();
    Ok(Loaded { tables, phases: Phases { load_s, keys_s, analyze_s }, latency, lock_waits: s.lock_waits() })
}

/// The summary of a load: `seconds` is the engine's work, its three phases (not the tables' creation, nor the
/// wait for the generators to start).
pub fn summary(
    generator: GeneratorDetail,
    set: &'static str,
    scale: f64,
    loaded: Loaded,
    usage: ClientUsage,
    library: Option<serde_json::Value>,
) -> Summary<LoadDetail> {
    let rows: u64 = loaded.tables.iter().map(|t| t.rows).sum();
    let p = &loaded.phases;
    let seconds = p.load_s + p.keys_s + p.analyze_s;
    let rate = if seconds > 0.0 { rows as f64 / seconds } else { 0.0 };
    let counts = Counts { ops_name: OpsName::Rows, operations: rows, events: rows, seconds, rate, tps: rate };
    let detail = LoadDetail {
        set,
        scale,
        generator,
        phases: loaded.phases,
        tables: loaded.tables,
        engine: EngineDetail::new(library, loaded.lock_waits),
    };
    Summary::new(Suite::Analytics, STEP_LOAD, counts, detail).latency(&loaded.latency).usage(usage)
}

/// `dbsweep-load analytics load`: checks the files, the scale and the generator before connecting,
/// then loads while printing a line a second, then prints the summary.
pub fn run<D: Driver>(driver: &D, opts: &LoadOptions) -> Result<(), String> {
    let scale = opts.data.scale()?;
    let files = opts.data.files();
    let plan = LoadPlan::new(&files, driver.dialect())?;
    let generator = Generator::new(&opts.generator, opts.data.set, opts.data.scale_text())?;
    let version = generator.version()?;
    let mut session = driver.connect()?;
    let live = Arc::new(vec![Live::default()]);
    let phase = Arc::new(Phase::default());
    let start = Instant::now();
    let cpu0 = own_cpu();
    let loader = {
        let (live, phase, generator) = (live.clone(), phase.clone(), generator.clone());
        std::thread::spawn(move || {
            let r = load(&mut session, &plan, &generator, &live[0]);
            phase.end();
            r
        })
    };
    report_seconds(&live, &phase, start, Duration::ZERO, None, true, &mut || {});
    let loaded = loader.join().map_err(|_| "the loader panicked".to_string())?;
    let loaded = loaded.map_err(|e| match LOST.ended_early(start) {
        Some(lost) => format!("lost the connection to the server {:.3} s into the load: {e}", lost.at_s),
        None => e,
    })?;
    let (u, s) = own_cpu();
    let usage = ClientUsage { cpu_user_s: u - cpu0.0, cpu_sys_s: s - cpu0.1, max_rss_kb: own_max_rss_kb() };
    let g = GeneratorDetail { path: generator.path.display().to_string(), version };
    let set = opts.data.set.name();
    emit(&summary(g, set, scale, loaded, usage, driver.describe()).ended_early(LOST.ended_early(start)));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_load_reports_rows_per_second_of_its_phases() {
        let mut latency = new_histogram();
        latency.record(2_000_000).unwrap();
        latency.record(500_000).unwrap();
        let loaded = Loaded {
            tables: vec![
                TableLoad { table: "nation".into(), rows: 25, seconds: 0.5 },
                TableLoad { table: "lineitem".into(), rows: 59_975, seconds: 2.0 },
            ],
            phases: Phases { load_s: 2.5, keys_s: 0.75, analyze_s: 0.25 },
            latency,
            lock_waits: LockWaits::default(),
        };
        let g = GeneratorDetail { path: "/x/tpcgen-cli".into(), version: "tpcgen-cli 4.0.0".into() };
        let usage = ClientUsage { cpu_user_s: 1.0, cpu_sys_s: 0.5, max_rss_kb: 4000 };
        let v = crate::output::summary::check_envelope(&summary(g, "tpch", 0.01, loaded, usage, None));
        let want = serde_json::json!({
            "suite": "analytics", "step": "load", "ops_name": "rows", "operations": 60_000, "events": 60_000,
            "seconds": 3.5, "rate": 60_000.0 / 3.5, "tps": 60_000.0 / 3.5, "error_count": 0, "ended_early": null,
        });
        for (k, x) in want.as_object().unwrap() {
            assert_eq!(&v[k], x, "{k}");
        }
        assert_eq!(v["latency_us"]["max"].as_u64().unwrap() / 1000, 2000);
        assert_eq!(
            v["detail"],
            serde_json::json!({
                "set": "tpch", "scale": 0.01,
                "generator": {"path": "/x/tpcgen-cli", "version": "tpcgen-cli 4.0.0"},
                "phases": {"load_s": 2.5, "keys_s": 0.75, "analyze_s": 0.25},
                "tables": [{"table": "nation", "rows": 25, "seconds": 0.5},
                           {"table": "lineitem", "rows": 59_975, "seconds": 2.0}],
                "lock_waits": 0, "lock_wait_s": 0.0,
            })
        );
    }
}
