//! What the client prints: JSON lines on stdout, one per second while a step runs
//! (`seconds`), then one summary envelope (`summary`), or an error line. Also the
//! measurement they are made from: per-worker tallies and latency histograms.

pub mod histogram;
pub mod seconds;
pub mod summary;
pub mod tally;
pub mod usage;

use serde::Serialize;
use std::io::Write;

/// Writes one JSON object as one line on stdout and flushes it, so the
/// orchestrator sees every second as it happens.
pub fn emit<T: Serialize>(value: &T) {
    let mut out = std::io::stdout().lock();
    // A closed stdout means the orchestrator is gone; nothing useful remains to do.
    if serde_json::to_writer(&mut out, value).is_err() || out.write_all(b"\n").is_err() || out.flush().is_err() {
        std::process::exit(3);
    }
}

/// The last line of a step that failed: `{"type": "error", "message": "..."}`.
#[derive(Serialize)]
#[serde(tag = "type", rename = "error")]
pub struct ErrorLine<'a> {
    pub message: &'a str,
}
