//! The data sets' tables and keys, from their files: `schema.sql` (CREATE TABLE statements, the
//! same for every engine), `keys.sql` (one `ALTER TABLE t ADD PRIMARY KEY (columns)` per table, added
//! after the load). Where an engine cannot add a primary key to a loaded table (its dialect's
//! `adds_primary_key` is false), a unique index on the same columns stands in. The statements a load
//! sends, in order, are a `LoadPlan`.

use super::sql::{statements, Files};
use crate::driver::Dialect;

/// A table the schema creates.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub name: String,
    /// Its columns (the fields of each row of its data).
    pub columns: usize,
}

/// A table's primary key, as keys.sql gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct Key {
    pub table: String,
    pub columns: Vec<String>,
}

/// A bare SQL name: letters, digits and '_', not starting with a digit.
fn is_name(s: &str) -> bool {
    s.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The words before a statement's first '(' and the rest from it; None without a '('.
fn head_and_body(statement: &str) -> Option<(Vec<&str>, &str)> {
    let open = statement.find('(')?;
    Some((statement[..open].split_whitespace().collect(), &statement[open..]))
}

/// Whether `words` are `want` (keywords in any case; "NAME" stands for any bare name).
fn words_are(words: &[&str], want: &[&str]) -> bool {
    words.len() == want.len()
        && words.iter().zip(want).all(|(w, k)| if *k == "NAME" { is_name(w) } else { w.eq_ignore_ascii_case(k) })
}

/// The items of a parenthesised list (`(a INT, b DECIMAL(15, 2))`): split on the commas outside
/// inner parentheses, trimmed; None where the text is not one such list.
fn list_items(body: &str) -> Option<Vec<&str>> {
    let inner = body.trim().strip_prefix('(')?.strip_suffix(')')?;
    let mut items = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                items.push(inner[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
        if depth < 0 {
            return None;
        }
    }
    items.push(inner[start..].trim());
    (depth == 0).then_some(items)
}

/// The table a `CREATE TABLE name (columns)` statement makes; None for another statement.
pub fn created_table(statement: &str) -> Option<Table> {
    let (head, body) = head_and_body(statement)?;
    if !words_are(&head, &["CREATE", "TABLE", "NAME"]) {
        return None;
    }
    const CONSTRAINTS: [&str; 7] = ["PRIMARY", "UNIQUE", "CONSTRAINT", "FOREIGN", "CHECK", "KEY", "INDEX"];
    let columns = list_items(body)?
        .into_iter()
        .filter(|item| {
            let first = item.split_whitespace().next().unwrap_or("");
            !first.is_empty() && !CONSTRAINTS.iter().any(|c| first.eq_ignore_ascii_case(c))
        })
        .count();
    Some(Table { name: head[2].to_string(), columns })
}

/// The key an `ALTER TABLE name ADD PRIMARY KEY (columns)` statement adds; None for another statement.
pub fn added_key(statement: &str) -> Option<Key> {
    let (head, body) = head_and_body(statement)?;
    if !words_are(&head, &["ALTER", "TABLE", "NAME", "ADD", "PRIMARY", "KEY"]) {
        return None;
    }
    let columns: Vec<String> = list_items(body)?.into_iter().map(str::to_string).collect();
    columns.iter().all(|c| is_name(c)).then(|| Key { table: head[2].to_string(), columns })
}

/// The statement that gives `key`'s table its key: the primary key where the engine adds one to a
/// loaded table, else a unique index `<table>_pk` on the same columns.
pub fn key_statement(d: &dyn Dialect, key: &Key) -> String {
    let (t, cols) = (&key.table, key.columns.join(", "));
    if d.adds_primary_key() {
        format!("ALTER TABLE {t} ADD PRIMARY KEY ({cols})")
    } else {
        format!("CREATE UNIQUE INDEX {t}_pk ON {t} ({cols})")
    }
}

/// The table a `CREATE INDEX name ON table (columns)` statement indexes; None for another statement.
pub fn created_index(statement: &str) -> Option<String> {
    let words: Vec<&str> = statement.split_whitespace().collect();
    match words.as_slice() {
        [c, i, _, on, table, rest @ ..]
            if c.eq_ignore_ascii_case("CREATE")
                && i.eq_ignore_ascii_case("INDEX")
                && on.eq_ignore_ascii_case("ON")
                && !rest.is_empty()
                && rest[0].starts_with('(') =>
        {
            Some(table.to_string())
        }
        _ => None,
    }
}

/// Drops `table` where it exists, so that a load starts from nothing.
pub fn drop_table(table: &str) -> String {
    format!("DROP TABLE IF EXISTS {table}")
}

/// One statement of a load, and the table it is for (None for a schema statement that makes none).
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    pub table: Option<String>,
    pub sql: String,
}

/// Every statement a load sends, in order, as `dialect`'s engine receives it; between the schema and
/// the keys, each table's rows through the engine's bulk path.
#[derive(Debug, Clone)]
pub struct LoadPlan {
    /// Each table dropped where it exists, then schema.sql's statements.
    pub schema: Vec<Planned>,
    /// The tables, in the order schema.sql creates them (and the load fills them).
    pub tables: Vec<Table>,
    /// keys.sql's keys, one statement each.
    pub keys: Vec<Planned>,
    /// Each table made ready for queries (`Dialect::after_load`).
    pub after_load: Vec<Planned>,
}

impl LoadPlan {
    /// The plan of a load of `files` on `dialect`'s engine; a file that is missing, makes no table, or
    /// holds a statement of another form is one sentence naming it.
    pub fn new(files: &Files, dialect: &dyn Dialect) -> Result<LoadPlan, String> {
        let schema_path = files.path("schema.sql");
        let created: Vec<(Option<Table>, String)> =
            statements(&files.read("schema.sql")?).into_iter().map(|s| (created_table(&s), s)).collect();
        let tables: Vec<Table> = created.iter().filter_map(|(t, _)| t.clone()).collect();
        if tables.is_empty() {
            return Err(format!("{} creates no table", schema_path.display()));
        }
        if let Some(t) = tables.iter().find(|t| t.columns == 0) {
            return Err(format!("{}: table {} has no columns", schema_path.display(), t.name));
        }
        let keys_path = files.path("keys.sql");
        let mut keys = Vec::new();
        for (i, s) in statements(&files.read("keys.sql")?).into_iter().enumerate() {
            // A secondary index is the same statement on every engine here.
            if let Some(table) = created_index(&s) {
                keys.push(Planned { table: Some(table), sql: s });
                continue;
            }
            let key = added_key(&s).ok_or_else(|| {
                format!(
                    "{}: statement {} is not of the form ALTER TABLE t ADD PRIMARY KEY (columns) or CREATE INDEX i \
                     ON t (columns): {s}",
                    keys_path.display(),
                    i + 1
                )
            })?;
            if !tables.iter().any(|t| t.name == key.table) {
                return Err(format!(
                    "{} has a key for table {}, which {} does not create",
                    keys_path.display(),
                    key.table,
                    schema_path.display()
                ));
            }
            keys.push(Planned { sql: key_statement(dialect, &key), table: Some(key.table) });
        }
        let drops = tables.iter().map(|t| Planned { table: Some(t.name.clone()), sql: drop_table(&t.name) });
        let creates = created.into_iter().map(|(t, sql)| Planned { table: t.map(|t| t.name), sql });
        let after_load = tables
            .iter()
            .flat_map(|t| {
                dialect.after_load(&t.name).into_iter().map(|sql| Planned { table: Some(t.name.clone()), sql })
            })
            .collect();
        Ok(LoadPlan { schema: drops.chain(creates).collect(), tables, keys, after_load })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::{mysql, pg, sqlite};

    #[test]
    fn tables_and_their_columns_come_from_create_table() {
        let t = created_table("CREATE TABLE part (\n  p_partkey INTEGER NOT NULL,\n  p_retailprice DECIMAL(15, 2) NOT NULL,\n  p_comment VARCHAR(23)\n)");
        assert_eq!(t, Some(Table { name: "part".into(), columns: 3 }));
        let t = created_table("create table t (a int, b int, primary key (a, b), unique (b))").unwrap();
        assert_eq!((t.name.as_str(), t.columns), ("t", 2));
        assert_eq!(created_table("CREATE INDEX i ON t (a)"), None);
        assert_eq!(created_table("CREATE TABLE t AS SELECT 1"), None);
        assert_eq!(created_table("CREATE TABLE t (a int"), None);
    }

    #[test]
    fn a_secondary_index_names_its_table() {
        assert_eq!(created_index("CREATE INDEX l_ps ON lineitem (l_partkey, l_suppkey)").as_deref(), Some("lineitem"));
        assert_eq!(created_index("CREATE UNIQUE INDEX u ON t (a)"), None);
        assert_eq!(created_index("CREATE INDEX i ON t"), None);
    }

    #[test]
    fn keys_become_primary_keys_or_unique_indexes() {
        let k = added_key("ALTER TABLE partsupp ADD PRIMARY KEY (ps_partkey, ps_suppkey)").unwrap();
        assert_eq!(k, Key { table: "partsupp".into(), columns: vec!["ps_partkey".into(), "ps_suppkey".into()] });
        assert_eq!(added_key("alter table  t\n add primary key(a)").unwrap().columns, ["a"]);
        assert_eq!(added_key("ALTER TABLE t ADD UNIQUE (a)"), None);
        assert_eq!(added_key("ALTER TABLE t ADD PRIMARY KEY (a + 1)"), None);
        assert_eq!(key_statement(&pg::DIALECT, &k), "ALTER TABLE partsupp ADD PRIMARY KEY (ps_partkey, ps_suppkey)");
        assert_eq!(key_statement(&mysql::DIALECT, &k), key_statement(&pg::DIALECT, &k));
        assert_eq!(
            key_statement(&sqlite::DIALECT, &k),
            "CREATE UNIQUE INDEX partsupp_pk ON partsupp (ps_partkey, ps_suppkey)"
        );
    }

    #[test]
    fn lists_split_outside_parentheses() {
        assert_eq!(list_items("(a DECIMAL(15, 2), b INT)").unwrap(), ["a DECIMAL(15, 2)", "b INT"]);
        assert_eq!(list_items("(a)").unwrap(), ["a"]);
        assert_eq!(list_items("(a))"), None);
        assert_eq!(list_items("a, b"), None);
    }
}
