//! The sysbench microbenchmarks (methodology §1). Workloads are declared as
//! data (statements, their parameters, whether an event is an explicit
//! transaction; `workloads`) and run by one generic executor (`exec`) on any
//! driver; `prepare` loads the tables.

pub mod ddl;
pub mod exec;
pub mod gen;
pub mod prepare;
pub mod workloads;

use crate::driver::{Dialect, Driver};
use clap::Args;
use gen::{Gen, Value};

/// Which table a statement runs on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pick {
    /// Uniform over the tables, drawn once per statement group (all the
    /// repeats of one statement), as sysbench does.
    Random,
    /// The table of the statement before (the INSERT after its DELETE).
    Same,
    /// Always table (client index mod tables) + 1: the scan, which also
    /// makes the summary report scan_krows_per_sec.
    Client,
}

/// One statement of an event. In the SQL, `{t}` stands for the table number
/// and each `?` for one generator of `params`, in order; an IN-list's `?`
/// becomes as many placeholders as the list has values.
#[derive(Debug)]
pub struct Stmt {
    pub sql: &'static str,
    pub params: &'static [Gen],
    /// How many times the statement runs per event, each with fresh parameters.
    pub repeat: u32,
    pub table: Pick,
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
    /// Statements per event, counted as sysbench counts queries. The same for
    /// every --range: an IN-list or a range is one statement.
    pub fn queries_per_event(&self) -> u64 {
        let body: u64 = self.stmts.iter().map(|s| s.repeat as u64).sum();
        body + if self.explicit_trx { 2 } else { 0 }
    }

    pub fn writes(&self) -> bool {
        self.stmts.iter().any(|s| !is_query(s.sql))
    }

    /// Whether --range changes the SQL or the values (otherwise it is only a label).
    pub fn uses_range(&self) -> bool {
        self.stmts.iter().any(|s| s.params.iter().any(|g| g.uses_range()))
    }

    /// A full-table scan, reported as thousands of rows scanned per second.
    pub fn is_scan(&self) -> bool {
        self.stmts.iter().any(|s| s.table == Pick::Client)
    }

    /// Rejects sizes the workload cannot run with, in one line.
    pub fn check(&self, rows: i32, range: u32) -> Result<(), String> {
        if range == 0 {
            return Err("--range must be at least 1".into());
        }
        if self.uses_range() && range as i64 > rows as i64 {
            return Err(format!("{} needs --range ({range}) no larger than --rows ({rows})", self.name));
        }
        let hot = self.stmts.iter().any(|s| s.params.contains(&Gen::HotIds));
        if hot && (rows / 2) as i64 + range as i64 > rows as i64 {
            return Err(format!(
                "{}: the hot ids rows/2+1 .. rows/2+{range} go past --rows ({rows}); use --range <= {}",
                self.name,
                rows - rows / 2
            ));
        }
        Ok(())
    }
}

/// SELECTs return rows; everything else affects them.
pub fn is_query(sql: &str) -> bool {
    sql.trim_start().get(..6).is_some_and(|w| w.eq_ignore_ascii_case("select"))
}

/// A statement's SQL for one table, split where its parameters go, so that
/// an event fills in placeholders or literals in one pass.
#[derive(Debug)]
pub struct Shape {
    /// Text around the parameters: one more piece than there are generators.
    pieces: Vec<String>,
    /// Values each generator fills.
    widths: Vec<usize>,
    pub query: bool,
}

impl Shape {
    pub fn new(stmt: &Stmt, table: u32, range: u32) -> Shape {
        let sql = stmt.sql.replace("{t}", &table.to_string());
        let pieces: Vec<String> = sql.split('?').map(str::to_string).collect();
        assert_eq!(pieces.len(), stmt.params.len() + 1, "one ? per generator in {}", stmt.sql);
        Shape { pieces, widths: stmt.params.iter().map(|g| g.width(range)).collect(), query: is_query(stmt.sql) }
    }

