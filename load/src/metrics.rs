//! Measurement: live per-second counters shared with the reporter, per-thread
//! latency histograms, and the JSON lines the orchestrator reads.

use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// Latencies are recorded in microseconds, from 1 us to one hour, with three
/// significant digits.
const HIST_MAX_US: u64 = 3_600_000_000;
/// How many distinct error messages a step keeps verbatim.
const ERROR_SAMPLES: usize = 5;

/// Counters one worker updates on every event; the reporter reads them once a
/// second. Aligned so two workers never share a cache line.
#[repr(align(128))]
#[derive(Default)]
pub struct Live {
    pub ops: AtomicU64,
    pub errors: AtomicU64,
    pub max_us: AtomicU64,
}

impl Live {
    #[inline]
    pub fn record(&self, ops: u64, latency_us: u64) {
        self.ops.fetch_add(ops, Relaxed);
        self.max_us.fetch_max(latency_us, Relaxed);
    }
}

/// Flags the main thread sets and the workers poll.
#[derive(Default)]
pub struct Phase {
    pub measuring: AtomicBool,
    pub stop: AtomicBool,
    /// Workers that stopped for good because their connection was lost. Once every worker (one
    /// `Live` each) has, nothing is left to measure and the reporter ends the step.
    pub lost: AtomicUsize,
}

/// What one worker measured; merged into the summary at the end.
pub struct Tally {
    pub latency: Histogram<u64>,
    pub events: u64,
    pub queries: u64,
    /// Rows the SELECTs returned.
    pub rows: u64,
    /// Rows the writes inserted, updated or deleted.
    pub rows_affected: u64,
    pub warmup_events: u64,
    pub errors: BTreeMap<String, u64>,
    pub error_samples: Vec<String>,
}

impl Tally {
    pub fn new() -> Self {
        Tally {
            latency: Histogram::new_with_bounds(1, HIST_MAX_US, 3).expect("valid histogram bounds"),
            events: 0,
            queries: 0,
            rows: 0,
            rows_affected: 0,
            warmup_events: 0,
            errors: BTreeMap::new(),
            error_samples: Vec::new(),
        }
    }

    pub fn error(&mut self, kind: String, message: String) {
        *self.errors.entry(kind).or_insert(0) += 1;
        if self.error_samples.len() < ERROR_SAMPLES && !self.error_samples.contains(&message) {
            self.error_samples.push(message);
        }
    }

    pub fn merge(&mut self, other: Tally) {
        self.latency.add(&other.latency).expect("same histogram bounds");
        self.events += other.events;
        self.queries += other.queries;
        self.rows += other.rows;
        self.rows_affected += other.rows_affected;
        self.warmup_events += other.warmup_events;
        for (k, v) in other.errors {
            *self.errors.entry(k).or_insert(0) += v;
        }
        for m in other.error_samples {
            if self.error_samples.len() < ERROR_SAMPLES && !self.error_samples.contains(&m) {
                self.error_samples.push(m);
            }
        }
    }
}

impl Default for Tally {
    fn default() -> Self {
        Self::new()
    }
}

/// CPU time this process has used, user and system, in seconds.
pub fn own_cpu() -> (f64, f64) {
    // SAFETY: getrusage writes into the zeroed struct we pass and reads nothing else.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (secs(ru.ru_utime), secs(ru.ru_stime))
}

/// Peak resident memory of this process, in KB.
pub fn own_max_rss_kb() -> u64 {
    // SAFETY: as in own_cpu.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    ru.ru_maxrss as u64
}

/// Writes one JSON object as one line on stdout and flushes it, so the
/// orchestrator sees every second as it happens.
pub fn emit<T: Serialize>(value: &T) {
    let mut out = std::io::stdout().lock();
    // A closed stdout means the orchestrator is gone; nothing useful remains to do.
    if serde_json::to_writer(&mut out, value).is_err() || out.write_all(b"\n").is_err() || out.flush().is_err() {
        std::process::exit(3);
    }
}

#[derive(Serialize)]
pub struct SecondLine {
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Seconds since the step started (1 = the first second).
    pub t: u64,
    pub phase: &'static str,
    pub ops: u64,
    pub errors: u64,
    pub max_us: u64,
}

