//! What an Insert Benchmark step measures and prints: per-operation statistics
//! (HDR histogram and the method's response-time buckets), the per-second
//! lines (methodology §2.9), and the low-tail percentiles of per-second rates
//! (§3.2).

use crate::driver::{describe, error_kind, DbError, LockWaits};
use crate::output::emit;
use crate::output::histogram::{encode_histogram, Latency};
use crate::output::seconds::{self, Live, Phase};
use crate::output::tally::Tally;
use serde::Serialize;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

/// Upper bounds (inclusive, µs) of the method's response-time buckets; a tenth bucket holds the rest.
pub const BUCKET_BOUNDS_US: [u64; 9] = [256, 1_000, 4_000, 16_000, 64_000, 256_000, 1_000_000, 4_000_000, 16_000_000];

/// Response-time counts in iibench's buckets.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Buckets {
    pub counts: [u64; 10],
}

impl Buckets {
    #[inline]
    pub fn record(&mut self, us: u64) {
        let i = BUCKET_BOUNDS_US.iter().position(|&b| us <= b).unwrap_or(BUCKET_BOUNDS_US.len());
        self.counts[i] += 1;
    }

    pub fn merge(&mut self, other: &Buckets) {
        for (a, b) in self.counts.iter_mut().zip(other.counts) {
            *a += b;
        }
    }

    fn json(&self) -> BucketCounts {
        let c = self.counts;
        BucketCounts {
            le_256us: c[0],
            le_1ms: c[1],
            le_4ms: c[2],
            le_16ms: c[3],
            le_64ms: c[4],
            le_256ms: c[5],
            le_1s: c[6],
            le_4s: c[7],
            le_16s: c[8],
            gt_16s: c[9],
        }
    }
}

/// The buckets by name, in order: `le_X` counts statements that took at most X (and more than the bucket before).
#[derive(Serialize)]
pub struct BucketCounts {
    pub le_256us: u64,
    pub le_1ms: u64,
    pub le_4ms: u64,
    pub le_16ms: u64,
    pub le_64ms: u64,
    pub le_256ms: u64,
    pub le_1s: u64,
    pub le_4s: u64,
    pub le_16s: u64,
    pub gt_16s: u64,
}

/// What one thread measured for one kind of operation (insert batch, delete, query).
pub struct OpStats {
    /// events = statements that succeeded, rows = rows they inserted, deleted or returned.
    pub tally: Tally,
    pub buckets: Buckets,
    /// The lock waits of the thread's session.
    pub lock_waits: LockWaits,
    /// Whether latencies are kept (not in a run that counts instructions: see `--counting`).
    keep_latency: bool,
}

impl OpStats {
    pub fn new() -> OpStats {
        OpStats::keeping(true)
    }

    pub fn keeping(keep_latency: bool) -> OpStats {
        OpStats { tally: Tally::new(), buckets: Buckets::default(), lock_waits: LockWaits::default(), keep_latency }
    }

    #[inline]
    pub fn ok(&mut self, live: &Live, us: u64, rows: u64, live_ops: u64) {
        live.record(live_ops, us);
        self.tally.events += 1;
        self.tally.rows += rows;
        if self.keep_latency {
            // Values beyond the histogram's range are clamped, never dropped.
            self.tally.latency.saturating_record(us);
            self.buckets.record(us);
        }
    }

    /// Counts a failed statement under its SQLSTATE; it is not retried.
    pub fn err(&mut self, live: &Live, e: &DbError) {
        live.errors.fetch_add(1, Relaxed);
        self.tally.error(error_kind(e), describe(e));
    }

    pub fn merge(&mut self, other: OpStats) {
        self.buckets.merge(&other.buckets);
        self.lock_waits.add(other.lock_waits);
        self.tally.merge(other.tally);
    }

    pub fn error_count(&self) -> u64 {
        self.tally.errors.values().sum()
    }

    pub fn summary(&self) -> OpSummary {
        let h = &self.tally.latency;
        let l = Latency::of(h);
        OpSummary {
            statements: self.tally.events,
            rows: self.tally.rows,
            errors: self.error_count(),
            mean_us: l.mean,
            p50_us: l.p50,
            p95_us: l.p95,
            p99_us: l.p99,
            max_us: l.max,
            hdr: encode_histogram(h),
            buckets: self.buckets.json(),
        }
    }
}

impl Default for OpStats {
    fn default() -> Self {
        Self::new()
    }
}

