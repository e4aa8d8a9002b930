//! The suite on the Python package's SQL files (skipped, with a word, where the load client is built
//! apart from them), and end to end on Debian's SQLite library (skipped where it is absent).

use super::ddl::LoadPlan;
use super::sql::{in_dialect, Files};
use super::*;
use crate::driver::sqlite::{Config, SqliteDriver};
use crate::driver::{describe, error_kind, mysql, pg, sqlite, Driver, Session};
use crate::output::seconds::Live;
use std::io::Cursor;
use std::path::Path;
use std::time::{Duration, Instant};

/// The Python suite's directory, which holds tpch/ and tpcds/.
fn package_dir() -> Option<PathBuf> {
    let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("../src/dbsweep/suites/analytics");
    if d.join("tpch").join("schema.sql").is_file() {
        Some(d)
    } else {
        eprintln!("skipped: no analytics SQL files at {}", d.display());
        None
    }
}

fn data(set: DataSet, dir: &Path, scale: &str) -> Data {
    Data { set, dir: dir.to_path_buf(), scale: scale.into() }
}

const DIALECTS: [&dyn Dialect; 3] = [&pg::DIALECT, &mysql::DIALECT, &sqlite::DIALECT];

#[test]
fn every_query_of_both_sets_renders_for_every_engine() {
    let Some(dir) = package_dir() else { return };
    for set in [DataSet::Tpch, DataSet::Tpcds] {
        let files = Files::new(set, &dir);
        let names = files.query_names().unwrap();
        let want: Vec<String> = (1..=22).map(|n| format!("q{n:02}")).collect();
        assert_eq!(names, want, "{set:?}");
        for d in DIALECTS {
            for q in &names {
                let sql = files.query(q, 0.01, d).unwrap();
                let lower = sql.to_lowercase();
                assert!(!sql.is_empty() && !sql.contains("{fraction}"), "{set:?} {q}");
                assert!(!sql.lines().any(|l| l.trim_start().starts_with("--")), "{set:?} {q}: {sql}");
                assert!(!sql.trim_end().ends_with(';'), "{set:?} {q}");
                if d.typed_dates() {
                    assert_eq!(sql, sql::render_query(&files.read(&format!("{q}.sql")).unwrap(), 0.01, d));
                } else {
                    assert!(!lower.contains("date '") && !lower.contains("extract"), "{set:?} {q}: {sql}");
                    // Nothing is left to rewrite.
                    assert_eq!(in_dialect(&sql, d), sql);
                }
            }
        }
    }
    let tpch = Files::new(DataSet::Tpch, &dir);
    assert!(tpch.query("q11", 0.01, &pg::DIALECT).unwrap().contains("* 0.0100000000"));
    assert!(tpch.query("q11", 1.0, &sqlite::DIALECT).unwrap().contains("* 0.0001000000"));
    let q07 = tpch.query("q07", 1.0, &sqlite::DIALECT).unwrap();
    assert!(q07.contains("cast(strftime('%Y', l_shipdate) as integer) as l_year"), "{q07}");
    assert!(q07.contains("between '1995-01-01' and '1996-12-31'"), "{q07}");
}

