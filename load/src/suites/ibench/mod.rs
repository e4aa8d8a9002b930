//! The Insert Benchmark (iibench, methodology §2) on any driver: one step per
//! run, one table per client (pi1..piN), rows inserted at the right-hand end
//! of the primary key and deleted from its left-hand end, with a rate-limited
//! background load and a query thread in the read-write steps.
//!
//! Split as: `sql` (statement shapes), `rows` (row generation), `pace` (rate
//! limit), `roles` (a client's threads), `report` (measurement and the
//! per-second lines), and here the options, the step sequence and the summary.

pub mod ddl;
pub mod pace;
pub mod report;
pub mod roles;
pub mod rows;
pub mod sql;

use crate::driver::lost::{EndedEarly, LOST};
use crate::driver::LockWaits;
use crate::driver::{describe, existing_tables, Dialect, Driver, Session};
use crate::output::emit;
use crate::output::seconds::Phase;
use crate::output::summary::{ClientUsage, Counts, EngineDetail, OpsName, Suite, Summary};
use crate::output::tally::Tally;
use crate::output::usage::{own_cpu, own_max_rss_kb};
use clap::Args;
use report::{ClientLive, LowTail, OpStats, OpSummary};
use roles::{Client, ClientPlan, ClientResult, KindCount, QueryMode, StepShared, POINT_KIND};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::atomic::AtomicI64;
use std::sync::{mpsc, Arc};
use std::time::Instant;

/// The steps, in the order a run does them.
pub const STEPS: [&str; 10] = ["l.i0", "l.x", "l.i1", "l.i2", "qr100", "qp100", "qr500", "qp500", "qr1000", "qp1000"];

/// Rows each client inserts in l.x before it creates the indexes.
const LX_ROWS: u64 = 100;
/// Read-write steps last this long at their rate unless --seconds says otherwise (the method's querysecs).
const DEFAULT_QUERY_SECONDS: u64 = 1800;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Step {
    /// Create the tables, load them in primary-key order, no secondary indexes.
    Li0,
    /// Insert 100 rows per client, then create the three secondary indexes.
    Lx,
    /// Insert (50 rows per statement) and delete as fast as possible.
    Li1,
    /// The same with 5 rows per statement.
    Li2,
    /// Queries with a background insert and delete rate per client.
    ReadWrite { mode: QueryMode, rate: u64 },
}

impl Step {
    pub fn parse(name: &str) -> Option<Step> {
        Some(match name {
            "l.i0" => Step::Li0,
            "l.x" => Step::Lx,
            "l.i1" => Step::Li1,
            "l.i2" => Step::Li2,
            _ => {
                let (mode, rate) = if let Some(r) = name.strip_prefix("qr") {
                    (QueryMode::Range, r)
                } else {
                    (QueryMode::Point, name.strip_prefix("qp")?)
                };
                if !STEPS.contains(&name) {
                    return None;
                }
                Step::ReadWrite { mode, rate: rate.parse().ok()? }
            }
        })
    }

    fn rows_per_commit(self) -> u64 {
        match self {
            Step::Li0 | Step::Lx => 100,
            Step::Li1 | Step::ReadWrite { .. } => 50,
            Step::Li2 => 5,
        }
    }

    fn is_read_write(self) -> bool {
        matches!(self, Step::ReadWrite { .. })
    }
}

/// The options of `dbsweep-load ibench`.
#[derive(Args, Debug, Clone)]
pub struct Options {
    /// Clients: one table each (pi1..piN), with an inserter, a deleter and a query connection.
    #[arg(long, default_value_t = 1)]
    pub clients: u32,
    /// Rows each client inserts: required for l.i0, l.i1, l.i2; l.x inserts 100; a read-write step
    /// takes it instead of --seconds.
    #[arg(long)]
    pub rows: Option<u64>,
    /// Read-write steps: seconds at the target rate, so rows per client = seconds × rate (default 1800).
    #[arg(long)]
    pub seconds: Option<u64>,
    /// Inserted rows per second per client: overrides the rate a qrNNN/qpNNN step names; limits
    /// l.i0/l.i1/l.i2, which otherwise run as fast as they can.
    #[arg(long)]
    pub rate: Option<u64>,
    /// All clients share table pi1.
    #[arg(long)]
    pub only1t: bool,
    /// Client n's rows and queries draw from seed + n.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// No deleter: l.i1, l.i2 and the read-write steps only insert, so the tables grow.
    #[arg(long)]
    pub no_delete: bool,
    /// Each client runs its delete right after the insert it matches, never beside it: the same
    /// statements in a fixed order, for counting instructions (two connections at once make the
    /// work per row depend on how their statements happened to overlap).
    #[arg(long)]
    pub serial: bool,
    /// A run to count instructions by: no latencies kept (summarising them costs more the wider
    /// they spread, which a busy machine does; an embedded engine's count is this client's work).
    #[arg(long)]
    pub counting: bool,
}

