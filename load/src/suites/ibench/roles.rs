//! The threads of one client (methodology §2.3): a generator that makes the
//! insert batches and the matching deletes and enforces the rate; an inserter
//! and a deleter that run them, fed through queues of depth 8 so a slow server
//! pushes back on the generator; and, in the read-write steps, a query thread
//! that runs until the inserter is done. One connection each, plus the
//! generator's own for SELECT min(transactionid).

use super::pace::Pacer;
use super::report::{ClientLive, OpStats};
use super::rows::{self, RowGen};
use super::sql;
use crate::driver::{describe, DbError, Driver, Session};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, Ordering::Relaxed};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

/// How many statements the inserter and the deleter may each be behind the generator.
pub const QUEUE_DEPTH: usize = 8;
/// The generator re-reads min(transactionid) every this many batches (--resync_get_min).
pub const RESYNC_EVERY: u64 = 1000;
/// The point queries re-read max(transactionid) every this many queries.
pub const MAX_ID_EVERY: u64 = 100;

/// Which queries the query thread runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum QueryMode {
    /// qr steps: a random one of the three covered range queries.
    Range,
    /// qp steps: an IN-list of ids on the primary key.
    Point,
}

/// What one client does in a step.
#[derive(Debug, Clone)]
pub struct ClientPlan {
    /// 0-based; the client number in the seed is index + 1.
    pub index: u32,
    pub table: String,
    /// Rows this client inserts.
    pub rows: u64,
    pub rows_per_commit: u64,
    /// Inserted rows per second; None runs as fast as the server takes them.
    pub rate: Option<u64>,
    pub deletes: bool,
    /// The inserter runs each delete right after its insert (no deleter thread).
    pub serial: bool,
    pub query: Option<QueryMode>,
    /// The step's seed plus the client number.
    pub seed: u64,
    /// Write the price as a rounded integer (the engine would keep a decimal in the INT column).
    pub whole_price: bool,
    /// A run to count instructions by: no latencies kept (`OpStats::keeping`).
    pub counting: bool,
}

/// A delete of `rows` rows from id `from` up.
struct Delete {
    from: i64,
    rows: i64,
}

/// Queries and rows returned, per query kind.
#[derive(Debug, Default, Clone, Copy, Serialize, PartialEq)]
pub struct KindCount {
    pub queries: u64,
    pub rows: u64,
}

/// Where the point queries are counted in a client's `kinds`; the range queries come first, in
/// sql::RANGE_QUERIES order.
pub const POINT_KIND: usize = 3;

/// What one client's threads measured.
#[derive(Default)]
pub struct ClientResult {
    pub insert: OpStats,
    /// The deletes, and the generator's failed min(transactionid) reads.
    pub delete: OpStats,
    pub query: OpStats,
    /// Per query kind: the range queries, then the point queries (POINT_KIND).
    pub kinds: [KindCount; 4],
    /// When the inserter finished.
    pub insert_end: Option<Instant>,
}

/// State every client of a step shares.
pub struct StepShared {
    /// Query threads the step runs (one per client in the read-write steps, else none).
    queriers: u32,
    /// Query threads that stopped because their connection was lost.
    queriers_lost: AtomicU32,
    /// Set when the step's measured work is gone: the generators make no more batches.
    stop: AtomicBool,
}

impl StepShared {
    pub fn new(queriers: u32) -> StepShared {
        StepShared { queriers, queriers_lost: AtomicU32::new(0), stop: AtomicBool::new(false) }
    }

    /// A query thread lost its connection. When every one has, the queries (what a read-write step
    /// measures) are gone, and the step ends instead of inserting at its rate to the end of its time.
    fn querier_lost(&self) {
        if self.queriers_lost.fetch_add(1, Relaxed) + 1 >= self.queriers {
            self.stop.store(true, Relaxed);
        }
    }
}

/// State the client's threads share.
struct Shared {
    /// Set when the inserter is done (or gone): the query thread stops.
    inserted: AtomicBool,
    /// The table's next delete bound, shared by every client of the table (--only1t): ids below it are
    /// deleted or about to be; point queries start here.
    next_delete: Arc<AtomicI64>,
    step: Arc<StepShared>,
}

/// One client, connected and prepared, not started.
pub struct Client<S> {
    plan: ClientPlan,
    insert: S,
    /// The generator's connection, for SELECT min(transactionid); only with deletes.
    generator: Option<S>,
    delete: Option<S>,
    query: Option<S>,
    /// min(transactionid) when connected (0 for an empty table).
    pub min_id: i64,
}

