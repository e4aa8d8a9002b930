//! Workloads are declared as data (statements, their parameters, whether an
//! event is an explicit transaction) and run by one generic executor.

pub mod exec;
pub mod prepare;
pub mod sysbench;

use postgres::types::{to_sql_checked, IsNull, ToSql, Type};
use rand::rngs::SmallRng;
use rand::Rng;
use std::error::Error;

/// How a statement parameter is drawn for each event.
#[derive(Debug, Clone, Copy)]
pub enum Gen {
    /// A row id, uniform in [1, rows].
    Id,
}

/// One statement of an event. `{t}` in the SQL stands for the table number.
#[derive(Debug)]
pub struct Stmt {
    pub sql: &'static str,
    pub params: &'static [Gen],
    /// How many times the statement runs per event, each with fresh parameters.
    pub repeat: u32,
}

#[derive(Debug)]
pub struct Workload {
    pub name: &'static str,
    /// The report group: point, range-noagg, range-agg or write.
    pub group: &'static str,
    /// Wrap each event in BEGIN ... COMMIT (both counted as queries, as sysbench does).
    pub explicit_trx: bool,
    pub stmts: &'static [Stmt],
}

impl Workload {
    /// Statements per event, counted as sysbench counts queries.
    pub fn queries_per_event(&self) -> u64 {
        let body: u64 = self.stmts.iter().map(|s| s.repeat as u64).sum();
        body + if self.explicit_trx { 2 } else { 0 }
    }
}

/// A bound parameter value.
#[derive(Debug, Clone)]
pub enum Value {
    Int(i32),
}

impl Value {
    pub fn draw(gen: Gen, rng: &mut SmallRng, rows: i32) -> Value {
        match gen {
            Gen::Id => Value::Int(rng.gen_range(1..=rows)),
        }
    }

    /// The value as an SQL literal, for runs without prepared statements.
    pub fn literal(&self) -> String {
        match self {
            Value::Int(v) => v.to_string(),
        }
    }
}

impl ToSql for Value {
    fn to_sql(&self, ty: &Type, out: &mut postgres::types::private::BytesMut) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        match self {
            Value::Int(v) => v.to_sql(ty, out),
        }
    }

    fn accepts(ty: &Type) -> bool {
        <i32 as ToSql>::accepts(ty)
    }

    to_sql_checked!();
}

/// The SQL of a statement for table `t`, with `$n` placeholders replaced by
/// literals when `values` is given.
pub fn render(sql: &str, table: u32, values: Option<&[Value]>) -> String {
    let mut s = sql.replace("{t}", &table.to_string());
    if let Some(vals) = values {
        // Replace from the highest index down so $1 does not clobber $10.
        for (i, v) in vals.iter().enumerate().rev() {
            s = s.replace(&format!("${}", i + 1), &v.literal());
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_substitutes_table_and_literals() {
        let sql = "SELECT c FROM sbtest{t} WHERE id=$1";
        assert_eq!(render(sql, 3, None), "SELECT c FROM sbtest3 WHERE id=$1");
        assert_eq!(render(sql, 3, Some(&[Value::Int(42)])), "SELECT c FROM sbtest3 WHERE id=42");
    }

    #[test]
    fn point_query_is_one_statement_per_event() {
        let w = sysbench::find("point-query").unwrap();
        assert_eq!(w.queries_per_event(), 1);
        assert_eq!(w.group, "point");
    }
}