/// A step with its options checked and resolved.
#[derive(Debug, Clone)]
pub struct Plan {
    pub name: &'static str,
    pub step: Step,
    pub clients: u32,
    pub tables: u32,
    pub only1t: bool,
    pub rows_per_client: u64,
    pub rows_per_commit: u64,
    /// Per client; None = unlimited.
    pub rate: Option<u64>,
    pub deletes: bool,
    /// The deletes run one after each insert, on the inserter's thread (--serial).
    pub serial: bool,
    pub query: Option<QueryMode>,
    pub seed: u64,
    /// --counting: no latencies kept.
    pub counting: bool,
}

impl Plan {
    /// Resolves the options for a step, or says in one sentence what is wrong (before any connection).
    pub fn new(step_name: &str, o: &Options) -> Result<Plan, String> {
        let name = STEPS
            .iter()
            .find(|s| **s == step_name)
            .copied()
            .ok_or_else(|| format!("unknown step '{step_name}'; the steps are {}", STEPS.join(", ")))?;
        let step = Step::parse(name).expect("every listed step parses");
        if o.clients == 0 {
            return Err("--clients must be at least 1".into());
        }
        if o.rate == Some(0) {
            return Err(if step.is_read_write() {
                format!("--rate must be at least 1 row per second per client for {name}")
            } else {
                format!("--rate must be at least 1 row per second per client (omit it to run {name} unthrottled)")
            });
        }
        let (rows, rate) = match step {
            Step::Li0 | Step::Li1 | Step::Li2 => {
                if o.seconds.is_some() {
                    return Err(format!("--seconds is for the read-write steps; {name} takes --rows"));
                }
                match o.rows {
                    None => return Err(format!("{name} needs --rows, the rows each client inserts")),
                    Some(0) => return Err(format!("--rows must be at least 1 for {name}")),
                    Some(r) => (r, o.rate),
                }
            }
            Step::Lx => {
                if o.seconds.is_some() || o.rate.is_some() {
                    return Err("l.x takes neither --seconds nor --rate: it inserts and indexes unthrottled".into());
                }
                match o.rows {
                    Some(0) => return Err("--rows must be at least 1 for l.x".into()),
                    r => (r.unwrap_or(LX_ROWS), None),
                }
            }
            Step::ReadWrite { rate: named, .. } => {
                let rate = o.rate.unwrap_or(named);
                let rows = match (o.rows, o.seconds) {
                    (Some(_), Some(_)) => {
                        return Err(format!("give {name} --seconds or --rows, not both"));
                    }
                    (Some(0), None) | (None, Some(0)) => {
                        return Err(format!("--rows and --seconds must be at least 1 for {name}"));
                    }
                    (Some(r), None) => r,
                    (None, s) => s.unwrap_or(DEFAULT_QUERY_SECONDS).saturating_mul(rate),
                };
                (rows, Some(rate))
            }
        };
        let deletes = matches!(step, Step::Li1 | Step::Li2 | Step::ReadWrite { .. }) && !o.no_delete;
        if o.serial && !deletes {
            return Err(format!("--serial orders each insert and its delete, and {name} runs no deletes here"));
        }
        // §2.7: a batch never holds more rows than a second's worth.
        let rows_per_commit = rate.map_or(step.rows_per_commit(), |r| step.rows_per_commit().min(r));
        let query = match step {
            Step::ReadWrite { mode, .. } => Some(mode),
            _ => None,
        };
        Ok(Plan {
            name,
            step,
            clients: o.clients,
            tables: if o.only1t { 1 } else { o.clients },
            only1t: o.only1t,
            rows_per_client: rows,
            rows_per_commit,
            rate,
            deletes,
            serial: o.serial,
            counting: o.counting,
            query,
            seed: o.seed,
        })
    }

    fn table_of(&self, client: u32) -> String {
        sql::table(if self.only1t { 1 } else { client + 1 })
    }

    fn table_names(&self) -> Vec<String> {
        (1..=self.tables).map(sql::table).collect()
    }

    fn client(&self, index: u32) -> ClientPlan {
        ClientPlan {
            index,
            table: self.table_of(index),
            rows: self.rows_per_client,
            rows_per_commit: self.rows_per_commit,
            rate: self.rate,
            deletes: self.deletes,
            serial: self.serial,
            counting: self.counting,
            query: self.query,
            seed: self.seed.wrapping_add(index as u64 + 1),
            whole_price: false,
        }
    }

