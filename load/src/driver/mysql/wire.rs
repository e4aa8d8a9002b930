//! Framing of the MySQL client/server protocol (as MariaDB and Oracle's MySQL speak it) over any byte
//! stream.
//!
//! A packet is a 3-byte little-endian payload length, a sequence id, and the payload; a payload of
//! 16 MiB - 1 bytes or more goes in several packets, each full one followed by the next. The hot
//! path (one statement's reply) never allocates: packets are read into one reused buffer, column
//! definitions and rows are skipped after a look at their first byte (a row larger than the buffer
//! streams past, never buffered whole), and only OK, EOF and ERR packets are looked into.
//! Requests are written into a reused buffer, header first, its length filled in at the end.

use crate::driver::readbuf::ReadBuf;
use crate::driver::{OnRow, Param, ParamValue, ServerError};
use std::io::{self, Read};
use std::ops::Range;

pub const HEADER_LEN: usize = 4;
/// The largest payload of one packet; a payload this long continues in the next packet.
pub const MAX_PAYLOAD: usize = 0xFF_FFFF;
/// What the read buffer starts with: a range of 100 rows of c (about 13 KB) fits many times.
pub const READ_BUFFER: usize = 64 * 1024;

// Capability flags (the handshake's).
pub const CLIENT_FOUND_ROWS: u32 = 1 << 1;
pub const CLIENT_CONNECT_WITH_DB: u32 = 1 << 3;
/// The client may answer LOAD DATA LOCAL INFILE (the bulk load streams its rows so).
pub const CLIENT_LOCAL_FILES: u32 = 1 << 7;
pub const CLIENT_PROTOCOL_41: u32 = 1 << 9;
pub const CLIENT_TRANSACTIONS: u32 = 1 << 13;
pub const CLIENT_SECURE_CONNECTION: u32 = 1 << 15;
pub const CLIENT_MULTI_RESULTS: u32 = 1 << 17;
pub const CLIENT_PS_MULTI_RESULTS: u32 = 1 << 18;
pub const CLIENT_PLUGIN_AUTH: u32 = 1 << 19;
pub const CLIENT_DEPRECATE_EOF: u32 = 1 << 24;
/// Set by MySQL servers; a MariaDB server leaves it clear and has extended capabilities.
pub const CLIENT_MYSQL: u32 = 1;
/// MariaDB's extended capability (bit 36 of the 64, bit 4 of the extension): the server sends a
/// prepared statement's column definitions only when they changed.
pub const MARIADB_CLIENT_CACHE_METADATA: u32 = 1 << 4;

// Server status flags (OK and EOF packets).
pub const SERVER_STATUS_IN_TRANS: u16 = 1;
pub const SERVER_MORE_RESULTS_EXISTS: u16 = 8;

// Commands.
pub const COM_QUIT: u8 = 0x01;
pub const COM_QUERY: u8 = 0x03;
pub const COM_STMT_PREPARE: u8 = 0x16;
pub const COM_STMT_EXECUTE: u8 = 0x17;
pub const COM_STMT_CLOSE: u8 = 0x19;

// The first byte of a reply's packets.
pub const OK: u8 = 0x00;
pub const EOF: u8 = 0xFE;
pub const ERR: u8 = 0xFF;
pub const LOCAL_INFILE: u8 = 0xFB;

// Parameter types of COM_STMT_EXECUTE.
pub const TYPE_NULL: u8 = 0x06;
pub const TYPE_LONGLONG: u8 = 0x08;
pub const TYPE_VAR_STRING: u8 = 0xFD;

/// The authentication plugins this client speaks: MariaDB's (and older MySQL's) default, and Oracle
/// MySQL's since 8.0 (its only password plugin since 9.0).
pub const NATIVE_PASSWORD: &str = "mysql_native_password";
pub const CACHING_SHA2_PASSWORD: &str = "caching_sha2_password";

// caching_sha2_password's exchange after the scramble: the server's AuthMoreData packet (its first
// byte), and what it holds or the client asks for.
pub const AUTH_MORE_DATA: u8 = 0x01;
/// The client asks for the server's RSA public key.
pub const REQUEST_PUBLIC_KEY: u8 = 0x02;
/// The scramble matched the server's cache; an OK follows.
pub const FAST_AUTH_SUCCESS: u8 = 0x03;
/// Not in the cache: the server needs the password itself.
pub const PERFORM_FULL_AUTHENTICATION: u8 = 0x04;

/// Errors after which the server closes the connection: ER_SERVER_SHUTDOWN, ER_CONNECTION_KILLED
/// (KILL), ER_CLIENT_INTERACTION_TIMEOUT (MySQL's wait_timeout notice).
pub const FATAL_ERRORS: [u16; 3] = [1053, 1927, 4031];