/// Emits one line per second until `phase.stop` is set, `total` has passed, or every worker has
/// lost its connection (`phase.lost`), using wall-clock seconds from `start`; sets `phase.stop`
/// then. Switches `phase.measuring` on after `warmup`. Calls `on_measure` at the moment
/// measurement begins and returns that instant: None if the step ended before it began.
pub fn report_seconds(
    live: &[Live],
    phase: &Phase,
    start: Instant,
    warmup: Duration,
    total: Option<Duration>,
    on_measure: &mut dyn FnMut(),
) -> Option<Instant> {
    let mut last = vec![(0u64, 0u64); live.len()];
    let mut t = 0u64;
    let mut measure_start = None;
    if warmup.is_zero() {
        on_measure();
        measure_start = Some(start);
        phase.measuring.store(true, Relaxed);
    }
    // Printing zero lines to the end for workers that are all gone would only pad the step.
    let all_lost = || phase.lost.load(Relaxed) >= live.len();
    loop {
        t += 1;
        let tick = start + Duration::from_secs(t);
        let end = total.map(|d| start + d);
        // Sleep in short slices so a stop (e.g. the prepare step ending) is seen quickly.
        loop {
            let now = Instant::now();
            let target = match end {
                Some(e) if e < tick => e,
                _ => tick,
            };
            if now >= target || phase.stop.load(Relaxed) || all_lost() {
                break;
            }
            std::thread::sleep((target - now).min(Duration::from_millis(50)));
        }
        let in_warmup = !phase.measuring.load(Relaxed);
        let (mut ops, mut errs, mut max_us) = (0, 0, 0);
        for (i, l) in live.iter().enumerate() {
            let o = l.ops.load(Relaxed);
            let e = l.errors.load(Relaxed);
            ops += o - last[i].0;
            errs += e - last[i].1;
            last[i] = (o, e);
            max_us = max_us.max(l.max_us.swap(0, Relaxed));
        }
        let stopping = phase.stop.load(Relaxed) || end.is_some_and(|e| Instant::now() >= e) || all_lost();
        if !stopping || ops > 0 {
            emit(&SecondLine {
                kind: "second",
                t,
                phase: if in_warmup { "warmup" } else { "measure" },
                ops,
                errors: errs,
                max_us,
            });
        }
        if in_warmup && !stopping && Instant::now() >= start + warmup {
            on_measure();
            measure_start = Some(Instant::now());
            phase.measuring.store(true, Relaxed);
        }
        if stopping {
            phase.stop.store(true, Relaxed);
            return measure_start;
        }
    }
}

#[derive(Serialize)]
pub struct Latency {
    pub min: u64,
    pub mean: f64,
    pub p50: u64,
    pub p90: u64,
    pub p95: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
}

impl Latency {
    pub fn of(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Latency { min: 0, mean: 0.0, p50: 0, p90: 0, p95: 0, p99: 0, p999: 0, max: 0 };
        }
        Latency {
            min: h.min(),
            mean: h.mean(),
            p50: h.value_at_quantile(0.50),
            p90: h.value_at_quantile(0.90),
            p95: h.value_at_quantile(0.95),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            max: h.max(),
        }
    }
}

/// The histogram in HdrHistogram's standard compressed, base64 form, which
/// other HdrHistogram implementations (Python's among them) decode.
pub fn encode_histogram(h: &Histogram<u64>) -> String {
    let mut buf = Vec::new();
    V2DeflateSerializer::new().serialize(h, &mut buf).expect("histogram serialises into memory");
    base64_encode(&buf)
}

fn base64_encode(data: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reporter_stops_when_every_worker_is_lost() {
        let live = [Live::default(), Live::default()];
        let phase = Phase::default();
        phase.lost.store(live.len(), Relaxed);
        let t0 = Instant::now();
        let total = Some(Duration::from_secs(100));
        let measured = report_seconds(&live, &phase, t0, Duration::from_secs(5), total, &mut || panic!("measured"));
        // Ended in the warm-up: nothing measured, no zero lines to the end, and the workers told to stop.
        assert_eq!(measured, None);
        assert!(phase.stop.load(Relaxed));
        assert!(t0.elapsed() < Duration::from_secs(1));
    }
}