/// SELECT min/max(transactionid): None for an empty table.
fn read_id<S: Session>(conn: &mut S, sql: &str) -> Result<Option<i64>, DbError> {
    let rows = conn.rows(sql)?;
    let v = rows.first().and_then(|r| r.first()).cloned().flatten();
    v.map(|s| s.parse::<i64>().map_err(|e| DbError::Client(format!("{sql}: {e}")))).transpose()
}

impl<S: Session> Client<S> {
    /// Opens and prepares every connection the plan needs, so the clock starts with all of them ready.
    pub fn connect<D: Driver<Session = S>>(driver: &D, mut plan: ClientPlan) -> Result<Client<S>, String> {
        let dialect = driver.dialect();
        plan.whole_price = !dialect.int_column_rounds_decimals();
        let t = &plan.table;
        let fail = |what: &str, e: DbError| format!("client {}: {what}: {}", plan.index + 1, describe(&e));
        let insert = driver.connect()?;
        let (mut generator, mut delete, mut query) = (None, None, None);
        let mut min_id = None;
        if plan.deletes {
            let mut g = driver.connect()?;
            min_id = read_id(&mut g, &sql::min_id(t)).map_err(|e| fail("reading min(transactionid)", e))?;
            generator = Some(g);
            let mut d = driver.connect()?;
            let del = super::ddl::delete_oldest(dialect, t);
            d.prepare(&[("del", del.as_str())]).map_err(|e| fail("preparing the delete", e))?;
            delete = Some(d);
        }
        if let Some(mode) = plan.query {
            let mut q = driver.connect()?;
            match mode {
                QueryMode::Range => {
                    let texts: Vec<String> = sql::RANGE_QUERIES.iter().map(|r| r.sql(t, dialect)).collect();
                    let named: Vec<(&str, &str)> =
                        ["q0", "q1", "q2"].into_iter().zip(texts.iter().map(String::as_str)).collect();
                    q.prepare(&named).map_err(|e| fail("preparing the range queries", e))?;
                }
                QueryMode::Point => {
                    let point = sql::point_query(t, dialect);
                    q.prepare(&[("qp", point.as_str())]).map_err(|e| fail("preparing the point query", e))?;
                    if min_id.is_none() {
                        min_id = read_id(&mut q, &sql::min_id(t)).map_err(|e| fail("reading min(transactionid)", e))?;
                    }
                }
            }
            query = Some(q);
        }
        // An empty table: deletes from 0 up still take the lowest rows.
        Ok(Client { plan, insert, generator, delete, query, min_id: min_id.unwrap_or(0) })
    }

    pub fn table(&self) -> &str {
        &self.plan.table
    }

    /// Starts the client's threads; the rate schedule counts from `start`. `next_delete` is the
    /// table's delete bound, the same for every client of the table; `step` is the same for every client.
    pub fn spawn(
        self,
        start: Instant,
        live: Arc<Vec<ClientLive>>,
        filler: Arc<str>,
        next_delete: Arc<AtomicI64>,
        step: Arc<StepShared>,
    ) -> Running {
        let Client { plan, insert, generator, delete, query, .. } = self;
        let plan = Arc::new(plan);
        let shared = Arc::new(Shared { inserted: AtomicBool::new(false), next_delete, step });
        let (ins_tx, ins_rx) = mpsc::sync_channel::<String>(QUEUE_DEPTH);
        // Used SQL buffers go back to the generator, so batches are built without allocating.
        let (pool_tx, pool_rx) = mpsc::channel::<String>();
        let idx = plan.index as usize;

        let mut del_tx = None;
        let mut deletes = delete.map(|conn| {
            let (tx, rx) = mpsc::sync_channel::<Delete>(QUEUE_DEPTH);
            del_tx = Some(tx);
            (conn, rx)
        });
        // Serial: the inserter takes the deleter's connection and queue; the generator sends each
        // batch's insert before its delete, so the order is fixed.
        let serial = if plan.serial { deletes.take() } else { None };
        let inserter = {
            let (live, shared) = (live.clone(), shared.clone());
            let keep = !plan.counting;
            std::thread::spawn(move || insert_loop(insert, ins_rx, pool_tx, serial, &live[idx], &shared, keep))
        };
        let deleter = deletes.map(|(conn, rx)| {
            let live = live.clone();
            let keep = !plan.counting;
            std::thread::spawn(move || delete_loop(conn, rx, &live[idx], keep))
        });
        let querier = query.map(|conn| {
            let (live, shared, plan) = (live.clone(), shared.clone(), plan.clone());
            std::thread::spawn(move || query_loop(conn, &plan, &shared, &live[idx]))
        });
        let generator = {
            let (live, shared) = (live.clone(), shared.clone());
            std::thread::spawn(move || {
                let out = Outlets { insert: ins_tx, delete: del_tx, pool: pool_rx };
                generate(&plan, generator, out, &shared, start, filler, &live[idx])
            })
        };
        Running { generator, inserter, deleter, querier }
    }
}

