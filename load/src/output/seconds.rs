//! The per-second lines: live counters the workers update and a reporter reads once a second.

use super::emit;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

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
    /// Workers that ran every event they were asked for (`--events`); they end the step like lost ones.
    pub finished: AtomicUsize,
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

/// Emits one line per second until `phase.stop` is set, the measured part of `total` (after `warmup`)
/// has passed since measurement began, or every worker has lost its connection (`phase.lost`) or
/// finished its events (`phase.finished`), using wall-clock seconds from `start`; sets `phase.stop`
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
    // The step ends the asked measured seconds after measurement began, so a reporter that wakes
    // late from the warm-up (a busy machine) shifts the window instead of shortening it.
    let mut end = total.map(|d| start + d);
    let begin = |m: Instant| total.map(|d| m + d.saturating_sub(warmup));
    if warmup.is_zero() {
        on_measure();
        measure_start = Some(start);
        phase.measuring.store(true, Relaxed);
    }
    // Printing zero lines to the end for workers that are all gone would only pad the step.
    let all_lost = || phase.lost.load(Relaxed) + phase.finished.load(Relaxed) >= live.len();
    loop {
        t += 1;
        let tick = start + Duration::from_secs(t);
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
        // Switched before the line is written: writing may wait on a slow reader.
        if in_warmup && !stopping && Instant::now() >= start + warmup {
            on_measure();
            let m = Instant::now();
            measure_start = Some(m);
            end = begin(m);
            phase.measuring.store(true, Relaxed);
        }
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
        if stopping {
            phase.stop.store(true, Relaxed);
            return measure_start;
        }
    }
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

    #[test]
    fn a_late_reporter_still_measures_the_seconds_asked() {
        // The reporter starts 1.5 s after the step's start (as when the machine is busy): the warm-up
        // is already over, and the measured second must still be a whole one.
        let live = [Live::default()];
        let phase = Phase::default();
        let t0 = Instant::now() - Duration::from_millis(1500);
        let total = Some(Duration::from_secs(2));
        let m = report_seconds(&live, &phase, t0, Duration::from_secs(1), total, &mut || {}).expect("measured");
        assert!(m.elapsed() >= Duration::from_secs(1));
        assert!(phase.stop.load(Relaxed));
    }
}
