//! Connections lost during a step: established connections that became unusable (an I/O error,
//! EOF or reset, a FATAL from the server). A step that lost one did not measure what it was asked
//! to, and its summary says so (`ended_early`).
//!
//! One process-wide record (a process runs one step). It is written only when a connection
//! breaks, so a plain Mutex costs nothing on the path of a healthy query.

use serde::Serialize;
use std::sync::Mutex;
use std::time::Instant;

/// The record every connection reports to.
pub static LOST: Lost = Lost::new();

/// A record of lost connections: how many, and when and why the first one was lost.
pub struct Lost {
    state: Mutex<State>,
}

struct State {
    count: u64,
    /// The first loss: when, and why (as `describe` puts it).
    first: Option<(Instant, String)>,
}

/// The summaries' `ended_early` object.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct EndedEarly {
    /// Connections lost during the step.
    pub connections_lost: u64,
    /// Seconds from the start of the step's clock to the first loss (0 if it came before).
    pub at_s: f64,
    /// Why the first one was lost: "SQLSTATE: message" from the server, or "connection closed: ...".
    pub reason: String,
}

impl Lost {
    pub const fn new() -> Lost {
        Lost { state: Mutex::new(State { count: 0, first: None }) }
    }

    /// Counts one lost connection; the first one's time and reason are kept.
    pub fn record(&self, reason: String) {
        self.record_at(Instant::now(), reason);
    }

    pub fn record_at(&self, at: Instant, reason: String) {
        // A panic elsewhere while holding the lock leaves the counts valid: go on with them.
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.count += 1;
        if s.first.is_none() {
            s.first = Some((at, reason));
        }
    }

    pub fn count(&self) -> u64 {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).count
    }

    /// None when no connection was lost, else what a summary reports, with `at_s` counted from `origin`.
    pub fn ended_early(&self, origin: Instant) -> Option<EndedEarly> {
        let s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let (at, reason) = s.first.as_ref()?;
        let secs = at.saturating_duration_since(origin).as_secs_f64();
        Some(EndedEarly { connections_lost: s.count, at_s: (secs * 1000.0).round() / 1000.0, reason: reason.clone() })
    }

    /// Forgets every loss.
    #[cfg(test)]
    pub fn reset(&self) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.count = 0;
        s.first = None;
    }
}

impl Default for Lost {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn nothing_lost_is_null() {
        let l = Lost::new();
        assert_eq!(l.count(), 0);
        assert_eq!(l.ended_early(Instant::now()), None);
        assert_eq!(serde_json::to_value(l.ended_early(Instant::now())).unwrap(), serde_json::Value::Null);
    }

    #[test]
    fn the_first_reason_and_every_loss_are_kept() {
        let l = Lost::new();
        let origin = Instant::now();
        l.record_at(origin + Duration::from_millis(2500), "57P02: terminating connection".into());
        l.record_at(origin + Duration::from_millis(2600), "connection closed: gone".into());
        let e = l.ended_early(origin).unwrap();
        assert_eq!(e.connections_lost, 2);
        assert_eq!(e.at_s, 2.5);
        assert_eq!(e.reason, "57P02: terminating connection");
        assert_eq!(l.count(), 2);
        let j = serde_json::to_value(&e).unwrap();
        assert_eq!(
            j,
            serde_json::json!({"connections_lost": 2, "at_s": 2.5, "reason": "57P02: terminating connection"})
        );
    }

    #[test]
    fn at_s_is_rounded_and_never_negative() {
        let l = Lost::new();
        let origin = Instant::now();
        l.record_at(origin + Duration::from_micros(1_234_567), "x".into());
        assert_eq!(l.ended_early(origin).unwrap().at_s, 1.235);
        // A loss before the step's clock started counts as at its start.
        assert_eq!(l.ended_early(origin + Duration::from_secs(5)).unwrap().at_s, 0.0);
    }

    #[test]
    fn reset_forgets() {
        let l = Lost::new();
        l.record("x".into());
        l.reset();
        assert_eq!((l.count(), l.ended_early(Instant::now())), (0, None));
        l.record("y".into());
        assert_eq!(l.ended_early(Instant::now()).unwrap().reason, "y");
    }
}
