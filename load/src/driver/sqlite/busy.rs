//! Waiting for a lock: the connection's busy handler sleeps with a growing backoff until the busy
//! timeout is used up, then gives up (the statement fails with SQLITE_BUSY). It also counts, for
//! the summary, the statements that waited and the time they waited.

use crate::driver::LockWaits;
use std::cell::Cell;
use std::time::{Duration, Instant};

/// The sleeps between tries, ms; the last one repeats.
const BACKOFF_MS: [u64; 12] = [1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100];

/// How long to sleep before try `count` + 1 of one wait (`count` = SQLite's count of tries so far).
pub fn backoff(count: i32) -> Duration {
    let i = usize::try_from(count).unwrap_or(0).min(BACKOFF_MS.len() - 1);
    Duration::from_millis(BACKOFF_MS[i])
}

/// One connection's busy handler: its timeout and what it counted. SQLite calls it only on the
/// thread using the connection, so plain Cells do.
#[derive(Debug)]
pub struct BusyState {
    timeout: Duration,
    /// When the current wait began (SQLite's count 0).
    since: Cell<Instant>,
    /// The statement running has waited (cleared, and counted, when it ends).
    waited: Cell<bool>,
    statements: Cell<u64>,
    slept: Cell<Duration>,
}

impl BusyState {
    pub fn new(timeout: Duration) -> BusyState {
        BusyState {
            timeout,
            since: Cell::new(Instant::now()),
            waited: Cell::new(false),
            statements: Cell::new(0),
            slept: Cell::new(Duration::ZERO),
        }
    }

    /// SQLite found the database locked for the `count`-th time in a row (0 the first): sleeps and
    /// returns true to try again, or returns false once the timeout is used up.
    pub fn wait(&self, count: i32) -> bool {
        let now = Instant::now();
        if count <= 0 {
            self.since.set(now);
        }
        let spent = now.saturating_duration_since(self.since.get());
        let Some(left) = self.timeout.checked_sub(spent).filter(|l| !l.is_zero()) else {
            return false;
        };
        self.waited.set(true);
        std::thread::sleep(backoff(count).min(left));
        self.slept.set(self.slept.get() + now.elapsed());
        true
    }

    /// A statement ended: counts it if it waited.
    #[inline]
    pub fn statement_done(&self) {
        if self.waited.get() {
            self.waited.set(false);
            self.statements.set(self.statements.get() + 1);
        }
    }

    pub fn counts(&self) -> LockWaits {
        LockWaits { statements: self.statements.get(), seconds: self.slept.get().as_secs_f64() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_grows_then_stays() {
        let ms: Vec<u128> = (0..15).map(|c| backoff(c).as_millis()).collect();
        assert_eq!(ms, [1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100, 100, 100, 100]);
        assert_eq!(backoff(-1), Duration::from_millis(1));
    }

    #[test]
    fn waits_until_the_timeout_then_gives_up() {
        let b = BusyState::new(Duration::from_millis(30));
        let t0 = Instant::now();
        let mut count = 0;
        while b.wait(count) {
            count += 1;
        }
        let took = t0.elapsed();
        // 1 + 2 + 5 + 10 + 12 (the rest of the 30 ms), or fewer sleeps when they overshoot.
        assert!(took >= Duration::from_millis(30) && took < Duration::from_millis(300), "{took:?}");
        assert!((3..=5).contains(&count), "{count}");
        b.statement_done();
        b.statement_done();
        let c = b.counts();
        assert_eq!(c.statements, 1);
        assert!(c.seconds >= 0.030 && c.seconds <= took.as_secs_f64(), "{c:?}");
        // A new wait starts its own clock.
        assert!(b.wait(0));
        // No timeout: no wait at all, and nothing counted.
        let z = BusyState::new(Duration::ZERO);
        assert!(!z.wait(0));
        z.statement_done();
        assert_eq!(z.counts(), LockWaits::default());
    }
}