pub fn invalid(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

fn truncated() -> io::Error {
    invalid("a truncated packet from the server")
}

// ---- Encoding ----

/// Starts a packet at the end of `out`: room for its header, filled in by `end_packet`.
#[inline]
pub fn begin_packet(out: &mut Vec<u8>) -> usize {
    let start = out.len();
    out.extend_from_slice(&[0; HEADER_LEN]);
    start
}

/// Fills in the header of the packet begun at `start` with sequence id `seq`; splits a payload
/// too long for one packet. Returns the sequence id of the packet after it.
#[inline]
pub fn end_packet(out: &mut Vec<u8>, start: usize, seq: u8) -> u8 {
    let len = out.len() - start - HEADER_LEN;
    if len >= MAX_PAYLOAD {
        return split_packet(out, start, seq);
    }
    out[start..start + 3].copy_from_slice(&(len as u32).to_le_bytes()[..3]);
    out[start + 3] = seq;
    seq.wrapping_add(1)
}

/// Rewrites one long payload as full packets, then a shorter one (empty when the payload is an
/// exact multiple of the maximum: that is how the server knows it ended).
#[cold]
fn split_packet(out: &mut Vec<u8>, start: usize, mut seq: u8) -> u8 {
    let payload = out.split_off(start + HEADER_LEN);
    out.truncate(start);
    let mut rest = &payload[..];
    loop {
        let n = rest.len().min(MAX_PAYLOAD);
        out.extend_from_slice(&(n as u32).to_le_bytes()[..3]);
        out.push(seq);
        out.extend_from_slice(&rest[..n]);
        seq = seq.wrapping_add(1);
        rest = &rest[n..];
        if n < MAX_PAYLOAD {
            return seq;
        }
    }
}

/// Appends a length-encoded integer.
#[inline]
pub fn put_lenenc_int(out: &mut Vec<u8>, v: u64) {
    if v < 0xFB {
        out.push(v as u8);
    } else if v <= 0xFFFF {
        out.push(0xFC);
        out.extend_from_slice(&(v as u16).to_le_bytes());
    } else if v <= 0xFF_FFFF {
        out.push(0xFD);
        out.extend_from_slice(&(v as u32).to_le_bytes()[..3]);
    } else {
        out.push(0xFE);
        out.extend_from_slice(&v.to_le_bytes());
    }
}

/// Appends a length-encoded string.
#[inline]
pub fn put_lenenc_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_lenenc_int(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// A one-packet command: COM_QUERY with the SQL, COM_STMT_PREPARE, ... (sequence id 0).
pub fn command(code: u8, arg: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let start = begin_packet(out);
    out.push(code);
    out.extend_from_slice(arg);
    end_packet(out, start, 0);
}

/// The server's handle of a prepared statement.
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared {
    pub id: u32,
    pub params: usize,
    /// The parameter types the server holds for it (2 bytes each), empty until the first
    /// execution: types go only with an execution whose types differ (as libmysqlclient sends them).
    pub types: Vec<u8>,
}

impl Prepared {
    pub fn new(id: u32, params: usize) -> Prepared {
        Prepared { id, params, types: Vec::new() }
    }
}

/// Writes COM_STMT_EXECUTE of `stmt` with `params` into `out` (cleared first): ints as
/// LONGLONG, text as VAR_STRING, NULL in the NULL bitmap (typed NULL, no value), no cursor.
#[inline]
pub fn execute<'a, P: Param + 'a>(
    stmt: &mut Prepared,
    params: impl IntoIterator<Item = &'a P>,
    out: &mut Vec<u8>,
) -> io::Result<()> {
    out.clear();
    let start = begin_packet(out);
    out.push(COM_STMT_EXECUTE);
    out.extend_from_slice(&stmt.id.to_le_bytes());
    // Flags (no cursor), then the iteration count, always 1.
    out.extend_from_slice(&[0, 1, 0, 0, 0]);
    let n = stmt.params;
    let mut given = 0;
    if n > 0 {
        // The NULL bitmap, a bit set for each NULL below.
        let nulls_at = out.len();
        out.resize(nulls_at + n.div_ceil(8), 0);
        let bound_at = out.len();
        out.push(1);
        // The types come before the values: their room is kept, then filled in one pass.
        let types_at = out.len();
        out.resize(types_at + 2 * n, 0);
        for p in params {
            if given == n {
                given += 1;
                break;
            }
            // The second byte of a type, 0, says signed.
            out[types_at + 2 * given] = match p.value() {
                ParamValue::Int(v) => {
                    out.extend_from_slice(&v.to_le_bytes());
                    TYPE_LONGLONG
                }
                ParamValue::Text(t) => {
                    put_lenenc_bytes(out, t);
                    TYPE_VAR_STRING
                }
                ParamValue::Null => {
                    out[nulls_at + given / 8] |= 1 << (given % 8);
                    TYPE_NULL
                }
            };
            given += 1;
        }
        if given == n {
            let types = types_at..types_at + 2 * n;
            if stmt.types[..] == out[types.clone()] {
                // The server still has these types: leave them out.
                out[bound_at] = 0;
                out.drain(types);
            } else {
                stmt.types.clear();
                stmt.types.extend_from_slice(&out[types]);
            }
        }
    } else {
        given = params.into_iter().count();
    }
    if given != n {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "the statement takes {n} parameters, and {}{given} were given",
                if given > n { "more than " } else { "" }
            ),
        ));
    }
    end_packet(out, start, 0);
    Ok(())
}

/// mysql_native_password's answer to the server's 20-byte scramble:
/// SHA1(password) XOR SHA1(scramble + SHA1(SHA1(password))); empty for an empty password.
pub fn native_password(password: &[u8], scramble: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    use sha1::{Digest, Sha1};
    let stage1 = Sha1::digest(password);
    let stage2 = Sha1::digest(stage1);
    let mix = Sha1::new().chain_update(scramble).chain_update(stage2).finalize();
    stage1.iter().zip(mix).map(|(a, b)| a ^ b).collect()
}

/// The capabilities this client asks for, where the server offers them.
pub const CLIENT_WANTS: u32 = CLIENT_PROTOCOL_41
    | CLIENT_SECURE_CONNECTION
    | CLIENT_PLUGIN_AUTH
    | CLIENT_TRANSACTIONS
    | CLIENT_MULTI_RESULTS
    | CLIENT_PS_MULTI_RESULTS
    | CLIENT_DEPRECATE_EOF
    | CLIENT_LOCAL_FILES
    // An UPDATE's count is the rows it matched, as in Postgres's command tag, not only those it changed.
    | CLIENT_FOUND_ROWS;

/// utf8mb4_general_ci: the client sends and reads UTF-8.
pub const CHARSET_UTF8MB4: u8 = 45;

/// The HandshakeResponse41 (sequence id 1) into `out` (cleared first); `ext_caps` are MariaDB's
/// extended capabilities (0 for a MySQL server).
pub fn handshake_response(
    caps: u32,
    ext_caps: u32,
    user: &str,
    auth: &[u8],
    dbname: &str,
    plugin: &str,
    out: &mut Vec<u8>,
) {
    out.clear();
    let start = begin_packet(out);
    out.extend_from_slice(&caps.to_le_bytes());
    out.extend_from_slice(&(MAX_PAYLOAD as u32 + 1).to_le_bytes());
    out.push(CHARSET_UTF8MB4);
    // Filler, then (MariaDB) the extended capabilities.
    out.extend_from_slice(&[0; 19]);
    out.extend_from_slice(&ext_caps.to_le_bytes());
    out.extend_from_slice(user.as_bytes());
    out.push(0);
    out.push(auth.len() as u8);
    out.extend_from_slice(auth);
    if caps & CLIENT_CONNECT_WITH_DB != 0 {
        out.extend_from_slice(dbname.as_bytes());
        out.push(0);
    }
    if caps & CLIENT_PLUGIN_AUTH != 0 {
        out.extend_from_slice(plugin.as_bytes());
        out.push(0);
    }
    end_packet(out, start, 1);
}

// ---- Decoding ----

/// Reads fields from the front of a payload.
pub struct Cursor<'a> {
    b: &'a [u8],
}

impl<'a> Cursor<'a> {
    pub fn new(b: &'a [u8]) -> Cursor<'a> {
        Cursor { b }
    }

    pub fn rest(&self) -> &'a [u8] {
        self.b
    }

    pub fn bytes(&mut self, n: usize) -> io::Result<&'a [u8]> {
        if self.b.len() < n {
            return Err(truncated());
        }
        let (head, tail) = self.b.split_at(n);
        self.b = tail;
        Ok(head)
    }

    pub fn u8(&mut self) -> io::Result<u8> {
        Ok(self.bytes(1)?[0])
    }

    pub fn u16(&mut self) -> io::Result<u16> {
        Ok(u16::from_le_bytes(self.bytes(2)?.try_into().expect("2 bytes")))
    }

    pub fn u32(&mut self) -> io::Result<u32> {
        Ok(u32::from_le_bytes(self.bytes(4)?.try_into().expect("4 bytes")))
    }

    /// A length-encoded integer; None for 0xFB, which stands for NULL in a text row.
    pub fn lenenc(&mut self) -> io::Result<Option<u64>> {
        let first = self.u8()?;
        let mut le = [0u8; 8];
        let n = match first {
            0..=0xFA => return Ok(Some(first as u64)),
            0xFB => return Ok(None),
            0xFC => 2,
            0xFD => 3,
            0xFE => 8,
            0xFF => return Err(invalid("0xFF is no length-encoded integer")),
        };
        le[..n].copy_from_slice(self.bytes(n)?);
        Ok(Some(u64::from_le_bytes(le)))
    }

    /// A length-encoded integer that may not be NULL.
    pub fn lenenc_int(&mut self) -> io::Result<u64> {
        self.lenenc()?.ok_or_else(|| invalid("NULL where a number belongs"))
    }

    /// Bytes up to a NUL (consumed), or to the end where there is none.
    pub fn nul_str(&mut self) -> &'a [u8] {
        let n = self.b.iter().position(|&c| c == 0).unwrap_or(self.b.len());
        let s = &self.b[..n];
        self.b = &self.b[(n + 1).min(self.b.len())..];
        s
    }
}

