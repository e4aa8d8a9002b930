//! SQLite's SQL where engines differ: numbered `?N` placeholders, the rowid as the generated id
//! (INTEGER PRIMARY KEY), no id cache, and the catalog (sqlite_master) for table listings.

use crate::driver::Dialect;
use std::fmt::Write;

pub struct SqliteDialect;

pub static DIALECT: SqliteDialect = SqliteDialect;

/// Why SQLite cannot make sysbench's --secondary table.
pub const NO_SECONDARY_ID: &str = "SQLite cannot make sysbench's table without a primary key (--no-pk): \
     only an INTEGER PRIMARY KEY (the rowid) is generated on insert, so id is always the primary key";

impl Dialect for SqliteDialect {
    /// Numbered, so a parameter's place in the text never matters.
    fn placeholder(&self, index: usize, out: &mut String) {
        write!(out, "?{}", index + 1).expect("writing to a String");
    }

    /// id INTEGER PRIMARY KEY is the rowid: generated on insert, as sysbench's table wants.
    fn create_sbtest(&self, table: &str, primary_key: bool) -> Result<Vec<String>, String> {
        if !primary_key {
            return Err(NO_SECONDARY_ID.to_string());
        }
        Ok(vec![format!(
            "CREATE TABLE {table} (id INTEGER PRIMARY KEY, k INTEGER NOT NULL DEFAULT 0, \
             c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '')"
        )])
    }

    /// transactionid is the rowid, without AUTOINCREMENT: new ids are max + 1, and only the
    /// oldest (lowest) rows are ever deleted, so ids only grow.
    fn create_pi(&self, table: &str) -> String {
        format!(
            "CREATE TABLE {table} (transactionid INTEGER PRIMARY KEY, dateandtime TIMESTAMP, \
             cashregisterid INT NOT NULL, customerid INT NOT NULL, productid INT NOT NULL, price INT NOT NULL, \
             data VARCHAR(4000))"
        )
    }

    fn pi_id_cache(&self, _table: &str) -> Option<String> {
        None
    }

    /// The subquery form (a DELETE ... LIMIT needs a compile-time option).
    fn pi_delete_oldest(&self, table: &str) -> String {
        format!(
            "DELETE FROM {table} WHERE transactionid IN \
             (SELECT transactionid FROM {table} WHERE transactionid >= ?1 ORDER BY transactionid ASC LIMIT ?2)"
        )
    }

    /// LIKE's '_' matches any character: existing_tables keeps exactly prefix + digits.
    fn list_tables(&self, prefix: &str) -> String {
        format!("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '{prefix}%'")
    }

    /// A decimal stored into an INT column stays a REAL in SQLite (its type affinity keeps 12.34).
    fn int_column_rounds_decimals(&self) -> bool {
        false
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
        assert_eq!(
            d.create_sbtest("sbtest3", true).unwrap(),
            ["CREATE TABLE sbtest3 (id INTEGER PRIMARY KEY, k INTEGER NOT NULL DEFAULT 0, \
              c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '')"]
        );
        assert_eq!(d.create_sbtest("sbtest12", false).unwrap_err(), NO_SECONDARY_ID);
        assert_eq!(
            d.create_pi("pi1"),
            "CREATE TABLE pi1 (transactionid INTEGER PRIMARY KEY, dateandtime TIMESTAMP, \
             cashregisterid INT NOT NULL, customerid INT NOT NULL, productid INT NOT NULL, price INT NOT NULL, \
             data VARCHAR(4000))"
        );
        assert_eq!(d.pi_id_cache("pi2"), None);
        assert_eq!(
            d.pi_delete_oldest("pi1"),
            "DELETE FROM pi1 WHERE transactionid IN \
             (SELECT transactionid FROM pi1 WHERE transactionid >= ?1 ORDER BY transactionid ASC LIMIT ?2)"
        );
        assert_eq!(d.list_tables("pi"), "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'pi%'");
        assert_eq!(d.create_index("k_1", "sbtest1", "k"), "CREATE INDEX k_1 ON sbtest1 (k)");
        assert!(!d.int_column_rounds_decimals());
    }
}