    /// The SQL the step runs, for the summary (shown for table pi1).
    fn sql(&self, d: &dyn Dialect) -> StepSql {
        let t = sql::table(1);
        let li0 = self.step == Step::Li0;
        StepSql {
            create_table: li0.then(|| ddl::create_pi(d, &t)),
            alter_sequence: if li0 { ddl::id_cache(d, &t) } else { None },
            // Where the statements depend on the table's storage engine, the run puts in those it sent.
            create_indexes: (self.step == Step::Lx).then(|| sql::create_indexes(&t, d, None)),
            insert: sql::insert_shape(&t, self.rows_per_commit, d),
            delete: self.deletes.then(|| ddl::delete_oldest(d, &t)),
            min_id: (self.deletes || self.query == Some(QueryMode::Point)).then(|| sql::min_id(&t)),
            range_queries: (self.query == Some(QueryMode::Range))
                .then(|| sql::RANGE_QUERIES.iter().map(|q| q.sql(&t, d)).collect()),
            point_query: (self.query == Some(QueryMode::Point)).then(|| sql::point_query(&t, d)),
            max_id: (self.query == Some(QueryMode::Point)).then(|| sql::max_id(&t)),
        }
    }
}

/// The statements of a step as run on pi1 (the other tables' differ only in the name); null when
/// the step does not run them. Prepared statements show their parameters as the engine's placeholders.
#[derive(Serialize)]
pub struct StepSql {
    create_table: Option<String>,
    /// The id generator's cache (l.i0), null where the engine has none.
    alter_sequence: Option<String>,
    create_indexes: Option<Vec<String>>,
    /// Sent as one simple query with the rows as literals, in autocommit.
    insert: String,
    /// Prepared: the first parameter the lowest id to delete from, the second the rows of the matching insert.
    delete: Option<String>,
    /// Run at the start and every 1000 batches by the delete generator (and by a qp step's query thread).
    min_id: Option<String>,
    /// Prepared; a random one per query; the parameter uniform in [0, 500), [0, 10000), [0, 1000) in this order.
    range_queries: Option<Vec<String>>,
    /// Prepared; the ids uniform in [min id, max id).
    point_query: Option<String>,
    /// Re-read every 100 point queries.
    max_id: Option<String>,
}

impl StepSql {
    /// With the index statements l.x sent, where the run knows them (they may depend on the table).
    fn ran(mut self, index_sql: Option<Vec<String>>) -> Self {
        if index_sql.is_some() {
            self.create_indexes = index_sql;
        }
        self
    }
}

/// Per-second rates at the method's low-tail percentiles.
#[derive(Serialize)]
pub struct RatePercentiles {
    ips: LowTail,
    dps: LowTail,
    qps: LowTail,
}

#[derive(Serialize)]
pub struct Latencies {
    insert: OpSummary,
    delete: OpSummary,
    query: OpSummary,
}

#[derive(Serialize)]
pub struct ErrorsByOp {
    insert: u64,
    delete: u64,
    query: u64,
}

/// The `detail` of an Insert Benchmark step's summary. The envelope (`output::summary::Summary`)
/// holds `step`, `seconds` (wall time from the start of the inserts to the end of the step's work,
/// index builds included), the main operation's `latency_us` and `histogram` (insert statements
/// for load steps, queries for qr/qp), `errors`, `error_count`, `error_samples`, the client's CPU
/// and memory, and `ended_early`; its `operations` and `rate` are, for qr/qp, `queries` and `qps`;
/// for l.x `indexed_rows` and `ips`; for the other steps `inserted_rows` and `ips`; `events` =
/// `operations`, `tps` = `rate`.
///
/// Fields: `clients`; `tables` (how many pi tables the step uses); `only1t`; `seed`; `deletes`
/// (whether a deleter ran); `serial` (each delete ran after its insert, never beside it);
/// `rows_per_client`; `rows_per_commit`; `rate_per_client` and `target_rate` (= clients ×
/// rate_per_client; both null when unlimited); `insert_seconds` (start to the last inserter's end); `index_seconds` (l.x only); `inserted_rows`, `deleted_rows`,
/// `indexed_rows` (l.x only: rows in the tables when indexed); `queries`, `query_rows` (rows the
/// queries returned), `queries_by_kind` ({kind: {queries, rows}} for pdc, marketsegment,
/// registersegment or point); `ips` (inserted_rows / seconds; for l.x indexed_rows / seconds),
/// `dps`, `qps`; `achieved_rate` (the background insert rate: inserted_rows / insert_seconds);
/// `sla_ok` (achieved_rate >= 0.95 × target_rate, null without a target); `rate_percentiles`
/// ({ips, dps, qps} × {p50, p75, p90, p95, p99}, per-second rates, low-tail: p99 is reached or
/// exceeded by 99 % of the seconds); `latency` ({insert, delete, query} × {statements, rows,
/// errors, mean_us, p50_us, p95_us, p99_us, max_us, hdr, buckets}, buckets being {le_256us,
/// le_1ms, le_4ms, le_16ms, le_64ms, le_256ms, le_1s, le_4s, le_16s, gt_16s}); `maxop_s` (the
/// main operation's slowest, in seconds); `errors_by_op` ({insert, delete, query});
/// `rows_after` ({table: count(*) after the step}, load steps only); `sql` (the statements, see
/// StepSql); `lock_waits`, `lock_wait_s` and (SQLite) `engine_library`, see EngineDetail. A thread whose connection is lost stops: a client without its inserter stops, and a
/// read-write step whose query threads are all gone ends; after a loss l.x builds no indexes and
/// no rows are counted (`index_seconds`, `indexed_rows` and `rows_after` are null, and the
/// envelope's `operations` for l.x falls back to the inserted rows, as `ips` does).
#[derive(Serialize)]
pub struct IbenchDetail {
    clients: u32,
    tables: u32,
    only1t: bool,
    seed: u64,
    deletes: bool,
    serial: bool,
    rows_per_client: u64,
    rows_per_commit: u64,
    rate_per_client: Option<u64>,
    target_rate: Option<u64>,
    insert_seconds: f64,
    index_seconds: Option<f64>,
    inserted_rows: u64,
    deleted_rows: u64,
    indexed_rows: Option<u64>,
    queries: u64,
    query_rows: u64,
    queries_by_kind: BTreeMap<&'static str, KindCount>,
    ips: f64,
    dps: f64,
    qps: f64,
    achieved_rate: f64,
    sla_ok: Option<bool>,
    rate_percentiles: RatePercentiles,
    latency: Latencies,
    maxop_s: f64,
    errors_by_op: ErrorsByOp,
    rows_after: Option<BTreeMap<String, u64>>,
    sql: StepSql,
    /// lock_waits, lock_wait_s (over the inserter, deleter, generator and query sessions), engine_library.
    #[serde(flatten)]
    engine: EngineDetail,
}

