//! The SQL text of a data set, read from its files and put in the SQL an engine speaks: comment lines
//! dropped, statements split on `;`, a query's parameters filled in, and, for an engine that keeps
//! dates as text (its dialect's `typed_dates` is false), the date literals and years rewritten. The
//! same rules as the Python suite's renderer (`dbsweep.suites.analytics.sqltext`), so both send the
//! same text.

use super::DataSet;
use crate::driver::Dialect;
use std::path::{Path, PathBuf};

/// A data set's SQL files: `schema.sql`, `keys.sql`, `q01.sql` ... in one directory.
#[derive(Debug, Clone)]
pub struct Files {
    pub set: DataSet,
    pub dir: PathBuf,
}

impl Files {
    /// The files of `set` in `dir`: in `dir/<set>/` when there is such a directory (the Python
    /// package's layout, which holds both sets), else in `dir` itself.
    pub fn new(set: DataSet, dir: &Path) -> Files {
        let own = dir.join(set.name());
        Files { set, dir: if own.is_dir() { own } else { dir.to_path_buf() } }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The text of file `name`; a missing or unreadable file is one sentence naming its path.
    pub fn read(&self, name: &str) -> Result<String, String> {
        let path = self.path(name);
        std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))
    }

    /// The queries the set has: the names of its `qNN.sql` files, in order.
    pub fn query_names(&self) -> Result<Vec<String>, String> {
        let entries = std::fs::read_dir(&self.dir)
            .map_err(|e| format!("cannot read the directory {}: {e}", self.dir.display()))?;
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter_map(|n| n.strip_suffix(".sql").filter(|q| is_query_name(q)).map(str::to_string))
            .collect();
        names.sort();
        Ok(names)
    }

    /// Query `name`'s text as the engine receives it: comment lines dropped, its parameters filled
    /// in for scale factor `scale` (TPC-H's q11: `{fraction}`), in the SQL `dialect` speaks. An
    /// unknown name is one sentence that lists the set's queries.
    pub fn query(&self, name: &str, scale: f64, dialect: &dyn Dialect) -> Result<String, String> {
        let names = self.query_names()?;
        if !names.iter().any(|n| n == name) {
            if names.is_empty() {
                return Err(format!("no query files (q01.sql, ...) in {}", self.dir.display()));
            }
            return Err(format!("unknown query '{name}'; the queries of {} are {}", self.set.name(), names.join(", ")));
        }
        let text = self.read(&format!("{name}.sql"))?;
        Ok(render_query(&text, scale, dialect))
    }
}

/// `qNN`: the name of a query file without its `.sql`.
fn is_query_name(name: &str) -> bool {
    name.len() == 3 && name.starts_with('q') && name[1..].bytes().all(|b| b.is_ascii_digit())
}

/// The text without its comment lines (those that start with `--` after their indentation), trimmed.
pub fn without_comments(sql: &str) -> String {
    let kept: Vec<&str> = sql.lines().filter(|l| !l.trim_start().starts_with("--")).collect();
    kept.join("\n").trim().to_string()
}

/// The statements of a file: comment lines dropped, then split on `;` (the files hold no `;` in a
/// literal), each trimmed, empty ones left out.
pub fn statements(sql: &str) -> Vec<String> {
    without_comments(sql).split(';').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect()
}

/// TPC-H's q11 fraction for scale factor `scale`: 0.0001 / scale, with 10 decimals.
pub fn fraction(scale: f64) -> String {
    format!("{:.10}", 0.0001 / scale)
}

/// A query file's text as the engine receives it: without its comment lines, `{fraction}` filled in
/// for `scale`, in `dialect`'s SQL.
pub fn render_query(text: &str, scale: f64, dialect: &dyn Dialect) -> String {
    let body = without_comments(text);
    let body = if body.contains("{fraction}") { body.replace("{fraction}", &fraction(scale)) } else { body };
    in_dialect(&body, dialect)
}

/// A query written for typed dates, in `dialect`'s SQL: unchanged where the engine has a DATE type;
/// where dates are text, `date 'YYYY-MM-DD'` becomes `'YYYY-MM-DD'` and `extract(year from X)` (X a
/// column) `cast(strftime('%Y', X) as integer)`, the keywords matched in any case.
pub fn in_dialect(query: &str, dialect: &dyn Dialect) -> String {
    if dialect.typed_dates() {
        return query.to_string();
    }
    text_years(&text_dates(query))
}

/// A byte of a word (a regular expression's `\w`): ASCII letters, digits and '_', and every byte of
/// a non-ASCII character (letters, mostly).
fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

/// Whether a word starts at `at` (nothing of a word before it).
fn word_start(b: &[u8], at: usize) -> bool {
    at == 0 || !is_word(b[at - 1])
}

/// Whether `b[at..]` starts with `word`, in any case.
fn keyword(b: &[u8], at: usize, word: &str) -> bool {
    b.get(at..at + word.len()).is_some_and(|w| w.eq_ignore_ascii_case(word.as_bytes()))
}

/// The position after the whitespace at `at`.
fn skip_space(b: &[u8], mut at: usize) -> usize {
    while at < b.len() && b[at].is_ascii_whitespace() {
        at += 1;
    }
    at
}

/// Whether `b[at..]` starts with `'YYYY-MM-DD'` (12 bytes).
fn date_literal(b: &[u8], at: usize) -> bool {
    let Some(lit) = b.get(at..at + 12) else { return false };
    lit[0] == b'\''
        && lit[11] == b'\''
        && lit[5] == b'-'
        && lit[8] == b'-'
        && [1, 2, 3, 4, 6, 7, 9, 10].iter().all(|&i| lit[i].is_ascii_digit())
}

