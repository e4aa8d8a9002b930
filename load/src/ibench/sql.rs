//! The Insert Benchmark's SQL for Postgres (methodology §2.1, §2.4, §2.5), one
//! function per statement shape, so the client runs and reports the same text.

/// The columns every INSERT names, in the order the rows are written.
pub const INSERT_COLUMNS: &str = "dateandtime,cashregisterid,customerid,productid,price,data";

/// Table n (1-based): pi1, pi2, ...
pub fn table(n: u32) -> String {
    format!("pi{n}")
}

pub fn create_table(t: &str) -> String {
    format!(
        "CREATE TABLE {t} (transactionid BIGSERIAL PRIMARY KEY, dateandtime TIMESTAMP WITHOUT TIME ZONE, \
         cashregisterid INT NOT NULL, customerid INT NOT NULL, productid INT NOT NULL, price INT NOT NULL, \
         data VARCHAR(4000))"
    )
}

/// BIGSERIAL names its sequence <table>_<column>_seq.
pub fn alter_sequence(t: &str) -> String {
    format!("ALTER SEQUENCE {t}_transactionid_seq CACHE 1000")
}

/// The three secondary indexes of step l.x, as (index name, CREATE INDEX).
pub fn create_indexes(t: &str) -> [(String, String); 3] {
    let one = |suffix: &str, cols: &str| {
        let name = format!("{t}_{suffix}");
        let sql = format!("CREATE INDEX {name} ON {t} ({cols})");
        (name, sql)
    };
    [
        one("marketsegment", "productid, customerid, price"),
        one("registersegment", "cashregisterid, customerid, price"),
        one("pdc", "price, dateandtime, customerid"),
    ]
}

/// The start of every multi-row INSERT; the rows follow as literals.
pub fn insert_prefix(t: &str) -> String {
    format!("INSERT INTO {t} ({INSERT_COLUMNS}) VALUES ")
}

/// The shape of an INSERT of `rows` rows, for the report (the client writes the values as literals).
pub fn insert_shape(t: &str, rows: u64) -> String {
    format!(
        "{}('YYYY-MM-DD HH:MM:SS',cashregisterid,customerid,productid,price.dd,'data'),... ({rows} rows)",
        insert_prefix(t)
    )
}

/// Deletes $2 rows from the low end of the primary key, from id $1 up (§2.5, the Postgres form).
pub fn delete(t: &str) -> String {
    format!(
        "DELETE FROM {t} WHERE transactionid IN \
         (SELECT transactionid FROM {t} WHERE transactionid >= $1 ORDER BY transactionid ASC LIMIT $2)"
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
    pub fn sql(&self, t: &str) -> String {
        let op = if self.strict { ">" } else { ">=" };
        format!(
            "SELECT {c} FROM {t} WHERE {k} {op} $1 ORDER BY {c} LIMIT {n}",
            c = self.columns,
            k = self.key,
            n = ROWS_PER_QUERY
        )
    }
}

/// The point query of the qp steps: an IN-list of ROWS_PER_QUERY ids.
pub fn point_query(t: &str) -> String {
    let ids: Vec<String> = (1..=ROWS_PER_QUERY).map(|i| format!("${i}")).collect();
    format!("SELECT transactionid, productid, data FROM {t} WHERE transactionid IN ({})", ids.join(", "))
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

    #[test]
    fn shapes_are_exact() {
        assert_eq!(
            RANGE_QUERIES[0].sql("pi1"),
            "SELECT price, dateandtime, customerid FROM pi1 WHERE price >= $1 \
             ORDER BY price, dateandtime, customerid LIMIT 10"
        );
        assert_eq!(
            RANGE_QUERIES[2].sql("pi2"),
            "SELECT cashregisterid, customerid, price FROM pi2 WHERE cashregisterid > $1 \
             ORDER BY cashregisterid, customerid, price LIMIT 10"
        );
        assert_eq!(
            point_query("pi1"),
            "SELECT transactionid, productid, data FROM pi1 WHERE transactionid IN \
             ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
        );
        assert_eq!(create_indexes("pi3")[2].1, "CREATE INDEX pi3_pdc ON pi3 (price, dateandtime, customerid)");
        assert!(delete("pi1").ends_with("WHERE transactionid >= $1 ORDER BY transactionid ASC LIMIT $2)"));
    }
}