/// An ERR packet's error: code MYSQL_<errno>, message "(<sqlstate>) <text>".
pub fn parse_err(p: &[u8]) -> io::Result<ServerError> {
    let mut c = Cursor::new(p);
    if c.u8()? != ERR {
        return Err(invalid("not an ERR packet"));
    }
    let errno = c.u16()?;
    // The SQL state is absent from errors sent before the client said it speaks protocol 4.1.
    let state = if c.rest().first() == Some(&b'#') && c.rest().len() >= 6 {
        String::from_utf8_lossy(&c.bytes(6)?[1..]).into_owned()
    } else {
        "HY000".to_string()
    };
    let text = String::from_utf8_lossy(c.rest());
    Ok(ServerError {
        code: format!("MYSQL_{errno}"),
        message: format!("({state}) {}", text.trim_end()),
        fatal: FATAL_ERRORS.contains(&errno),
    })
}

/// An OK packet (first byte 0x00, or 0xFE where it ends a result set): affected rows and status.
#[inline]
pub fn parse_ok(p: &[u8]) -> io::Result<(u64, u16)> {
    let mut c = Cursor::new(p);
    c.u8()?;
    let affected = c.lenenc_int()?;
    let _last_insert_id = c.lenenc_int()?;
    Ok((affected, c.u16()?))
}

/// How the server frames result sets on this connection (what the handshake agreed on).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Mode {
    /// Result sets end with an OK headed 0xFE, and no EOF follows column definitions
    /// (CLIENT_DEPRECATE_EOF).
    pub deprecate_eof: bool,
    /// A column count is followed by a byte that says whether column definitions follow
    /// (MARIADB_CLIENT_CACHE_METADATA).
    pub cache_metadata: bool,
}

/// A result set's first packet: the column count and whether the column definitions follow.
#[inline]
pub fn parse_column_count(p: &[u8], mode: Mode) -> io::Result<(u64, bool)> {
    let mut c = Cursor::new(p);
    let columns = c.lenenc_int()?;
    let follows = !mode.cache_metadata || c.u8()? != 0;
    Ok((columns, follows))
}

/// Whether a packet of `len` bytes starting with `first` ends a result set: an EOF packet (under 9
/// bytes), or with CLIENT_DEPRECATE_EOF an OK packet headed 0xFE (a row that starts with 0xFE is
/// at least 16 MiB long: it fills its packet).
#[inline]
pub fn ends_rows(first: u8, len: usize, deprecate_eof: bool) -> bool {
    first == EOF && if deprecate_eof { len < MAX_PAYLOAD } else { len < 9 }
}

/// The server status in the packet that ends a result set.
#[inline]
pub fn parse_end(p: &[u8], deprecate_eof: bool) -> io::Result<u16> {
    if deprecate_eof {
        return Ok(parse_ok(p)?.1);
    }
    // EOF: 0xFE, warnings, status.
    let mut c = Cursor::new(p);
    c.bytes(3)?;
    c.u16()
}

/// The fields of the server's first packet (Handshake v10) this client uses.
#[derive(Debug, PartialEq)]
pub struct Handshake {
    pub version: String,
    pub connection_id: u32,
    pub capabilities: u32,
    /// MariaDB's extended capabilities (0 from a MySQL server).
    pub ext_capabilities: u32,
    /// The 20 bytes (the nonce) the password plugins mix the password with.
    pub scramble: Vec<u8>,
    /// The server's default authentication plugin (empty where it names none).
    pub plugin: String,
}

pub fn parse_handshake(p: &[u8]) -> io::Result<Handshake> {
    let mut c = Cursor::new(p);
    let protocol = c.u8()?;
    if protocol != 10 {
        return Err(invalid(format!("handshake protocol {protocol}; this client speaks 10")));
    }
    let version = String::from_utf8_lossy(c.nul_str()).into_owned();
    let connection_id = c.u32()?;
    let mut scramble = c.bytes(8)?.to_vec();
    c.u8()?;
    let mut capabilities = c.u16()? as u32;
    let mut plugin_data_len = 0;
    let mut ext_capabilities = 0;
    if !c.rest().is_empty() {
        let _charset = c.u8()?;
        let _status = c.u16()?;
        capabilities |= (c.u16()? as u32) << 16;
        plugin_data_len = c.u8()? as usize;
        // Reserved; MariaDB keeps its extended capabilities in the last 4 bytes.
        c.bytes(6)?;
        let ext = c.u32()?;
        if capabilities & CLIENT_MYSQL == 0 {
            ext_capabilities = ext;
        }
    }
    if capabilities & CLIENT_SECURE_CONNECTION != 0 {
        // The rest of the scramble, NUL-terminated: 13 bytes at least.
        let n = plugin_data_len.saturating_sub(8).max(13).min(c.rest().len());
        let part2 = c.bytes(n)?;
        let part2 = part2.strip_suffix(&[0]).unwrap_or(part2);
        scramble.extend_from_slice(part2);
    }
    let plugin = if capabilities & CLIENT_PLUGIN_AUTH != 0 {
        String::from_utf8_lossy(c.nul_str()).into_owned()
    } else {
        String::new()
    };
    Ok(Handshake { version, connection_id, capabilities, ext_capabilities, scramble, plugin })
}

/// The parameters of a COM_STMT_PREPARE's OK: (statement id, columns, parameters).
pub fn parse_prepare_ok(p: &[u8]) -> io::Result<(u32, u16, u16)> {
    let mut c = Cursor::new(p);
    if c.u8()? != OK {
        return Err(invalid("not a prepare OK"));
    }
    let id = c.u32()?;
    let columns = c.u16()?;
    let params = c.u16()?;
    Ok((id, columns, params))
}

/// A text row of `columns` values, NULL as None.
#[cfg(test)]
pub fn parse_text_row(p: &[u8], columns: usize) -> io::Result<Vec<Option<String>>> {
    let mut values = Vec::with_capacity(columns);
    text_row_values(p, columns, &mut values)?;
    Ok(values.into_iter().map(|v| v.map(|b| String::from_utf8_lossy(b).into_owned())).collect())
}

/// A text row's `columns` values, NULL as None, into `out` (cleared first).
pub fn text_row_values<'p>(p: &'p [u8], columns: usize, out: &mut Vec<Option<&'p [u8]>>) -> io::Result<()> {
    let mut c = Cursor::new(p);
    out.clear();
    for _ in 0..columns {
        out.push(match c.lenenc()? {
            None => None,
            Some(n) => Some(c.bytes(n as usize)?),
        });
    }
    Ok(())
}

/// What the server answered to one command.
#[derive(Debug, Default)]
pub struct Reply {
    /// Rows of the result sets.
    pub rows: u64,
    /// The last result's affected rows (for a result set, its rows).
    pub affected: u64,
    /// The ERR that ended the reply; nothing follows it.
    pub error: Option<ServerError>,
    /// The server status of the last OK or EOF; None when none came (an ERR).
    pub status: Option<u16>,
}