/// `date 'YYYY-MM-DD'` (the keyword, whitespace, the literal) becomes `'YYYY-MM-DD'`.
fn text_dates(sql: &str) -> String {
    let b = sql.as_bytes();
    let mut out = String::with_capacity(sql.len());
    let (mut at, mut copied) = (0, 0);
    while at < b.len() {
        if keyword(b, at, "date") && word_start(b, at) {
            let lit = skip_space(b, at + 4);
            if lit > at + 4 && date_literal(b, lit) {
                out.push_str(&sql[copied..at]);
                out.push_str(&sql[lit..lit + 12]);
                at = lit + 12;
                copied = at;
                continue;
            }
        }
        at += 1;
    }
    out.push_str(&sql[copied..]);
    out
}

/// Where `extract(year from X)` that starts at `at` ends, and where X is; None where none starts there.
fn extract_year(b: &[u8], at: usize) -> Option<(usize, std::ops::Range<usize>)> {
    if !(keyword(b, at, "extract") && word_start(b, at)) {
        return None;
    }
    let mut i = skip_space(b, at + 7);
    if b.get(i) != Some(&b'(') {
        return None;
    }
    i = skip_space(b, i + 1);
    if !keyword(b, i, "year") {
        return None;
    }
    let j = skip_space(b, i + 4);
    if j == i + 4 || !keyword(b, j, "from") {
        return None;
    }
    let start = skip_space(b, j + 4);
    if start == j + 4 {
        return None;
    }
    let mut end = start;
    while end < b.len() && is_word(b[end]) {
        end += 1;
    }
    if end == start {
        return None;
    }
    let close = skip_space(b, end);
    (b.get(close) == Some(&b')')).then_some((close + 1, start..end))
}

/// `extract(year from X)` becomes `cast(strftime('%Y', X) as integer)`.
fn text_years(sql: &str) -> String {
    let b = sql.as_bytes();
    let mut out = String::with_capacity(sql.len());
    let (mut at, mut copied) = (0, 0);
    while at < b.len() {
        if let Some((end, column)) = extract_year(b, at) {
            out.push_str(&sql[copied..at]);
            out.push_str("cast(strftime('%Y', ");
            out.push_str(&sql[column]);
            out.push_str(") as integer)");
            at = end;
            copied = end;
            continue;
        }
        at += 1;
    }
    out.push_str(&sql[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::{mysql, pg, sqlite};

    #[test]
    fn comment_lines_go_and_statements_split() {
        let text = "-- a file's comment; with a semicolon\nCREATE TABLE a (\n    x INTEGER, -- kept: not a whole line\n    y DECIMAL(15, 2)\n);\n  -- indented\n\nCREATE TABLE b (z INT);\n;\n";
        assert_eq!(
            statements(text),
            [
                "CREATE TABLE a (\n    x INTEGER, -- kept: not a whole line\n    y DECIMAL(15, 2)\n)",
                "CREATE TABLE b (z INT)"
            ]
        );
        assert_eq!(without_comments("-- only\n-- comments\n"), "");
        assert_eq!(without_comments("  -- q\nselect 1\n"), "select 1");
        assert!(statements("-- nothing\n;\n").is_empty());
    }

    #[test]
    fn the_fraction_has_ten_decimals() {
        assert_eq!(fraction(0.01), "0.0100000000");
        assert_eq!(fraction(1.0), "0.0001000000");
        assert_eq!(fraction(10.0), "0.0000100000");
        assert_eq!(fraction(3.0), "0.0000333333");
        assert_eq!(fraction(0.1), "0.0010000000");
        let q = "-- q11\nselect sum(v) * {fraction} from t";
        assert_eq!(render_query(q, 0.01, &pg::DIALECT), "select sum(v) * 0.0100000000 from t");
        assert_eq!(render_query(q, 100.0, &sqlite::DIALECT), "select sum(v) * 0.0000010000 from t");
    }

    #[test]
    fn typed_dates_stay_and_text_dates_lose_their_type() {
        let q = "select extract(year from l_shipdate) as y from lineitem \
                 where l_shipdate between date '1995-01-01' and DATE\n  '1996-12-31'";
        assert_eq!(in_dialect(q, &pg::DIALECT), q);
        assert_eq!(in_dialect(q, &mysql::DIALECT), q);
        assert_eq!(
            in_dialect(q, &sqlite::DIALECT),
            "select cast(strftime('%Y', l_shipdate) as integer) as y from lineitem \
             where l_shipdate between '1995-01-01' and '1996-12-31'"
        );
        let s = &sqlite::DIALECT;
        // Any case and spacing, as the Python renderer's expressions take them.
        assert_eq!(in_dialect("EXTRACT ( Year\tFROM o_orderdate )", s), "cast(strftime('%Y', o_orderdate) as integer)");
        assert_eq!(in_dialect("x >= Date '2000-01-02'", s), "x >= '2000-01-02'");
        // Not a date keyword (part of a word), not a date literal, not a year of a column: unchanged.
        for same in [
            "l_shipdate '1995-01-01'",
            "update '1995-01-01'",
            "date'1995-01-01'",
            "date '1995-1-01'",
            "date '95-01-01'",
            "d_date = date_x",
            "extract(month from d)",
            "extract(year from (d))",
            "extract(yearfrom d)",
            "myextract(year from d)",
            "extract(year from d",
            "date",
            "",
        ] {
            assert_eq!(in_dialect(same, s), same, "{same}");
        }
        // Text after a rewrite is kept, multi-byte characters included.
        assert_eq!(in_dialect("'é' || date '2001-02-03' || 'ü'", s), "'é' || '2001-02-03' || 'ü'");
    }
}