#[test]
fn the_load_plans_follow_the_files() {
    let Some(dir) = package_dir() else { return };
    let tpch = LoadPlan::new(&Files::new(DataSet::Tpch, &dir), &pg::DIALECT).unwrap();
    let names: Vec<&str> = tpch.tables.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["region", "nation", "part", "supplier", "partsupp", "customer", "orders", "lineitem"]);
    let columns: Vec<usize> = tpch.tables.iter().map(|t| t.columns).collect();
    assert_eq!(columns, [3, 4, 9, 7, 5, 8, 9, 16]);
    assert_eq!(tpch.schema[0].sql, "DROP TABLE IF EXISTS region");
    assert!(tpch.schema[8].sql.starts_with("CREATE TABLE region ("), "{}", tpch.schema[8].sql);
    assert_eq!(tpch.schema.len(), 16);
    // Eight primary keys, then two secondary indexes.
    assert_eq!(tpch.keys.len(), 10);
    assert_eq!(tpch.keys[8].sql, "CREATE INDEX lineitem_part_supp ON lineitem (l_partkey, l_suppkey)");
    assert_eq!(tpch.keys[7].sql, "ALTER TABLE lineitem ADD PRIMARY KEY (l_orderkey, l_linenumber)");
    assert_eq!(tpch.after_load[0].sql, "VACUUM (FREEZE, ANALYZE) region");
    let lite = LoadPlan::new(&Files::new(DataSet::Tpch, &dir), &sqlite::DIALECT).unwrap();
    assert_eq!(lite.keys[7].sql, "CREATE UNIQUE INDEX lineitem_pk ON lineitem (l_orderkey, l_linenumber)");
    assert_eq!(lite.after_load[7].sql, "ANALYZE lineitem");
    let my = LoadPlan::new(&Files::new(DataSet::Tpch, &dir), &mysql::DIALECT).unwrap();
    assert_eq!(my.after_load[7].sql, "ANALYZE TABLE lineitem");
    let ds = LoadPlan::new(&Files::new(DataSet::Tpcds, &dir), &sqlite::DIALECT).unwrap();
    assert_eq!(ds.tables.len(), 24);
    assert_eq!(ds.keys.len(), 24 + 2); // a key per table, then two secondary indexes
    let store_sales = ds.tables.iter().find(|t| t.name == "store_sales").unwrap();
    assert_eq!(store_sales.columns, 23);
    assert!(
        ds.keys
            .iter()
            .any(|k| k.sql
                == "CREATE UNIQUE INDEX inventory_pk ON inventory (inv_date_sk, inv_item_sk, inv_warehouse_sk)")
    );
}

