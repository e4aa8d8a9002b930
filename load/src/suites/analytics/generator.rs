//! The data generator (`tpcgen-cli`), run once per table with its rows on stdout: they stream into
//! the engine's bulk path and never touch the disk. The generator is an argument list, never a
//! shell command; its exit status is checked when its rows end, so a generator that fails makes the
//! load fail (its stream reports the failure where the rows end, before the engine commits them
//! where it can still refuse them), with the last lines it wrote to stderr.

use super::DataSet;
use crate::output::seconds::Live;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::atomic::Ordering::Relaxed;
use std::thread::JoinHandle;

/// What the generator's stdout is read in.
const READ_BUFFER: usize = 256 * 1024;
/// The stderr lines an error quotes, and at most how many bytes of them.
const STDERR_LINES: usize = 3;
const STDERR_BYTES: usize = 600;

/// The generator: its path, and the data set and scale factor it makes.
#[derive(Debug, Clone)]
pub struct Generator {
    pub path: PathBuf,
    pub set: DataSet,
    /// The scale factor as given (`-s`).
    pub scale: String,
}

/// The end of some text: its last non-empty lines, joined by " / ", at most STDERR_BYTES.
pub fn last_lines(text: &[u8]) -> String {
    let text = String::from_utf8_lossy(text);
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let joined = lines[lines.len().saturating_sub(STDERR_LINES)..].join(" / ");
    match joined.char_indices().rev().nth(STDERR_BYTES) {
        Some((cut, _)) => format!("...{}", &joined[cut..]),
        None => joined,
    }
}

/// ": " and the last lines of stderr, or nothing when it is empty.
fn said(stderr: &[u8]) -> String {
    let lines = last_lines(stderr);
    if lines.is_empty() {
        lines
    } else {
        format!(": {lines}")
    }
}

impl Generator {
    /// The generator at `path` (a path, or a name looked up on PATH).
    pub fn new(path: &Path, set: DataSet, scale: &str) -> Result<Generator, String> {
        if path.components().count() > 1 && !path.exists() {
            return Err(format!("the generator {} does not exist", path.display()));
        }
        Ok(Generator { path: path.to_path_buf(), set, scale: scale.to_string() })
    }

    fn shown(&self) -> String {
        self.path.display().to_string()
    }

