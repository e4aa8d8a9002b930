//! The Insert Benchmark's tables as iibench makes them on each engine family (methodology §2.1, §2.4,
//! §2.5): the suite owns its DDL and its delete form; the driver's dialect only says which family it is
//! and what its catalog answers.

use crate::driver::{Dialect, Family};

/// Creates table `table`: transactionid a generated BIGINT primary key, then dateandtime,
/// cashregisterid, customerid, productid, price, data.
pub fn create_pi(d: &dyn Dialect, table: &str) -> String {
    const REST: &str = "cashregisterid INT NOT NULL, customerid INT NOT NULL, productid INT NOT NULL, \
                        price INT NOT NULL, data VARCHAR(4000)";
    match d.family() {
        Family::Postgres => format!(
            "CREATE TABLE {table} (transactionid BIGSERIAL PRIMARY KEY, dateandtime TIMESTAMP WITHOUT TIME ZONE, \
             {REST})"
        ),
        Family::Mysql => format!(
            "CREATE TABLE {table} (transactionid BIGINT NOT NULL AUTO_INCREMENT, dateandtime DATETIME, {REST}, \
             PRIMARY KEY (transactionid))"
        ),
        // The rowid, without AUTOINCREMENT: new ids are max + 1, and only the oldest (lowest) rows are
        // ever deleted, so ids only grow.
        Family::Sqlite => {
            format!("CREATE TABLE {table} (transactionid INTEGER PRIMARY KEY, dateandtime TIMESTAMP, {REST})")
        }
    }
}

/// Makes `table`'s id generator hand out ids in blocks of 1000 (iibench's sequence cache), or None where
/// the engine has no such setting.
pub fn id_cache(d: &dyn Dialect, table: &str) -> Option<String> {
    match d.family() {
        // BIGSERIAL names its sequence <table>_<column>_seq.
        Family::Postgres => Some(format!("ALTER SEQUENCE {table}_transactionid_seq CACHE 1000")),
        Family::Mysql | Family::Sqlite => None,
    }
}

/// Deletes the oldest rows of `table`: parameter 0 the lowest transactionid to delete from, parameter 1
/// how many rows, in id order (§2.5).
pub fn delete_oldest(d: &dyn Dialect, table: &str) -> String {
    let (mut from, mut count) = (String::new(), String::new());
    d.placeholder(0, &mut from);
    d.placeholder(1, &mut count);
    match d.family() {
        // iibench's MySQL form; LIMIT takes a placeholder in a prepared statement.
        Family::Mysql => {
            format!("DELETE FROM {table} WHERE transactionid >= {from} ORDER BY transactionid ASC LIMIT {count}")
        }
        // No ORDER BY/LIMIT on DELETE (SQLite's needs a compile-time option): the rows come from a subquery.
        Family::Postgres | Family::Sqlite => format!(
            "DELETE FROM {table} WHERE transactionid IN \
             (SELECT transactionid FROM {table} WHERE transactionid >= {from} ORDER BY transactionid ASC LIMIT {count})"
        ),
    }
}

/// The statements that add `indexes` ((name, columns) each) to `table`, whose storage engine (the
/// dialect's `table_storage`) is `storage`: InnoDB gets the three in one ALTER TABLE (one pass builds them
/// all, §2.4), other MySQL engines (MyRocks) one ALTER TABLE each, and the others one CREATE INDEX each.
pub fn add_indexes(d: &dyn Dialect, table: &str, indexes: &[(String, &str)], storage: Option<&str>) -> Vec<String> {
    if d.family() != Family::Mysql {
        return indexes.iter().map(|(name, cols)| d.create_index(name, table, cols)).collect();
    }
    let add = |(name, cols): &(String, &str)| format!("ADD INDEX {name} ({cols})");
    if storage.is_some_and(|s| s.eq_ignore_ascii_case("innodb")) {
        let all: Vec<String> = indexes.iter().map(add).collect();
        vec![format!("ALTER TABLE {table} {}", all.join(", "))]
    } else {
        indexes.iter().map(|i| format!("ALTER TABLE {table} {}", add(i))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::{mysql, pg, sqlite};

    #[test]
    fn each_family_makes_the_tables_as_iibench_does() {
        let (p, m, s) = (&pg::DIALECT, &mysql::DIALECT, &sqlite::DIALECT);
        assert!(create_pi(p, "pi1").starts_with("CREATE TABLE pi1 (transactionid BIGSERIAL PRIMARY KEY, "));
        assert_eq!(
            create_pi(m, "pi1"),
            "CREATE TABLE pi1 (transactionid BIGINT NOT NULL AUTO_INCREMENT, dateandtime DATETIME, \
             cashregisterid INT NOT NULL, customerid INT NOT NULL, productid INT NOT NULL, price INT NOT NULL, \
             data VARCHAR(4000), PRIMARY KEY (transactionid))"
        );
        assert_eq!(
            create_pi(s, "pi1"),
            "CREATE TABLE pi1 (transactionid INTEGER PRIMARY KEY, dateandtime TIMESTAMP, \
             cashregisterid INT NOT NULL, customerid INT NOT NULL, productid INT NOT NULL, price INT NOT NULL, \
             data VARCHAR(4000))"
        );
        assert_eq!(id_cache(p, "pi2").unwrap(), "ALTER SEQUENCE pi2_transactionid_seq CACHE 1000");
        assert_eq!((id_cache(m, "pi2"), id_cache(s, "pi2")), (None, None));
        assert!(delete_oldest(p, "pi1").ends_with("WHERE transactionid >= $1 ORDER BY transactionid ASC LIMIT $2)"));
        assert_eq!(
            delete_oldest(m, "pi1"),
            "DELETE FROM pi1 WHERE transactionid >= ? ORDER BY transactionid ASC LIMIT ?"
        );
        assert_eq!(
            delete_oldest(s, "pi1"),
            "DELETE FROM pi1 WHERE transactionid IN \
             (SELECT transactionid FROM pi1 WHERE transactionid >= ?1 ORDER BY transactionid ASC LIMIT ?2)"
        );
        let two = [("a".to_string(), "x, y"), ("b".to_string(), "z")];
        assert_eq!(
            add_indexes(m, "pi1", &two, Some("InnoDB")),
            ["ALTER TABLE pi1 ADD INDEX a (x, y), ADD INDEX b (z)"]
        );
        assert_eq!(
            add_indexes(m, "pi1", &two, Some("ROCKSDB")),
            ["ALTER TABLE pi1 ADD INDEX a (x, y)", "ALTER TABLE pi1 ADD INDEX b (z)"]
        );
        assert_eq!(add_indexes(p, "pi1", &two, None), ["CREATE INDEX a ON pi1 (x, y)", "CREATE INDEX b ON pi1 (z)"]);
    }
}
