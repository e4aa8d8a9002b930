//! The Insert Benchmark's SQL (methodology §2.1, §2.4, §2.5), one function per
//! statement shape, so the client runs and reports the same text. What differs
//! between engines: the tables and the delete form are the suite's own (`ddl`),
//! placeholders and index hints the driver's dialect.

use super::ddl;
use crate::driver::Dialect;

/// The columns every INSERT names, in the order the rows are written.
pub const INSERT_COLUMNS: &str = "dateandtime,cashregisterid,customerid,productid,price,data";

/// Table n (1-based): pi1, pi2, ...
pub fn table(n: u32) -> String {
    format!("pi{n}")
}

/// The three secondary indexes of step l.x on table `t`, as (index name, columns).
pub fn secondary_indexes(t: &str) -> [(String, &'static str); 3] {
    [
        (format!("{t}_marketsegment"), "productid, customerid, price"),
        (format!("{t}_registersegment"), "cashregisterid, customerid, price"),
        (format!("{t}_pdc"), "price, dateandtime, customerid"),
    ]
}

/// The statements that make l.x's three indexes on table `t`, whose storage engine is `storage`
/// where the engine has several (the dialect decides: one ALTER TABLE for InnoDB, §2.4).
pub fn create_indexes(t: &str, d: &dyn Dialect, storage: Option<&str>) -> Vec<String> {
    ddl::add_indexes(d, t, &secondary_indexes(t), storage)
}

/// The start of every multi-row INSERT; the rows follow as literals.
pub fn insert_prefix(t: &str) -> String {
    format!("INSERT INTO {t} ({INSERT_COLUMNS}) VALUES ")
}

/// The shape of an INSERT of `rows` rows, for the report (the client writes the values as literals:
/// the price with two decimals where the engine's INT column rounds them, else as an integer).
pub fn insert_shape(t: &str, rows: u64, d: &dyn Dialect) -> String {
    let price = if d.int_column_rounds_decimals() { "price.dd" } else { "price" };
    format!(
        "{}('YYYY-MM-DD HH:MM:SS',cashregisterid,customerid,productid,{price},'data'),... ({rows} rows)",
        insert_prefix(t)
    )
}

/// The rows each query returns at most (iibench's rows_per_query).
pub const ROWS_PER_QUERY: u32 = 10;

/// A range query covered by one secondary index.
pub struct RangeQuery {
    /// The report's name for it: the index's suffix.
    pub kind: &'static str,
    /// The parameter is uniform in [0, bound).
    pub bound: u32,
    /// Strict `>` (registersegment) or `>=`.
    strict: bool,
    columns: &'static str,
    key: &'static str,
}

/// The three range queries of the qr steps, in the order a random pick indexes them.
pub const RANGE_QUERIES: [RangeQuery; 3] = [
    RangeQuery {
        kind: "pdc",
        bound: super::rows::MAX_PRICE,
        strict: false,
        columns: "price, dateandtime, customerid",
        key: "price",
    },
    RangeQuery {
        kind: "marketsegment",
        bound: super::rows::PRODUCTS,
        strict: false,
        columns: "productid, customerid, price",
        key: "productid",
    },
    RangeQuery {
        kind: "registersegment",
        bound: super::rows::CASHREGISTERS,
        strict: true,
        columns: "cashregisterid, customerid, price",
        key: "cashregisterid",
    },
];

impl RangeQuery {
    /// The query on table `t`; its one parameter is the lower bound. Where the dialect has index
    /// hints, it names the index that covers it (`<t>_<kind>`, made by l.x), as iibench does.
    pub fn sql(&self, t: &str, d: &dyn Dialect) -> String {
        let op = if self.strict { ">" } else { ">=" };
        let mut p = String::new();
        d.placeholder(0, &mut p);
        let mut hint = d.index_hint(&format!("{t}_{}", self.kind));
        if !hint.is_empty() {
            hint.insert(0, ' ');
        }
        format!(
            "SELECT {c} FROM {t}{hint} WHERE {k} {op} {p} ORDER BY {c} LIMIT {n}",
            c = self.columns,
            k = self.key,
            n = ROWS_PER_QUERY
        )
    }
}

/// The point query of the qp steps: an IN-list of ROWS_PER_QUERY ids.
pub fn point_query(t: &str, d: &dyn Dialect) -> String {
    let mut ids = String::new();
    for i in 0..ROWS_PER_QUERY as usize {
        if i > 0 {
            ids.push_str(", ");
        }
        d.placeholder(i, &mut ids);
    }
    format!("SELECT transactionid, productid, data FROM {t} WHERE transactionid IN ({ids})")
}

pub fn min_id(t: &str) -> String {
    format!("SELECT min(transactionid) FROM {t}")
}

pub fn max_id(t: &str) -> String {
    format!("SELECT max(transactionid) FROM {t}")
}

pub fn count(t: &str) -> String {
    format!("SELECT count(*) FROM {t}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::pg::DIALECT;

    #[test]
    fn shapes_are_exact() {
        assert_eq!(
            RANGE_QUERIES[0].sql("pi1", &DIALECT),
            "SELECT price, dateandtime, customerid FROM pi1 WHERE price >= $1 \
             ORDER BY price, dateandtime, customerid LIMIT 10"
        );
        assert_eq!(
            RANGE_QUERIES[2].sql("pi2", &DIALECT),
            "SELECT cashregisterid, customerid, price FROM pi2 WHERE cashregisterid > $1 \
             ORDER BY cashregisterid, customerid, price LIMIT 10"
        );
        assert_eq!(
            point_query("pi1", &DIALECT),
            "SELECT transactionid, productid, data FROM pi1 WHERE transactionid IN \
             ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
        );
        assert_eq!(
            create_indexes("pi3", &DIALECT, None)[2],
            "CREATE INDEX pi3_pdc ON pi3 (price, dateandtime, customerid)"
        );
        assert_eq!(
            insert_shape("pi1", 50, &DIALECT),
            "INSERT INTO pi1 (dateandtime,cashregisterid,customerid,productid,price,data) VALUES \
             ('YYYY-MM-DD HH:MM:SS',cashregisterid,customerid,productid,price.dd,'data'),... (50 rows)"
        );
        let lite = &crate::driver::sqlite::DIALECT;
        assert!(insert_shape("pi1", 50, lite).contains(",productid,price,'data'),"));
        assert_eq!(
            point_query("pi1", lite),
            "SELECT transactionid, productid, data FROM pi1 WHERE transactionid IN \
             (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
        );
        assert!(RANGE_QUERIES[1].sql("pi1", lite).contains("WHERE productid >= ?1 ORDER BY"));
        // Index hints where the dialect has them, naming the index l.x made for the query.
        let my = &crate::driver::mysql::DIALECT;
        let made = secondary_indexes("pi2").map(|(name, _)| name);
        let hinted: Vec<String> = RANGE_QUERIES.iter().map(|q| q.sql("pi2", my)).collect();
        for (q, sql) in RANGE_QUERIES.iter().zip(&hinted) {
            let name = format!("pi2_{}", q.kind);
            assert!(made.contains(&name), "{name}");
            assert!(sql.contains(&format!(" FROM pi2 {} WHERE ", my.index_hint(&name))), "{sql}");
        }
        assert!(hinted[0].ends_with(" WHERE price >= ? ORDER BY price, dateandtime, customerid LIMIT 10"));
        assert!(hinted[2].contains(" WHERE cashregisterid > ? ORDER BY"));
        assert_eq!(
            point_query("pi1", my),
            "SELECT transactionid, productid, data FROM pi1 WHERE transactionid IN (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        );
    }
}