    /// `PATH --version`'s answer ("tpcgen-cli 4.0.0").
    pub fn version(&self) -> Result<String, String> {
        let out = Command::new(&self.path)
            .arg("--version")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run the generator {}: {e}", self.shown()))?;
        if !out.status.success() {
            return Err(format!("{} --version failed ({}){}", self.shown(), out.status, said(&out.stderr)));
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    /// The arguments that make `table`'s rows on stdout, one thread, no progress output.
    pub fn args(&self, table: &str) -> Vec<String> {
        [self.set.name(), "-s", &self.scale, "-T", table, "--stdout", "-n", "1", "--quiet"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    /// Starts the generator for `table`: its rows, as they come.
    pub fn rows(&self, table: &str) -> Result<Rows, String> {
        let mut child = Command::new(&self.path)
            .args(self.args(table))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run the generator {}: {e}", self.shown()))?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut stderr = child.stderr.take().expect("stderr is piped");
        // Read apart, so a generator that writes much to stderr never blocks on it.
        let errors = std::thread::spawn(move || {
            let mut all = Vec::new();
            let _ = stderr.read_to_end(&mut all);
            all
        });
        Ok(Rows {
            child,
            out: BufReader::with_capacity(READ_BUFFER, stdout),
            errors: Some(errors),
            what: format!("the generator {} on table {table}", self.shown()),
            ended: None,
        })
    }
}

/// One run of the generator: its stdout as a `BufRead` whose end waits for the generator and, when
/// it failed, is an error instead of the end.
pub struct Rows {
    child: Child,
    out: BufReader<ChildStdout>,
    /// The thread that reads its stderr, until it is joined.
    errors: Option<JoinHandle<Vec<u8>>>,
    /// "the generator PATH on table T", for the errors.
    what: String,
    /// Set when stdout ended: Ok, or why the generator failed.
    ended: Option<Result<(), String>>,
}

impl Rows {
    /// Waits for the generator, whose stdout has ended; its stderr's last lines if it failed.
    fn wait(&mut self) -> Result<(), String> {
        let status = self.child.wait().map_err(|e| format!("waiting for {}: {e}", self.what))?;
        let stderr = self.errors.take().and_then(|t| t.join().ok()).unwrap_or_default();
        if status.success() {
            return Ok(());
        }
        Err(format!("{} failed ({status}){}", self.what, said(&stderr)))
    }

    /// Why the generator failed, once its rows have ended; None while it runs or when it succeeded.
    pub fn failure(&self) -> Option<&str> {
        match &self.ended {
            Some(Err(why)) => Some(why),
            _ => None,
        }
    }

    /// Whether the generator ran to its end and succeeded.
    pub fn succeeded(&self) -> bool {
        matches!(self.ended, Some(Ok(())))
    }
}

impl Drop for Rows {
    /// A generator whose rows were not all read (the load failed) is stopped.
    fn drop(&mut self) {
        if self.ended.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
            if let Some(t) = self.errors.take() {
                let _ = t.join();
            }
        }
    }
}

impl Read for Rows {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = {
            let have = self.fill_buf()?;
            let n = have.len().min(buf.len());
            buf[..n].copy_from_slice(&have[..n]);
            n
        };
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Rows {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        let at_end = self.out.fill_buf()?.is_empty();
        if at_end && self.ended.is_none() {
            self.ended = Some(self.wait());
        }
        if let Some(Err(why)) = &self.ended {
            return Err(io::Error::other(why.clone()));
        }
        self.out.fill_buf()
    }

    fn consume(&mut self, n: usize) {
        self.out.consume(n);
    }
}

/// Rows read through it are counted (their newlines) into a reporter's live counter as they go.
pub struct Counted<'a, R> {
    inner: R,
    live: &'a Live,
}

impl<'a, R: BufRead> Counted<'a, R> {
    pub fn new(inner: R, live: &'a Live) -> Self {
        Counted { inner, live }
    }
}

impl<R: BufRead> Read for Counted<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = {
            let have = self.fill_buf()?;
            let n = have.len().min(buf.len());
            buf[..n].copy_from_slice(&have[..n]);
            n
        };
        self.consume(n);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Counted<'_, R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, n: usize) {
        if n > 0 {
            // What is consumed was buffered: this fill reads nothing.
            if let Ok(have) = self.inner.fill_buf() {
                let lines = have[..n.min(have.len())].iter().filter(|&&b| b == b'\n').count();
                if lines > 0 {
                    self.live.ops.fetch_add(lines as u64, Relaxed);
                }
            }
        }
        self.inner.consume(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    #[test]
    fn the_generator_is_an_argument_list() {
        let g = Generator::new(Path::new("tpcgen-cli"), DataSet::Tpch, "0.01").unwrap();
        assert_eq!(g.args("nation"), ["tpch", "-s", "0.01", "-T", "nation", "--stdout", "-n", "1", "--quiet"]);
        let e = Generator::new(Path::new("/no/such/tpcgen-cli"), DataSet::Tpcds, "1").unwrap_err();
        assert_eq!(e, "the generator /no/such/tpcgen-cli does not exist");
    }

    #[test]
    fn stderr_is_quoted_by_its_last_lines() {
        assert_eq!(last_lines(b"a\n\nb\n  c  \nd\n"), "b / c / d");
        assert_eq!(last_lines(b""), "");
        let long = "x".repeat(1000);
        let cut = last_lines(long.as_bytes());
        assert!(cut.starts_with("...") && cut.len() == 3 + STDERR_BYTES + 1, "{}", cut.len());
    }

    #[test]
    fn rows_are_counted_as_they_are_read() {
        let live = Live::default();
        let mut r = Counted::new(Cursor::new(b"1|a|\n2|b|\n3|c|\n".to_vec()), &live);
        let mut line = Vec::new();
        r.read_until(b'\n', &mut line).unwrap();
        assert_eq!(live.ops.load(Relaxed), 1);
        let mut rest = String::new();
        r.read_to_string(&mut rest).unwrap();
        assert_eq!((rest.as_str(), live.ops.load(Relaxed)), ("2|b|\n3|c|\n", 3));
    }

    /// A stand-in generator: a shell script (the test's own, run as a program, as the real one is).
    fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let p = dir.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    #[test]
    fn a_failing_generator_ends_its_rows_with_an_error() {
        let dir = std::env::temp_dir().join(format!("dbsweep-gen-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let body = "if [ \"$1\" = --version ]; then echo 'tpcgen-cli 9.9'; exit 0; fi; printf '1|x|\\n2||\\n'";
        let ok = Generator::new(&script(&dir, "ok.sh", body), DataSet::Tpch, "0.5").unwrap();
        let mut rows = ok.rows("nation").unwrap();
        let mut all = String::new();
        rows.read_to_string(&mut all).unwrap();
        assert_eq!(all, "1|x|\n2||\n");
        assert!(rows.succeeded() && rows.failure().is_none());
        let body = "printf '1|x|\\n'; echo 'thread main panicked' >&2; exit 3";
        let bad = Generator::new(&script(&dir, "bad.sh", body), DataSet::Tpcds, "1").unwrap();
        let mut rows = bad.rows("store").unwrap();
        let mut all = String::new();
        let e = rows.read_to_string(&mut all).unwrap_err();
        let want =
            format!("the generator {} on table store failed (exit status: 3): thread main panicked", bad.shown());
        assert_eq!(e.to_string(), want);
        assert_eq!(rows.failure(), Some(want.as_str()));
        // A generator whose rows are left unread is stopped.
        let slow = Generator::new(&script(&dir, "slow.sh", "while :; do echo '1|'; done"), DataSet::Tpch, "1").unwrap();
        let mut rows = slow.rows("region").unwrap();
        let mut line = String::new();
        rows.read_line(&mut line).unwrap();
        drop(rows);
        assert_eq!(ok.version().unwrap(), "tpcgen-cli 9.9");
        let e = bad.version().unwrap_err();
        assert!(e.ends_with("--version failed (exit status: 3): thread main panicked"), "{e}");
        let silent = Generator::new(&script(&dir, "silent.sh", "exit 1"), DataSet::Tpch, "1").unwrap();
        assert!(silent.version().unwrap_err().ends_with("silent.sh --version failed (exit status: 1)"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