    /// The SQL with the dialect's placeholders, for preparing.
    pub fn with_placeholders(&self, dialect: &dyn Dialect) -> String {
        self.fill(|out, i| dialect.placeholder(i, out))
    }

    /// The SQL with the values written in as literals.
    #[cfg(test)]
    pub fn with_literals(&self, values: &[Value]) -> String {
        let mut out = String::new();
        self.write_literals(values, &mut out);
        out
    }

    /// The SQL with the values written in as literals, into `out` (cleared first), so a
    /// reused buffer makes it without allocating.
    pub fn write_literals(&self, values: &[Value], out: &mut String) {
        debug_assert_eq!(values.len(), self.widths.iter().sum::<usize>());
        out.clear();
        self.fill_into(out, |out, i| values[i].write_literal(out))
    }

    fn fill(&self, value: impl FnMut(&mut String, usize)) -> String {
        let mut out = String::with_capacity(self.pieces.iter().map(String::len).sum::<usize>() + 8 * self.widths.len());
        self.fill_into(&mut out, value);
        out
    }

    fn fill_into(&self, out: &mut String, mut value: impl FnMut(&mut String, usize)) {
        let mut next = 0;
        for (piece, &width) in self.pieces.iter().zip(&self.widths) {
            out.push_str(piece);
            for j in 0..width {
                if j > 0 {
                    out.push_str(", ");
                }
                value(out, next);
                next += 1;
            }
        }
        out.push_str(self.pieces.last().expect("at least one piece"));
    }
}

/// The step that creates and loads the tables; every other step is a microbenchmark of `workloads`.
pub const PREPARE: &str = "prepare";

/// The options of `dbsweep-load sysbench STEP`. --tables, --rows and --seed are common to every
/// step; --no-pk is prepare's alone; the others are the microbenchmarks' (their defaults are in
/// parentheses), and prepare refuses them.
#[derive(Args, Debug, Clone, Default)]
pub struct Options {
    /// Tables sbtest1..sbtestN.
    #[arg(long, default_value_t = 1)]
    pub tables: u32,
    /// Rows per table.
    #[arg(long, default_value_t = 10_000)]
    pub rows: i32,
    /// The random values (rows loaded, ids drawn) are reproducible from it.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// prepare: give id a secondary index instead of a primary key (sysbench --secondary).
    #[arg(long)]
    pub no_pk: bool,
    /// Client threads, one connection each (1).
    #[arg(long)]
    pub clients: Option<u32>,
    /// Measured seconds, after the warm-up (10).
    #[arg(long)]
    pub seconds: Option<u64>,
    /// Warm-up seconds, excluded from the statistics (5).
    #[arg(long)]
    pub warmup: Option<u64>,
    /// Send statements as plain text instead of preparing them.
    #[arg(long)]
    pub no_prepared: bool,
    /// sysbench's --range-size, also its --random-points for the IN-list and range workloads (100).
    #[arg(long)]
    pub range: Option<u32>,
    /// Exponent of the zipfian id distribution of update-zipf (0.8).
    #[arg(long)]
    pub zipf_exp: Option<f64>,
    /// Each client stops after this many events (warm-up included), or when the seconds end if sooner.
    #[arg(long)]
    pub events: Option<u64>,
    /// A run to count instructions by: no line per second and no latencies kept (the summary's are
    /// zero), so that nothing this client does depends on how long the run or its events took (an
    /// embedded engine's count is this client's whole work).
    #[arg(long)]
    pub counting: bool,
}

/// A sysbench step with its options resolved.
#[derive(Debug)]
pub enum Step {
    Prepare(prepare::PrepareOpts),
    Run(&'static Workload, exec::RunOpts),
}

/// The names `sysbench STEP` takes: prepare, then the microbenchmarks.
pub fn step_names() -> Vec<&'static str> {
    std::iter::once(PREPARE).chain(workloads::names()).collect()
}

