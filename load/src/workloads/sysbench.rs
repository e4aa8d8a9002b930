//! The sysbench microbenchmarks, declared as data.

use super::{Gen, Stmt, Workload};

pub const POINT_QUERY: Workload = Workload {
    name: "point-query",
    group: "point",
    explicit_trx: false,
    stmts: &[Stmt { sql: "SELECT c FROM sbtest{t} WHERE id=$1", params: &[Gen::Id], repeat: 1 }],
};

pub const ALL: &[&Workload] = &[&POINT_QUERY];

pub fn find(name: &str) -> Option<&'static Workload> {
    ALL.iter().copied().find(|w| w.name == name)
}

pub fn names() -> Vec<&'static str> {
    ALL.iter().map(|w| w.name).collect()
}