/// What the step's thread hands back.
struct Outcome {
    result: ClientResult,
    kinds: [KindCount; 4],
    seconds: f64,
    insert_seconds: f64,
    index_seconds: Option<f64>,
    /// The statements l.x ran on the first table.
    index_sql: Option<Vec<String>>,
    usage: ClientUsage,
    rows_after: Option<BTreeMap<String, u64>>,
}

fn exec<S: Session>(c: &mut S, sql: &str) -> Result<(), String> {
    c.simple(sql).map(|_| ()).map_err(|e| format!("{sql}: {}", describe(&e)))
}

fn count_rows<S: Session>(c: &mut S, table: &str) -> Result<u64, String> {
    let q = sql::count(table);
    let rows = c.rows(&q).map_err(|e| format!("{q}: {}", describe(&e)))?;
    rows.first()
        .and_then(|r| r.first())
        .and_then(|v| v.as_deref())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("no count from: {q}"))
}

/// l.i0: drops every pi table (not only this step's, so the database holds only what the step
/// made) and creates the step's tables.
fn create_tables<S: Session>(c: &mut S, d: &dyn Dialect, plan: &Plan) -> Result<(), String> {
    for t in existing_tables(c, d, "pi")? {
        exec(c, &format!("DROP TABLE IF EXISTS {t}"))?;
    }
    for t in plan.table_names() {
        exec(c, &ddl::create_pi(d, &t))?;
        if let Some(cache) = ddl::id_cache(d, &t) {
            exec(c, &cache)?;
        }
    }
    Ok(())
}

/// The other steps need the tables l.i0 made.
fn check_tables<S: Session>(c: &mut S, d: &dyn Dialect, plan: &Plan) -> Result<(), String> {
    let existing = existing_tables(c, d, "pi")?;
    let have = plan.table_names().iter().filter(|t| existing.contains(t)).count();
    if have != plan.tables as usize {
        return Err(format!(
            "{} needs tables pi1..pi{} but only {have} of them exist: the l.i0 step makes them",
            plan.name, plan.tables
        ));
    }
    Ok(())
}

/// l.x: the three indexes on every table, one connection per table, in parallel (each iibench
/// client indexes its own table). Returns the statements run on the first table, for the summary.
fn create_indexes<D: Driver>(driver: &D, plan: &Plan) -> Result<Vec<String>, String> {
    let handles: Vec<_> = plan
        .table_names()
        .into_iter()
        .map(|t| {
            let driver = driver.clone();
            std::thread::spawn(move || -> Result<Vec<String>, String> {
                let mut c = driver.connect()?;
                let d = driver.dialect();
                let storage = match d.table_storage(&t) {
                    Some(q) => {
                        let rows = c.rows(&q).map_err(|e| format!("{q}: {}", describe(&e)))?;
                        let first = rows.into_iter().next().and_then(|r| r.into_iter().next().flatten());
                        Some(first.ok_or_else(|| format!("{q}: no storage engine for table {t}"))?)
                    }
                    None => None,
                };
                let statements = sql::create_indexes(&t, d, storage.as_deref());
                for s in &statements {
                    exec(&mut c, s)?;
                }
                Ok(statements)
            })
        })
        .collect();
    let mut first = None;
    for h in handles {
        let made = h.join().map_err(|_| "an index build thread panicked".to_string())??;
        first.get_or_insert(made);
    }
    Ok(first.unwrap_or_default())
}

