//! MySQL's SQL where engines differ: `?` placeholders, AUTO_INCREMENT ids, no id cache setting,
//! DELETE ... ORDER BY ... LIMIT for the oldest rows, FORCE INDEX on the Insert Benchmark's range
//! queries, and information_schema for table listings. No ENGINE clause: the server's
//! default_storage_engine (InnoDB, RocksDB) makes the tables.

use crate::driver::Dialect;

pub struct MysqlDialect;

pub static DIALECT: MysqlDialect = MysqlDialect;

impl Dialect for MysqlDialect {
    fn placeholder(&self, _index: usize, out: &mut String) {
        out.push('?');
    }

    /// As sysbench's mysql driver creates it: id AUTO_INCREMENT, the primary key or (--secondary)
    /// a non-unique key.
    fn create_sbtest(&self, table: &str, primary_key: bool) -> Result<Vec<String>, String> {
        let key = if primary_key { "PRIMARY KEY (id)" } else { "KEY xid (id)" };
        Ok(vec![format!(
            "CREATE TABLE {table} (id INTEGER NOT NULL AUTO_INCREMENT, k INTEGER NOT NULL DEFAULT 0, \
             c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', {key})"
        )])
    }

    /// As iibench creates it for MySQL.
    fn create_pi(&self, table: &str) -> String {
        format!(
            "CREATE TABLE {table} (transactionid BIGINT NOT NULL AUTO_INCREMENT, dateandtime DATETIME, \
             cashregisterid INT NOT NULL, customerid INT NOT NULL, productid INT NOT NULL, price INT NOT NULL, \
             data VARCHAR(4000), PRIMARY KEY (transactionid))"
        )
    }

    /// AUTO_INCREMENT has no per-table cache to set.
    fn pi_id_cache(&self, _table: &str) -> Option<String> {
        None
    }

    /// iibench's MySQL form; LIMIT takes a placeholder in a prepared statement.
    fn pi_delete_oldest(&self, table: &str) -> String {
        format!("DELETE FROM {table} WHERE transactionid >= ? ORDER BY transactionid ASC LIMIT ?")
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

    /// As the Insert Benchmark makes them (§2.4): InnoDB adds the three in one ALTER TABLE (one
    /// pass that builds them all); other engines (MyRocks) get one ALTER TABLE per index.
    fn add_indexes(&self, table: &str, indexes: &[(String, &str)], storage: Option<&str>) -> Vec<String> {
        let add = |(name, cols): &(String, &str)| format!("ADD INDEX {name} ({cols})");
        if storage.is_some_and(|s| s.eq_ignore_ascii_case("innodb")) {
            let all: Vec<String> = indexes.iter().map(add).collect();
            vec![format!("ALTER TABLE {table} {}", all.join(", "))]
        } else {
            indexes.iter().map(|i| format!("ALTER TABLE {table} {}", add(i))).collect()
        }
    }

    /// iibench names the index of each range query, so the optimizer cannot pick another.
    fn index_hint(&self, index: &str) -> String {
        format!("FORCE INDEX({index})")
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
            d.create_sbtest("sbtest3", true).unwrap(),
            ["CREATE TABLE sbtest3 (id INTEGER NOT NULL AUTO_INCREMENT, k INTEGER NOT NULL DEFAULT 0, \
              c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', PRIMARY KEY (id))"]
        );
        assert_eq!(
            d.create_sbtest("sbtest12", false).unwrap(),
            ["CREATE TABLE sbtest12 (id INTEGER NOT NULL AUTO_INCREMENT, k INTEGER NOT NULL DEFAULT 0, \
              c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', KEY xid (id))"]
        );
        assert_eq!(
            d.create_pi("pi1"),
            "CREATE TABLE pi1 (transactionid BIGINT NOT NULL AUTO_INCREMENT, dateandtime DATETIME, \
             cashregisterid INT NOT NULL, customerid INT NOT NULL, productid INT NOT NULL, price INT NOT NULL, \
             data VARCHAR(4000), PRIMARY KEY (transactionid))"
        );
        assert_eq!(d.pi_id_cache("pi2"), None);
        assert_eq!(
            d.pi_delete_oldest("pi1"),
            "DELETE FROM pi1 WHERE transactionid >= ? ORDER BY transactionid ASC LIMIT ?"
        );
        assert_eq!(
            d.list_tables("pi"),
            "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() \
             AND table_type = 'BASE TABLE' AND table_name REGEXP '^pi[0-9]+$'"
        );
        assert_eq!(d.create_index("k_1", "sbtest1", "k"), "CREATE INDEX k_1 ON sbtest1 (k)");
        let two = [("a".to_string(), "x, y"), ("b".to_string(), "z")];
        assert_eq!(d.add_indexes("pi1", &two, Some("InnoDB")), ["ALTER TABLE pi1 ADD INDEX a (x, y), ADD INDEX b (z)"]);
        assert_eq!(
            d.add_indexes("pi1", &two, Some("ROCKSDB")),
            ["ALTER TABLE pi1 ADD INDEX a (x, y)", "ALTER TABLE pi1 ADD INDEX b (z)"]
        );
        assert!(d.table_storage("pi1").unwrap().ends_with("AND table_name = 'pi1'"));
        assert_eq!(d.index_hint("pi1_pdc"), "FORCE INDEX(pi1_pdc)");
        assert!(d.int_column_rounds_decimals());
    }
}
