//! The sysbench microbenchmarks (methodology §1.3), declared as data: the SQL
//! of each statement, its parameters, how often it runs per event, and
//! whether the event is an explicit transaction.

use super::gen::{Count, Gen, Span};
use super::{Pick, Stmt, Workload};

/// A statement run once per event on a random table.
const fn one(sql: &'static str, params: &'static [Gen]) -> Stmt {
    Stmt { sql, params, repeat: 1, table: Pick::Random }
}

const fn autocommit(name: &'static str, group: &'static str, stmts: &'static [Stmt]) -> Workload {
    Workload { name, group, explicit_trx: false, stmts }
}

const fn trx(name: &'static str, group: &'static str, stmts: &'static [Stmt]) -> Workload {
    Workload { name, group, explicit_trx: true, stmts }
}

// The statements of the stock read-only / read-write / write-only events.
// Their ranges are `BETWEEN x AND x+N-1`: N ids.
const ID_RANGE: &[Gen] = &[Gen::Id, Gen::Plus(Span::RangeMinus1)];
const POINT_SELECTS: Stmt = Stmt { repeat: 10, ..one("SELECT c FROM sbtest{t} WHERE id=?", &[Gen::Id]) };
const SIMPLE_RANGE: Stmt = one("SELECT c FROM sbtest{t} WHERE id BETWEEN ? AND ?", ID_RANGE);
const SUM_RANGE: Stmt = one("SELECT SUM(k) FROM sbtest{t} WHERE id BETWEEN ? AND ?", ID_RANGE);
const ORDER_RANGE: Stmt = one("SELECT c FROM sbtest{t} WHERE id BETWEEN ? AND ? ORDER BY c", ID_RANGE);
const DISTINCT_RANGE: Stmt = one("SELECT DISTINCT c FROM sbtest{t} WHERE id BETWEEN ? AND ? ORDER BY c", ID_RANGE);
const INDEX_UPDATE: Stmt = one("UPDATE sbtest{t} SET k=k+1 WHERE id=?", &[Gen::Id]);
const NON_INDEX_UPDATE: Stmt = one("UPDATE sbtest{t} SET c=? WHERE id=?", &[Gen::C, Gen::Id]);
const DELETE: Stmt = one("DELETE FROM sbtest{t} WHERE id=?", &[Gen::Id]);
/// Puts back, on the same table, the row the DELETE before it removed, so the table size stays constant.
const REINSERT: Stmt = Stmt {
    table: Pick::Same,
    ..one("INSERT INTO sbtest{t} (id, k, c, pad) VALUES (?, ?, ?, ?)", &[Gen::PrevId, Gen::K, Gen::C, Gen::Pad])
};

// The IN-list and range statements of the point/range scripts (`--random-points=N`).
const IDS: &[Gen] = &[Gen::Ids(Count::Range)];
const KS: &[Gen] = &[Gen::Ks(Count::Range)];
/// sysbench's range_covered scripts use `BETWEEN x AND x+N`: N+1 values, not N.
const ID_RANGE_INCL: &[Gen] = &[Gen::Id, Gen::Plus(Span::Range)];
const K_RANGE_INCL: &[Gen] = &[Gen::K, Gen::Plus(Span::Range)];