/// Runs the step: setup, then (sending the start instant to the reporter) the clients, then l.x's
/// indexes and the row counts.
fn drive<D: Driver>(
    driver: &D,
    plan: &Plan,
    live: &Arc<Vec<ClientLive>>,
    started: mpsc::Sender<Instant>,
) -> Result<Outcome, String> {
    let mut admin = driver.connect()?;
    if plan.step == Step::Li0 {
        create_tables(&mut admin, driver.dialect(), plan)?;
    } else {
        check_tables(&mut admin, driver.dialect(), plan)?;
    }
    let filler = rows::filler(plan.seed, rows::FILLER_LEN);
    let clients = (0..plan.clients).map(|i| Client::connect(driver, plan.client(i))).collect::<Result<Vec<_>, _>>()?;
    // One delete bound per table, starting at its minimum id.
    let mut bounds: BTreeMap<String, Arc<AtomicI64>> = BTreeMap::new();
    for c in &clients {
        bounds.entry(c.table().to_string()).or_insert_with(|| Arc::new(AtomicI64::new(c.min_id)));
    }
    let step = Arc::new(StepShared::new(if plan.query.is_some() { plan.clients } else { 0 }));
    let start = Instant::now();
    let cpu0 = own_cpu();
    let _ = started.send(start);
    let running: Vec<_> = clients
        .into_iter()
        .map(|c| {
            let bound = bounds[c.table()].clone();
            c.spawn(start, live.clone(), filler.clone(), bound, step.clone())
        })
        .collect();
    let mut result = ClientResult::default();
    let mut kinds = [KindCount::default(); 4];
    let mut insert_end = start;
    for r in running {
        let r = r.join()?;
        result.insert.merge(r.insert);
        result.delete.merge(r.delete);
        result.query.merge(r.query);
        for (k, c) in kinds.iter_mut().zip(r.kinds) {
            k.queries += c.queries;
            k.rows += c.rows;
        }
        insert_end = insert_end.max(r.insert_end.unwrap_or(start));
    }
    let insert_seconds = (insert_end - start).as_secs_f64();
    // After a lost connection the step is spoiled (its summary says so) and the server may be down
    // or restarting: the index build and the row counts are skipped, so the summary comes at once.
    let lost = LOST.count() > 0;
    let mut index_seconds = None;
    let mut index_sql = None;
    if plan.step == Step::Lx && !lost {
        let t0 = Instant::now();
        index_sql = Some(create_indexes(driver, plan)?);
        index_seconds = Some(t0.elapsed().as_secs_f64());
    }
    let seconds = start.elapsed().as_secs_f64();
    let (u1, s1) = own_cpu();
    let usage = ClientUsage { cpu_user_s: u1 - cpu0.0, cpu_sys_s: s1 - cpu0.1, max_rss_kb: own_max_rss_kb() };
    // Counting a large table takes a while, so the read-write steps skip it; outside the measured time.
    let rows_after = if plan.step.is_read_write() || lost {
        None
    } else {
        let mut m = BTreeMap::new();
        for t in plan.table_names() {
            let n = count_rows(&mut admin, &t)?;
            m.insert(t, n);
        }
        Some(m)
    };
    Ok(Outcome { result, kinds, seconds, insert_seconds, index_seconds, index_sql, usage, rows_after })
}

/// `dbsweep-load ibench STEP`: checks the options, runs the step while printing a line per second,
/// then prints the summary.
pub fn run<D: Driver>(driver: &D, step: &str, opts: &Options) -> Result<(), String> {
    let plan = Plan::new(step, opts)?;
    let live: Arc<Vec<ClientLive>> = Arc::new((0..plan.clients).map(|_| ClientLive::default()).collect());
    let phase = Arc::new(Phase::default());
    let (tx, rx) = mpsc::channel();
    let dialect = driver.dialect();
    let stepper = {
        let (driver, plan, live, phase) = (driver.clone(), plan.clone(), live.clone(), phase.clone());
        std::thread::spawn(move || {
            let r = drive(&driver, &plan, &live, tx);
            phase.end();
            r
        })
    };
    let join = |d: std::thread::JoinHandle<Result<Outcome, String>>| {
        d.join().map_err(|_| "the ibench step thread panicked".to_string())?
    };
    // No start instant means the setup failed: its error is the driver's result.
    let Ok(start) = rx.recv() else {
        return join(stepper).map(|_| ());
    };
    let samples = report::report_seconds(&live, &phase, start, plan.query.is_some());
    let out = join(stepper)?;
    let ended_early = LOST.ended_early(start);
    if let Some(e) = &ended_early {
        eprintln!(
            "dbsweep-load: {} connection(s) lost, the first {:.3} s into the step: {}",
            e.connections_lost, e.at_s, e.reason
        );
    }
    emit(&summarize(&plan, dialect, out, &samples, ended_early, driver.describe()));
    Ok(())
}