impl Reply {
    pub fn clear(&mut self) {
        self.rows = 0;
        self.affected = 0;
        self.error = None;
        self.status = None;
    }
}

/// Buffered reading of the server's packets.
pub struct Reader {
    inbuf: ReadBuf,
}

impl Reader {
    pub fn new(capacity: usize) -> Reader {
        Reader { inbuf: ReadBuf::new(capacity.max(HEADER_LEN + 1)) }
    }

    /// The next packet's payload length and sequence id, reading until its header is in; the
    /// header stays buffered.
    #[inline]
    fn header_raw<R: Read>(&mut self, src: &mut R) -> io::Result<(usize, u8)> {
        self.inbuf.fill(src, HEADER_LEN)?;
        let h = self.inbuf.peek(HEADER_LEN);
        Ok((h[0] as usize | (h[1] as usize) << 8 | (h[2] as usize) << 16, h[3]))
    }

    /// The next packet's payload length, its sequence id checked against `seq` (then advanced).
    #[inline]
    pub fn header<R: Read>(&mut self, src: &mut R, seq: &mut u8) -> io::Result<usize> {
        let (len, s) = self.header_raw(src)?;
        if s != *seq {
            return Err(invalid(format!("packet {s} from the server where {seq} was due")));
        }
        *seq = seq.wrapping_add(1);
        Ok(len)
    }

    /// The first payload byte of the packet whose header was just read.
    #[inline]
    fn first<R: Read>(&mut self, src: &mut R, len: usize) -> io::Result<u8> {
        if len == 0 {
            return Err(invalid("an empty packet from the server"));
        }
        self.inbuf.fill(src, HEADER_LEN + 1)?;
        Ok(self.inbuf.peek(HEADER_LEN + 1)[HEADER_LEN])
    }

    /// Consumes the packet whose header was just read, buffered whole; returns where its payload
    /// is (valid until the next read). For packets that are never split (OK, ERR, EOF, counts).
    #[inline]
    fn take<R: Read>(&mut self, src: &mut R, len: usize) -> io::Result<Range<usize>> {
        if len >= MAX_PAYLOAD {
            return Err(invalid("a split packet from the server where a short one belongs"));
        }
        self.inbuf.fill(src, HEADER_LEN + len)?;
        let whole = self.inbuf.take(HEADER_LEN + len);
        Ok(whole.start + HEADER_LEN..whole.end)
    }

    /// Consumes `total` bytes without keeping them, reading past them as needed.
    #[inline]
    fn skip<R: Read>(&mut self, src: &mut R, total: usize) -> io::Result<()> {
        self.inbuf.skip(src, total)
    }

    /// Consumes the packet whose header was just read and, when its payload is full, the packets
    /// that continue it.
    #[inline]
    fn skip_whole<R: Read>(&mut self, src: &mut R, mut len: usize, seq: &mut u8) -> io::Result<()> {
        loop {
            self.skip(src, HEADER_LEN + len)?;
            if len < MAX_PAYLOAD {
                return Ok(());
            }
            len = self.header(src, seq)?;
        }
    }

    /// Skips `n` packets (column definitions), then an EOF when `eof`.
    #[inline]
    fn skip_definitions<R: Read>(&mut self, src: &mut R, n: u64, eof: bool, seq: &mut u8) -> io::Result<()> {
        for _ in 0..n {
            let len = self.header(src, seq)?;
            self.skip_whole(src, len, seq)?;
        }
        if eof {
            let len = self.header(src, seq)?;
            if self.first(src, len)? != EOF {
                return Err(invalid("no EOF after the column definitions"));
            }
            self.take(src, len)?;
        }
        Ok(())
    }

    /// The next whole payload, its continuations joined (allocates: for the handshake, prepares
    /// and other cold paths).
    pub fn packet<R: Read>(&mut self, src: &mut R, seq: &mut u8) -> io::Result<Vec<u8>> {
        let mut payload = Vec::new();
        loop {
            let len = self.header(src, seq)?;
            self.inbuf.fill(src, HEADER_LEN + len)?;
            let whole = self.inbuf.take(HEADER_LEN + len);
            payload.extend_from_slice(&self.inbuf[whole.start + HEADER_LEN..whole.end]);
            if len < MAX_PAYLOAD {
                return Ok(payload);
            }
        }
    }

    /// Reads the reply to a command (sent with sequence id 0) into `out`, which the caller has
    /// cleared: OKs, result sets (rows counted, not decoded) and at most one ERR, which ends it.
    /// A reply that starts with an ERR of sequence id 0 is the server's notice before it closes
    /// the connection, taken as the reply.
    pub fn reply<R: Read>(&mut self, src: &mut R, mode: Mode, out: &mut Reply) -> io::Result<()> {
        let (len, s) = self.header_raw(src)?;
        let mut first = self.first(src, len)?;
        if s != 1 && !(s == 0 && first == ERR) {
            return Err(invalid(format!("packet {s} from the server where 1 was due")));
        }
        let mut seq = s.wrapping_add(1);
        let mut len = len;
        loop {
            let status = match first {
                OK => {
                    let p = self.take(src, len)?;
                    let (affected, status) = parse_ok(&self.inbuf[p])?;
                    out.affected = affected;
                    status
                }
                ERR => {
                    let p = self.take(src, len)?;
                    out.error = Some(parse_err(&self.inbuf[p])?);
                    return Ok(());
                }
                LOCAL_INFILE => return Err(invalid("the server asks for a local file")),
                _ => {
                    let p = self.take(src, len)?;
                    let (columns, follows) = parse_column_count(&self.inbuf[p], mode)?;
                    // The EOF after the definitions comes even when they do not.
                    self.skip_definitions(src, if follows { columns } else { 0 }, !mode.deprecate_eof, &mut seq)?;
                    let mut rows = 0;
                    let status = loop {
                        let len = self.header(src, &mut seq)?;
                        let first = self.first(src, len)?;
                        if ends_rows(first, len, mode.deprecate_eof) {
                            let p = self.take(src, len)?;
                            break parse_end(&self.inbuf[p], mode.deprecate_eof)?;
                        }
                        if first == ERR {
                            let p = self.take(src, len)?;
                            out.error = Some(parse_err(&self.inbuf[p])?);
                            out.rows += rows;
                            return Ok(());
                        }
                        rows += 1;
                        self.skip_whole(src, len, &mut seq)?;
                    };
                    out.rows += rows;
                    out.affected = rows;
                    status
                }
            };
            out.status = Some(status);
            if status & SERVER_MORE_RESULTS_EXISTS == 0 {
                return Ok(());
            }
            len = self.header(src, &mut seq)?;
            first = self.first(src, len)?;
        }
    }

    /// Reads the reply to COM_STMT_PREPARE: the statement, its parameter and column definitions
    /// skipped; or the server's error.
    pub fn prepare_reply<R: Read>(&mut self, src: &mut R, mode: Mode) -> io::Result<Result<Prepared, ServerError>> {
        let mut seq = 1;
        let len = self.header(src, &mut seq)?;
        let first = self.first(src, len)?;
        let p = self.take(src, len)?;
        if first == ERR {
            return Ok(Err(parse_err(&self.inbuf[p])?));
        }
        let (id, columns, params) = parse_prepare_ok(&self.inbuf[p])?;
        let eof = |n: u16| n > 0 && !mode.deprecate_eof;
        self.skip_definitions(src, params as u64, eof(params), &mut seq)?;
        self.skip_definitions(src, columns as u64, eof(columns), &mut seq)?;
        Ok(Ok(Prepared::new(id, params as usize)))
    }

