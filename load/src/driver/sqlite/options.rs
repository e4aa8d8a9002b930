//! SQLite's own command-line options: the load client's target options flatten them in, so the
//! driver alone knows them, checks them, and makes its `Config` from them.

use super::{parse_pragma, Config, DEFAULT_BUSY_TIMEOUT_MS};
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

/// The help's heading of these options. Each option names it: a `next_help_heading` on the struct
/// would go on to the options flattened after these (a step's own), putting them under it too.
const HEADING: &str = "SQLite (--engine sqlite)";

/// The options of `--engine sqlite`.
#[derive(Args, Debug, Clone, Default)]
// The group is named by the struct's name by default, which other flattened `Options` share.
#[group(id = "sqlite-options")]
pub struct Options {
    /// The SQLite shared library to open (e.g. the libsqlite3.so of the build to measure).
    #[arg(long, value_name = "PATH", help_heading = HEADING)]
    pub library: Option<PathBuf>,
    /// The database file (created when missing).
    #[arg(long, value_name = "PATH", help_heading = HEADING)]
    pub database: Option<PathBuf>,
    /// `PRAGMA NAME=VALUE` on every connection right after it opens, in the order given (repeatable).
    #[arg(long = "pragma", value_name = "NAME=VALUE", help_heading = HEADING)]
    pub pragmas: Vec<String>,
    /// How long a statement waits for a lock before it fails with SQLITE_BUSY, ms (10000).
    #[arg(long, value_name = "MS", help_heading = HEADING)]
    pub busy_timeout_ms: Option<u64>,
    /// Every connection reads every table and index once when it opens, so its page cache starts warm.
    #[arg(long, help_heading = HEADING)]
    pub prewarm: bool,
}

impl Options {
    /// The flags of the options given.
    fn given(&self) -> Vec<&'static str> {
        [
            ("--library", self.library.is_some()),
            ("--database", self.database.is_some()),
            ("--pragma", !self.pragmas.is_empty()),
            ("--busy-timeout-ms", self.busy_timeout_ms.is_some()),
            ("--prewarm", self.prewarm),
        ]
        .into_iter()
        .filter_map(|(name, given)| given.then_some(name))
        .collect()
    }

    /// A usage error in one sentence when any of these options was given with another engine (`engine`,
    /// the value of --engine), which would silently ignore it.
    pub fn refuse_with(&self, engine: &str) -> Result<(), String> {
        let given = self.given();
        if given.is_empty() {
            return Ok(());
        }
        Err(format!("{} are options of --engine sqlite, not of {engine}", given.join(", ")))
    }

    /// How to open the database, or a usage error in one sentence.
    pub fn config(&self) -> Result<Config, String> {
        let library = self
            .library
            .clone()
            .ok_or_else(|| "--engine sqlite needs --library PATH, the SQLite shared library to open".to_string())?;
        let database = self
            .database
            .clone()
            .ok_or_else(|| "--engine sqlite needs --database PATH, the database file".to_string())?;
        let pragmas = self.pragmas.iter().map(|p| parse_pragma(p)).collect::<Result<_, _>>()?;
        Ok(Config {
            library,
            database,
            pragmas,
            busy_timeout: Duration::from_millis(self.busy_timeout_ms.unwrap_or(DEFAULT_BUSY_TIMEOUT_MS)),
            prewarm: self.prewarm,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        sqlite: Options,
    }

    fn options(args: &[&str]) -> Options {
        Cli::try_parse_from(std::iter::once("t").chain(args.iter().copied())).unwrap().sqlite
    }

    #[test]
    fn the_options_make_the_config() {
        let c = options(&[
            "--library",
            "/lib/libsqlite3.so",
            "--database",
            "/tmp/x.db",
            "--pragma",
            "journal_mode=wal",
            "--pragma",
            "main.cache_size = -200000",
            "--prewarm",
        ])
        .config()
        .unwrap();
        assert_eq!(c.library, PathBuf::from("/lib/libsqlite3.so"));
        assert_eq!(c.database, PathBuf::from("/tmp/x.db"));
        assert_eq!(
            c.pragmas,
            [("journal_mode".to_string(), "wal".to_string()), ("main.cache_size".to_string(), "-200000".to_string())]
        );
        assert_eq!((c.busy_timeout, c.prewarm), (Duration::from_secs(10), true));
        let c = options(&["--library", "l", "--database", "d", "--busy-timeout-ms", "250"]).config().unwrap();
        assert_eq!(c.busy_timeout, Duration::from_millis(250));
    }

    #[test]
    fn another_engine_refuses_them() {
        assert_eq!(options(&[]).refuse_with("postgres"), Ok(()));
        assert_eq!(
            options(&["--database", "d", "--busy-timeout-ms", "5", "--pragma", "a=b"]).refuse_with("mysql"),
            Err("--database, --pragma, --busy-timeout-ms are options of --engine sqlite, not of mysql".to_string())
        );
    }
}
