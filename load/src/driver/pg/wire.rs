//! Framing of the Postgres frontend/backend protocol v3 over any byte stream.
//!
//! The hot path (one statement's reply) never allocates: messages are read
//! into one reused buffer, only their 5-byte headers are parsed, DataRows and
//! other messages whose content does not matter are skipped (a message larger
//! than the buffer is discarded as it streams past, never buffered whole), and
//! only CommandComplete, ErrorResponse and ReadyForQuery are looked into.
//! Encoding uses `postgres_protocol`'s frontend messages into a reused buffer.

use bytes::{BufMut, BytesMut};
use fallible_iterator::FallibleIterator;
use postgres_protocol::message::backend::{self, Header, Message};
use postgres_protocol::message::frontend;
use postgres_protocol::IsNull;
use std::io::{self, Read};
use std::ops::Range;

use crate::driver::readbuf::ReadBuf;
use crate::driver::{OnRow, Param, ParamValue, ServerError};

/// Tag byte plus the length word.
pub const HEADER_LEN: usize = 5;
/// What the read buffer starts with: a range of 100 rows of c (about 14 KB) fits many times.
pub const READ_BUFFER: usize = 64 * 1024;
/// Larger messages than this (that must be kept whole, unlike DataRows) are a protocol error.
const MAX_KEPT_MESSAGE: usize = 1 << 30;

/// The server's error in a whole ErrorResponse (header included).
pub fn parse_error(message: &[u8]) -> io::Result<ServerError> {
    match Message::parse(&mut BytesMut::from(message))? {
        Some(Message::ErrorResponse(body)) => error_from_body(&body),
        _ => Err(invalid("not an ErrorResponse".into())),
    }
}

/// The server's error in an ErrorResponse: its SQLSTATE, message, and whether it is FATAL or PANIC
/// (the server closes the connection after it).
pub fn error_from_body(body: &backend::ErrorResponseBody) -> io::Result<ServerError> {
    let mut fields = body.fields();
    let mut e = ServerError { code: String::new(), message: String::new(), fatal: false };
    let mut severity = None;
    while let Some(f) = fields.next()? {
        let value = String::from_utf8_lossy(f.value_bytes());
        match f.type_() {
            b'C' => e.code = value.into_owned(),
            b'M' => e.message = value.into_owned(),
            // 'V' is never localized; 'S' is, and is only used when 'V' is absent (servers before 9.6).
            b'V' => severity = Some(value.into_owned()),
            b'S' if severity.is_none() => severity = Some(value.into_owned()),
            _ => {}
        }
    }
    e.fatal = matches!(severity.as_deref(), Some("FATAL" | "PANIC"));
    if e.code.is_empty() {
        e.code = "XX000".into();
    }
    Ok(e)
}

/// What the server answered to one Sync or one simple Query, up to its ReadyForQuery.
#[derive(Debug, Default)]
pub struct Reply {
    /// DataRows received.
    pub rows: u64,
    /// The row count of the last CommandComplete (0 for tags without one, e.g. BEGIN).
    pub affected: u64,
    /// The first ErrorResponse; the server skips the rest of the request after it.
    pub error: Option<ServerError>,
    /// ReadyForQuery's transaction status: b'I' idle, b'T' in a transaction, b'E' in a failed one.
    pub status: u8,
}

impl Reply {
    pub fn clear(&mut self) {
        self.rows = 0;
        self.affected = 0;
        self.error = None;
        self.status = 0;
    }
}

