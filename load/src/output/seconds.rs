//! The per-second lines: live counters the workers update and a reporter reads once a second.

use super::emit;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Condvar, Mutex};
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

/// What a reporter sleeps on between its lines: whoever ends the step, or a worker's part of it,
/// rings it, and the reporter wakes at once. Polling a flag instead (every 50 ms) is work done by
/// the clock: an embedded engine's count under valgrind includes the client's every instruction,
/// and a run that took longer (a busy machine) counted more per event (+57,000 instructions per
/// second of run, enough to split two counts of the same SQLite on a point query).
#[derive(Default)]
pub struct Bell {
    lock: Mutex<()>,
    rung: Condvar,
}

impl Bell {
    /// Wakes the reporter; call after the change it should see is stored.
    pub fn ring(&self) {
        // Taken and let go before notifying: a reporter between its check and its wait holds the
        // lock, so the notice cannot fall between the two.
        drop(self.lock.lock().unwrap_or_else(|e| e.into_inner()));
        self.rung.notify_all();
    }

    /// Sleeps until `done()` holds or `until` (never, if None) has come; a ring makes it look again.
    pub fn wait(&self, until: Option<Instant>, done: &dyn Fn() -> bool) {
        let mut guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if done() {
                return;
            }
            guard = match until {
                None => self.rung.wait(guard).unwrap_or_else(|e| e.into_inner()),
                Some(t) => {
                    let now = Instant::now();
                    if now >= t {
                        return;
                    }
                    self.rung.wait_timeout(guard, t - now).unwrap_or_else(|e| e.into_inner()).0
                }
            };
        }
    }
}

/// Flags the main thread sets and the workers poll; the reporter sleeps on `bell`, which the
/// methods that end a step or a worker ring.
#[derive(Default)]
pub struct Phase {
    pub measuring: AtomicBool,
    pub stop: AtomicBool,
    /// Workers that stopped for good because their connection was lost. Once every worker (one
    /// `Live` each) has, nothing is left to measure and the reporter ends the step.
    pub lost: AtomicUsize,
    /// Workers that ran every event they were asked for (`--events`); they end the step like lost ones.
    pub finished: AtomicUsize,
    pub bell: Bell,
}

impl Phase {
    /// Ends the step (e.g. the load is done): the workers stop, the reporter writes its last line.
    pub fn end(&self) {
        self.stop.store(true, Relaxed);
        self.bell.ring();
    }

    /// A worker's connection is lost for good.
    pub fn lose(&self) {
        self.lost.fetch_add(1, Relaxed);
        self.bell.ring();
    }

    /// A worker ran every event it was asked for.
    pub fn finish(&self) {
        self.finished.fetch_add(1, Relaxed);
        self.bell.ring();
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

/// Emits one line per second (none when `lines` is off) until `phase.stop` is set, the measured
/// part of `total` (after `warmup`) has passed since measurement began, or every worker has lost
/// its connection (`phase.lost`) or finished its events (`phase.finished`), using wall-clock
/// seconds from `start`; sets `phase.stop` then. Switches `phase.measuring` on after `warmup`.
/// Calls `on_measure` at the moment measurement begins and returns that instant: None if the step
/// ended before it began. Without lines the reporter wakes only for the warm-up's end and the
/// step's: a count of the client's instructions then holds nothing that grows with the run's time.
pub fn report_seconds(
    live: &[Live],
    phase: &Phase,
    start: Instant,
    warmup: Duration,
    total: Option<Duration>,
    lines: bool,
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
        let in_warmup = !phase.measuring.load(Relaxed);
        // The next wake: the next second's line, else the warm-up's end; the step's end if sooner.
        let tick = if lines {
            Some(start + Duration::from_secs(t))
        } else if in_warmup {
            Some(start + warmup)
        } else {
            None
        };
        let until = match (tick, end) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        phase.bell.wait(until, &|| phase.stop.load(Relaxed) || all_lost());
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
        if lines && (!stopping || ops > 0) {
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
        let measured =
            report_seconds(&live, &phase, t0, Duration::from_secs(5), total, true, &mut || panic!("measured"));
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
        let m = report_seconds(&live, &phase, t0, Duration::from_secs(1), total, true, &mut || {}).expect("measured");
        assert!(m.elapsed() >= Duration::from_secs(1));
        assert!(phase.stop.load(Relaxed));
    }

    /// A worker that finishes its events once `ready` holds (looked at every 10 ms).
    fn finishing_when(
        phase: &std::sync::Arc<Phase>,
        ready: impl Fn(&Phase) -> bool + Send + 'static,
    ) -> std::thread::JoinHandle<()> {
        let phase = phase.clone();
        std::thread::spawn(move || {
            while !ready(&phase) {
                std::thread::sleep(Duration::from_millis(10));
            }
            phase.finish();
        })
    }

    #[test]
    fn without_lines_a_finished_worker_still_ends_the_step() {
        // No line a second, so no wake by the clock before the 100 s end: the bell must end it.
        let live = [Live::default()];
        let phase = std::sync::Arc::new(Phase::default());
        let t0 = Instant::now();
        let worker = finishing_when(&phase, move |_| t0.elapsed() >= Duration::from_millis(100));
        let total = Some(Duration::from_secs(100));
        let m = report_seconds(&live, &phase, t0, Duration::ZERO, total, false, &mut || {});
        worker.join().unwrap();
        assert_eq!(m, Some(t0));
        assert!(phase.stop.load(Relaxed));
        assert!(t0.elapsed() < Duration::from_secs(50), "ended by the bell, not at the end of the 100 s");
    }

    #[test]
    fn without_lines_the_warmup_still_ends_on_time() {
        // The reporter's one wake by the clock: the end of the warm-up, which starts the measurement.
        let live = [Live::default()];
        let phase = std::sync::Arc::new(Phase::default());
        let worker = finishing_when(&phase, |p| p.measuring.load(Relaxed));
        let t0 = Instant::now();
        let warmup = Duration::from_millis(300);
        let m = report_seconds(&live, &phase, t0, warmup, Some(Duration::from_secs(100)), false, &mut || {});
        worker.join().unwrap();
        assert!(m.expect("measured") >= t0 + warmup);
    }
}
