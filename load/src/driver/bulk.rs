//! Rows for a bulk load, as a data generator writes them: one line per row, its fields separated by
//! '|' and the line ending with a '|' after the last field (TPC's "tbl" form); an empty field is
//! NULL. What each engine's bulk path needs of such a line: its fields (the default path binds
//! them as parameters), or the line rewritten in the form the engine's own bulk path reads
//! (Postgres's COPY text, MySQL's LOAD DATA), validated on the way.

use super::{Param, ParamValue};
use std::io;

/// The field separator, also after the last field.
pub const SEPARATOR: u8 = b'|';

/// Rows loaded per transaction by the default bulk path (prepared INSERTs).
pub const ROWS_PER_TRANSACTION: u64 = 10_000;

/// One field of a row bound as a parameter: None is NULL.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Field<'a>(pub Option<&'a [u8]>);

impl Param for Field<'_> {
    #[inline]
    fn value(&self) -> ParamValue<'_> {
        match self.0 {
            None => ParamValue::Null,
            Some(t) => ParamValue::Text(t),
        }
    }
}

/// The fields of `line` before its end: the line without its newline ('\n', or "\r\n") and without
/// the '|' that ends its last field; an error (one sentence, naming `number`, 1-based) when it has no
/// such '|'.
#[inline]
fn body(line: &[u8], number: u64) -> Result<&[u8], String> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    line.strip_suffix(&[SEPARATOR])
        .ok_or_else(|| format!("row {number} does not end with '|' after its last field: {}", shown(line)))
}

/// The start of a bad line, for an error message.
fn shown(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(&line[..line.len().min(80)]).into_owned();
    if line.len() > 80 {
        format!("{text:?}...")
    } else {
        format!("{text:?}")
    }
}

fn wrong_count(found: usize, columns: usize, number: u64) -> String {
    format!("row {number} has {found} fields where the table has {columns} columns")
}

/// Splits `line` (row `number`, 1-based) into its `columns` fields, empty ones as NULL, into `out`
/// (cleared first).
pub fn split_row<'a>(line: &'a [u8], columns: usize, number: u64, out: &mut Vec<Field<'a>>) -> Result<(), String> {
    out.clear();
    for f in body(line, number)?.split(|&b| b == SEPARATOR) {
        out.push(Field((!f.is_empty()).then_some(f)));
    }
    if out.len() != columns {
        return Err(wrong_count(out.len(), columns, number));
    }
    Ok(())
}

/// Where a rewritten row goes: a request being written (`Vec<u8>` for MySQL, `BytesMut` for Postgres).
pub trait Out {
    fn put(&mut self, bytes: &[u8]);
}

impl Out for Vec<u8> {
    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

impl Out for bytes::BytesMut {
    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

/// Writes row `number` (1-based) of `line` into `out` as a line of a bulk path that reads '|'-separated
/// fields with backslash escapes (Postgres's COPY text format, MySQL's LOAD DATA): `columns` fields
/// joined by '|', the last with no '|' after it, each empty field written as `null` (empty for COPY's
/// NULL '', `\N` for LOAD DATA), a backslash in a value doubled, then '\n'. A line of the wrong form is
/// an error, and nothing of it is written.
#[inline]
pub fn write_row(line: &[u8], columns: usize, null: &[u8], number: u64, out: &mut impl Out) -> Result<(), String> {
    let body = body(line, number)?;
    let found = body.iter().filter(|&&b| b == SEPARATOR).count() + 1;
    if found != columns {
        return Err(wrong_count(found, columns, number));
    }
    for (i, f) in body.split(|&b| b == SEPARATOR).enumerate() {
        if i > 0 {
            out.put(&[SEPARATOR]);
        }
        if f.is_empty() {
            out.put(null);
        } else if f.contains(&b'\\') {
            for part in f.split_inclusive(|&b| b == b'\\') {
                out.put(part);
                if part.ends_with(b"\\") {
                    out.put(b"\\");
                }
            }
        } else {
            out.put(f);
        }
    }
    out.put(b"\n");
    Ok(())
}

/// An error reading the rows (the generator's own failure among them), as the load reports it.
pub fn read_error(e: &io::Error, number: u64) -> String {
    format!("reading row {number}: {e}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(line: &str, columns: usize) -> Result<Vec<Option<String>>, String> {
        let mut out = Vec::new();
        split_row(line.as_bytes(), columns, 7, &mut out)?;
        Ok(out.iter().map(|f| f.0.map(|b| String::from_utf8(b.to_vec()).unwrap())).collect())
    }

    fn write(line: &str, columns: usize, null: &str) -> Result<String, String> {
        let mut out = Vec::new();
        write_row(line.as_bytes(), columns, null.as_bytes(), 3, &mut out)?;
        Ok(String::from_utf8(out).unwrap())
    }

    #[test]
    fn fields_lose_the_trailing_separator_and_empty_ones_are_null() {
        let s = |v: &str| Some(v.to_string());
        assert_eq!(split("0|ALGERIA|0| haggle. |\n", 4).unwrap(), [s("0"), s("ALGERIA"), s("0"), s(" haggle. ")]);
        assert_eq!(split("1||x||\n", 4).unwrap(), [s("1"), None, s("x"), None]);
        assert_eq!(split("|\n", 1).unwrap(), [None]);
        // Without a newline (the last line of a stream), or with "\r\n".
        assert_eq!(split("a|b|", 2).unwrap(), [s("a"), s("b")]);
        assert_eq!(split("a|b|\r\n", 2).unwrap(), [s("a"), s("b")]);
        // The parameters bind NULL and text.
        let mut out = Vec::new();
        split_row(b"1||\n", 2, 1, &mut out).unwrap();
        assert_eq!(out.iter().map(Param::value).collect::<Vec<_>>(), [ParamValue::Text(b"1"), ParamValue::Null]);
    }

    #[test]
    fn a_row_of_the_wrong_form_is_one_sentence() {
        assert_eq!(split("a|b|\n", 3).unwrap_err(), "row 7 has 2 fields where the table has 3 columns");
        assert_eq!(split("a|b\n", 2).unwrap_err(), "row 7 does not end with '|' after its last field: \"a|b\"");
        assert!(split("\n", 1).unwrap_err().starts_with("row 7 does not end with '|'"));
        assert_eq!(write("a|b|c|\n", 2, "").unwrap_err(), "row 3 has 3 fields where the table has 2 columns");
        let long = format!("{}\n", "x".repeat(100));
        assert!(write(&long, 1, "").unwrap_err().ends_with("xxx\"..."));
    }

    #[test]
    fn rewritten_rows_mark_null_and_escape_backslashes() {
        // COPY's text format with NULL '': an empty field stays empty.
        assert_eq!(write("1||x||\n", 4, "").unwrap(), "1||x|\n");
        // LOAD DATA: an empty field is \N.
        assert_eq!(write("1||x||\n", 4, "\\N").unwrap(), "1|\\N|x|\\N\n");
        assert_eq!(write("a\\b|\\|\n", 2, "\\N").unwrap(), "a\\\\b|\\\\\n");
        assert_eq!(write("last|", 1, "").unwrap(), "last\n");
        // Several rows append.
        let mut out = Vec::new();
        write_row(b"1|2|\n", 2, b"", 1, &mut out).unwrap();
        write_row(b"3||\n", 2, b"\\N", 2, &mut out).unwrap();
        assert_eq!(out, b"1|2\n3|\\N\n");
    }
}