pub const ALL: &[&Workload] = &[
    // Point queries.
    &autocommit("point-query", "point", &[one("SELECT c FROM sbtest{t} WHERE id=?", &[Gen::Id])]),
    &autocommit("random-points", "point", &[one("SELECT c FROM sbtest{t} WHERE id IN (?)", IDS)]),
    &autocommit("hot-points", "point", &[one("SELECT c FROM sbtest{t} WHERE id IN (?)", &[Gen::HotIds])]),
    &autocommit("points-covered-pk", "point", &[one("SELECT id FROM sbtest{t} WHERE id IN (?)", IDS)]),
    &autocommit("points-notcovered-pk", "point", &[one("SELECT id, c FROM sbtest{t} WHERE id IN (?)", IDS)]),
    &autocommit("points-covered-si", "point", &[one("SELECT k FROM sbtest{t} WHERE k IN (?)", KS)]),
    &autocommit("points-notcovered-si", "point", &[one("SELECT k, c FROM sbtest{t} WHERE k IN (?)", KS)]),
    // Range queries without aggregation.
    &autocommit(
        "range-covered-pk",
        "range-noagg",
        &[one("SELECT id FROM sbtest{t} WHERE id BETWEEN ? AND ?", ID_RANGE_INCL)],
    ),
    &autocommit(
        "range-notcovered-pk",
        "range-noagg",
        &[one("SELECT id, c FROM sbtest{t} WHERE id BETWEEN ? AND ?", ID_RANGE_INCL)],
    ),
    &autocommit(
        "range-covered-si",
        "range-noagg",
        &[one("SELECT k FROM sbtest{t} WHERE k BETWEEN ? AND ?", K_RANGE_INCL)],
    ),
    &autocommit(
        "range-notcovered-si",
        "range-noagg",
        &[one("SELECT k, c FROM sbtest{t} WHERE k BETWEEN ? AND ?", K_RANGE_INCL)],
    ),
    // A full scan that returns nothing; each client scans its own table.
    &autocommit(
        "scan",
        "range-noagg",
        &[Stmt { table: Pick::Client, ..one("SELECT * FROM sbtest{t} WHERE LENGTH(c) < 0", &[]) }],
    ),
    // Range queries with aggregation (read-only-simple and -order are placed here too, as in §1.8).
    &trx("read-only", "range-agg", &[POINT_SELECTS, SIMPLE_RANGE, SUM_RANGE, ORDER_RANGE, DISTINCT_RANGE]),
    &trx("read-only-simple", "range-agg", &[POINT_SELECTS, SIMPLE_RANGE]),
    &trx("read-only-sum", "range-agg", &[POINT_SELECTS, SUM_RANGE]),
    &trx("read-only-order", "range-agg", &[POINT_SELECTS, ORDER_RANGE]),
    &trx("read-only-distinct", "range-agg", &[POINT_SELECTS, DISTINCT_RANGE]),
    &autocommit(
        "read-only-count",
        "range-agg",
        &[one("SELECT count(c) FROM sbtest{t} WHERE id BETWEEN ? AND ?", ID_RANGE)],
    ),
    // Writes.
    &trx(
        "read-write",
        "write",
        &[
            POINT_SELECTS,
            SIMPLE_RANGE,
            SUM_RANGE,
            ORDER_RANGE,
            DISTINCT_RANGE,
            INDEX_UPDATE,
            NON_INDEX_UPDATE,
            DELETE,
            REINSERT,
        ],
    ),
    &trx("write-only", "write", &[INDEX_UPDATE, NON_INDEX_UPDATE, DELETE, REINSERT]),
    &autocommit("update-index", "write", &[INDEX_UPDATE]),
    &autocommit("update-nonindex", "write", &[NON_INDEX_UPDATE]),
    &autocommit("update-one", "write", &[one("UPDATE sbtest{t} SET c=? WHERE id=?", &[Gen::C, Gen::One])]),
    &autocommit("update-zipf", "write", &[one("UPDATE sbtest{t} SET c=? WHERE id=?", &[Gen::C, Gen::ZipfId])]),
    // update-inlist does not get --random-points, so sysbench's default of 10 ids applies.
    &autocommit(
        "update-inlist",
        "write",
        &[one("UPDATE sbtest{t} SET c=? WHERE id IN (?)", &[Gen::C, Gen::Ids(Count::Fixed(10))])],
    ),
    &autocommit("delete", "write", &[DELETE]),
    // The id comes from the engine (the generated id column of the table prepare made), as in sysbench.
    &autocommit(
        "insert",
        "write",
        &[one("INSERT INTO sbtest{t} (k, c, pad) VALUES (?, ?, ?)", &[Gen::K, Gen::C, Gen::Pad])],
    ),
];

pub fn find(name: &str) -> Option<&'static Workload> {
    ALL.iter().copied().find(|w| w.name == name)
}

pub fn names() -> Vec<&'static str> {
    ALL.iter().map(|w| w.name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (name, group, statements per event, explicit transaction, writes), from §1.3 and §1.8.
    const TABLE: &[(&str, &str, u64, bool, bool)] = &[
        ("point-query", "point", 1, false, false),
        ("random-points", "point", 1, false, false),
        ("hot-points", "point", 1, false, false),
        ("points-covered-pk", "point", 1, false, false),
        ("points-notcovered-pk", "point", 1, false, false),
        ("points-covered-si", "point", 1, false, false),
        ("points-notcovered-si", "point", 1, false, false),
        ("range-covered-pk", "range-noagg", 1, false, false),
        ("range-notcovered-pk", "range-noagg", 1, false, false),
        ("range-covered-si", "range-noagg", 1, false, false),
        ("range-notcovered-si", "range-noagg", 1, false, false),
        ("scan", "range-noagg", 1, false, false),
        ("read-only", "range-agg", 16, true, false),
        ("read-only-simple", "range-agg", 13, true, false),
        ("read-only-sum", "range-agg", 13, true, false),
        ("read-only-order", "range-agg", 13, true, false),
        ("read-only-distinct", "range-agg", 13, true, false),
        ("read-only-count", "range-agg", 1, false, false),
        ("read-write", "write", 20, true, true),
        ("write-only", "write", 6, true, true),
        ("update-index", "write", 1, false, true),
        ("update-nonindex", "write", 1, false, true),
        ("update-one", "write", 1, false, true),
        ("update-zipf", "write", 1, false, true),
        ("update-inlist", "write", 1, false, true),
        ("delete", "write", 1, false, true),
        ("insert", "write", 1, false, true),
    ];

    #[test]
    fn every_workload_matches_the_method() {
        assert_eq!(names(), TABLE.iter().map(|r| r.0).collect::<Vec<_>>());
        for &(name, group, qpe, trx, writes) in TABLE {
            let w = find(name).unwrap();
            assert_eq!(
                (w.group, w.queries_per_event(), w.explicit_trx, w.writes()),
                (group, qpe, trx, writes),
                "{name}"
            );
        }
    }

    #[test]
    fn range_is_a_label_where_the_method_says_so() {
        let uses: Vec<&str> = ALL.iter().filter(|w| w.uses_range()).map(|w| w.name).collect();
        for label_only in ["point-query", "scan", "write-only", "update-inlist", "update-zipf", "delete", "insert"] {
            assert!(!uses.contains(&label_only), "{label_only}");
        }
        for used in
            ["random-points", "hot-points", "points-covered-si", "range-notcovered-si", "read-only", "read-write"]
        {
            assert!(uses.contains(&used), "{used}");
        }
        assert!(find("scan").unwrap().is_scan() && !find("read-only").unwrap().is_scan());
    }
}