    /// Reads the reply to a COM_QUERY as text rows (allocates: for checks, not the load). The
    /// status is that of the reply's last OK or EOF.
    pub fn text_rows<R: Read>(
        &mut self,
        src: &mut R,
        mode: Mode,
        status: &mut u16,
    ) -> io::Result<Result<Vec<Vec<Option<String>>>, ServerError>> {
        let mut rows = Vec::new();
        let r = self.text_rows_each(src, mode, status, &mut |r| {
            rows.push(r.iter().map(|v| v.map(|b| String::from_utf8_lossy(b).into_owned())).collect())
        })?;
        Ok(r.map(|_| rows))
    }

    /// Reads the reply to a COM_QUERY, handing each text row's values (NULL as None) to `row`;
    /// returns how many rows there were, or the server's error. The status is that of the reply's
    /// last OK or EOF.
    pub fn text_rows_each<R: Read>(
        &mut self,
        src: &mut R,
        mode: Mode,
        status: &mut u16,
        row: &mut OnRow<'_>,
    ) -> io::Result<Result<u64, ServerError>> {
        let mut seq = 1;
        let mut rows = 0u64;
        loop {
            let p = self.packet(src, &mut seq)?;
            let st = match p.first() {
                Some(&OK) => parse_ok(&p)?.1,
                Some(&ERR) => return Ok(Err(parse_err(&p)?)),
                Some(&LOCAL_INFILE) => return Err(invalid("the server asks for a local file")),
                None => return Err(invalid("an empty packet from the server")),
                Some(_) => {
                    let (columns, follows) = parse_column_count(&p, mode)?;
                    self.skip_definitions(src, if follows { columns } else { 0 }, !mode.deprecate_eof, &mut seq)?;
                    let columns = columns as usize;
                    loop {
                        let p = self.packet(src, &mut seq)?;
                        match p.first() {
                            Some(&f) if ends_rows(f, p.len(), mode.deprecate_eof) => {
                                break parse_end(&p, mode.deprecate_eof)?
                            }
                            Some(&ERR) => return Ok(Err(parse_err(&p)?)),
                            _ => {
                                let mut values = Vec::with_capacity(columns);
                                text_row_values(&p, columns, &mut values)?;
                                row(&values);
                                rows += 1;
                            }
                        }
                    }
                }
            };
            *status = st;
            if st & SERVER_MORE_RESULTS_EXISTS == 0 {
                return Ok(Ok(rows));
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::driver::readbuf::tests::Chunks;

    pub fn packet(seq: u8, payload: &[u8]) -> Vec<u8> {
        let mut p = (payload.len() as u32).to_le_bytes()[..3].to_vec();
        p.push(seq);
        p.extend_from_slice(payload);
        p
    }

    /// A reply's packets from payloads, sequence ids from 1.
    pub fn reply_of(payloads: &[Vec<u8>]) -> Vec<u8> {
        payloads.iter().enumerate().flat_map(|(i, p)| packet(i as u8 + 1, p)).collect()
    }

    pub fn ok(affected: u64, status: u16) -> Vec<u8> {
        let mut p = vec![OK];
        put_lenenc_int(&mut p, affected);
        put_lenenc_int(&mut p, 0);
        p.extend_from_slice(&status.to_le_bytes());
        p.extend_from_slice(&[0, 0]);
        p
    }

    pub fn err(errno: u16, state: &str, text: &str) -> Vec<u8> {
        let mut p = vec![ERR];
        p.extend_from_slice(&errno.to_le_bytes());
        p.push(b'#');
        p.extend_from_slice(state.as_bytes());
        p.extend_from_slice(text.as_bytes());
        p
    }

    /// The end of a result set: an OK headed 0xFE (deprecate_eof) or an EOF.
    pub fn end(status: u16, deprecate_eof: bool) -> Vec<u8> {
        if deprecate_eof {
            let mut p = ok(0, status);
            p[0] = EOF;
            p
        } else {
            let mut p = vec![EOF, 0, 0];
            p.extend_from_slice(&status.to_le_bytes());
            p
        }
    }

    pub fn column_def(name: &str) -> Vec<u8> {
        let mut p = Vec::new();
        for s in ["def", "db", "t", "t", name, name] {
            put_lenenc_bytes(&mut p, s.as_bytes());
        }
        p.extend_from_slice(&[0x0C, 45, 0, 120, 0, 0, 0, 0xFE, 0, 0, 0, 0, 0]);
        p
    }

    /// A binary row of one text column.
    pub fn binary_row(value: &[u8]) -> Vec<u8> {
        let mut p = vec![0, 0];
        put_lenenc_bytes(&mut p, value);
        p
    }

    /// A text row.
    pub fn text_row(values: &[Option<&str>]) -> Vec<u8> {
        let mut p = Vec::new();
        for v in values {
            match v {
                None => p.push(0xFB),
                Some(s) => put_lenenc_bytes(&mut p, s.as_bytes()),
            }
        }
        p
    }

    /// Every way a server may frame result sets.
    pub const MODES: [Mode; 4] = [
        Mode { deprecate_eof: true, cache_metadata: true },
        Mode { deprecate_eof: true, cache_metadata: false },
        Mode { deprecate_eof: false, cache_metadata: true },
        Mode { deprecate_eof: false, cache_metadata: false },
    ];

    /// MariaDB 10.11's framing with this client.
    pub const MARIADB: Mode = MODES[0];

    /// The payloads of a result set of `rows` of one column each, ended with `status`; with
    /// cached metadata, the column definition is sent when `metadata`.
    pub fn result_set_with(rows: &[Vec<u8>], status: u16, mode: Mode, metadata: bool) -> Vec<Vec<u8>> {
        let mut r = vec![if mode.cache_metadata { vec![1, metadata as u8] } else { vec![1] }];
        if metadata || !mode.cache_metadata {
            r.push(column_def("c"));
        }
        if !mode.deprecate_eof {
            r.push(end(0, false));
        }
        r.extend(rows.iter().cloned());
        r.push(end(status, mode.deprecate_eof));
        r
    }

    /// A result set with its column definitions.
    pub fn result_set(rows: &[Vec<u8>], status: u16, mode: Mode) -> Vec<Vec<u8>> {
        result_set_with(rows, status, mode, true)
    }

    fn read_reply(r: &mut Reader, src: &mut Chunks, mode: Mode) -> Reply {
        let mut out = Reply::default();
        r.reply(src, mode, &mut out).unwrap();
        out
    }

    #[test]
    fn lenenc_integers_round_trip() {
        for (v, len) in
            [(0u64, 1), (250, 1), (251, 3), (0xFFFF, 3), (0x1_0000, 4), (0xFF_FFFF, 4), (0x100_0000, 9), (u64::MAX, 9)]
        {
            let mut b = Vec::new();
            put_lenenc_int(&mut b, v);
            assert_eq!(b.len(), len, "{v}");
            let mut c = Cursor::new(&b);
            assert_eq!(c.lenenc().unwrap(), Some(v));
            assert!(c.rest().is_empty());
        }
        assert_eq!(Cursor::new(&[0xFB]).lenenc().unwrap(), None);
        assert!(Cursor::new(&[0xFF]).lenenc().is_err());
        assert!(Cursor::new(&[0xFC, 1]).lenenc().is_err());
        let mut b = Vec::new();
        put_lenenc_bytes(&mut b, &[7u8; 300]);
        assert_eq!(&b[..3], &[0xFC, 0x2C, 0x01]);
        assert_eq!(b.len(), 303);
        assert_eq!(
            parse_text_row(&text_row(&[Some("a"), None, Some("")]), 3).unwrap(),
            [Some("a".into()), None, Some(String::new())]
        );
        assert!(parse_text_row(&[3, b'a'], 1).is_err());
    }

    #[test]
    fn commands_are_framed() {
        let mut out = Vec::new();
        command(COM_QUERY, b"SELECT 1", &mut out);
        assert_eq!(out, [&[9, 0, 0, 0, COM_QUERY][..], b"SELECT 1"].concat());
        // A payload of exactly the maximum goes as a full packet and an empty one.
        let sql = vec![b'x'; MAX_PAYLOAD - 1];
        command(COM_QUERY, &sql, &mut out);
        assert_eq!(out.len(), MAX_PAYLOAD + 2 * HEADER_LEN);
        assert_eq!(&out[..5], &[0xFF, 0xFF, 0xFF, 0, COM_QUERY]);
        assert_eq!(&out[out.len() - 4..], &[0, 0, 0, 1]);
        // Longer: full packets, then the rest, each with the next sequence id.
        let sql = vec![b'y'; 2 * MAX_PAYLOAD + 9];
        command(COM_QUERY, &sql, &mut out);
        assert_eq!(out.len(), 2 * MAX_PAYLOAD + 10 + 3 * HEADER_LEN);
        let at = 2 * (MAX_PAYLOAD + HEADER_LEN);
        assert_eq!(&out[MAX_PAYLOAD + HEADER_LEN..][..4], &[0xFF, 0xFF, 0xFF, 1]);
        assert_eq!(&out[at..at + 4], &[10, 0, 0, 2]);
        // And the reader joins them again.
        let mut r = Reader::new(64);
        let mut seq = 0;
        let mut src = Chunks::new(out.chunks(1 << 20).map(<[u8]>::to_vec).collect());
        let p = r.packet(&mut src, &mut seq).unwrap();
        assert_eq!((p.len(), p[0], seq), (2 * MAX_PAYLOAD + 10, COM_QUERY, 3));
        assert!(p[1..].iter().all(|&b| b == b'y'));
    }

    struct P<'a>(ParamValue<'a>);
    impl Param for P<'_> {
        fn value(&self) -> ParamValue<'_> {
            self.0
        }
    }

