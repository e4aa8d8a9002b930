//! What one worker measured: its latency histogram, counts and errors; merged at the end of a step.

use super::histogram::new_histogram;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

/// How many distinct error messages a step keeps verbatim.
pub const ERROR_SAMPLES: usize = 5;

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
            latency: new_histogram(),
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

    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }

    /// Adds the errors (counts and samples) of `other`.
    pub fn merge_errors(&mut self, other: &Tally) {
        for (k, v) in &other.errors {
            *self.errors.entry(k.clone()).or_insert(0) += v;
        }
        for m in &other.error_samples {
            if self.error_samples.len() < ERROR_SAMPLES && !self.error_samples.contains(m) {
                self.error_samples.push(m.clone());
            }
        }
    }

    pub fn merge(&mut self, other: Tally) {
        self.latency.add(&other.latency).expect("same histogram bounds");
        self.events += other.events;
        self.queries += other.queries;
        self.rows += other.rows;
        self.rows_affected += other.rows_affected;
        self.warmup_events += other.warmup_events;
        self.merge_errors(&other);
    }
}

impl Default for Tally {
    fn default() -> Self {
        Self::new()
    }
}
