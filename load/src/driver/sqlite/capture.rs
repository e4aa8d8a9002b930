//! Statement capture for tests (`DBSWEEP_SQLITE_STATEMENTS=FILE`): per SQL text as the client
//! wrote it (placeholders left in), the calls and the rows, counted as Postgres's
//! pg_stat_statements counts them: rows returned by a query, rows changed by INSERT, UPDATE or
//! DELETE. Fed by the connection's trace; written to FILE when the connection closes, one JSON
//! line per text, each line one append.

use super::is_dml;
use std::collections::HashMap;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::PathBuf;

/// The environment variable that names the capture file.
pub const ENV: &str = "DBSWEEP_SQLITE_STATEMENTS";

#[derive(Debug, Clone, PartialEq)]
struct Entry {
    sql: String,
    calls: u64,
    rows: u64,
    dml: bool,
}

#[derive(Debug)]
pub struct Capture {
    path: PathBuf,
    index: HashMap<String, usize>,
    entries: Vec<Entry>,
    /// Statements running now (a statement's address, its entry); nested ones are possible.
    running: Vec<(usize, usize)>,
}

impl Capture {
    pub fn new(path: PathBuf) -> Capture {
        Capture { path, index: HashMap::new(), entries: Vec::new(), running: Vec::new() }
    }

    /// Statement `stmt` (its address) started running `sql`.
    pub fn started(&mut self, stmt: usize, sql: &str) {
        let i = match self.index.get(sql) {
            Some(&i) => i,
            None => {
                self.entries.push(Entry { sql: sql.to_string(), calls: 0, rows: 0, dml: is_dml(sql) });
                self.index.insert(sql.to_string(), self.entries.len() - 1);
                self.entries.len() - 1
            }
        };
        self.entries[i].calls += 1;
        self.running.retain(|&(s, _)| s != stmt);
        self.running.push((stmt, i));
    }

    /// `stmt` returned a row.
    pub fn row(&mut self, stmt: usize) {
        if let Some(&(_, i)) = self.running.iter().rev().find(|(s, _)| *s == stmt) {
            if !self.entries[i].dml {
                self.entries[i].rows += 1;
            }
        }
    }

    /// `stmt` finished; `changes` reads the rows the latest INSERT, UPDATE or DELETE changed.
    pub fn finished(&mut self, stmt: usize, changes: impl FnOnce() -> u64) {
        if let Some(at) = self.running.iter().rposition(|(s, _)| *s == stmt) {
            let (_, i) = self.running.remove(at);
            if self.entries[i].dml {
                self.entries[i].rows += changes();
            }
        }
    }

    /// The JSON lines, in first-seen order.
    fn lines(&self) -> Vec<String> {
        self.entries
            .iter()
            .map(|e| {
                let mut l = serde_json::json!({"sql": e.sql, "calls": e.calls, "rows": e.rows}).to_string();
                l.push('\n');
                l
            })
            .collect()
    }
}

impl Drop for Capture {
    /// Appends the counts to the file; a failure is reported on stderr (it cannot fail the step any more).
    fn drop(&mut self) {
        let lines = self.lines();
        if lines.is_empty() {
            return;
        }
        let written = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .and_then(|mut f| lines.iter().try_for_each(|l| f.write_all(l.as_bytes())));
        if let Err(e) = written {
            eprintln!("dbsweep-load: cannot write the statement counts to {}: {e}", self.path.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_calls_and_rows_per_text() {
        let path = std::env::temp_dir().join(format!("dbsweep-capture-{}.jsonl", std::process::id()));
        let _ = std::fs::remove_file(&path);
        {
            let mut c = Capture::new(path.clone());
            for _ in 0..3 {
                c.started(1, "SELECT c FROM t WHERE id=?1");
                c.row(1);
                c.row(1);
                c.finished(1, || 99);
            }
            c.started(2, "UPDATE t SET k=k+1 WHERE id=?1");
            // A nested statement (a schema read) while the UPDATE runs.
            c.started(3, "SELECT * FROM x");
            c.row(3);
            c.finished(3, || 99);
            c.finished(2, || 1);
            c.started(2, "UPDATE t SET k=k+1 WHERE id=?1");
            c.finished(2, || 0);
            c.row(7);
            c.finished(8, || 5);
        }
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let got: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(
            got,
            [
                serde_json::json!({"sql": "SELECT c FROM t WHERE id=?1", "calls": 3, "rows": 6}),
                serde_json::json!({"sql": "UPDATE t SET k=k+1 WHERE id=?1", "calls": 2, "rows": 1}),
                serde_json::json!({"sql": "SELECT * FROM x", "calls": 1, "rows": 1}),
            ]
        );
    }
}