/// The row count a CommandComplete tag ends with ("INSERT 0 5", "UPDATE 3", "SELECT 10"); 0 for "BEGIN".
pub fn command_rows(body: &[u8]) -> u64 {
    let tag = body.split(|&b| b == 0).next().unwrap_or(&[]);
    let last = tag.rsplit(|&b| b == b' ').next().unwrap_or(&[]);
    if last.is_empty() || tag.len() == last.len() {
        return 0;
    }
    let mut n: u64 = 0;
    for &b in last {
        if !b.is_ascii_digit() {
            return 0;
        }
        n = n.saturating_mul(10).saturating_add((b - b'0') as u64);
    }
    n
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

/// Buffered reading of backend messages.
pub struct Reader {
    inbuf: ReadBuf,
}

impl Reader {
    pub fn new(capacity: usize) -> Reader {
        Reader { inbuf: ReadBuf::new(capacity.max(HEADER_LEN)) }
    }

    /// The next message's tag and total length (tag byte included), reading until its header is in.
    #[inline]
    pub fn header<R: Read>(&mut self, src: &mut R) -> io::Result<(u8, usize)> {
        self.inbuf.fill(src, HEADER_LEN)?;
        let h = Header::parse(self.inbuf.peek(HEADER_LEN))?.expect("a whole header is buffered");
        Ok((h.tag(), h.len() as usize + 1))
    }

    /// Consumes the current message of `total` bytes without keeping it, reading past it as needed.
    #[inline]
    pub fn skip<R: Read>(&mut self, src: &mut R, total: usize) -> io::Result<()> {
        self.inbuf.skip(src, total)
    }

    /// Consumes the current message of `total` bytes, buffered whole; returns where its body is.
    /// The range is valid until the next read.
    #[inline]
    pub fn take<R: Read>(&mut self, src: &mut R, total: usize) -> io::Result<Range<usize>> {
        if total > MAX_KEPT_MESSAGE {
            return Err(invalid(format!("a {total}-byte message from the server")));
        }
        self.inbuf.fill(src, total)?;
        let whole = self.inbuf.take(total);
        Ok(whole.start + HEADER_LEN..whole.end)
    }

    /// The next whole message, decoded by `postgres_protocol` (allocates: for the connection's start
    /// and other cold paths).
    pub fn message<R: Read>(&mut self, src: &mut R) -> io::Result<Message> {
        let (_, total) = self.header(src)?;
        let body = self.take(src, total)?;
        let mut whole = BytesMut::from(&self.inbuf[body.start - HEADER_LEN..body.end]);
        Message::parse(&mut whole)?.ok_or_else(|| invalid("a truncated message".into()))
    }

    /// Reads the answer to one request, up to and including its ReadyForQuery, into `out` (which
    /// the caller has cleared). Returns early, without a ReadyForQuery, after a FATAL error.
    pub fn reply<R: Read>(&mut self, src: &mut R, out: &mut Reply) -> io::Result<()> {
        loop {
            let (tag, total) = self.header(src)?;
            if self.reply_message(src, tag, total, out)? {
                return Ok(());
            }
        }
    }

    /// Consumes one message of a reply (its header read: `tag`, `total` bytes) into `out`; true when
    /// the reply is over (its ReadyForQuery, or a FATAL error).
    #[inline]
    fn reply_message<R: Read>(&mut self, src: &mut R, tag: u8, total: usize, out: &mut Reply) -> io::Result<bool> {
        match tag {
            backend::DATA_ROW_TAG => {
                out.rows += 1;
                self.skip(src, total)?;
            }
            backend::COMMAND_COMPLETE_TAG => {
                let body = self.take(src, total)?;
                out.affected = command_rows(&self.inbuf[body]);
            }
            backend::READY_FOR_QUERY_TAG => {
                let body = self.take(src, total)?;
                out.status = *self.inbuf[body].first().ok_or_else(|| invalid("an empty ReadyForQuery".into()))?;
                return Ok(true);
            }
            backend::ERROR_RESPONSE_TAG => {
                let body = self.take(src, total)?;
                let e = parse_error(&self.inbuf[body.start - HEADER_LEN..body.end])?;
                let fatal = e.fatal;
                if out.error.is_none() {
                    out.error = Some(e);
                }
                return Ok(fatal);
            }
            // Requests the client would have to answer: none of its statements asks for them (a bulk
            // load's COPY waits for its CopyInResponse with `copy_in`).
            backend::COPY_IN_RESPONSE_TAG | b'W' | backend::AUTHENTICATION_TAG => {
                return Err(invalid(format!("unexpected message '{}' from the server", tag as char)));
            }
            // BindComplete, ParseComplete, RowDescription, NoData, EmptyQueryResponse,
            // NoticeResponse, ParameterStatus, NotificationResponse, COPY OUT data, ...
            _ => self.skip(src, total)?,
        }
        Ok(false)
    }
}

/// A DataRow's values (the body after the message header), NULL as None, into `out` (cleared first).
pub fn data_row_values<'b>(body: &'b [u8], out: &mut Vec<Option<&'b [u8]>>) -> io::Result<()> {
    let short = || invalid("a truncated DataRow".into());
    out.clear();
    let count = i16::from_be_bytes(body.get(..2).ok_or_else(short)?.try_into().expect("2 bytes"));
    let mut at = 2;
    for _ in 0..count {
        let len = i32::from_be_bytes(body.get(at..at + 4).ok_or_else(short)?.try_into().expect("4 bytes"));
        at += 4;
        if len < 0 {
            out.push(None);
        } else {
            let end = at + len as usize;
            out.push(Some(body.get(at..end).ok_or_else(short)?));
            at = end;
        }
    }
    Ok(())
}

