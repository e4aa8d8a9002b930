//! Postgres's SQL facts: `$n` placeholders and the catalog (pg_class) for table listings; the
//! suites' tables for Postgres are the suites' own (SERIAL/BIGSERIAL ids, the sequence cache).

use crate::driver::{Dialect, Family};
use std::fmt::Write;

pub struct PgDialect;

pub static DIALECT: PgDialect = PgDialect;

impl Dialect for PgDialect {
    fn family(&self) -> Family {
        Family::Postgres
    }

    fn placeholder(&self, index: usize, out: &mut String) {
        write!(out, "${}", index + 1).expect("writing to a String");
    }

    /// Ordinary tables of every schema on the search path's database (as sysbench's cleanup sees them).
    fn list_tables(&self, prefix: &str) -> String {
        format!("SELECT relname::text FROM pg_class WHERE relkind = 'r' AND relname ~ '^{prefix}[0-9]+$'")
    }

    /// An INT column rounds a numeric on assignment (12.5 becomes 13).
    fn int_column_rounds_decimals(&self) -> bool {
        true
    }

    fn typed_dates(&self) -> bool {
        true
    }

    fn adds_primary_key(&self) -> bool {
        true
    }

    /// Statistics for the planner, and every row frozen and its page marked all-visible (index-only
    /// scans then skip the heap, and no later vacuum rewrites the freshly loaded pages).
    fn after_load(&self, table: &str) -> Vec<String> {
        vec![format!("VACUUM (FREEZE, ANALYZE) {table}")]
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
        assert_eq!(p, "$1 $10");
        assert_eq!(
            d.list_tables("pi"),
            "SELECT relname::text FROM pg_class WHERE relkind = 'r' AND relname ~ '^pi[0-9]+$'"
        );
        assert!(d.int_column_rounds_decimals());
        assert_eq!(d.family(), Family::Postgres);
        assert!(d.typed_dates() && d.adds_primary_key());
        assert_eq!(d.after_load("lineitem"), ["VACUUM (FREEZE, ANALYZE) lineitem"]);
    }
}