    #[test]
    fn execute_bytes_send_the_types_once() {
        let mut stmt = Prepared::new(7, 2);
        let params = [P(ParamValue::Int(-2)), P(ParamValue::Text(b"ab"))];
        let mut out = Vec::new();
        execute(&mut stmt, &params, &mut out).unwrap();
        let mut want = vec![COM_STMT_EXECUTE, 7, 0, 0, 0, 0, 1, 0, 0, 0];
        // NULL bitmap, types bound, LONGLONG, VAR_STRING, then the values.
        want.extend_from_slice(&[0, 1, TYPE_LONGLONG, 0, TYPE_VAR_STRING, 0]);
        want.extend_from_slice(&(-2i64).to_le_bytes());
        want.extend_from_slice(&[2, b'a', b'b']);
        assert_eq!(out, packet(0, &want));
        // The same types again: not sent.
        execute(&mut stmt, &params, &mut out).unwrap();
        let mut want = vec![COM_STMT_EXECUTE, 7, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0];
        want.extend_from_slice(&(-2i64).to_le_bytes());
        want.extend_from_slice(&[2, b'a', b'b']);
        assert_eq!(out, packet(0, &want));
        // Other types: sent again.
        let swapped = [P(ParamValue::Text(b"x")), P(ParamValue::Int(1))];
        execute(&mut stmt, &swapped, &mut out).unwrap();
        assert_eq!(&out[14..20], &[0, 1, TYPE_VAR_STRING, 0, TYPE_LONGLONG, 0]);
        // Nine parameters take two bytes of NULL bitmap.
        let mut nine = Prepared::new(1, 9);
        let ints: Vec<i64> = (0..9).collect();
        execute(&mut nine, &ints, &mut out).unwrap();
        assert_eq!(out.len(), HEADER_LEN + 10 + 2 + 1 + 18 + 72);
        // The wrong number of parameters is refused.
        assert!(execute(&mut nine, &ints[..8], &mut out).is_err());
        assert!(execute(&mut stmt, &ints[..3], &mut out).is_err());
        let mut none = Prepared::new(2, 0);
        execute(&mut none, &[] as &[i64], &mut out).unwrap();
        assert_eq!(out, packet(0, &[COM_STMT_EXECUTE, 2, 0, 0, 0, 0, 1, 0, 0, 0]));
        assert!(execute(&mut none, &[1i64], &mut out).is_err());
    }

    #[test]
    fn a_null_parameter_is_in_the_bitmap_and_has_no_value() {
        let mut stmt = Prepared::new(7, 3);
        let params = [P(ParamValue::Int(5)), P(ParamValue::Null), P(ParamValue::Text(b"x"))];
        let mut out = Vec::new();
        execute(&mut stmt, &params, &mut out).unwrap();
        let mut want = vec![COM_STMT_EXECUTE, 7, 0, 0, 0, 0, 1, 0, 0, 0];
        // The second parameter's bit, types bound (LONGLONG, NULL, VAR_STRING), then two values.
        want.extend_from_slice(&[0b010, 1, TYPE_LONGLONG, 0, TYPE_NULL, 0, TYPE_VAR_STRING, 0]);
        want.extend_from_slice(&5i64.to_le_bytes());
        want.extend_from_slice(&[1, b'x']);
        assert_eq!(out, packet(0, &want));
        // Nine parameters, the ninth NULL: the second byte of the bitmap.
        let mut nine = Prepared::new(1, 9);
        let mut ps: Vec<P> = (0..8).map(|i| P(ParamValue::Int(i))).collect();
        ps.push(P(ParamValue::Null));
        execute(&mut nine, &ps, &mut out).unwrap();
        assert_eq!(&out[HEADER_LEN + 10..HEADER_LEN + 12], &[0, 1]);
    }

    #[test]
    fn the_native_password_scramble() {
        // SHA1("secret") XOR SHA1(scramble + SHA1(SHA1("secret"))), computed apart with Python's hashlib.
        let scramble: Vec<u8> = (1..=20).collect();
        let want = [
            0xb3, 0x2b, 0xb3, 0xa5, 0x83, 0xe1, 0x34, 0x0c, 0x0a, 0x11, 0x08, 0xd5, 0x8b, 0x1b, 0xe4, 0x97, 0x81, 0xad,
            0x8c, 0x2f,
        ];
        assert_eq!(native_password(b"secret", &scramble), want);
        assert!(native_password(b"", &scramble).is_empty());
    }

    /// MariaDB 10.11's greeting: version, id 42, scramble "abcdefgh" + "ijklmnopqrst", no CLIENT_MYSQL bit.
    pub fn greeting(plugin: &str) -> Vec<u8> {
        greeting_of("5.5.5-10.11.6-MariaDB", plugin)
    }