impl Options {
    /// Resolves the options for `step`, or says in one sentence what is wrong (before any connection).
    pub fn step(&self, step: &str) -> Result<Step, String> {
        if step == PREPARE {
            let run_only = [
                ("--clients", self.clients.is_some()),
                ("--seconds", self.seconds.is_some()),
                ("--warmup", self.warmup.is_some()),
                ("--no-prepared", self.no_prepared),
                ("--range", self.range.is_some()),
                ("--zipf-exp", self.zipf_exp.is_some()),
                ("--events", self.events.is_some()),
            ];
            let given: Vec<&str> = run_only.iter().filter(|(_, g)| *g).map(|(n, _)| *n).collect();
            if !given.is_empty() {
                return Err(format!("prepare takes --tables, --rows, --seed and --no-pk, not {}", given.join(", ")));
            }
            return Ok(Step::Prepare(prepare::PrepareOpts {
                tables: self.tables,
                rows: self.rows,
                primary_key: !self.no_pk,
                seed: self.seed,
                counting: self.counting,
            }));
        }
        let w = workloads::find(step)
            .ok_or_else(|| format!("unknown step '{step}'; the steps are {}", step_names().join(", ")))?;
        if self.no_pk {
            return Err(format!("--no-pk is an option of prepare, not of {step}"));
        }
        Ok(Step::Run(
            w,
            exec::RunOpts {
                tables: self.tables,
                rows: self.rows,
                clients: self.clients.unwrap_or(1),
                seconds: self.seconds.unwrap_or(10),
                warmup: self.warmup.unwrap_or(5),
                prepared: !self.no_prepared,
                seed: self.seed,
                range: self.range.unwrap_or(100),
                zipf_exp: self.zipf_exp.unwrap_or(0.8),
                events: self.events,
                counting: self.counting,
            },
        ))
    }
}

/// `dbsweep-load sysbench STEP`: runs the step, printing a line per second, then its summary.
pub fn run<D: Driver>(driver: &D, step: &str, opts: &Options) -> Result<(), String> {
    match opts.step(step)? {
        Step::Prepare(p) => prepare::run(driver, p),
        Step::Run(w, r) => exec::run(driver, w, r),
    }
}

#[cfg(test)]
mod tests {
    use super::gen::Domain;
    use super::*;
    use crate::driver::pg::DIALECT;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    fn sql(name: &str, stmt: usize, table: u32, range: u32) -> String {
        Shape::new(&workloads::find(name).unwrap().stmts[stmt], table, range).with_placeholders(&DIALECT)
    }

    #[test]
    fn rendered_sql_is_exact() {
        assert_eq!(sql("point-query", 0, 3, 100), "SELECT c FROM sbtest3 WHERE id=$1");
        assert_eq!(sql("points-notcovered-si", 0, 2, 3), "SELECT k, c FROM sbtest2 WHERE k IN ($1, $2, $3)");
        assert_eq!(sql("random-points", 0, 1, 2), "SELECT c FROM sbtest1 WHERE id IN ($1, $2)");
        assert_eq!(sql("range-covered-si", 0, 1, 100), "SELECT k FROM sbtest1 WHERE k BETWEEN $1 AND $2");
        assert_eq!(sql("read-only", 4, 1, 10), "SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN $1 AND $2 ORDER BY c");
        assert_eq!(sql("update-inlist", 0, 1, 100).matches('$').count(), 11);
        assert_eq!(sql("write-only", 3, 4, 100), "INSERT INTO sbtest4 (id, k, c, pad) VALUES ($1, $2, $3, $4)");
        assert_eq!(sql("insert", 0, 1, 100), "INSERT INTO sbtest1 (k, c, pad) VALUES ($1, $2, $3)");
        assert_eq!(sql("scan", 0, 2, 100), "SELECT * FROM sbtest2 WHERE LENGTH(c) < 0");
    }