/// A client's running threads.
pub struct Running {
    generator: JoinHandle<OpStats>,
    /// The inserts, when they ended, and the deletes when the inserter ran them (serial).
    inserter: JoinHandle<(OpStats, Instant, Option<OpStats>)>,
    deleter: Option<JoinHandle<OpStats>>,
    querier: Option<JoinHandle<(OpStats, [KindCount; 4])>>,
}

impl Running {
    pub fn join(self) -> Result<ClientResult, String> {
        let panicked = |role: &str| format!("the {role} thread panicked");
        let mut r = ClientResult::default();
        r.delete.merge(self.generator.join().map_err(|_| panicked("generator"))?);
        let (ins, end, serial_deletes) = self.inserter.join().map_err(|_| panicked("inserter"))?;
        r.insert = ins;
        r.insert_end = Some(end);
        if let Some(d) = serial_deletes {
            r.delete.merge(d);
        }
        if let Some(d) = self.deleter {
            r.delete.merge(d.join().map_err(|_| panicked("deleter"))?);
        }
        if let Some(q) = self.querier {
            let (stats, kinds) = q.join().map_err(|_| panicked("query"))?;
            r.query = stats;
            r.kinds = kinds;
        }
        Ok(r)
    }
}

/// Where the generator sends its work.
struct Outlets {
    insert: SyncSender<String>,
    delete: Option<SyncSender<Delete>>,
    pool: Receiver<String>,
}

/// Makes the client's insert batches (and their deletes) at the planned rate. A full queue blocks
/// it: nothing is dropped, the step runs longer instead.
fn generate<S: Session>(
    plan: &ClientPlan,
    mut conn: Option<S>,
    mut out: Outlets,
    shared: &Shared,
    start: Instant,
    filler: Arc<str>,
    live: &ClientLive,
) -> OpStats {
    let mut errors = OpStats::new();
    let mut rows = RowGen::new(plan.seed, filler).whole_price(plan.whole_price);
    let mut pacer = plan.rate.map(|r| Pacer::new(start, r));
    let prefix = sql::insert_prefix(&plan.table);
    let min_sql = sql::min_id(&plan.table);
    let (mut sent, mut batches) = (0u64, 0u64);
    // One flag read per batch, not per statement.
    while sent < plan.rows && !shared.step.stop.load(Relaxed) {
        let n = plan.rows_per_commit.min(plan.rows - sent);
        if let Some(p) = pacer.as_mut() {
            let due = p.next(n, Instant::now());
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
        }
        let mut buf = out.pool.try_recv().unwrap_or_default();
        rows.write_insert(&prefix, n, rows::unix_now(), &mut buf);
        if out.insert.send(buf).is_err() {
            // The inserter is gone (its connection closed, already counted): no more work.
            break;
        }
        sent += n;
        batches += 1;
        if let Some(tx) = out.delete.take() {
            if batches.is_multiple_of(RESYNC_EVERY) {
                // Gaps in the id sequence (its cache) leave the bound behind the real minimum. Only
                // forward: a minimum behind it means deletes already sent have not run yet.
                if let Some(c) = conn.as_mut() {
                    match read_id(c, &min_sql) {
                        Ok(Some(m)) => {
                            shared.next_delete.fetch_max(m, Relaxed);
                        }
                        Ok(None) => {}
                        Err(e) => errors.err(&live.del, &e),
                    }
                }
            }
            // Claims the window [from, from + n): clients sharing a table (--only1t) delete disjoint
            // rows instead of racing for the same ones.
            let from = shared.next_delete.fetch_add(n as i64, Relaxed);
            // A failed send means the deleter's connection closed (counted there); inserts go on.
            if tx.send(Delete { from, rows: n as i64 }).is_ok() {
                out.delete = Some(tx);
            }
        }
    }
    if let Some(c) = &conn {
        errors.lock_waits = c.lock_waits();
    }
    errors
}

/// Sets a flag when dropped, so it is set however the thread ends.
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Relaxed);
    }
}

fn micros(t0: Instant) -> u64 {
    (t0.elapsed().as_micros() as u64).max(1)
}