/// One operation kind in the summary.
#[derive(Serialize)]
pub struct OpSummary {
    /// Statements that succeeded (each recorded in the histograms).
    pub statements: u64,
    /// Rows they inserted, deleted or returned.
    pub rows: u64,
    /// Statements that failed.
    pub errors: u64,
    pub mean_us: f64,
    pub p50_us: u64,
    pub p95_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
    /// HdrHistogram V2, deflated, base64 (as the other subcommands' `histogram`), µs.
    pub hdr: String,
    pub buckets: BucketCounts,
}

/// The percentiles of per-second rates the method reports.
pub const RATE_PERCENTILES: [u64; 5] = [50, 75, 90, 95, 99];

/// The method's low-tail percentile (§3.2): the samples sorted in descending order, the value at
/// (1-based) position pct × n. So p99 is the rate that 99 % of the seconds reach or exceed.
pub fn low_tail(samples: &[f64], pct: u64) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    let mut v = samples.to_vec();
    v.sort_by(|a, b| b.total_cmp(a));
    let n = v.len() as u64;
    let pos = (pct * n / 100).clamp(1, n);
    v[pos as usize - 1]
}

#[derive(Serialize, Debug, PartialEq)]
pub struct LowTail {
    pub p50: f64,
    pub p75: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
}

impl LowTail {
    pub fn of(samples: &[f64]) -> LowTail {
        let [p50, p75, p90, p95, p99] = RATE_PERCENTILES.map(|p| low_tail(samples, p));
        LowTail { p50, p75, p90, p95, p99 }
    }
}

/// The live counters of one client, one per thread that updates them.
#[derive(Default)]
pub struct ClientLive {
    /// ops = rows inserted.
    pub ins: Live,
    /// ops = rows deleted.
    pub del: Live,
    /// ops = queries.
    pub qry: Live,
}

/// One line per second, iibench's 17 fields (§2.9) plus errors, and the fields every
/// dbsweep-load per-second line has.
#[derive(Serialize)]
pub struct SecondLine {
    /// The fields every dbsweep-load per-second line has. `phase` is always "measure" (an Insert
    /// Benchmark step has no warm-up), `ops` counts the step's main operations (rows inserted by load
    /// steps, queries by qr/qp), `errors` failed statements of every kind, `max_us` the slowest main
    /// operation of this interval.
    #[serde(flatten)]
    pub common: seconds::SecondLine,
    /// This interval's length and the time since the start, seconds.
    pub i_sec: f64,
    pub t_sec: f64,
    /// Rows inserted, rows deleted and queries per second: in this interval, and since the start.
    pub i_ips: f64,
    pub t_ips: f64,
    pub i_dps: f64,
    pub t_dps: f64,
    pub i_qps: f64,
    pub t_qps: f64,
    /// The slowest insert batch, delete and query that finished in this interval, µs.
    pub max_i_us: u64,
    pub max_d_us: u64,
    pub max_q_us: u64,
    /// Cumulative rows inserted, rows deleted, queries.
    pub t_ins: u64,
    pub t_del: u64,
    pub t_query: u64,
    /// Cumulative retries: always 0, a failed statement is counted as an error, not retried.
    pub retry_i: u64,
    pub retry_d: u64,
    pub retry_q: u64,
    /// Cumulative failed insert, delete and query statements.
    pub err_i: u64,
    pub err_d: u64,
    pub err_q: u64,
}

/// The per-second rates collected for the percentiles.
#[derive(Default)]
pub struct Samples {
    pub ips: Vec<f64>,
    pub dps: Vec<f64>,
    pub qps: Vec<f64>,
}

