//! The insert rate limit (methodology §2.7), paced evenly within each second.
//!
//! iibench lets a second's batches go at once and then sleeps; here the k-th
//! batch is due when the rows sent so far, that batch included, match the
//! rate (start + rows_so_far / rate), so the background load is smooth and the
//! rows inserted by time t never exceed rate × t. The schedule is absolute, so
//! sleep overshoot does not accumulate.

use std::time::{Duration, Instant};

/// The most a schedule may be behind after a stall (a slow server, a full
/// queue): later batches go back to back only until the schedule is this far
/// behind. Beyond it the debt is forgiven, so a stall never turns into a long
/// burst, and the time lost shows as a lower achieved rate.
pub const MAX_DEBT: Duration = Duration::from_millis(250);

pub struct Pacer {
    origin: Instant,
    /// Rows per second.
    rate: u64,
    /// Rows scheduled so far, the batch last returned included.
    rows: u64,
    max_debt: Duration,
}

impl Pacer {
    pub fn new(origin: Instant, rate: u64) -> Pacer {
        assert!(rate > 0, "a pacer needs a positive rate");
        Pacer { origin, rate, rows: 0, max_debt: MAX_DEBT }
    }

    /// Time from the origin at which `rows` rows are due.
    fn offset(&self, rows: u64) -> Duration {
        Duration::from_nanos((rows as u128 * 1_000_000_000 / self.rate as u128) as u64)
    }

    /// When the next batch, of `rows` rows, may be sent; `now` is the current time.
    pub fn next(&mut self, rows: u64, now: Instant) -> Instant {
        self.rows += rows;
        let due = self.origin + self.offset(self.rows);
        match now.checked_duration_since(due) {
            Some(late) if late > self.max_debt => {
                // Move the whole schedule so this batch is exactly max_debt late.
                let forgiven = late - self.max_debt;
                self.origin += forgiven;
                due + forgiven
            }
            _ => due,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_are_evenly_spaced() {
        let t0 = Instant::now();
        let mut p = Pacer::new(t0, 1000);
        // 50-row batches at 1000 rows/s: one every 50 ms, the first at 50 ms (never a burst at t0).
        for k in 1..=100u64 {
            let due = p.next(50, t0);
            assert_eq!(due - t0, Duration::from_millis(50 * k));
        }
        // Rates that do not divide a second evenly do not drift: 3 rows/s, one row each.
        let mut p = Pacer::new(t0, 3);
        let dues: Vec<Duration> = (0..6).map(|_| p.next(1, t0) - t0).collect();
        assert_eq!(dues[2], Duration::from_secs(1));
        assert_eq!(dues[5], Duration::from_secs(2));
        assert!(dues.windows(2).all(|w| (w[1] - w[0]).as_nanos().abs_diff(333_333_333) <= 1));
        // A last, smaller batch is due when its rows are.
        let mut p = Pacer::new(t0, 100);
        assert_eq!(p.next(50, t0) - t0, Duration::from_millis(500));
        assert_eq!(p.next(20, t0) - t0, Duration::from_millis(700));
    }

    /// After a stall, at most MAX_DEBT worth of batches go at once, then pacing resumes at the rate.
    #[test]
    fn a_stall_bursts_at_most_the_cap() {
        let t0 = Instant::now();
        let mut p = Pacer::new(t0, 1000);
        let interval = Duration::from_millis(50);
        for _ in 0..10 {
            p.next(50, t0);
        }
        // Nothing was sent for 10 s; the sender runs as fast as it can from then on.
        let now = t0 + Duration::from_secs(10);
        let mut due = Vec::new();
        for _ in 0..40 {
            due.push(p.next(50, now));
        }
        let immediate = due.iter().filter(|&&d| d <= now).count();
        let cap = (MAX_DEBT.as_nanos() / interval.as_nanos()) as usize + 1;
        assert_eq!(immediate, cap);
        // Then the schedule is even again.
        assert!(due.windows(2).all(|w| w[1] - w[0] == interval));
        // A small lateness (under the cap) is caught up in full: the long-run rate holds.
        let mut p = Pacer::new(t0, 1000);
        let d1 = p.next(50, t0 + Duration::from_millis(200));
        assert_eq!(d1 - t0, interval);
        assert_eq!(p.next(50, t0 + Duration::from_millis(200)) - t0, 2 * interval);
    }

    #[test]
    fn a_slow_batch_rate_has_a_cap_of_one_batch() {
        // 100 rows/s in 50-row batches: a batch every 500 ms, longer than the cap.
        let t0 = Instant::now();
        let mut p = Pacer::new(t0, 100);
        let now = t0 + Duration::from_secs(5);
        let a = p.next(50, now);
        let b = p.next(50, now);
        assert!(a <= now && b > now, "one batch goes at once, the next waits");
        assert_eq!(b - a, Duration::from_millis(500));
    }
}
