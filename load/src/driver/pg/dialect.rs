//! Postgres's SQL where engines differ: `$n` placeholders, SERIAL/BIGSERIAL ids, the sequence
//! cache, the delete-oldest form, and the catalog (pg_class) for table listings.

use crate::driver::Dialect;
use std::fmt::Write;

pub struct PgDialect;

pub static DIALECT: PgDialect = PgDialect;

impl Dialect for PgDialect {
    fn placeholder(&self, index: usize, out: &mut String) {
        write!(out, "${}", index + 1).expect("writing to a String");
    }

    /// As sysbench's pgsql driver creates it: id SERIAL.
    fn create_sbtest(&self, table: &str, primary_key: bool) -> Result<Vec<String>, String> {
        let key = if primary_key { ", PRIMARY KEY (id)" } else { "" };
        let mut s = vec![format!(
            "CREATE TABLE {table} (id SERIAL, k INTEGER NOT NULL DEFAULT 0, \
             c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT ''{key})"
        )];
        if !primary_key {
            let n = table.trim_start_matches(|c: char| !c.is_ascii_digit());
            s.push(self.create_index(&format!("xid{n}"), table, "id"));
        }
        Ok(s)
    }

    fn create_pi(&self, table: &str) -> String {
        format!(
            "CREATE TABLE {table} (transactionid BIGSERIAL PRIMARY KEY, dateandtime TIMESTAMP WITHOUT TIME ZONE, \
             cashregisterid INT NOT NULL, customerid INT NOT NULL, productid INT NOT NULL, price INT NOT NULL, \
             data VARCHAR(4000))"
        )
    }

    /// BIGSERIAL names its sequence <table>_<column>_seq.
    fn pi_id_cache(&self, table: &str) -> Option<String> {
        Some(format!("ALTER SEQUENCE {table}_transactionid_seq CACHE 1000"))
    }

    /// DELETE has no ORDER BY/LIMIT in Postgres: the rows come from a subquery (iibench's Postgres form).
    fn pi_delete_oldest(&self, table: &str) -> String {
        format!(
            "DELETE FROM {table} WHERE transactionid IN \
             (SELECT transactionid FROM {table} WHERE transactionid >= $1 ORDER BY transactionid ASC LIMIT $2)"
        )
    }

    /// Ordinary tables of every schema on the search path's database (as sysbench's cleanup sees them).
    fn list_tables(&self, prefix: &str) -> String {
        format!("SELECT relname::text FROM pg_class WHERE relkind = 'r' AND relname ~ '^{prefix}[0-9]+$'")
    }

    /// An INT column rounds a numeric on assignment (12.5 becomes 13).
    fn int_column_rounds_decimals(&self) -> bool {
        true
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
            d.create_sbtest("sbtest3", true).unwrap(),
            ["CREATE TABLE sbtest3 (id SERIAL, k INTEGER NOT NULL DEFAULT 0, c CHAR(120) NOT NULL DEFAULT '', \
              pad CHAR(60) NOT NULL DEFAULT '', PRIMARY KEY (id))"]
        );
        let no_pk = d.create_sbtest("sbtest12", false).unwrap();
        assert!(no_pk[0].ends_with("pad CHAR(60) NOT NULL DEFAULT '')"));
        assert_eq!(no_pk[1], "CREATE INDEX xid12 ON sbtest12 (id)");
        assert_eq!(d.pi_id_cache("pi2").unwrap(), "ALTER SEQUENCE pi2_transactionid_seq CACHE 1000");
        assert!(d.pi_delete_oldest("pi1").ends_with("WHERE transactionid >= $1 ORDER BY transactionid ASC LIMIT $2)"));
        assert!(d.create_pi("pi1").starts_with("CREATE TABLE pi1 (transactionid BIGSERIAL PRIMARY KEY, "));
        assert_eq!(
            d.list_tables("pi"),
            "SELECT relname::text FROM pg_class WHERE relkind = 'r' AND relname ~ '^pi[0-9]+$'"
        );
        assert!(d.int_column_rounds_decimals());
    }
}
