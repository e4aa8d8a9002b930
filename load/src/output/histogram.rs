//! Latency histograms: how they are made, summarised and encoded for the summary.

use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::Serialize;

/// Latencies are recorded in microseconds, from 1 us to one hour, with three
/// significant digits.
const HIST_MAX_US: u64 = 3_600_000_000;

/// An empty latency histogram (µs).
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIST_MAX_US, 3).expect("valid histogram bounds")
}

/// A latency summary, µs; all zero for an empty histogram.
#[derive(Serialize, Debug, Clone, PartialEq)]
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
    use base64::Engine;
    let mut buf = Vec::new();
    V2DeflateSerializer::new().serialize(h, &mut buf).expect("histogram serialises into memory");
    base64::engine::general_purpose::STANDARD.encode(&buf)
}