    /// Oracle MySQL 9.1's greeting: as `greeting`, with the CLIENT_MYSQL bit and no extended capabilities.
    pub fn mysql_greeting(plugin: &str) -> Vec<u8> {
        greeting_of("9.1.0", plugin)
    }

    /// A greeting with this version: a MariaDB server's when it says MariaDB, else Oracle MySQL's.
    fn greeting_of(version: &str, plugin: &str) -> Vec<u8> {
        let mariadb = version.contains("MariaDB");
        let mut p = vec![10];
        p.extend_from_slice(version.as_bytes());
        p.push(0);
        p.extend_from_slice(&42u32.to_le_bytes());
        p.extend_from_slice(b"abcdefgh\0");
        let caps: u32 = 0xF7FE
            | CLIENT_PLUGIN_AUTH
            | CLIENT_MULTI_RESULTS
            | CLIENT_PS_MULTI_RESULTS
            | CLIENT_DEPRECATE_EOF
            | if mariadb { 0 } else { CLIENT_MYSQL };
        p.extend_from_slice(&(caps as u16).to_le_bytes());
        p.push(45);
        p.extend_from_slice(&2u16.to_le_bytes());
        p.extend_from_slice(&((caps >> 16) as u16).to_le_bytes());
        p.push(21);
        p.extend_from_slice(&[0; 6]);
        p.extend_from_slice(&[if mariadb { 0x1D } else { 0 }, 0, 0, 0]);
        p.extend_from_slice(b"ijklmnopqrst\0");
        p.extend_from_slice(plugin.as_bytes());
        p.push(0);
        p
    }

    #[test]
    fn the_greeting_parses() {
        let h = parse_handshake(&greeting(NATIVE_PASSWORD)).unwrap();
        assert_eq!(h.version, "5.5.5-10.11.6-MariaDB");
        assert_eq!(h.connection_id, 42);
        assert_eq!(h.scramble, b"abcdefghijklmnopqrst");
        assert_eq!(h.plugin, NATIVE_PASSWORD);
        assert!(h.capabilities & CLIENT_DEPRECATE_EOF != 0 && h.capabilities & CLIENT_PROTOCOL_41 != 0);
        assert_eq!(h.ext_capabilities, 0x1D);
        // A MySQL server's reserved bytes are no capabilities.
        let mut mysql = greeting("caching_sha2_password");
        mysql[36] |= CLIENT_MYSQL as u8;
        assert_eq!(parse_handshake(&mysql).unwrap().ext_capabilities, 0);
        let h = parse_handshake(&mysql_greeting(CACHING_SHA2_PASSWORD)).unwrap();
        assert_eq!((h.version.as_str(), h.ext_capabilities, h.plugin.as_str()), ("9.1.0", 0, CACHING_SHA2_PASSWORD));
        assert!(h.capabilities & CLIENT_MYSQL != 0);
        assert_eq!(h.scramble, b"abcdefghijklmnopqrst");
        assert!(parse_handshake(&[9, 0]).is_err());
        assert!(parse_handshake(&greeting(NATIVE_PASSWORD)[..20]).is_err());
    }

    #[test]
    fn the_handshake_response() {
        let mut out = Vec::new();
        let caps = CLIENT_WANTS | CLIENT_CONNECT_WITH_DB;
        handshake_response(caps, MARIADB_CLIENT_CACHE_METADATA, "bob", &[9; 20], "db", NATIVE_PASSWORD, &mut out);
        let mut want = caps.to_le_bytes().to_vec();
        want.extend_from_slice(&0x100_0000u32.to_le_bytes());
        want.push(45);
        want.extend_from_slice(&[0; 19]);
        want.extend_from_slice(&[0x10, 0, 0, 0]);
        want.extend_from_slice(b"bob\0");
        want.push(20);
        want.extend_from_slice(&[9; 20]);
        want.extend_from_slice(b"db\0mysql_native_password\0");
        assert_eq!(out, packet(1, &want));
    }

    #[test]
    fn errors_and_oks_parse() {
        let e = parse_err(&err(1213, "40001", "Deadlock found when trying to get lock")).unwrap();
        assert_eq!(
            e,
            ServerError {
                code: "MYSQL_1213".into(),
                message: "(40001) Deadlock found when trying to get lock".into(),
                fatal: false
            }
        );
        assert!(parse_err(&err(1927, "70100", "Connection was killed")).unwrap().fatal);
        // Without an SQL state (an error before the handshake is over).
        let mut early = vec![ERR, 0x10, 0x04];
        early.extend_from_slice(b"Too many connections");
        let e = parse_err(&early).unwrap();
        assert_eq!((e.code.as_str(), e.message.as_str()), ("MYSQL_1040", "(HY000) Too many connections"));
        assert_eq!(parse_ok(&ok(300, 3)).unwrap(), (300, 3));
        assert!(parse_ok(&[OK, 1]).is_err());
        assert_eq!(parse_end(&end(0x22, true), true).unwrap(), 0x22);
        assert_eq!(parse_end(&end(0x22, false), false).unwrap(), 0x22);
        assert!(ends_rows(EOF, 5, false) && !ends_rows(EOF, 9, false));
        assert!(ends_rows(EOF, 100, true) && !ends_rows(EOF, MAX_PAYLOAD, true) && !ends_rows(0, 7, true));
        let mut p = vec![OK];
        p.extend_from_slice(&9u32.to_le_bytes());
        p.extend_from_slice(&[1, 0, 2, 0, 0, 0, 0]);
        assert_eq!(parse_prepare_ok(&p).unwrap(), (9, 1, 2));
    }

    #[test]
    fn a_result_set_counts_rows_in_every_form() {
        let forms = MODES.iter().flat_map(|&m| [(m, true), (m, false)]).filter(|&(m, meta)| meta || m.cache_metadata);
        for (mode, metadata) in forms {
            let rows: Vec<Vec<u8>> = (0..3).map(|i| binary_row(format!("{i:0>120}").as_bytes())).collect();
            let whole = reply_of(&result_set_with(&rows, 2, mode, metadata));
            // In one read, split at every position, and one byte per read.
            let mut splits: Vec<Vec<Vec<u8>>> = vec![vec![whole.clone()]];
            splits.extend((1..whole.len()).map(|i| vec![whole[..i].to_vec(), whole[i..].to_vec()]));
            splits.push(whole.iter().map(|&b| vec![b]).collect());
            for chunks in splits {
                let mut src = Chunks::new(chunks);
                let mut r = Reader::new(READ_BUFFER);
                let out = read_reply(&mut r, &mut src, mode);
                assert_eq!((out.rows, out.affected, out.status), (3, 3, Some(2)), "{mode:?} {metadata}");
                assert!(out.error.is_none() && r.inbuf.buffered() == 0);
            }
        }
    }

    #[test]
    fn several_replies_in_one_read() {
        let mut both = reply_of(&result_set(&[binary_row(b"x")], 2, MARIADB));
        both.extend(reply_of(&[ok(7, 3)]));
        let mut src = Chunks::new(vec![both]);
        let mut r = Reader::new(READ_BUFFER);
        let first = read_reply(&mut r, &mut src, MARIADB);
        assert_eq!((first.rows, first.status), (1, Some(2)));
        let second = read_reply(&mut r, &mut src, MARIADB);
        assert_eq!((second.rows, second.affected, second.status), (0, 7, Some(3)));
        assert_eq!((src.reads, r.inbuf.buffered()), (1, 0));
    }