impl Reader {
    /// Reads the answer to one simple query, up to and including its ReadyForQuery, into `out`
    /// (which the caller has cleared), handing every row's values to `row` (NULL as None). Returns
    /// early, without a ReadyForQuery, after a FATAL error.
    pub fn rows_each<R: Read>(&mut self, src: &mut R, out: &mut Reply, row: &mut OnRow<'_>) -> io::Result<()> {
        loop {
            let (tag, total) = self.header(src)?;
            match tag {
                backend::DATA_ROW_TAG => {
                    out.rows += 1;
                    let body = self.take(src, total)?;
                    let mut values = Vec::new();
                    data_row_values(&self.inbuf[body], &mut values)?;
                    row(&values);
                }
                _ => {
                    if self.reply_message(src, tag, total, out)? {
                        return Ok(());
                    }
                }
            }
        }
    }

    /// Reads the answer to a COPY ... FROM STDIN up to the server's CopyInResponse: true when it came
    /// (the rows are to be sent), false when the server answered otherwise (an error: the whole
    /// reply, up to its ReadyForQuery, is then read into `out`, which the caller has cleared).
    pub fn copy_in<R: Read>(&mut self, src: &mut R, out: &mut Reply) -> io::Result<bool> {
        loop {
            let (tag, total) = self.header(src)?;
            match tag {
                backend::COPY_IN_RESPONSE_TAG => {
                    self.skip(src, total)?;
                    return Ok(true);
                }
                backend::ERROR_RESPONSE_TAG | backend::READY_FOR_QUERY_TAG | backend::COMMAND_COMPLETE_TAG => {
                    self.reply(src, out)?;
                    return Ok(false);
                }
                // NoticeResponse, ParameterStatus, ...
                _ => self.skip(src, total)?,
            }
        }
    }
}

/// CopyData messages are sent once they hold this much.
pub const COPY_CHUNK: usize = 64 * 1024;

/// Starts a CopyData message in `out` (cleared first); `end_copy_data` fills in its length.
pub fn begin_copy_data(out: &mut BytesMut) {
    out.clear();
    out.put_u8(b'd');
    out.put_i32(0);
}

/// Fills in the length of the CopyData message begun in `out`; false when it holds no data.
pub fn end_copy_data(out: &mut BytesMut) -> bool {
    let len = out.len() - 1;
    out[1..HEADER_LEN].copy_from_slice(&(len as i32).to_be_bytes());
    out.len() > HEADER_LEN
}