fn summarize(
    plan: &Plan,
    dialect: &dyn Dialect,
    out: Outcome,
    samples: &report::Samples,
    ended_early: Option<EndedEarly>,
    library: Option<serde_json::Value>,
) -> Summary<IbenchDetail> {
    let r = &out.result;
    let secs = out.seconds.max(1e-9);
    let inserted = r.insert.tally.rows;
    let deleted = r.delete.tally.rows;
    let queries = r.query.tally.events;
    let indexed_rows = match &out.rows_after {
        Some(m) if plan.step == Step::Lx => Some(m.values().sum::<u64>()),
        _ => None,
    };
    let target = plan.rate.map(|r| r * plan.clients as u64);
    let achieved = inserted as f64 / out.insert_seconds.max(1e-9);
    let main = if plan.query.is_some() { &r.query } else { &r.insert };
    let mut errors = Tally::new();
    let mut waits = LockWaits::default();
    for op in [&r.insert, &r.delete, &r.query] {
        errors.merge_errors(&op.tally);
        waits.add(op.lock_waits);
    }
    let used_kinds: BTreeMap<&'static str, KindCount> = match plan.query {
        Some(QueryMode::Range) => sql::RANGE_QUERIES.iter().map(|q| q.kind).zip(out.kinds).collect(),
        Some(QueryMode::Point) => [("point", out.kinds[POINT_KIND])].into_iter().collect(),
        None => BTreeMap::new(),
    };
    let op_max = |s: &OpStats| if s.tally.latency.is_empty() { 0 } else { s.tally.latency.max() };
    let ips = indexed_rows.unwrap_or(inserted) as f64 / secs;
    let qps = queries as f64 / secs;
    // The method's throughput of the step (§4.1 table 1).
    let (ops_name, operations, rate) = match plan.step {
        Step::ReadWrite { .. } => (OpsName::Queries, queries, qps),
        Step::Lx => (OpsName::IndexedRows, indexed_rows.unwrap_or(inserted), ips),
        Step::Li0 | Step::Li1 | Step::Li2 => (OpsName::Rows, inserted, ips),
    };
    let counts = Counts { ops_name, operations, events: operations, seconds: out.seconds, rate, tps: rate };
    let detail = IbenchDetail {
        clients: plan.clients,
        tables: plan.tables,
        only1t: plan.only1t,
        seed: plan.seed,
        deletes: plan.deletes,
        serial: plan.serial,
        rows_per_client: plan.rows_per_client,
        rows_per_commit: plan.rows_per_commit,
        rate_per_client: plan.rate,
        target_rate: target,
        insert_seconds: out.insert_seconds,
        index_seconds: out.index_seconds,
        inserted_rows: inserted,
        deleted_rows: deleted,
        indexed_rows,
        queries,
        query_rows: r.query.tally.rows,
        queries_by_kind: used_kinds,
        ips,
        dps: deleted as f64 / secs,
        qps,
        achieved_rate: achieved,
        sla_ok: target.map(|t| achieved >= 0.95 * t as f64),
        rate_percentiles: RatePercentiles {
            ips: LowTail::of(&samples.ips),
            dps: LowTail::of(&samples.dps),
            qps: LowTail::of(&samples.qps),
        },
        latency: Latencies { insert: r.insert.summary(), delete: r.delete.summary(), query: r.query.summary() },
        maxop_s: op_max(main) as f64 / 1e6,
        errors_by_op: ErrorsByOp {
            insert: r.insert.error_count(),
            delete: r.delete.error_count(),
            query: r.query.error_count(),
        },
        rows_after: out.rows_after,
        sql: plan.sql(dialect).ran(out.index_sql),
        engine: EngineDetail::new(library, waits),
    };
    Summary::new(Suite::Ibench, plan.name, counts, detail)
        .latency(&main.tally.latency)
        .errors(&errors)
        .usage(out.usage)
        .ended_early(ended_early)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> Options {
        Options {
            clients: 2,
            rows: None,
            seconds: None,
            rate: None,
            only1t: false,
            seed: 1,
            no_delete: false,
            serial: false,
            counting: false,
        }
    }

    #[test]
    fn steps_parse() {
        for s in STEPS {
            assert!(Step::parse(s).is_some(), "{s}");
        }
        assert_eq!(Step::parse("qp500"), Some(Step::ReadWrite { mode: QueryMode::Point, rate: 500 }));
        for bad in ["qr", "qr42", "qx100", "l.i3", ""] {
            assert_eq!(Step::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn plans_follow_the_step_table() {
        let p = Plan::new("l.i0", &Options { rows: Some(1000), ..opts() }).unwrap();
        assert_eq!((p.rows_per_client, p.rows_per_commit, p.rate, p.deletes, p.query), (1000, 100, None, false, None));
        assert_eq!(p.tables, 2);
        let p = Plan::new("l.x", &opts()).unwrap();
        assert_eq!((p.rows_per_client, p.rows_per_commit), (100, 100));
        let p = Plan::new("l.i2", &Options { rows: Some(10), ..opts() }).unwrap();
        assert_eq!((p.rows_per_commit, p.deletes), (5, true));
        let p = Plan::new("qr100", &Options { seconds: Some(3), ..opts() }).unwrap();
        assert_eq!((p.rows_per_client, p.rows_per_commit, p.rate), (300, 50, Some(100)));
        assert_eq!(p.query, Some(QueryMode::Range));
        let p = Plan::new("qp1000", &opts()).unwrap();
        assert_eq!(p.rows_per_client, 1800 * 1000);
        // A rate under 50 rows/s lowers the batch to one second's worth.
        let p = Plan::new("qp100", &Options { rate: Some(20), seconds: Some(5), ..opts() }).unwrap();
        assert_eq!((p.rows_per_client, p.rows_per_commit), (100, 20));
        let p = Plan::new("qr500", &Options { only1t: true, no_delete: true, ..opts() }).unwrap();
        assert_eq!((p.tables, p.deletes), (1, false));
        assert_eq!((p.table_of(0), p.table_of(1)), ("pi1".to_string(), "pi1".to_string()));
        assert_eq!(p.client(1).seed, 3);
    }

    #[test]
    fn bad_options_are_one_sentence() {
        let err = |step: &str, o: Options| Plan::new(step, &o).unwrap_err();
        assert!(err("l.i9", opts()).starts_with("unknown step 'l.i9'; the steps are l.i0, l.x"));
        assert_eq!(err("l.i0", Options { clients: 0, rows: Some(5), ..opts() }), "--clients must be at least 1");
        assert_eq!(err("l.i0", Options { rows: Some(0), ..opts() }), "--rows must be at least 1 for l.i0");
        assert_eq!(err("l.i1", opts()), "l.i1 needs --rows, the rows each client inserts");
        assert_eq!(
            err("qr100", Options { rate: Some(0), ..opts() }),
            "--rate must be at least 1 row per second per client for qr100"
        );
        assert!(err("qp100", Options { rows: Some(5), seconds: Some(5), ..opts() }).contains("not both"));
        assert!(err("l.x", Options { rate: Some(5), ..opts() }).contains("neither"));
        assert!(err("l.i0", Options { rows: Some(5), seconds: Some(5), ..opts() }).contains("takes --rows"));
    }

    /// A step's outcome: `inserts` insert batches of 50 rows (1 ms each), `queries` queries (2 ms
    /// each, 10 rows, all of kind pdc), one failed delete, over 10 s.
    fn outcome(inserts: u64, queries: u64, rows_after: Option<BTreeMap<String, u64>>) -> Outcome {
        let live = report::ClientLive::default();
        let mut result = ClientResult::default();
        for _ in 0..inserts {
            result.insert.ok(&live.ins, 1000, 50, 50);
        }
        for _ in 0..queries {
            result.query.ok(&live.qry, 2000, 10, 1);
        }
        result.delete.err(&live.del, &crate::driver::DbError::Closed("gone".into()));
        let mut kinds = [KindCount::default(); 4];
        kinds[0] = KindCount { queries, rows: queries * 10 };
        Outcome {
            result,
            kinds,
            seconds: 10.0,
            insert_seconds: 8.0,
            index_seconds: None,
            index_sql: None,
            usage: ClientUsage { cpu_user_s: 1.0, cpu_sys_s: 0.5, max_rss_kb: 2048 },
            rows_after,
        }
    }

    fn envelope(step: &str, o: Options, out: Outcome) -> serde_json::Value {
        let plan = Plan::new(step, &o).unwrap();
        let samples = report::Samples { ips: vec![500.0; 10], dps: vec![0.0; 10], qps: vec![50.0; 10] };
        let s = summarize(&plan, &crate::driver::pg::DIALECT, out, &samples, None, None);
        crate::output::summary::check_envelope(&s)
    }

    fn common(v: &serde_json::Value) -> (String, String, String, u64, u64, f64, f64) {
        (
            v["suite"].as_str().unwrap().into(),
            v["step"].as_str().unwrap().into(),
            v["ops_name"].as_str().unwrap().into(),
            v["operations"].as_u64().unwrap(),
            v["events"].as_u64().unwrap(),
            v["rate"].as_f64().unwrap(),
            v["tps"].as_f64().unwrap(),
        )
    }

    #[test]
    fn a_load_step_reports_inserted_rows_per_second() {
        let after = BTreeMap::from([("pi1".to_string(), 5000), ("pi2".to_string(), 5000)]);
        let v = envelope("l.i0", Options { rows: Some(2500), ..opts() }, outcome(100, 0, Some(after)));
        assert_eq!(common(&v), ("ibench".into(), "l.i0".into(), "rows".into(), 5000, 5000, 500.0, 500.0));
        assert_eq!((v["seconds"].as_f64(), v["latency_us"]["p50"].as_u64()), (Some(10.0), Some(1000)));
        assert_eq!(
            (&v["error_count"], &v["errors"]),
            (&serde_json::json!(1), &serde_json::json!({"connection-closed": 1}))
        );
        assert_eq!((v["client_cpu_sys_s"].as_f64(), v["client_max_rss_kb"].as_u64()), (Some(0.5), Some(2048)));
        let d = &v["detail"];
        assert_eq!(
            (&d["inserted_rows"], &d["ips"], &d["rows_after"]["pi2"]),
            (&serde_json::json!(5000), &serde_json::json!(500.0), &serde_json::json!(5000))
        );
        assert_eq!(
            (&d["target_rate"], &d["sla_ok"], &d["errors_by_op"]["delete"]),
            (&serde_json::json!(null), &serde_json::json!(null), &serde_json::json!(1))
        );
        assert_eq!(d["achieved_rate"], 625.0);
        assert!(d["sql"]["create_table"].as_str().unwrap().starts_with("CREATE TABLE pi1 "));
        assert!(d["sql"]["alter_sequence"].is_string());
        assert_eq!(d["latency"]["insert"]["statements"], 100);
        assert_eq!((&d["lock_waits"], &d["lock_wait_s"]), (&serde_json::json!(0), &serde_json::json!(0.0)));
        assert!(d.get("engine_library").is_none());
        assert_eq!(d["rate_percentiles"]["ips"]["p99"], 500.0);
    }

    #[test]
    fn l_x_reports_indexed_rows_per_second() {
        let after = BTreeMap::from([("pi1".to_string(), 30_000), ("pi2".to_string(), 30_000)]);
        let v = envelope("l.x", opts(), outcome(4, 0, Some(after)));
        assert_eq!(common(&v), ("ibench".into(), "l.x".into(), "indexed rows".into(), 60_000, 60_000, 6000.0, 6000.0));
        let d = &v["detail"];
        assert_eq!(
            (&d["indexed_rows"], &d["inserted_rows"], &d["ips"]),
            (&serde_json::json!(60_000), &serde_json::json!(200), &serde_json::json!(6000.0))
        );
        assert_eq!(d["sql"]["create_indexes"].as_array().unwrap().len(), 3);
        // After a lost connection nothing was indexed or counted: operations fall back as ips does.
        let v = envelope("l.x", opts(), outcome(4, 0, None));
        assert_eq!(common(&v), ("ibench".into(), "l.x".into(), "indexed rows".into(), 200, 200, 20.0, 20.0));
        assert_eq!(v["detail"]["indexed_rows"], serde_json::Value::Null);
    }

    #[test]
    fn a_read_write_step_reports_queries_per_second() {
        let v = envelope("qr100", Options { seconds: Some(10), ..opts() }, outcome(40, 500, None));
        assert_eq!(common(&v), ("ibench".into(), "qr100".into(), "queries".into(), 500, 500, 50.0, 50.0));
        // The main operation is the query.
        assert_eq!(v["latency_us"]["p50"], 2000);
        let d = &v["detail"];
        assert_eq!(
            (&d["queries"], &d["qps"], &d["target_rate"], &d["inserted_rows"]),
            (&serde_json::json!(500), &serde_json::json!(50.0), &serde_json::json!(200), &serde_json::json!(2000))
        );
        // 2000 rows in 8 s = 250/s, above 95 % of 200.
        assert_eq!((&d["achieved_rate"], &d["sla_ok"]), (&serde_json::json!(250.0), &serde_json::json!(true)));
        assert_eq!(d["queries_by_kind"]["pdc"], serde_json::json!({"queries": 500, "rows": 5000}));
        assert_eq!(d["queries_by_kind"].as_object().unwrap().len(), 3);
        assert!(d["sql"]["range_queries"][0].as_str().unwrap().contains("price >= $1"));
        assert!(d["sql"]["delete"].as_str().unwrap().starts_with("DELETE FROM pi1 "));
    }
}