    #[test]
    fn text_rows_that_start_like_an_end_are_rows() {
        // A first column of NULL (0xFB) and one that starts with 0xFE in a full packet.
        let mut src = Chunks::new(vec![reply_of(&result_set(&[text_row(&[None])], 0, MARIADB))]);
        assert_eq!(read_reply(&mut Reader::new(64), &mut src, MARIADB).rows, 1);
    }

    #[test]
    fn rows_larger_than_the_buffer_stream_past_and_split_rows_count_once() {
        let big = binary_row(&vec![b'x'; 10_000]);
        let mut payloads = result_set(&[big.clone(), binary_row(b"small"), big], 0, MARIADB);
        // A row of more than 16 MiB: a full packet, then the rest.
        let huge = binary_row(&vec![b'z'; MAX_PAYLOAD + 100]);
        let end = payloads.pop().unwrap();
        let mut whole = reply_of(&payloads);
        let mut seq = payloads.len() as u8 + 1;
        whole.extend(packet(seq, &huge[..MAX_PAYLOAD]));
        whole.extend(packet(seq + 1, &huge[MAX_PAYLOAD..]));
        seq += 2;
        whole.extend(packet(seq, &end));
        for chunk in [7, 1000, 1 << 20] {
            let mut src = Chunks::new(whole.chunks(chunk).map(<[u8]>::to_vec).collect());
            let mut r = Reader::new(64);
            let out = read_reply(&mut r, &mut src, MARIADB);
            assert_eq!((out.rows, out.status), (4, Some(0)), "chunks of {chunk}");
            // Skipped rows never made the buffer grow.
            assert_eq!(r.inbuf.capacity(), 64);
        }
    }

    #[test]
    fn an_error_in_the_middle_ends_the_reply() {
        let mut payloads = result_set(&[binary_row(b"a")], 0, MARIADB);
        let last = payloads.len() - 1;
        payloads[last] = err(1317, "70100", "Query execution was interrupted");
        let mut m = reply_of(&payloads);
        m.extend(reply_of(&[ok(0, 0)]));
        let mut src = Chunks::new(vec![m]);
        let mut r = Reader::new(READ_BUFFER);
        let out = read_reply(&mut r, &mut src, MARIADB);
        assert_eq!((out.rows, out.status), (1, None));
        let e = out.error.unwrap();
        assert_eq!((e.code.as_str(), e.fatal), ("MYSQL_1317", false));
        assert!(read_reply(&mut r, &mut src, MARIADB).error.is_none());
    }

    #[test]
    fn more_results_add_up() {
        let mut payloads = vec![ok(2, SERVER_MORE_RESULTS_EXISTS)];
        let mut set = result_set(&[binary_row(b"a"), binary_row(b"b")], SERVER_MORE_RESULTS_EXISTS | 1, MODES[3]);
        payloads.append(&mut set);
        payloads.push(ok(5, 1));
        let mut src = Chunks::new(vec![reply_of(&payloads)]);
        let out = read_reply(&mut Reader::new(READ_BUFFER), &mut src, MODES[3]);
        assert_eq!((out.rows, out.affected, out.status), (2, 5, Some(1)));
    }

    #[test]
    fn an_unsolicited_error_is_the_reply_and_other_disorder_is_not() {
        let mut src = Chunks::new(vec![packet(0, &err(4031, "HY000", "disconnected for inactivity"))]);
        let out = read_reply(&mut Reader::new(READ_BUFFER), &mut src, MARIADB);
        assert!(out.error.unwrap().fatal);
        let mut src = Chunks::new(vec![packet(0, &ok(0, 0))]);
        let e = Reader::new(READ_BUFFER).reply(&mut src, MARIADB, &mut Reply::default()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        let mut bad = reply_of(&result_set(&[binary_row(b"a")], 0, MARIADB));
        // The column definition's sequence id (after the 6 bytes of the column count's packet).
        bad[6 + 3] = 9;
        let e = Reader::new(READ_BUFFER).reply(&mut Chunks::new(vec![bad]), MARIADB, &mut Reply::default());
        assert_eq!(e.unwrap_err().kind(), io::ErrorKind::InvalidData);
    }

    #[test]
    fn eof_and_garbage_are_errors() {
        let whole = reply_of(&result_set(&[binary_row(b"a")], 0, MARIADB));
        let mut src = Chunks::new(vec![whole[..whole.len() - 2].to_vec()]);
        let e = Reader::new(READ_BUFFER).reply(&mut src, MARIADB, &mut Reply::default()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
        let mut src = Chunks::new(vec![packet(1, &[])]);
        assert!(Reader::new(READ_BUFFER).reply(&mut src, MARIADB, &mut Reply::default()).is_err());
        let mut src = Chunks::new(vec![packet(1, &[LOCAL_INFILE, b'f'])]);
        assert!(Reader::new(READ_BUFFER).reply(&mut src, MARIADB, &mut Reply::default()).is_err());
    }

    #[test]
    fn a_prepare_reply_skips_its_definitions() {
        for mode in MODES {
            let mut head = vec![OK];
            head.extend_from_slice(&5u32.to_le_bytes());
            head.extend_from_slice(&[1, 0, 2, 0, 0, 0, 0]);
            let mut payloads = vec![head, column_def("?"), column_def("?")];
            if !mode.deprecate_eof {
                payloads.push(end(0, false));
            }
            payloads.push(column_def("c"));
            if !mode.deprecate_eof {
                payloads.push(end(0, false));
            }
            let mut src = Chunks::new(vec![reply_of(&payloads)]);
            let mut r = Reader::new(READ_BUFFER);
            assert_eq!(r.prepare_reply(&mut src, mode).unwrap().unwrap(), Prepared::new(5, 2));
            assert_eq!(r.inbuf.buffered(), 0);
        }
        let mut src = Chunks::new(vec![reply_of(&[err(1146, "42S02", "Table 'db.t' doesn't exist")])]);
        let e = Reader::new(READ_BUFFER).prepare_reply(&mut src, MARIADB).unwrap().unwrap_err();
        assert_eq!(e.code, "MYSQL_1146");
    }

    #[test]
    fn text_rows_decode() {
        for mode in MODES {
            let count = if mode.cache_metadata { vec![2, 1] } else { vec![2] };
            let mut payloads = vec![count, column_def("a"), column_def("b")];
            if !mode.deprecate_eof {
                payloads.push(end(0, false));
            }
            payloads.push(text_row(&[Some("pi1"), None]));
            payloads.push(text_row(&[Some("pi2"), Some("x")]));
            payloads.push(end(1, mode.deprecate_eof));
            let mut src = Chunks::new(vec![reply_of(&payloads)]);
            let mut status = 0;
            let rows = Reader::new(16).text_rows(&mut src, mode, &mut status).unwrap().unwrap();
            assert_eq!(rows, [vec![Some("pi1".into()), None], vec![Some("pi2".into()), Some("x".into())]]);
            assert_eq!(status, 1);
        }
        let mut status = 0;
        let mut src = Chunks::new(vec![reply_of(&[ok(0, 3)])]);
        assert!(Reader::new(16).text_rows(&mut src, MARIADB, &mut status).unwrap().unwrap().is_empty());
        assert_eq!(status, 3);
    }
}
