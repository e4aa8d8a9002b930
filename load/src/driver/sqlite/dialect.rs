//! SQLite's SQL facts: numbered `?N` placeholders, the catalog (sqlite_master) for table listings,
//! and an INT column that keeps a decimal; the suites' tables for SQLite are the suites' own.

use crate::driver::{Dialect, Family};
use std::fmt::Write;

pub struct SqliteDialect;

pub static DIALECT: SqliteDialect = SqliteDialect;

impl Dialect for SqliteDialect {
    fn family(&self) -> Family {
        Family::Sqlite
    }

    /// Numbered, so a parameter's place in the text never matters.
    fn placeholder(&self, index: usize, out: &mut String) {
        write!(out, "?{}", index + 1).expect("writing to a String");
    }

    /// LIKE's '_' matches any character: existing_tables keeps exactly prefix + digits.
    fn list_tables(&self, prefix: &str) -> String {
        format!("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '{prefix}%'")
    }

    /// A decimal stored into an INT column stays a REAL in SQLite (its type affinity keeps 12.34).
    fn int_column_rounds_decimals(&self) -> bool {
        false
    }

    /// No DATE type: a DATE column keeps 'YYYY-MM-DD' as text, which compares in date order, and the
    /// year is read with strftime.
    fn typed_dates(&self) -> bool {
        false
    }

    /// ALTER TABLE cannot add a primary key to an existing table.
    fn adds_primary_key(&self) -> bool {
        false
    }

    /// The statistics (sqlite_stat1) the query planner reads.
    fn after_load(&self, table: &str) -> Vec<String> {
        vec![format!("ANALYZE {table}")]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_are_exact() {
        let d = &DIALECT;
        let mut p = String::new();
        d.placeholder(0, &mut p);
        p.push(' ');
        d.placeholder(9, &mut p);
        assert_eq!(p, "?1 ?10");
        assert_eq!(d.list_tables("pi"), "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'pi%'");
        assert_eq!(d.create_index("k_1", "sbtest1", "k"), "CREATE INDEX k_1 ON sbtest1 (k)");
        assert!(!d.int_column_rounds_decimals());
        assert_eq!(d.family(), Family::Sqlite);
        assert!(!d.typed_dates() && !d.adds_primary_key());
        assert_eq!(d.after_load("lineitem"), ["ANALYZE lineitem"]);
    }
}