    #[test]
    fn literals_replace_placeholders() {
        let w = workloads::find("update-nonindex").unwrap();
        let shape = Shape::new(&w.stmts[0], 5, 100);
        let v = [Value::Text("1-2".into()), Value::Int(42)];
        assert_eq!(shape.with_literals(&v), "UPDATE sbtest5 SET c='1-2' WHERE id=42");
        let w = workloads::find("range-notcovered-pk").unwrap();
        let shape = Shape::new(&w.stmts[0], 1, 100);
        assert_eq!(
            shape.with_literals(&[Value::Int(7), Value::Int(107)]),
            "SELECT id, c FROM sbtest1 WHERE id BETWEEN 7 AND 107"
        );
        let w = workloads::find("hot-points").unwrap();
        let shape = Shape::new(&w.stmts[0], 1, 3);
        let mut rng = SmallRng::seed_from_u64(1);
        let mut v = Vec::new();
        Gen::HotIds.draw(&mut rng, &Domain::new(10, 3, 0.8), &[], &mut v);
        assert_eq!(shape.with_literals(&v), "SELECT c FROM sbtest1 WHERE id IN (6, 7, 8)");
    }

    /// Every statement of every workload draws exactly as many values as its
    /// SQL has placeholders, for several ranges.
    #[test]
    fn generators_fill_every_placeholder() {
        let mut rng = SmallRng::seed_from_u64(2);
        for w in workloads::ALL {
            assert_ne!(w.stmts[0].table, Pick::Same, "{}: Same needs a statement before it", w.name);
            for range in [1, 3, 100] {
                let d = Domain::new(1000, range, 0.8);
                let mut prev = Vec::new();
                for s in w.stmts {
                    let shape = Shape::new(s, 1, range);
                    let mut v = Vec::new();
                    for g in s.params {
                        g.draw(&mut rng, &d, &prev, &mut v);
                    }
                    let placeholders = shape.with_placeholders(&DIALECT).matches('$').count();
                    assert_eq!(v.len(), placeholders, "{} range {range}: {}", w.name, s.sql);
                    assert!(!shape.with_literals(&v).contains(['?', '$']));
                    prev = v;
                }
            }
        }
    }

    #[test]
    fn options_are_checked() {
        let rp = workloads::find("random-points").unwrap();
        assert!(rp.check(100, 100).is_ok());
        assert!(rp.check(100, 101).unwrap_err().contains("no larger than --rows"));
        assert!(rp.check(100, 0).is_err());
        let hot = workloads::find("hot-points").unwrap();
        assert!(hot.check(101, 51).is_ok());
        assert!(hot.check(100, 51).unwrap_err().contains("use --range <= 50"));
        // The range is only a label for point-query and the write-only step.
        assert!(workloads::find("point-query").unwrap().check(10, 100).is_ok());
        assert!(workloads::find("write-only").unwrap().check(10, 10_000).is_ok());
    }

    #[test]
    fn steps_and_their_options() {
        let o = Options { tables: 2, rows: 500, seed: 3, ..Options::default() };
        match o.step("prepare").unwrap() {
            Step::Prepare(p) => assert_eq!((p.tables, p.rows, p.primary_key, p.seed), (2, 500, true, 3)),
            s => panic!("{s:?}"),
        }
        match o.step("scan").unwrap() {
            Step::Run(w, r) => {
                assert_eq!(w.name, "scan");
                assert_eq!(
                    (r.clients, r.seconds, r.warmup, r.prepared, r.range, r.zipf_exp),
                    (1, 10, 5, true, 100, 0.8)
                );
            }
            s => panic!("{s:?}"),
        }
        let err = o.step("nope").unwrap_err();
        assert!(err.starts_with("unknown step 'nope'; the steps are prepare, point-query, "), "{err}");
        let p = Options { clients: Some(2), no_prepared: true, ..o.clone() };
        assert_eq!(
            p.step("prepare").unwrap_err(),
            "prepare takes --tables, --rows, --seed and --no-pk, not --clients, --no-prepared"
        );
        let r = Options { no_pk: true, ..o };
        assert_eq!(r.step("point-query").unwrap_err(), "--no-pk is an option of prepare, not of point-query");
    }
}