fn insert_loop<S: Session>(
    mut conn: S,
    rx: Receiver<String>,
    pool: Sender<String>,
    mut serial: Option<(S, Receiver<Delete>)>,
    live: &ClientLive,
    shared: &Shared,
    keep: bool,
) -> (OpStats, Instant, Option<OpStats>) {
    let _done = SetOnDrop(&shared.inserted);
    let mut st = OpStats::keeping(keep);
    let mut del_st = serial.as_ref().map(|_| OpStats::keeping(keep));
    for sql in rx {
        let t0 = Instant::now();
        let r = conn.simple(&sql);
        let us = micros(t0);
        match r {
            // Rows counted from the server's "INSERT 0 n", not assumed.
            Ok(o) => st.ok(&live.ins, us, o.affected, o.affected),
            Err(e) => st.err(&live.ins, &e),
        }
        let _ = pool.send(sql);
        if conn.is_closed() {
            break;
        }
        if let (Some((dconn, drx)), Some(dst)) = (serial.as_mut(), del_st.as_mut()) {
            // The generator sent this batch's delete right after its insert (none once the deleter's
            // connection is gone).
            if let Ok(d) = drx.recv() {
                if !run_delete(dconn, &d, dst, live) {
                    serial = None;
                }
            }
        }
    }
    st.lock_waits = conn.lock_waits();
    if let (Some((dconn, _)), Some(dst)) = (&serial, del_st.as_mut()) {
        dst.lock_waits = dconn.lock_waits();
    }
    (st, Instant::now(), del_st)
}

/// Runs one delete; false when its connection is gone.
fn run_delete<S: Session>(conn: &mut S, d: &Delete, st: &mut OpStats, live: &ClientLive) -> bool {
    let t0 = Instant::now();
    let r = conn.execute("del", &[d.from, d.rows]);
    let us = micros(t0);
    match r {
        Ok(o) => st.ok(&live.del, us, o.affected, o.affected),
        Err(e) => st.err(&live.del, &e),
    }
    !conn.is_closed()
}

fn delete_loop<S: Session>(mut conn: S, rx: Receiver<Delete>, live: &ClientLive, keep: bool) -> OpStats {
    let mut st = OpStats::keeping(keep);
    for d in rx {
        if !run_delete(&mut conn, &d, &mut st, live) {
            break;
        }
    }
    st.lock_waits = conn.lock_waits();
    st
}

fn query_loop<S: Session>(
    mut conn: S,
    plan: &ClientPlan,
    shared: &Shared,
    live: &ClientLive,
) -> (OpStats, [KindCount; 4]) {
    let mut st = OpStats::keeping(!plan.counting);
    let mut kinds = [KindCount::default(); 4];
    // Its own stream, apart from the rows', still reproducible from the seed.
    let mut rng = SmallRng::seed_from_u64(plan.seed ^ 0x9E37_79B9_7F4A_7C15);
    let max_sql = sql::max_id(&plan.table);
    let mut max_id = shared.next_delete.load(Relaxed) + 1;
    let mut ids = [0i64; sql::ROWS_PER_QUERY as usize];
    let mut n = 0u64;
    while !shared.inserted.load(Relaxed) {
        let (kind, r, us) = match plan.query {
            Some(QueryMode::Range) => {
                let k = rng.gen_range(0..sql::RANGE_QUERIES.len());
                let v = rng.gen_range(0..sql::RANGE_QUERIES[k].bound) as i64;
                let t0 = Instant::now();
                let r = conn.execute(["q0", "q1", "q2"][k], &[v]);
                (k, r, micros(t0))
            }
            Some(QueryMode::Point) => {
                if n.is_multiple_of(MAX_ID_EVERY) {
                    match read_id(&mut conn, &max_sql) {
                        Ok(Some(m)) => max_id = m,
                        Ok(None) => {}
                        Err(e) => st.err(&live.qry, &e),
                    }
                }
                // Uniform in [min id, max id), the min being the delete generator's.
                let lo = shared.next_delete.load(Relaxed);
                let hi = max_id.max(lo + 1);
                for id in ids.iter_mut() {
                    *id = rng.gen_range(lo..hi);
                }
                let t0 = Instant::now();
                let r = conn.execute("qp", &ids);
                (POINT_KIND, r, micros(t0))
            }
            None => break,
        };
        n += 1;
        match r {
            Ok(o) => {
                st.ok(&live.qry, us, o.rows, 1);
                kinds[kind].queries += 1;
                kinds[kind].rows += o.rows;
            }
            Err(e) => st.err(&live.qry, &e),
        }
        if conn.is_closed() {
            // The connection recorded itself as lost; the step may have nothing left to measure.
            shared.step.querier_lost();
            break;
        }
    }
    st.lock_waits = conn.lock_waits();
    (st, kinds)
}