/// Appends the decimal text of `v`.
#[inline]
pub fn put_int(out: &mut BytesMut, v: i64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut n = v.unsigned_abs();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if v < 0 {
        out.put_u8(b'-');
    }
    out.extend_from_slice(&digits[i..]);
}

/// Appends a parameter's text form (NULL has none: Bind marks it by its length).
#[inline]
pub fn put_param(out: &mut BytesMut, v: ParamValue<'_>) {
    match v {
        ParamValue::Int(i) => put_int(out, i),
        ParamValue::Text(t) => out.extend_from_slice(t),
        ParamValue::Null => {}
    }
}

/// Appends Bind (unnamed portal, every parameter in text, every result column binary), Execute
/// and Sync for the prepared statement `stmt`: one write runs it.
#[inline]
pub fn bind_execute<'a, P: Param + 'a>(
    stmt: &str,
    params: impl IntoIterator<Item = &'a P>,
    out: &mut BytesMut,
) -> io::Result<()> {
    let serialize = |p: &P, buf: &mut BytesMut| match p.value() {
        ParamValue::Null => Ok(IsNull::Yes),
        v => {
            put_param(buf, v);
            Ok(IsNull::No)
        }
    };
    match frontend::bind("", stmt, [], params, serialize, [1], out) {
        Ok(()) => {}
        Err(frontend::BindError::Serialization(e)) => return Err(e),
        Err(frontend::BindError::Conversion(e)) => return Err(io::Error::new(io::ErrorKind::InvalidInput, e)),
    }
    frontend::execute("", 0, out)?;
    frontend::sync(out);
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::driver::readbuf::tests::Chunks;

    pub fn msg(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![tag];
        m.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    pub fn data_row(values: &[&[u8]]) -> Vec<u8> {
        let mut b = (values.len() as i16).to_be_bytes().to_vec();
        for v in values {
            b.extend_from_slice(&(v.len() as i32).to_be_bytes());
            b.extend_from_slice(v);
        }
        msg(b'D', &b)
    }

    pub fn complete(tag: &str) -> Vec<u8> {
        let mut b = tag.as_bytes().to_vec();
        b.push(0);
        msg(b'C', &b)
    }

    pub fn ready(status: u8) -> Vec<u8> {
        msg(b'Z', &[status])
    }

    pub fn error(severity: &str, code: &str, message: &str) -> Vec<u8> {
        let mut b = Vec::new();
        for (t, v) in [(b'S', severity), (b'V', severity), (b'C', code), (b'M', message)] {
            b.push(t);
            b.extend_from_slice(v.as_bytes());
            b.push(0);
        }
        b.push(0);
        msg(b'E', &b)
    }

    /// BindComplete, `n` rows of c, SELECT n, ReadyForQuery(I).
    fn select_reply(n: usize) -> Vec<u8> {
        let mut r = msg(b'2', &[]);
        for i in 0..n {
            r.extend(data_row(&[format!("{i:0>120}").as_bytes()]));
        }
        r.extend(complete(&format!("SELECT {n}")));
        r.extend(ready(b'I'));
        r
    }

    fn read_reply(r: &mut Reader, src: &mut Chunks) -> Reply {
        let mut out = Reply::default();
        r.reply(src, &mut out).unwrap();
        out
    }

    #[test]
    fn a_reply_in_one_read() {
        let mut src = Chunks::new(vec![select_reply(3)]);
        let mut r = Reader::new(READ_BUFFER);
        let out = read_reply(&mut r, &mut src);
        assert_eq!((out.rows, out.affected, out.status, src.reads), (3, 3, b'I', 1));
        assert!(out.error.is_none() && r.inbuf.buffered() == 0);
    }

    #[test]
    fn a_reply_split_anywhere() {
        let whole = select_reply(2);
        // Two reads split at every position, then one byte per read.
        let mut splits: Vec<Vec<Vec<u8>>> =
            (1..whole.len()).map(|i| vec![whole[..i].to_vec(), whole[i..].to_vec()]).collect();
        splits.push(whole.iter().map(|&b| vec![b]).collect());
        for chunks in splits {
            let n = chunks.len();
            let mut src = Chunks::new(chunks);
            let mut r = Reader::new(READ_BUFFER);
            let out = read_reply(&mut r, &mut src);
            assert_eq!((out.rows, out.affected, out.status, src.reads), (2, 2, b'I', n));
        }
    }

    #[test]
    fn several_replies_in_one_read() {
        let mut both = select_reply(1);
        both.extend(msg(b'2', &[]));
        both.extend(complete("UPDATE 7"));
        both.extend(ready(b'T'));
        let mut src = Chunks::new(vec![both]);
        let mut r = Reader::new(READ_BUFFER);
        let first = read_reply(&mut r, &mut src);
        assert_eq!((first.rows, first.affected, first.status), (1, 1, b'I'));
        assert!(r.inbuf.buffered() > 0);
        let second = read_reply(&mut r, &mut src);
        assert_eq!((second.rows, second.affected, second.status), (0, 7, b'T'));
        // The second reply came from the buffer: no read after the first.
        assert_eq!(src.reads, 1);
        assert_eq!(r.inbuf.buffered(), 0);
    }

    #[test]
    fn an_error_in_the_middle() {
        let mut m = msg(b'2', &[]);
        m.extend(data_row(&[b"x"]));
        m.extend(msg(b'N', b"Snotice\0\0"));
        m.extend(error("ERROR", "40P01", "deadlock detected"));
        m.extend(ready(b'E'));
        // And the next request's reply, in the same read.
        m.extend(complete("ROLLBACK"));
        m.extend(ready(b'I'));
        let mut src = Chunks::new(vec![m]);
        let mut r = Reader::new(READ_BUFFER);
        let out = read_reply(&mut r, &mut src);
        assert_eq!((out.rows, out.status), (1, b'E'));
        let e = out.error.unwrap();
        assert_eq!((e.code.as_str(), e.message.as_str(), e.fatal), ("40P01", "deadlock detected", false));
        let next = read_reply(&mut r, &mut src);
        assert!(next.error.is_none() && next.status == b'I');
    }

    #[test]
    fn a_fatal_error_ends_the_reply() {
        let mut src = Chunks::new(vec![error("FATAL", "57P01", "terminating connection due to administrator command")]);
        let mut r = Reader::new(READ_BUFFER);
        let out = read_reply(&mut r, &mut src);
        let e = out.error.unwrap();
        assert!(e.fatal && e.code == "57P01");
        assert_eq!(out.status, 0);
    }

    #[test]
    fn rows_larger_than_the_buffer_stream_past() {
        let big = vec![b'x'; 10_000];
        let mut m = msg(b'2', &[]);
        m.extend(data_row(&[&big]));
        m.extend(data_row(&[b"small"]));
        m.extend(data_row(&[&big, &big]));
        m.extend(complete("SELECT 3"));
        m.extend(ready(b'I'));
        for chunk in [1, 7, 64, 1000, 100_000] {
            let mut src = Chunks::new(m.chunks(chunk).map(<[u8]>::to_vec).collect());
            let mut r = Reader::new(64);
            let out = read_reply(&mut r, &mut src);
            assert_eq!((out.rows, out.affected, out.status), (3, 3, b'I'), "chunks of {chunk}");
            // Skipped rows never made the buffer grow.
            assert_eq!(r.inbuf.capacity(), 64);
        }
    }

    #[test]
    fn kept_messages_larger_than_the_buffer_grow_it() {
        let long = "m".repeat(500);
        let mut m = error("ERROR", "42601", &long);
        m.extend(ready(b'I'));
        let mut src = Chunks::new(m.chunks(100).map(<[u8]>::to_vec).collect());
        let mut r = Reader::new(64);
        let out = read_reply(&mut r, &mut src);
        assert_eq!(out.error.unwrap().message, long);
        assert!(r.inbuf.capacity() > 500);
    }

    #[test]
    fn eof_and_garbage_are_errors() {
        let whole = select_reply(1);
        let mut src = Chunks::new(vec![whole[..whole.len() - 2].to_vec()]);
        let e = Reader::new(READ_BUFFER).reply(&mut src, &mut Reply::default()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
        let mut src = Chunks::new(vec![vec![b'D', 0, 0, 0, 2]]);
        let e = Reader::new(READ_BUFFER).reply(&mut src, &mut Reply::default()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        let mut src = Chunks::new(vec![msg(b'G', &[0, 0, 0])]);
        assert!(Reader::new(READ_BUFFER).reply(&mut src, &mut Reply::default()).is_err());
    }

    #[test]
    fn command_tags() {
        for (tag, n) in [
            ("INSERT 0 5", 5),
            ("UPDATE 3", 3),
            ("DELETE 0", 0),
            ("SELECT 100", 100),
            ("BEGIN", 0),
            ("COMMIT", 0),
            ("CREATE TABLE", 0),
            ("", 0),
        ] {
            let mut body = tag.as_bytes().to_vec();
            body.push(0);
            assert_eq!(command_rows(&body), n, "{tag}");
        }
    }

    #[test]
    fn cold_messages_decode() {
        let mut src = Chunks::new(vec![msg(b'S', b"server_version\x0015.4\0"), ready(b'I')]);
        let mut r = Reader::new(8);
        match r.message(&mut src).unwrap() {
            Message::ParameterStatus(p) => assert_eq!(p.value().unwrap(), "15.4"),
            _ => panic!("not a ParameterStatus"),
        }
        assert!(matches!(r.message(&mut src).unwrap(), Message::ReadyForQuery(_)));
    }

    struct P(&'static str);
    impl Param for P {
        fn value(&self) -> ParamValue<'_> {
            ParamValue::Text(self.0.as_bytes())
        }
    }

    #[test]
    fn bind_execute_sync_bytes() {
        let mut out = BytesMut::new();
        bind_execute("s1", &[P("42"), P("ab")], &mut out).unwrap();
        let mut want = Vec::new();
        // Bind: portal "", statement "s1", 0 parameter formats (text), 2 values, 1 result format (binary).
        let mut bind = b"\0s1\0\0\0\0\x02".to_vec();
        bind.extend_from_slice(&[0, 0, 0, 2, b'4', b'2', 0, 0, 0, 2, b'a', b'b', 0, 1, 0, 1]);
        want.extend(msg(b'B', &bind));
        want.extend(msg(b'E', &[0, 0, 0, 0, 0]));
        want.extend(msg(b'S', &[]));
        assert_eq!(&out[..], &want[..]);
    }

    #[test]
    fn a_null_parameter_is_bound_by_its_length() {
        use crate::driver::bulk::Field;
        let mut out = BytesMut::new();
        bind_execute("s", &[Field(Some(b"7")), Field(None)], &mut out).unwrap();
        let mut bind = b"\0s\0\0\0\0\x02".to_vec();
        bind.extend_from_slice(&[0, 0, 0, 1, b'7', 0xFF, 0xFF, 0xFF, 0xFF, 0, 1, 0, 1]);
        assert_eq!(&out[..msg(b'B', &bind).len()], &msg(b'B', &bind)[..]);
    }

    #[test]
    fn ints_as_text() {
        for v in [0i64, 7, -7, 42, 1_000_000, i32::MAX as i64, i32::MIN as i64, i64::MIN, i64::MAX] {
            let mut out = BytesMut::new();
            put_int(&mut out, v);
            assert_eq!(std::str::from_utf8(&out).unwrap(), v.to_string());
        }
    }
}
