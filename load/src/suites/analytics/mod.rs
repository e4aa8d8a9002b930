//! Analytics: the data sets derived from TPC-H and TPC-DS, loaded through each engine's fastest bulk
//! path and queried. The SQL is the Python suite's files (`schema.sql`, `keys.sql`, `q01.sql` ...),
//! put in the engine's SQL here (`sql`, `ddl`) from its dialect's facts alone; the rows come from the
//! generator (`generator`), streamed.
//!
//! Three subcommands: `load` (`load`), `query` (`query`), and `sql`, which connects to nothing and
//! prints the statements an engine would receive.

pub mod ddl;
pub mod generator;
pub mod load;
pub mod query;
pub mod sql;

use crate::driver::Dialect;
use crate::output::emit;
use clap::{Args, ValueEnum};
use serde::Serialize;
use sql::Files;
use std::path::PathBuf;

/// The summary's step of a load (a query's step is its name, q01 ...).
pub const STEP_LOAD: &str = "load";

/// A data set.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq)]
pub enum DataSet {
    /// The eight tables derived from TPC-H and its 22 queries.
    Tpch,
    /// The 24 tables derived from TPC-DS and 22 queries over them.
    Tpcds,
}

impl DataSet {
    /// Its name: the generator's subcommand, and the directory of its files.
    pub fn name(self) -> &'static str {
        match self {
            DataSet::Tpch => "tpch",
            DataSet::Tpcds => "tpcds",
        }
    }
}

/// Which data set, where its SQL files are, and its scale factor: every subcommand's.
#[derive(Args, Debug, Clone)]
pub struct Data {
    /// The data set.
    #[arg(long, value_enum)]
    pub set: DataSet,
    /// The directory of the set's SQL files (schema.sql, keys.sql, q01.sql ...), or the one that holds
    /// it as <set>/ (the Python package's suites/analytics).
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
    /// The scale factor: the generator's -s (0.01 is about 10 MB of TPC-H data); TPC-H's q11 reads it too.
    #[arg(long, value_name = "SF")]
    pub scale: String,
}

impl Data {
    /// The scale factor, or one sentence when it is not a positive number.
    pub fn scale(&self) -> Result<f64, String> {
        match self.scale.trim().parse::<f64>() {
            Ok(s) if s.is_finite() && s > 0.0 => Ok(s),
            _ => Err(format!("--scale must be a positive number, the data set's scale factor, not {:?}", self.scale)),
        }
    }

    /// The scale factor as given, for the generator.
    pub fn scale_text(&self) -> &str {
        self.scale.trim()
    }

    pub fn files(&self) -> Files {
        Files::new(self.set, &self.dir)
    }
}

/// The options of `analytics load`.
#[derive(Args, Debug, Clone)]
pub struct LoadOptions {
    #[command(flatten)]
    pub data: Data,
    /// The data generator: the tpcgen-cli executable (run as `PATH <set> -s SF -T <table> --stdout -n 1 --quiet`).
    #[arg(long, value_name = "PATH")]
    pub generator: PathBuf,
}

/// The options of `analytics query`.
#[derive(Args, Debug, Clone)]
pub struct QueryOptions {
    #[command(flatten)]
    pub data: Data,
    /// The query: q01 ... q22.
    #[arg(long, value_name = "qNN")]
    pub query: String,
    /// Measured runs.
    #[arg(long, value_name = "N")]
    pub repeats: u32,
    /// Runs before the measured ones, not measured (the first is the cold run).
    #[arg(long, value_name = "W", default_value_t = 1)]
    pub warmup_runs: u32,
    /// A run that takes longer is stopped, and the query with it (0: no limit).
    #[arg(long, value_name = "T", default_value_t = 0)]
    pub timeout_s: u64,
}

/// The options of `analytics sql`.
#[derive(Args, Debug, Clone)]
pub struct SqlOptions {
    #[command(flatten)]
    pub data: Data,
    /// Only this query's statement (q01 ...); without it, the load's statements and every query's.
    #[arg(long, value_name = "qNN")]
    pub query: Option<String>,
}

/// One statement `analytics sql` prints: `{"kind", "table" or "query", "sql"}`.
#[derive(Serialize, Debug, PartialEq)]
pub struct SqlLine {
    /// "schema", "keys", "after_load" or "query".
    pub kind: &'static str,
    /// The table a load's statement is for (absent for a schema statement that makes none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
    /// The query's name (q01 ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    pub sql: String,
}

/// The statements `dialect`'s engine receives from a load and the queries, in order, as one JSON
/// line each (`SqlLine`): the schema's (each table dropped, then created), the keys', each table's
/// after its load; then each query's (or only `--query`'s).
pub fn sql_lines(dialect: &dyn Dialect, opts: &SqlOptions) -> Result<Vec<SqlLine>, String> {
    let scale = opts.data.scale()?;
    let files = opts.data.files();
    let mut lines = Vec::new();
    let queries = match &opts.query {
        Some(q) => vec![q.clone()],
        None => {
            let plan = ddl::LoadPlan::new(&files, dialect)?;
            for (kind, statements) in [("schema", &plan.schema), ("keys", &plan.keys), ("after_load", &plan.after_load)]
            {
                for p in statements {
                    lines.push(SqlLine { kind, table: p.table.clone(), query: None, sql: p.sql.clone() });
                }
            }
            files.query_names()?
        }
    };
    for q in queries {
        let sql = files.query(&q, scale, dialect)?;
        lines.push(SqlLine { kind: "query", table: None, query: Some(q), sql });
    }
    Ok(lines)
}

/// `dbsweep-load analytics sql`: prints `sql_lines`.
pub fn print_sql(dialect: &dyn Dialect, opts: &SqlOptions) -> Result<(), String> {
    for line in sql_lines(dialect, opts)? {
        emit(&line);
    }
    Ok(())
}

#[cfg(test)]
mod tests;
