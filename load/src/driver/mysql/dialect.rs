//! MySQL's SQL facts: `?` placeholders, FORCE INDEX hints, information_schema for table listings and
//! a table's storage engine. The suites' tables for MySQL are the suites' own (AUTO_INCREMENT ids, no
//! ENGINE clause: the server's default_storage_engine, InnoDB or RocksDB, makes them).

use crate::driver::{Dialect, Family};

pub struct MysqlDialect;

pub static DIALECT: MysqlDialect = MysqlDialect;

impl Dialect for MysqlDialect {
    fn family(&self) -> Family {
        Family::Mysql
    }

    fn placeholder(&self, _index: usize, out: &mut String) {
        out.push('?');
    }

    /// Base tables of the database connected to.
    fn list_tables(&self, prefix: &str) -> String {
        format!(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() \
             AND table_type = 'BASE TABLE' AND table_name REGEXP '^{prefix}[0-9]+$'"
        )
    }

    /// An INT column rounds a decimal on assignment, half away from zero (12.5 becomes 13, with no
    /// warning in strict mode; checked on MariaDB 10.11).
    fn int_column_rounds_decimals(&self) -> bool {
        true
    }

    fn table_storage(&self, table: &str) -> Option<String> {
        Some(format!(
            "SELECT engine FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = '{table}'"
        ))
    }

    /// iibench names the index of each range query, so the optimizer cannot pick another.
    fn index_hint(&self, index: &str) -> String {
        format!("FORCE INDEX({index})")
    }

    fn typed_dates(&self) -> bool {
        true
    }

    fn adds_primary_key(&self) -> bool {
        true
    }

    /// The index statistics the optimizer reads (InnoDB's persistent ones, MyRocks' own).
    fn after_load(&self, table: &str) -> Vec<String> {
        vec![format!("ANALYZE TABLE {table}")]
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
        assert_eq!(p, "? ?");
        assert_eq!(
            d.list_tables("pi"),
            "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() \
             AND table_type = 'BASE TABLE' AND table_name REGEXP '^pi[0-9]+$'"
        );
        assert_eq!(d.create_index("k_1", "sbtest1", "k"), "CREATE INDEX k_1 ON sbtest1 (k)");
        assert!(d.table_storage("pi1").unwrap().ends_with("AND table_name = 'pi1'"));
        assert_eq!(d.index_hint("pi1_pdc"), "FORCE INDEX(pi1_pdc)");
        assert!(d.int_column_rounds_decimals());
        assert_eq!(d.family(), Family::Mysql);
        assert!(d.typed_dates() && d.adds_primary_key());
        assert_eq!(d.after_load("lineitem"), ["ANALYZE TABLE lineitem"]);
    }
}