/// Emits one line per second from `start` until the step ends (`phase.end`); returns the
/// per-second rates.
/// `queries_main` makes queries the line's main operation (`ops`, `max_us`), else inserted rows.
/// A last, partial interval is printed when something happened in it, and kept as a rate sample
/// only when at least half a second long (a sliver would make a meaningless rate) or when it is
/// the only interval (a step shorter than a second).
pub fn report_seconds(live: &[ClientLive], phase: &Phase, start: Instant, queries_main: bool) -> Samples {
    let mut samples = Samples::default();
    let mut prev = [0u64; 6];
    let mut last = start;
    let mut t = 0u64;
    loop {
        t += 1;
        let tick = start + Duration::from_secs(t);
        // Woken by the end of the step, not polling for it (see `Bell`).
        phase.bell.wait(Some(tick), &|| phase.stop.load(Relaxed));
        let stopping = phase.stop.load(Relaxed);
        let now = Instant::now();
        let mut cur = [0u64; 6];
        let mut max = [0u64; 3];
        for c in live {
            for (k, l) in [&c.ins, &c.del, &c.qry].into_iter().enumerate() {
                cur[k] += l.ops.load(Relaxed);
                cur[3 + k] += l.errors.load(Relaxed);
                max[k] = max[k].max(l.max_us.swap(0, Relaxed));
            }
        }
        let d: Vec<u64> = cur.iter().zip(prev).map(|(c, p)| c - p).collect();
        let i_sec = (now - last).as_secs_f64().max(1e-9);
        let t_sec = (now - start).as_secs_f64().max(1e-9);
        let errors = d[3] + d[4] + d[5];
        if !stopping || d.iter().any(|&x| x > 0) {
            let (ops, max_us) = if queries_main { (d[2], max[2]) } else { (d[0], max[0]) };
            emit(&SecondLine {
                common: seconds::SecondLine { kind: "second", t, phase: "measure", ops, errors, max_us },
                i_sec,
                t_sec,
                i_ips: d[0] as f64 / i_sec,
                t_ips: cur[0] as f64 / t_sec,
                i_dps: d[1] as f64 / i_sec,
                t_dps: cur[1] as f64 / t_sec,
                i_qps: d[2] as f64 / i_sec,
                t_qps: cur[2] as f64 / t_sec,
                max_i_us: max[0],
                max_d_us: max[1],
                max_q_us: max[2],
                t_ins: cur[0],
                t_del: cur[1],
                t_query: cur[2],
                retry_i: 0,
                retry_d: 0,
                retry_q: 0,
                err_i: cur[3],
                err_d: cur[4],
                err_q: cur[5],
            });
        }
        if !stopping || i_sec >= 0.5 || samples.ips.is_empty() {
            samples.ips.push(d[0] as f64 / i_sec);
            samples.dps.push(d[1] as f64 / i_sec);
            samples.qps.push(d[2] as f64 / i_sec);
        }
        prev = cur;
        last = now;
        if stopping {
            return samples;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_split_at_the_method_bounds() {
        let mut b = Buckets::default();
        for us in [1, 256, 257, 1_000, 1_001, 4_000, 16_000, 64_000, 256_000, 1_000_000, 4_000_000, 16_000_000] {
            b.record(us);
        }
        b.record(16_000_001);
        b.record(u64::MAX);
        assert_eq!(b.counts, [2, 2, 2, 1, 1, 1, 1, 1, 1, 2]);
        let mut m = Buckets::default();
        m.merge(&b);
        m.merge(&b);
        assert_eq!(m.counts[0], 4);
        assert_eq!(m.counts.iter().sum::<u64>(), 28);
        let j = serde_json::to_value(b.json()).unwrap();
        assert_eq!(j["le_256us"], 2);
        assert_eq!(j["gt_16s"], 2);
    }

    #[test]
    fn low_tail_percentiles() {
        // 1..=100 in any order: sorted descending, position pct × n.
        let mut v: Vec<f64> = (1..=100).map(f64::from).collect();
        v.reverse();
        v.swap(3, 70);
        assert_eq!(low_tail(&v, 50), 51.0);
        assert_eq!(low_tail(&v, 99), 2.0);
        assert_eq!(low_tail(&v, 75), 26.0);
        // 99 % of the seconds reach or exceed p99.
        assert_eq!(v.iter().filter(|&&x| x >= low_tail(&v, 99)).count(), 99);
        // Few samples: position at least 1.
        assert_eq!(low_tail(&[5.0], 99), 5.0);
        assert_eq!(low_tail(&[5.0, 9.0], 50), 9.0);
        assert_eq!(low_tail(&[5.0, 9.0], 99), 9.0);
        assert_eq!(low_tail(&[], 50), 0.0);
        let lt = LowTail::of(&v);
        assert_eq!((lt.p50, lt.p90, lt.p95), (51.0, 11.0, 6.0));
    }

    #[test]
    fn op_stats_count_and_merge() {
        let live = Live::default();
        let mut a = OpStats::new();
        a.ok(&live, 300, 50, 50);
        a.ok(&live, 2_000_000, 50, 50);
        a.err(&live, &DbError::Closed("gone".into()));
        let mut b = OpStats::new();
        b.ok(&live, 10, 5, 5);
        b.merge(a);
        let s = b.summary();
        assert_eq!((s.statements, s.rows, s.errors), (3, 105, 1));
        assert_eq!(s.buckets.le_256us, 1);
        assert_eq!(s.buckets.le_1ms, 1);
        assert_eq!(s.buckets.le_4s, 1);
        assert!(s.max_us >= 2_000_000);
        assert_eq!(live.ops.load(Relaxed), 105);
        assert_eq!(live.errors.load(Relaxed), 1);
    }
}