#[test]
fn sql_lines_show_what_the_engine_receives() {
    let Some(dir) = package_dir() else { return };
    let lines =
        sql_lines(&sqlite::DIALECT, &SqlOptions { data: data(DataSet::Tpch, &dir, "0.01"), query: None }).unwrap();
    // In this order: kind, table or query, sql.
    let text = serde_json::to_string(&lines[0]).unwrap();
    assert_eq!(text, r#"{"kind":"schema","table":"region","sql":"DROP TABLE IF EXISTS region"}"#);
    let all: Vec<serde_json::Value> = lines.iter().map(|l| serde_json::to_value(l).unwrap()).collect();
    let kinds = |k: &str| all.iter().filter(|l| l["kind"] == k).count();
    assert_eq!((kinds("schema"), kinds("keys"), kinds("after_load"), kinds("query")), (16, 10, 8, 22));
    let keys = all.iter().find(|l| l["kind"] == "keys").unwrap();
    assert_eq!(keys["sql"], "CREATE UNIQUE INDEX region_pk ON region (r_regionkey)");
    let q = all.last().unwrap();
    assert_eq!(
        (&q["kind"], &q["query"], q.get("table")),
        (&serde_json::json!("query"), &serde_json::json!("q22"), None)
    );
    let one =
        sql_lines(&pg::DIALECT, &SqlOptions { data: data(DataSet::Tpch, &dir, "0.01"), query: Some("q06".into()) })
            .unwrap();
    assert_eq!(one.len(), 1);
    assert_eq!((one[0].kind, one[0].query.as_deref()), ("query", Some("q06")));
    assert!(one[0].sql.contains("l_shipdate >= date '1994-01-01'"));
}

#[test]
fn user_errors_are_one_sentence() {
    let dir = std::env::temp_dir().join(format!("dbsweep-analytics-errors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("q01.sql"), "select 1").unwrap();
    std::fs::write(dir.join("q02.sql"), "select 2").unwrap();
    std::fs::write(dir.join("notes.sql"), "select 3").unwrap();
    let d = data(DataSet::Tpch, &dir, "1");
    let files = d.files();
    assert_eq!(files.dir, dir);
    assert_eq!(files.query("q01", 1.0, &pg::DIALECT).unwrap(), "select 1");
    assert_eq!(
        files.query("q23", 1.0, &pg::DIALECT).unwrap_err(),
        "unknown query 'q23'; the queries of tpch are q01, q02"
    );
    let e = LoadPlan::new(&files, &pg::DIALECT).unwrap_err();
    assert!(e.starts_with(&format!("cannot read {}: ", dir.join("schema.sql").display())), "{e}");
    assert!(!e.contains('\n'));
    std::fs::write(dir.join("schema.sql"), "-- none\nCREATE TABLE t (a INT, b INT);").unwrap();
    std::fs::write(dir.join("keys.sql"), "ALTER TABLE u ADD PRIMARY KEY (a);").unwrap();
    let e = LoadPlan::new(&files, &pg::DIALECT).unwrap_err();
    assert!(
        e.ends_with(
            "has a key for table u, which ... does not create"
                .replace("...", &dir.join("schema.sql").display().to_string())
                .as_str()
        ),
        "{e}"
    );
    std::fs::write(dir.join("keys.sql"), "CREATE UNIQUE INDEX i ON t (a);").unwrap();
    let e = LoadPlan::new(&files, &pg::DIALECT).unwrap_err();
    assert!(
        e.ends_with(
            "statement 1 is not of the form ALTER TABLE t ADD PRIMARY KEY (columns) or CREATE INDEX i ON t (columns): \
             CREATE UNIQUE INDEX i ON t (a)"
        ),
        "{e}"
    );
    std::fs::write(dir.join("keys.sql"), "ALTER TABLE t ADD PRIMARY KEY (a, b);").unwrap();
    assert_eq!(LoadPlan::new(&files, &pg::DIALECT).unwrap().tables[0].columns, 2);
    for bad in ["0", "-1", "x", "", "inf", "NaN"] {
        let e = data(DataSet::Tpch, &dir, bad).scale().unwrap_err();
        assert_eq!(e, format!("--scale must be a positive number, the data set's scale factor, not {bad:?}"));
    }
    assert_eq!(data(DataSet::Tpch, &dir, " 0.01 ").scale().unwrap(), 0.01);
    let missing = data(DataSet::Tpcds, &dir.join("nowhere"), "1").files();
    let e = missing.query("q01", 1.0, &pg::DIALECT).unwrap_err();
    assert!(e.starts_with("cannot read the directory ") && e.contains("nowhere"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

const SYSTEM_LIB: &str = "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0";

/// TPC-H's tables on SQLite, loaded from a few hand-written rows through the default bulk path, then
/// keyed and analysed as a load does; then a query run as `analytics query` runs it, and one that the
/// statement timeout stops.
#[test]
fn tpch_on_sqlite_end_to_end() {
    let Some(dir) = package_dir() else { return };
    if !Path::new(SYSTEM_LIB).is_file() {
        eprintln!("skipped: {SYSTEM_LIB} is absent");
        return;
    }
    let tmp = std::env::temp_dir().join(format!("dbsweep-analytics-sqlite-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let driver = SqliteDriver::new(Config {
        library: SYSTEM_LIB.into(),
        database: tmp.join("tpch.db"),
        pragmas: Vec::new(),
        busy_timeout: Duration::from_secs(1),
        prewarm: false,
    })
    .unwrap();
    let d = driver.dialect();
    let plan = LoadPlan::new(&Files::new(DataSet::Tpch, &dir), d).unwrap();
    let mut s = driver.connect().unwrap();
    for p in &plan.schema {
        s.simple(&p.sql).unwrap();
    }
    let rows: &[(&str, &str)] = &[
        ("region", "0|AFRICA|lar deposits. blithely final packages cajole.|\n1|AMERICA||\n"),
        ("nation", "0|ALGERIA|0| haggle. carefully final deposits detect slyly agai|\n"),
        (
            "lineitem",
            "1|155190|7706|1|10|1000.00|0.06|0.02|N|O|1994-03-13|1994-02-12|1994-03-22|DELIVER IN PERSON|TRUCK|egular courts above the|\n\
             1|67310|7311|2|36|2000.00|0.06|0.06|N|O|1994-04-12|1994-02-28|1994-04-20|TAKE BACK RETURN|MAIL|ly final dependencies|\n\
             2|106170|1191|1|10|4000.00|0.06|0.00|N|O|1995-01-28|1995-01-14|1995-02-02|TAKE BACK RETURN|RAIL|ven requests|\n",
        ),
    ];
    for (table, lines) in rows {
        let columns = plan.tables.iter().find(|t| t.name == *table).unwrap().columns;
        let n = s.bulk_load(table, columns, &mut Cursor::new(lines.as_bytes().to_vec())).unwrap();
        assert_eq!(n as usize, lines.lines().count(), "{table}");
    }
    assert!(!s.in_transaction());
    // An empty field is NULL; dates are text.
    assert_eq!(
        s.rows("SELECT r_name FROM region WHERE r_comment IS NULL").unwrap(),
        [vec![Some("AMERICA".to_string())]]
    );
    assert_eq!(
        s.rows("SELECT typeof(l_shipdate), l_shipdate FROM lineitem LIMIT 1").unwrap()[0][0].as_deref(),
        Some("text")
    );
    // A row of the wrong form fails the load and names its row; what its transaction held is gone.
    let e = s.bulk_load("region", 3, &mut Cursor::new(b"2|ASIA|x|\n3|EUROPE|\n".to_vec())).unwrap_err();
    assert_eq!(describe(&e), "row 2 has 2 fields where the table has 3 columns");
    assert_eq!(s.rows("SELECT count(*) FROM region").unwrap(), [vec![Some("2".to_string())]]);
    for p in plan.keys.iter().chain(&plan.after_load) {
        s.simple(&p.sql).unwrap();
    }
    // The unique index stands in for the primary key.
    let e = s.simple("INSERT INTO region VALUES (0, 'AGAIN', NULL)").unwrap_err();
    assert_eq!(error_kind(&e), "sqlite_constraint_unique", "{e:?}");
    // q06, rendered for text dates: of the rows, only the first is of 1994 with a quantity under 24.
    let q06 = Files::new(DataSet::Tpch, &dir).query("q06", 0.01, d).unwrap();
    s.set_statement_timeout(30).unwrap();
    let live = Live::default();
    let ran = query::runs(&mut s, &q06, 1, 2, 30, &live);
    assert_eq!((ran.failed.as_deref(), ran.warmup_s.len(), ran.runs_s.len()), (None, 1, 2));
    assert_eq!(s.rows(&q06).unwrap(), [vec![Some("60.0".to_string())]]);
    let mut want = query::ResultHash::default();
    want.row(&[Some(b"60.0")]);
    assert_eq!(ran.last, Some(want));
    // A query that never ends is stopped by the timeout, and so is the run.
    s.set_statement_timeout(1).unwrap();
    let forever = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c";
    let t0 = Instant::now();
    let ran = query::runs(&mut s, forever, 0, 3, 1, &live);
    let took = t0.elapsed();
    assert!(took >= Duration::from_secs(1) && took < Duration::from_secs(5), "{took:?}");
    assert_eq!(ran.failed.as_deref(), Some("timeout after 1 s"));
    assert_eq!((ran.runs_s.len(), ran.tally.errors.get("timeout")), (0, Some(&1)));
    // The next statement has its own time; no limit at all after 0.
    assert_eq!(s.rows("SELECT count(*) FROM lineitem").unwrap(), [vec![Some("3".to_string())]]);
    s.set_statement_timeout(0).unwrap();
    let counted =
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 300000) SELECT count(*) FROM c";
    assert_eq!(s.rows(counted).unwrap(), [vec![Some("300000".to_string())]]);
    drop(s);
    std::fs::remove_dir_all(&tmp).unwrap();
}
