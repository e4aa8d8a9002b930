//! One blocking connection: handshake and authentication, then commands that each take one write
//! and (usually) one read.

use super::auth;
use super::wire::{self, Mode, Prepared, Reader, Reply};
use crate::driver::link::Link;
use crate::driver::lost::{Lost, LOST};
use crate::driver::net::Stream;
use crate::driver::{bulk, DbError, Dialect, OnRow, Outcome, Param, ServerError, Session};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::io::BufRead;

/// The file name a bulk load's LOAD DATA LOCAL INFILE names: the rows are streamed, no file is read,
/// and the server's request for any other name is refused.
pub const INFILE_STREAM: &str = "dbsweep-stream";

/// The packets of a LOAD DATA LOCAL stream are sent once they hold this much.
const INFILE_CHUNK: usize = 64 * 1024;

/// The errors of a server that does not take LOAD DATA LOCAL INFILE: ER_NOT_ALLOWED_COMMAND,
/// MySQL's ER_CLIENT_LOCAL_FILES_DISABLED, MariaDB's ER_LOAD_INFILE_CAPABILITY_DISABLED.
const INFILE_REFUSED: [&str; 3] = ["MYSQL_1148", "MYSQL_3948", "MYSQL_4166"];
/// ER_UNKNOWN_SYSTEM_VARIABLE.
const UNKNOWN_VARIABLE: &str = "MYSQL_1193";

/// FNV-1a: the statement names are a few bytes, looked up once per query; SipHash's protection
/// against chosen keys buys nothing here.
pub struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut h = self.0;
        for &b in bytes {
            h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
        self.0 = h;
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

/// The first answer of `plugin` (one of the two spoken here) to the server's 20-byte scramble.
fn scramble_answer(plugin: &str, password: &str, scramble: &[u8]) -> Vec<u8> {
    if plugin == wire::CACHING_SHA2_PASSWORD {
        auth::sha2_scramble(password.as_bytes(), scramble)
    } else {
        wire::native_password(password.as_bytes(), scramble)
    }
}

/// How far authentication got: what the server's next packet answers, and what a refusal names.
#[derive(Debug, Clone, Copy, PartialEq)]
enum AuthStep {
    /// The plugin's answer to the scramble was sent.
    Scramble,
    /// caching_sha2_password: the server's cache took the scramble; its OK is due.
    Cached,
    /// caching_sha2_password, full authentication: the password went in clear over the Unix socket.
    Cleartext,
    /// caching_sha2_password, full authentication over TCP: the server's RSA public key was asked for.
    KeyAsked,
    /// caching_sha2_password, full authentication over TCP: the password went encrypted with that key.
    Encrypted,
}

impl AuthStep {
    /// What the server was asked to take, for a refusal's sentence.
    fn describe(self, plugin: &str) -> String {
        let step = match self {
            AuthStep::Scramble if plugin == wire::NATIVE_PASSWORD => return plugin.to_string(),
            AuthStep::Scramble | AuthStep::Cached => "fast authentication with the scramble",
            AuthStep::Cleartext => "full authentication with the password over the Unix socket",
            AuthStep::KeyAsked => "full authentication, asking for the server's RSA key",
            AuthStep::Encrypted => "full authentication with the server's RSA key",
        };
        format!("{plugin}, {step}")
    }

    /// What the server's next AuthMoreData should hold.
    fn awaits(self) -> &'static str {
        match self {
            AuthStep::Scramble => "fast authentication's success (03) or a request for full authentication (04)",
            AuthStep::KeyAsked => "the server's RSA public key",
            AuthStep::Cached | AuthStep::Cleartext | AuthStep::Encrypted => "an OK or an ERR",
        }
    }
}

pub struct Conn {
    /// The stream, the request being written, and whether the connection is closed or lost.
    link: Link<Vec<u8>>,
    reader: Reader,
    reply: Reply,
    /// The prepared statements by name.
    statements: HashMap<String, Prepared, BuildHasherDefault<Fnv>>,
    /// How result sets are framed.
    mode: Mode,
    /// The server status of the last OK or EOF.
    status: u16,
    /// The server's version as its greeting gave it ("5.5.5-10.11.6-MariaDB", "8.0.36").
    server_version: String,
}

impl Conn {
    /// Starts a session on a connected socket: the server's greeting, the client's answer, then
    /// authentication until the server's OK.
    pub fn start(stream: Stream, user: &str, dbname: &str, password: &str) -> Result<Conn, DbError> {
        Conn::start_recording(stream, user, dbname, password, &LOST)
    }

    /// `start`, recording a later loss of the connection in `lost`.
    fn start_recording(
        stream: Stream,
        user: &str,
        dbname: &str,
        password: &str,
        lost: &'static Lost,
    ) -> Result<Conn, DbError> {
        let mut c = Conn {
            link: Link::starting(stream, Vec::with_capacity(4096))?,
            reader: Reader::new(wire::READ_BUFFER),
            reply: Reply::default(),
            statements: HashMap::default(),
            mode: Mode::default(),
            status: 0,
            server_version: String::new(),
        };
        c.handshake(user, dbname, password)?;
        // Established: from now on, breaking is a lost connection.
        c.link.established(lost)?;
        Ok(c)
    }

    fn handshake(&mut self, user: &str, dbname: &str, password: &str) -> Result<(), DbError> {
        let mut seq = 0;
        let hello = self.reader.packet(&mut self.link.stream, &mut seq).map_err(|e| self.link.broken(e))?;
        if hello.first() == Some(&wire::ERR) {
            // Refused before the greeting: too many connections, a blocked host, ...
            return Err(self.server_error(&hello));
        }
        let h = wire::parse_handshake(&hello).map_err(|e| self.link.broken(e))?;
        self.server_version = h.version.clone();
        let needed = wire::CLIENT_PROTOCOL_41 | wire::CLIENT_SECURE_CONNECTION;
        if h.capabilities & needed != needed {
            return Err(DbError::Client(format!("the server ({}) does not speak protocol 4.1", h.version)));
        }
        let mut caps = wire::CLIENT_WANTS & h.capabilities;
        if !dbname.is_empty() {
            caps |= wire::CLIENT_CONNECT_WITH_DB;
        }
        // Cached metadata, as MariaDB's own connector asks: an execution's reply then holds no
        // column definitions (they were in the prepare's), which spares the server their making.
        let ext_caps = h.ext_capabilities & wire::MARIADB_CLIENT_CACHE_METADATA;
        self.mode = Mode {
            deprecate_eof: caps & wire::CLIENT_DEPRECATE_EOF != 0,
            cache_metadata: ext_caps & wire::MARIADB_CLIENT_CACHE_METADATA != 0,
        };
        // The answer is in the plugin the greeting names where it is one spoken here, else in
        // mysql_native_password: a server whose account needs another plugin asks for it
        // (AuthSwitchRequest), and is told then whether it is spoken here.
        let mut plugin =
            if h.plugin == wire::CACHING_SHA2_PASSWORD { wire::CACHING_SHA2_PASSWORD } else { wire::NATIVE_PASSWORD };
        let mut scramble = h.scramble[..h.scramble.len().min(20)].to_vec();
        let auth = scramble_answer(plugin, password, &scramble);
        wire::handshake_response(caps, ext_caps, user, &auth, dbname, plugin, &mut self.link.wbuf);
        self.link.send()?;
        seq = 2;
        let mut step = AuthStep::Scramble;
        loop {
            let p = self.reader.packet(&mut self.link.stream, &mut seq).map_err(|e| self.link.broken(e))?;
            match p.first() {
                Some(&wire::OK) => {
                    self.status = wire::parse_ok(&p).map_err(|e| self.link.broken(e))?.1;
                    return Ok(());
                }
                Some(&wire::ERR) => return Err(self.refused(&p, user, plugin, step)),
                Some(&wire::EOF) => {
                    // AuthSwitchRequest: the plugin's name, then its data (a new scramble).
                    let mut cur = wire::Cursor::new(&p[1..]);
                    let name = cur.nul_str();
                    let spoken = [wire::NATIVE_PASSWORD, wire::CACHING_SHA2_PASSWORD];
                    let Some(&known) = spoken.iter().find(|p| p.as_bytes() == name) else {
                        return Err(self.unsupported(&String::from_utf8_lossy(name)));
                    };
                    plugin = known;
                    let data = cur.rest();
                    let data = data.strip_suffix(&[0]).unwrap_or(data);
                    scramble = data[..data.len().min(20)].to_vec();
                    let auth = scramble_answer(plugin, password, &scramble);
                    seq = self.auth_packet(&auth, seq)?;
                    step = AuthStep::Scramble;
                }
                Some(&wire::AUTH_MORE_DATA) if plugin == wire::CACHING_SHA2_PASSWORD => {
                    step = match (step, &p[1..]) {
                        (AuthStep::Scramble, [wire::FAST_AUTH_SUCCESS]) => AuthStep::Cached,
                        // A Unix socket is a secure transport to the server: the password goes as it is.
                        (AuthStep::Scramble, [wire::PERFORM_FULL_AUTHENTICATION])
                            if matches!(self.link.stream, Stream::Unix(..)) =>
                        {
                            let clear: Vec<u8> = password.bytes().chain([0]).collect();
                            seq = self.auth_packet(&clear, seq)?;
                            AuthStep::Cleartext
                        }
                        (AuthStep::Scramble, [wire::PERFORM_FULL_AUTHENTICATION]) => {
                            seq = self.auth_packet(&[wire::REQUEST_PUBLIC_KEY], seq)?;
                            AuthStep::KeyAsked
                        }
                        (AuthStep::KeyAsked, pem) => {
                            let cipher =
                                auth::encrypt_password(pem, password.as_bytes(), &scramble).map_err(|why| {
                                    self.link.closed = true;
                                    DbError::Client(format!(
                                        "the server's RSA public key, for {}'s full authentication, {why}",
                                        wire::CACHING_SHA2_PASSWORD
                                    ))
                                })?;
                            seq = self.auth_packet(&cipher, seq)?;
                            AuthStep::Encrypted
                        }
                        (_, data) => {
                            let what = format!(
                                "{} more data {:02x?} where {} was due",
                                wire::CACHING_SHA2_PASSWORD,
                                &data[..data.len().min(8)],
                                step.awaits()
                            );
                            return Err(self.link.broken(wire::invalid(what)));
                        }
                    };
                }
                Some(&first) => {
                    let what = format!("a packet headed {first:#04x} during {plugin} authentication");
                    return Err(self.link.broken(wire::invalid(what)));
                }
                None => return Err(self.link.broken(wire::invalid("an empty packet during authentication"))),
            }
        }
    }

    /// Sends one packet of authentication data, sequence id `seq`; returns the sequence id of the
    /// server's answer.
    fn auth_packet(&mut self, data: &[u8], seq: u8) -> Result<u8, DbError> {
        self.link.wbuf.clear();
        let start = wire::begin_packet(&mut self.link.wbuf);
        self.link.wbuf.extend_from_slice(data);
        let next = wire::end_packet(&mut self.link.wbuf, start, seq);
        self.link.send()?;
        Ok(next)
    }

    #[cold]
    fn unsupported(&mut self, plugin: &str) -> DbError {
        self.link.closed = true;
        DbError::Client(format!(
            "the server asks for the authentication plugin {plugin}; this client speaks only {} and {}",
            wire::NATIVE_PASSWORD,
            wire::CACHING_SHA2_PASSWORD
        ))
    }

    /// The server's refusal during authentication, its message prefixed with what was refused: the
    /// user, the plugin and the step (an error of the same code, so counted as before).
    #[cold]
    fn refused(&mut self, p: &[u8], user: &str, plugin: &str, step: AuthStep) -> DbError {
        match wire::parse_err(p) {
            Ok(mut e) => {
                let server = if self.is_mariadb() { "MariaDB" } else { "MySQL" };
                e.message = format!("{server} refused user {user} ({}): {}", step.describe(plugin), e.message);
                let e = DbError::Server(e);
                self.link.close_after(&e);
                e
            }
            Err(e) => self.link.broken(e),
        }
    }

    /// The error in an ERR packet; one the server closes the connection after closes it.
    #[cold]
    fn server_error(&mut self, p: &[u8]) -> DbError {
        match wire::parse_err(p) {
            Ok(e) => {
                let fatal = e.fatal || self.link.lost.is_none();
                let e = DbError::Server(e);
                if fatal {
                    self.link.close_after(&e);
                }
                e
            }
            Err(e) => self.link.broken(e),
        }
    }

    /// Reads the reply to the command just sent. An error leaves the status as it was: the
    /// transaction the session was in is still to be ended (a deadlock's rollback included).
    #[inline]
    fn finish(&mut self) -> Result<Outcome, DbError> {
        self.reply.clear();
        if let Err(e) = self.reader.reply(&mut self.link.stream, self.mode, &mut self.reply) {
            return Err(self.link.broken(e));
        }
        if let Some(status) = self.reply.status {
            self.status = status;
        }
        if let Some(e) = self.reply.error.take() {
            return Err(self.failed(e));
        }
        Ok(Outcome { rows: self.reply.rows, affected: self.reply.affected })
    }

    #[cold]
    fn failed(&mut self, e: ServerError) -> DbError {
        let fatal = e.fatal;
        let e = DbError::Server(e);
        if fatal {
            self.link.close_after(&e);
        }
        e
    }

    /// Prepares one statement, replacing one of the same name.
    fn prepare_one(&mut self, name: &str, sql: &str) -> Result<(), DbError> {
        if let Some(old) = self.statements.remove(name) {
            // No reply comes to COM_STMT_CLOSE.
            wire::command(wire::COM_STMT_CLOSE, &old.id.to_le_bytes(), &mut self.link.wbuf);
            self.link.send()?;
        }
        wire::command(wire::COM_STMT_PREPARE, sql.as_bytes(), &mut self.link.wbuf);
        self.link.send()?;
        match self.reader.prepare_reply(&mut self.link.stream, self.mode) {
            Ok(Ok(stmt)) => {
                self.statements.insert(name.to_string(), stmt);
                Ok(())
            }
            Ok(Err(e)) => Err(self.failed(e)),
            Err(e) => Err(self.link.broken(e)),
        }
    }

    /// A MariaDB server (else Oracle's MySQL or a fork of it): its greeting's version says so. What
    /// the two do differently is decided by this, never by the --engine value (one for both).
    fn is_mariadb(&self) -> bool {
        self.server_version.contains("MariaDB")
    }

    /// Sends an empty packet with sequence id `seq`, which ends a LOCAL INFILE stream; returns the
    /// sequence id of the server's answer.
    fn end_infile(&mut self, seq: u8) -> Result<u8, DbError> {
        self.link.wbuf.clear();
        let start = wire::begin_packet(&mut self.link.wbuf);
        let next = wire::end_packet(&mut self.link.wbuf, start, seq);
        self.link.send()?;
        Ok(next)
    }

    /// Reads the OK or ERR that ends a command, its sequence id `seq`: the affected rows, or the error.
    fn command_end(&mut self, mut seq: u8) -> Result<u64, DbError> {
        let p = self.reader.packet(&mut self.link.stream, &mut seq).map_err(|e| self.link.broken(e))?;
        match p.first() {
            Some(&wire::OK) => {
                let (affected, status) = wire::parse_ok(&p).map_err(|e| self.link.broken(e))?;
                self.status = status;
                Ok(affected)
            }
            Some(&wire::ERR) => {
                let e = wire::parse_err(&p).map_err(|e| self.link.broken(e))?;
                Err(self.failed(e))
            }
            _ => Err(self.link.broken(wire::invalid("neither OK nor ERR where a command ends"))),
        }
    }

    /// The server forgets nothing when an execution fails, but types it may not have taken are
    /// sent again with the next one, to be sure.
    #[cold]
    fn forget_types(&mut self, statement: &str) {
        if let Some(s) = self.statements.get_mut(statement) {
            s.types.clear();
        }
    }
}

impl Session for Conn {
    /// Prepares named statements, (name, SQL) each: one COM_STMT_PREPARE round trip each; the
    /// parameter and column definitions are read and dropped.
    fn prepare(&mut self, statements: &[(&str, &str)]) -> Result<(), DbError> {
        for (name, sql) in statements {
            self.prepare_one(name, sql)?;
        }
        Ok(())
    }

    /// Runs a prepared statement: one COM_STMT_EXECUTE, then its reply, rows counted, not decoded.
    #[inline]
    fn execute<'a, P: Param + 'a>(
        &mut self,
        statement: &str,
        params: impl IntoIterator<Item = &'a P>,
    ) -> Result<Outcome, DbError> {
        let Some(stmt) = self.statements.get_mut(statement) else {
            return Err(DbError::Client(format!("no prepared statement named {statement}")));
        };
        wire::execute(stmt, params, &mut self.link.wbuf).map_err(DbError::client)?;
        self.link.send()?;
        let r = self.finish();
        if matches!(r, Err(DbError::Server(_))) {
            self.forget_types(statement);
        }
        r
    }

    /// Runs SQL with COM_QUERY (text protocol): rows of every result add up, `affected` is the last
    /// result's.
    #[inline]
    fn simple(&mut self, sql: &str) -> Result<Outcome, DbError> {
        wire::command(wire::COM_QUERY, sql.as_bytes(), &mut self.link.wbuf);
        self.link.send()?;
        self.finish()
    }

    /// Runs one query with COM_QUERY and returns its rows as text (NULL as None).
    fn rows(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, DbError> {
        wire::command(wire::COM_QUERY, sql.as_bytes(), &mut self.link.wbuf);
        self.link.send()?;
        match self.reader.text_rows(&mut self.link.stream, self.mode, &mut self.status) {
            Ok(Ok(rows)) => Ok(rows),
            Ok(Err(e)) => Err(self.failed(e)),
            Err(e) => Err(self.link.broken(e)),
        }
    }

    /// Runs one query with COM_QUERY, handing each text row to `row` as it is read.
    fn each_row(&mut self, sql: &str, row: &mut OnRow<'_>) -> Result<u64, DbError> {
        wire::command(wire::COM_QUERY, sql.as_bytes(), &mut self.link.wbuf);
        self.link.send()?;
        match self.reader.text_rows_each(&mut self.link.stream, self.mode, &mut self.status, row) {
            Ok(Ok(rows)) => Ok(rows),
            Ok(Err(e)) => Err(self.failed(e)),
            Err(e) => Err(self.link.broken(e)),
        }
    }

    fn dialect(&self) -> &'static dyn Dialect {
        &super::DIALECT
    }

    /// LOAD DATA LOCAL INFILE, '|' between fields and an empty field `\N` (NULL): the server asks for
    /// the file the statement names, and the rows go in packets of about `INFILE_CHUNK` bytes, then an
    /// empty packet, after which the server's OK counts the rows loaded. A row of the wrong form or an
    /// error reading them ends the stream there and is the error (the protocol has no way to abort
    /// it: the rows sent before stay loaded). A server whose local_infile is off refuses the statement.
    fn bulk_load(&mut self, table: &str, columns: usize, rows: &mut dyn BufRead) -> Result<u64, DbError> {
        // MyRocks holds a lock per loaded row until the statement commits, at most rocksdb_max_row_locks: a
        // table of a million rows loaded in one statement fails ("Failed to acquire lock due to
        // rocksdb_max_row_locks limit"). Committing inside the statement is MyRocks's own bulk path; a server
        // without MyRocks (Oracle's MySQL, MariaDB without the plugin) does not know the variable (1193), and
        // InnoDB needs nothing. The server's answer decides, not its version: MyRocks is in MariaDB and in
        // Percona's MySQL alike.
        match self.simple("SET SESSION rocksdb_commit_in_the_middle = ON") {
            Ok(_) => {}
            Err(DbError::Server(e)) if e.code == UNKNOWN_VARIABLE => {}
            Err(e) => return Err(e),
        }
        let sql = format!(
            "LOAD DATA LOCAL INFILE '{INFILE_STREAM}' INTO TABLE {table} FIELDS TERMINATED BY '|' LINES TERMINATED BY '\\n'"
        );
        wire::command(wire::COM_QUERY, sql.as_bytes(), &mut self.link.wbuf);
        self.link.send()?;
        let mut seq = 1;
        let p = self.reader.packet(&mut self.link.stream, &mut seq).map_err(|e| self.link.broken(e))?;
        match p.first() {
            Some(&wire::LOCAL_INFILE) => {}
            Some(&wire::ERR) => {
                let mut e = wire::parse_err(&p).map_err(|e| self.link.broken(e))?;
                if INFILE_REFUSED.contains(&e.code.as_str()) {
                    e.message = format!(
                        "the server refuses LOAD DATA LOCAL INFILE, the bulk load's path, because its local_infile \
                         is off (set local_infile=ON): {}",
                        e.message
                    );
                }
                return Err(self.failed(e));
            }
            _ => {
                return Err(self
                    .link
                    .broken(wire::invalid("no LOCAL INFILE request where LOAD DATA LOCAL expects one")))
            }
        }
        let asked = &p[1..];
        if asked != INFILE_STREAM.as_bytes() {
            // Nothing is sent for a file the statement did not name.
            let asked = String::from_utf8_lossy(asked).into_owned();
            let next = self.end_infile(seq)?;
            let _ = self.command_end(next);
            return Err(DbError::Client(format!(
                "the server asked for the local file {asked:?}, not {INFILE_STREAM:?} that the statement named: \
                 nothing was sent"
            )));
        }
        let mut line = Vec::new();
        let mut number = 0u64;
        self.link.wbuf.clear();
        let mut start = wire::begin_packet(&mut self.link.wbuf);
        let failure = loop {
            line.clear();
            match rows.read_until(b'\n', &mut line) {
                Ok(0) => break None,
                Ok(_) => {}
                Err(e) => break Some(bulk::read_error(&e, number + 1)),
            }
            number += 1;
            if let Err(e) = bulk::write_row(&line, columns, b"\\N", number, &mut self.link.wbuf) {
                break Some(e);
            }
            if self.link.wbuf.len() - start >= INFILE_CHUNK {
                seq = wire::end_packet(&mut self.link.wbuf, start, seq);
                self.link.send()?;
                self.link.wbuf.clear();
                start = wire::begin_packet(&mut self.link.wbuf);
            }
        };
        if self.link.wbuf.len() > start + wire::HEADER_LEN {
            seq = wire::end_packet(&mut self.link.wbuf, start, seq);
            self.link.send()?;
        }
        let next = self.end_infile(seq)?;
        let loaded = self.command_end(next);
        match (failure, loaded) {
            (None, loaded) => loaded,
            (Some(_), Err(e @ DbError::Closed(_))) => Err(e),
            (Some(why), _) => Err(DbError::Client(why)),
        }
    }

    /// MariaDB's max_statement_time (seconds) or MySQL's max_execution_time (milliseconds, SELECTs
    /// only), for the session.
    fn set_statement_timeout(&mut self, seconds: u64) -> Result<(), DbError> {
        let sql = if self.is_mariadb() {
            format!("SET SESSION max_statement_time = {seconds}")
        } else {
            format!("SET SESSION max_execution_time = {}", seconds.saturating_mul(1000))
        };
        self.simple(&sql).map(|_| ())
    }

    fn is_closed(&self) -> bool {
        self.link.closed
    }

    /// Inside a transaction (the last OK or EOF said so).
    fn in_transaction(&self) -> bool {
        self.status & wire::SERVER_STATUS_IN_TRANS != 0
    }
}

impl Drop for Conn {
    /// Says goodbye (COM_QUIT), so the server does not count an aborted connection.
    fn drop(&mut self) {
        self.link.farewell(|b| wire::command(wire::COM_QUIT, &[], b));
    }
}

#[cfg(test)]
mod tests {
    use super::super::auth::tests::test_key;
    use super::super::wire::tests::{
        binary_row, err, greeting, mysql_greeting, ok, packet, reply_of, result_set, result_set_with, text_row, MARIADB,
    };
    use super::super::wire::{CLIENT_CONNECT_WITH_DB, COM_STMT_EXECUTE, SERVER_STATUS_IN_TRANS};
    use super::*;
    use crate::driver::{describe, error_kind};
    use rsa::Oaep;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::os::unix::net::UnixStream;
    use std::thread;
    use std::time::Instant;

    /// Reads one client packet: (sequence id, payload).
    fn read_packet(s: &mut impl Read) -> (u8, Vec<u8>) {
        let mut h = [0u8; 4];
        s.read_exact(&mut h).unwrap();
        let len = u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize;
        let mut p = vec![0; len];
        s.read_exact(&mut p).unwrap();
        (h[3], p)
    }

    /// Logs in as bob over `stream` against the fake server `fake`: the login leaves an open connection, and
    /// nothing is counted lost when the server has finished and both ends close.
    fn logs_in<T>(stream: Stream, fake: thread::JoinHandle<T>, lost: &'static Lost) {
        let c = Conn::start_recording(stream, "bob", "db", "secret", lost).unwrap();
        assert!(!c.is_closed());
        let s = fake.join().unwrap();
        drop(c);
        drop(s);
        assert_eq!(lost.count(), 0);
    }

    /// The auth response in a HandshakeResponse41 from this client to MariaDB, and its database.
    fn auth_of(response: &[u8]) -> (Vec<u8>, String) {
        // The one MariaDB extension asked for: cached metadata.
        assert_eq!(response[28..32], [0x10, 0, 0, 0]);
        let (auth, db, plugin) = response_of(response);
        assert_eq!(plugin, wire::NATIVE_PASSWORD);
        (auth, db)
    }

    /// The auth response in a HandshakeResponse41 from this client, its database and its plugin.
    fn response_of(response: &[u8]) -> (Vec<u8>, String, String) {
        let caps = u32::from_le_bytes(response[..4].try_into().unwrap());
        let mut c = wire::Cursor::new(&response[32..]);
        assert_eq!(c.nul_str(), b"bob");
        let n = c.u8().unwrap() as usize;
        let auth = c.bytes(n).unwrap().to_vec();
        assert!(caps & CLIENT_CONNECT_WITH_DB != 0);
        let db = String::from_utf8(c.nul_str().to_vec()).unwrap();
        let plugin = String::from_utf8(c.nul_str().to_vec()).unwrap();
        (auth, db, plugin)
    }

    /// A connected pair of TCP sockets on the loopback: (the client's end, the fake server's).
    fn tcp_pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        (client, listener.accept().unwrap().0)
    }

    /// The start of Oracle MySQL 9's side of a session: its greeting (caching_sha2_password), then this
    /// client's answer, checked: the SHA-256 scramble of "secret", in caching_sha2_password.
    fn mysql_hello(s: &mut (impl Read + Write)) {
        s.write_all(&packet(0, &mysql_greeting(wire::CACHING_SHA2_PASSWORD))).unwrap();
        let (seq, response) = read_packet(s);
        assert_eq!(seq, 1);
        // A MySQL server gets no MariaDB extension.
        assert_eq!(response[28..32], [0, 0, 0, 0]);
        let (auth, db, plugin) = response_of(&response);
        assert_eq!(auth, auth::sha2_scramble(b"secret", b"abcdefghijklmnopqrst"));
        assert_eq!((db.as_str(), plugin.as_str()), ("db", wire::CACHING_SHA2_PASSWORD));
    }

    /// AuthMoreData holding `data`.
    fn more_data(data: &[u8]) -> Vec<u8> {
        [&[wire::AUTH_MORE_DATA], data].concat()
    }

    /// A fake server: greeting and native authentication, then scripted answers, one per command;
    /// returns its end of the socket, still open.
    fn serve(mut s: UnixStream, answers: Vec<Vec<u8>>) -> UnixStream {
        s.write_all(&packet(0, &greeting(wire::NATIVE_PASSWORD))).unwrap();
        let (seq, response) = read_packet(&mut s);
        assert_eq!(seq, 1);
        let (auth, db) = auth_of(&response);
        assert_eq!(auth, wire::native_password(b"secret", b"abcdefghijklmnopqrst"));
        assert_eq!(db, "db");
        s.write_all(&packet(2, &ok(0, 2))).unwrap();
        for answer in answers {
            // Prepares are answered after their COM_STMT_PREPARE; a COM_STMT_CLOSE gets nothing.
            loop {
                let (seq, p) = read_packet(&mut s);
                assert_eq!(seq, 0);
                if p[0] != wire::COM_STMT_CLOSE {
                    break;
                }
            }
            // Answer in two writes, split inside a packet.
            let half = answer.len() / 2;
            s.write_all(&answer[..half]).unwrap();
            s.write_all(&answer[half..]).unwrap();
        }
        s
    }

    fn prepared(id: u32, params: u16) -> Vec<u8> {
        let mut head = vec![wire::OK];
        head.extend_from_slice(&id.to_le_bytes());
        head.extend_from_slice(&[0, 0]);
        head.extend_from_slice(&params.to_le_bytes());
        head.extend_from_slice(&[0, 0, 0]);
        let defs: Vec<Vec<u8>> = (0..params).map(|_| wire::tests::column_def("?")).collect();
        reply_of(&[vec![head], defs].concat())
    }

    #[test]
    fn a_session_against_a_fake_server() {
        let (client, server) = UnixStream::pair().unwrap();
        let select = reply_of(&result_set(&[binary_row(b"a"), binary_row(b"b")], 2, MARIADB));
        // The next execution's reply without the column definitions (cached metadata).
        let again = reply_of(&result_set_with(&[binary_row(b"c")], 2, MARIADB, false));
        let deadlock = reply_of(&[err(1213, "40001", "Deadlock found when trying to get lock")]);
        let script = vec![
            prepared(3, 1),
            select,
            again,
            reply_of(&[ok(0, SERVER_STATUS_IN_TRANS | 2)]),
            reply_of(&[ok(4, SERVER_STATUS_IN_TRANS | 2)]),
            deadlock,
            reply_of(&[ok(0, 2)]),
            reply_of(&result_set(&[text_row(&[Some("pi1")]), text_row(&[None])], 2, MARIADB)),
            reply_of(&[err(1927, "70100", "Connection was killed")]),
        ];
        let fake = thread::spawn(move || serve(server, script));
        // Each test records losses in its own registry: the process-wide one is shared by the test threads.
        static LOST_HERE: Lost = Lost::new();
        let mut c = Conn::start_recording(Stream::unix(client), "bob", "db", "secret", &LOST_HERE).unwrap();
        c.prepare(&[("s1", "SELECT c FROM t WHERE id=?")]).unwrap();
        assert_eq!(c.execute("s1", &[7i64]).unwrap(), Outcome { rows: 2, affected: 2 });
        assert_eq!(c.execute("s1", &[6i64]).unwrap(), Outcome { rows: 1, affected: 1 });
        assert!(!c.in_transaction());
        c.begin().unwrap();
        assert!(c.in_transaction());
        assert_eq!(c.simple("UPDATE t SET k=k+1").unwrap(), Outcome { rows: 0, affected: 4 });
        let e = c.execute("s1", &[8i64]).unwrap_err();
        assert_eq!(error_kind(&e), "mysql_1213");
        assert_eq!(describe(&e), "MYSQL_1213: (40001) Deadlock found when trying to get lock");
        // The error leaves the transaction to be rolled back.
        assert!(c.in_transaction() && !c.is_closed());
        c.rollback().unwrap();
        assert!(!c.in_transaction());
        assert_eq!(c.rows("SELECT 1").unwrap(), [vec![Some("pi1".to_string())], vec![None]]);
        assert!(matches!(c.execute("nope", &[1i64]), Err(DbError::Client(_))));
        assert!(matches!(c.execute("s1", &[1i64, 2]), Err(DbError::Client(_))));
        let e = c.execute("s1", &[9i64]).unwrap_err();
        assert_eq!(error_kind(&e), "mysql_1927");
        assert!(c.is_closed());
        drop(fake.join().unwrap());
        let e = c.simple("SELECT 1").unwrap_err();
        assert_eq!(error_kind(&e), "connection-closed");
        // The kill lost the connection, once; the error after it is no second loss.
        drop(c);
        assert_eq!(LOST_HERE.count(), 1);
        assert_eq!(LOST_HERE.ended_early(Instant::now()).unwrap().reason, "MYSQL_1927: (70100) Connection was killed");
    }

    #[test]
    fn types_go_again_after_a_failed_execution() {
        let (client, server) = UnixStream::pair().unwrap();
        let fake = thread::spawn(move || {
            let mut s = serve(server, vec![prepared(1, 1), reply_of(&[ok(1, 2)])]);
            let mut bound = Vec::new();
            for answer in [err(1205, "HY000", "Lock wait timeout exceeded"), ok(1, 2), ok(1, 2)] {
                let (_, p) = read_packet(&mut s);
                assert_eq!(p[0], COM_STMT_EXECUTE);
                bound.push(p[11]);
                s.write_all(&reply_of(&[answer])).unwrap();
            }
            (s, bound)
        });
        static LOST_HERE: Lost = Lost::new();
        let mut c = Conn::start_recording(Stream::unix(client), "bob", "db", "secret", &LOST_HERE).unwrap();
        c.prepare(&[("d", "DELETE FROM t WHERE id=?")]).unwrap();
        c.execute("d", &[1i64]).unwrap();
        assert!(c.execute("d", &[1i64]).is_err());
        c.execute("d", &[1i64]).unwrap();
        c.execute("d", &[1i64]).unwrap();
        let (_s, bound) = fake.join().unwrap();
        // Sent with types first (not seen here), then without, then with them again after the error.
        assert_eq!(bound, [0, 1, 0]);
        assert_eq!(LOST_HERE.count(), 0);
    }

    #[test]
    fn a_connection_the_server_drops_mid_session_is_lost() {
        static LOST_HERE: Lost = Lost::new();
        let (client, server) = UnixStream::pair().unwrap();
        let fake = thread::spawn(move || {
            let mut s = serve(server, vec![reply_of(&[ok(0, 2)])]);
            // The next command is read and never answered: the server is gone (killed, say).
            assert_eq!(read_packet(&mut s).1[0], wire::COM_QUERY);
        });
        let t0 = Instant::now();
        let mut c = Conn::start_recording(Stream::unix(client), "bob", "db", "secret", &LOST_HERE).unwrap();
        c.simple("SELECT 1").unwrap();
        assert_eq!(LOST_HERE.count(), 0);
        let e = c.simple("SELECT 2").unwrap_err();
        fake.join().unwrap();
        assert_eq!(error_kind(&e), "connection-closed");
        assert!(c.is_closed());
        // Later failures of the same connection are not new losses.
        assert!(c.simple("SELECT 3").is_err());
        assert!(c.rows("SELECT 4").is_err());
        assert!(c.execute("s", &[1i64]).is_err());
        drop(c);
        let early = LOST_HERE.ended_early(t0).unwrap();
        assert_eq!(early.connections_lost, 1);
        assert_eq!(early.reason, "connection closed: the server closed the connection");
    }

    #[test]
    fn a_normal_end_an_error_and_a_failed_start_are_no_losses() {
        static LOST_HERE: Lost = Lost::new();
        let (client, server) = UnixStream::pair().unwrap();
        let missing = reply_of(&[err(1146, "42S02", "Table 'db.t' doesn't exist")]);
        let fake = thread::spawn(move || serve(server, vec![reply_of(&[ok(0, 2)]), missing]));
        let mut c = Conn::start_recording(Stream::unix(client), "bob", "db", "secret", &LOST_HERE).unwrap();
        c.simple("SELECT 1").unwrap();
        // An ERR leaves the session usable.
        assert_eq!(error_kind(&c.rows("SELECT * FROM t").unwrap_err()), "mysql_1146");
        assert!(!c.is_closed());
        let mut s = fake.join().unwrap();
        // The end of a step: the client says goodbye (COM_QUIT), and nothing is lost.
        drop(c);
        assert_eq!(read_packet(&mut s), (0, vec![wire::COM_QUIT]));
        drop(s);
        // A connect that fails, on a closed socket or an ERR during the handshake, is an error of its own.
        let (client, server) = UnixStream::pair().unwrap();
        drop(server);
        let Err(e) = Conn::start_recording(Stream::unix(client), "bob", "db", "secret", &LOST_HERE) else {
            panic!("connected")
        };
        assert_eq!(error_kind(&e), "connection-closed", "{e:?}");
        let (client, mut server) = UnixStream::pair().unwrap();
        let fake = thread::spawn(move || {
            server.write_all(&packet(0, &greeting(wire::NATIVE_PASSWORD))).unwrap();
            read_packet(&mut server);
            let denied = "Access denied for user 'bob'@'localhost' (using password: YES)";
            server.write_all(&packet(2, &err(1045, "28000", denied))).unwrap();
            server
        });
        let Err(e) = Conn::start_recording(Stream::unix(client), "bob", "db", "secret", &LOST_HERE) else {
            panic!("connected")
        };
        assert_eq!(
            describe(&e),
            "MYSQL_1045: MariaDB refused user bob (mysql_native_password): (28000) Access denied for user \
             'bob'@'localhost' (using password: YES)"
        );
        assert_eq!(error_kind(&e), "mysql_1045");
        drop(fake.join().unwrap());
        // Refused before the greeting.
        let (client, mut server) = UnixStream::pair().unwrap();
        server.write_all(&packet(0, &[0xFF, 0x10, 0x04, b'T', b'o', b'o'])).unwrap();
        let Err(e) = Conn::start_recording(Stream::unix(client), "bob", "db", "secret", &LOST_HERE) else {
            panic!("connected")
        };
        assert_eq!(error_kind(&e), "mysql_1040");
        assert_eq!(LOST_HERE.count(), 0);
    }

    /// The server's side of one LOAD DATA LOCAL INFILE asking for `file`: the query's text, then the
    /// data packets (their sequence ids checked) up to the empty one, whose sequence id it returns.
    fn local_infile(s: &mut UnixStream, file: &[u8]) -> (String, Vec<Vec<u8>>, u8) {
        let (_, query) = read_packet(s);
        assert_eq!(query[0], wire::COM_QUERY);
        let mut ask = vec![wire::LOCAL_INFILE];
        ask.extend_from_slice(file);
        s.write_all(&packet(1, &ask)).unwrap();
        let mut data = Vec::new();
        let mut seq = 2;
        loop {
            let (got, p) = read_packet(s);
            assert_eq!(got, seq);
            seq += 1;
            if p.is_empty() {
                return (String::from_utf8(query[1..].to_vec()).unwrap(), data, got);
            }
            data.push(p);
        }
    }

    #[test]
    fn a_bulk_load_streams_the_rows_as_the_local_file_asked_for() {
        use std::io::Cursor;
        let (client, server) = UnixStream::pair().unwrap();
        let fake = thread::spawn(move || {
            let mut s = serve(server, vec![]);
            // Each load first asks MyRocks to commit inside the statement: a server with MyRocks takes it, one
            // without it does not know the variable (1193), and the load goes on either way.
            let commit_in_the_middle = |s: &mut UnixStream, known: bool| {
                let (_, set) = read_packet(s);
                let reply = if known { ok(0, 2) } else { err(1193, "HY000", "Unknown system variable") };
                s.write_all(&packet(1, &reply)).unwrap();
                String::from_utf8(set[1..].to_vec()).unwrap()
            };
            let set = commit_in_the_middle(&mut s, true);
            let (query, data, last) = local_infile(&mut s, INFILE_STREAM.as_bytes());
            s.write_all(&packet(last + 1, &ok(5000, 2))).unwrap();
            // A file the statement did not name: nothing is sent.
            commit_in_the_middle(&mut s, false);
            let (_, refused, last) = local_infile(&mut s, b"/etc/passwd");
            s.write_all(&packet(last + 1, &ok(0, 2))).unwrap();
            // A server whose local_infile is off.
            commit_in_the_middle(&mut s, false);
            read_packet(&mut s);
            let off = "The used command is not allowed with this MariaDB version";
            s.write_all(&packet(1, &err(1148, "42000", off))).unwrap();
            // A bad row ends the stream there.
            commit_in_the_middle(&mut s, false);
            let (_, bad, last) = local_infile(&mut s, INFILE_STREAM.as_bytes());
            s.write_all(&packet(last + 1, &ok(1, 2))).unwrap();
            (s, set, query, data, refused, bad)
        });
        static LOST_HERE: Lost = Lost::new();
        let mut c = Conn::start_recording(Stream::unix(client), "bob", "db", "secret", &LOST_HERE).unwrap();
        let rows: String = (0..5000).map(|i| format!("{i}||a\\b {i}|\n")).collect();
        assert_eq!(c.bulk_load("t", 3, &mut Cursor::new(rows.clone().into_bytes())).unwrap(), 5000);
        let e = c.bulk_load("t", 3, &mut Cursor::new(rows.clone().into_bytes())).unwrap_err();
        assert_eq!(
            describe(&e),
            "the server asked for the local file \"/etc/passwd\", not \"dbsweep-stream\" that the statement named: \
             nothing was sent"
        );
        let e = c.bulk_load("t", 3, &mut Cursor::new(rows.clone().into_bytes())).unwrap_err();
        assert_eq!(error_kind(&e), "mysql_1148");
        assert!(describe(&e).contains("because its local_infile is off (set local_infile=ON)"), "{}", describe(&e));
        let e = c.bulk_load("t", 2, &mut Cursor::new(b"1|x|\n2|\n".to_vec())).unwrap_err();
        assert_eq!(describe(&e), "row 2 has 1 fields where the table has 2 columns");
        assert!(!c.is_closed());
        let (_s, set, query, data, refused, bad) = fake.join().unwrap();
        assert_eq!(set, "SET SESSION rocksdb_commit_in_the_middle = ON");
        assert_eq!(
            query,
            "LOAD DATA LOCAL INFILE 'dbsweep-stream' INTO TABLE t FIELDS TERMINATED BY '|' LINES TERMINATED BY '\\n'"
        );
        // Packets of about 64 KiB; an empty field is \N, a backslash doubled, no '|' after the last field.
        assert!(data.len() > 1 && data.iter().all(|d| d.len() <= INFILE_CHUNK + 100));
        let want: String = (0..5000).map(|i| format!("{i}|\\N|a\\\\b {i}\n")).collect();
        assert_eq!(String::from_utf8(data.concat()).unwrap(), want);
        assert!(refused.is_empty());
        assert_eq!(bad.concat(), b"1|x\n");
        drop(c);
        assert_eq!(LOST_HERE.count(), 0);
    }

    #[test]
    fn the_statement_timeout_is_the_servers_own() {
        let (client, server) = UnixStream::pair().unwrap();
        let fake = thread::spawn(move || {
            let mut s = serve(server, vec![]);
            let (_, set) = read_packet(&mut s);
            s.write_all(&packet(1, &ok(0, 2))).unwrap();
            let (_, _) = read_packet(&mut s);
            let stopped = "Query execution was interrupted (max_statement_time exceeded)";
            s.write_all(&packet(1, &err(1969, "70100", stopped))).unwrap();
            (s, String::from_utf8(set[1..].to_vec()).unwrap())
        });
        static LOST_HERE: Lost = Lost::new();
        let mut c = Conn::start_recording(Stream::unix(client), "bob", "db", "secret", &LOST_HERE).unwrap();
        // The greeting's version says MariaDB.
        assert!(c.is_mariadb());
        c.set_statement_timeout(7).unwrap();
        let e = c.each_row("SELECT SLEEP(10)", &mut |_| {}).unwrap_err();
        assert_eq!(error_kind(&e), "timeout");
        assert!(!c.is_closed());
        let (_s, set) = fake.join().unwrap();
        assert_eq!(set, "SET SESSION max_statement_time = 7");
        // Oracle's MySQL names its limit in milliseconds.
        c.server_version = "8.0.36".into();
        assert!(!c.is_mariadb());
    }

    #[test]
    fn the_server_may_switch_to_native_password_and_to_nothing_else() {
        // A greeting that names another plugin; the account then asks for native with a new scramble.
        let (client, mut server) = UnixStream::pair().unwrap();
        let fake = thread::spawn(move || {
            server.write_all(&packet(0, &greeting("client_ed25519"))).unwrap();
            let (_, response) = read_packet(&mut server);
            assert_eq!(auth_of(&response).0, wire::native_password(b"secret", b"abcdefghijklmnopqrst"));
            let mut switch = vec![wire::EOF];
            switch.extend_from_slice(b"mysql_native_password\0");
            switch.extend_from_slice(b"ABCDEFGHIJKLMNOPQRST\0");
            server.write_all(&packet(2, &switch)).unwrap();
            let (seq, auth) = read_packet(&mut server);
            assert_eq!((seq, auth), (3, wire::native_password(b"secret", b"ABCDEFGHIJKLMNOPQRST")));
            server.write_all(&packet(4, &ok(0, 2))).unwrap();
            server
        });
        static LOST_HERE: Lost = Lost::new();
        let c = Conn::start_recording(Stream::unix(client), "bob", "db", "secret", &LOST_HERE).unwrap();
        assert!(!c.is_closed());
        let s = fake.join().unwrap();
        drop(c);
        drop(s);
        let (client, mut server) = UnixStream::pair().unwrap();
        let fake = thread::spawn(move || {
            server.write_all(&packet(0, &greeting(wire::NATIVE_PASSWORD))).unwrap();
            read_packet(&mut server);
            let mut switch = vec![wire::EOF];
            switch.extend_from_slice(b"client_ed25519\0");
            switch.extend_from_slice(&[7; 32]);
            server.write_all(&packet(2, &switch)).unwrap();
            server
        });
        let Err(e) = Conn::start_recording(Stream::unix(client), "bob", "db", "secret", &LOST_HERE) else {
            panic!("connected")
        };
        assert_eq!(
            describe(&e),
            "the server asks for the authentication plugin client_ed25519; this client speaks only \
             mysql_native_password and caching_sha2_password"
        );
        drop(fake.join().unwrap());
        assert_eq!(LOST_HERE.count(), 0);
    }

    #[test]
    fn caching_sha2_password_takes_the_fast_path_when_the_server_has_the_password_cached() {
        let (client, mut server) = UnixStream::pair().unwrap();
        let fake = thread::spawn(move || {
            mysql_hello(&mut server);
            server.write_all(&packet(2, &more_data(&[wire::FAST_AUTH_SUCCESS]))).unwrap();
            server.write_all(&packet(3, &ok(0, 2))).unwrap();
            // Oracle MySQL's statement timeout: max_execution_time in milliseconds, ER_QUERY_TIMEOUT.
            let (_, set) = read_packet(&mut server);
            server.write_all(&packet(1, &ok(0, 2))).unwrap();
            read_packet(&mut server);
            let stopped = "Query execution was interrupted, maximum statement execution time exceeded";
            server.write_all(&packet(1, &err(3024, "HY000", stopped))).unwrap();
            (server, String::from_utf8(set[1..].to_vec()).unwrap())
        });
        static LOST_HERE: Lost = Lost::new();
        let mut c = Conn::start_recording(Stream::unix(client), "bob", "db", "secret", &LOST_HERE).unwrap();
        assert!(!c.is_mariadb());
        // No MariaDB extension on a MySQL server: column definitions come with every result.
        assert_eq!(c.mode, Mode { deprecate_eof: true, cache_metadata: false });
        c.set_statement_timeout(7).unwrap();
        let e = c.each_row("SELECT SLEEP(10)", &mut |_| {}).unwrap_err();
        assert_eq!(error_kind(&e), "timeout");
        assert!(!c.is_closed());
        let (_s, set) = fake.join().unwrap();
        assert_eq!(set, "SET SESSION max_execution_time = 7000");
        assert_eq!(LOST_HERE.count(), 0);
    }

    #[test]
    fn caching_sha2_password_full_authentication_over_tcp_encrypts_with_the_servers_rsa_key() {
        let (client, mut server) = tcp_pair();
        let fake = thread::spawn(move || {
            let (key, public) = test_key();
            mysql_hello(&mut server);
            server.write_all(&packet(2, &more_data(&[wire::PERFORM_FULL_AUTHENTICATION]))).unwrap();
            // No secure transport: the client asks for the key, and sends the password encrypted with it.
            assert_eq!(read_packet(&mut server), (3, vec![wire::REQUEST_PUBLIC_KEY]));
            server.write_all(&packet(4, &more_data(public.as_bytes()))).unwrap();
            let (seq, cipher) = read_packet(&mut server);
            assert_eq!((seq, cipher.len()), (5, 128));
            let plain = key.decrypt(Oaep::new::<sha1::Sha1>(), &cipher).unwrap();
            // "secret" and a NUL, XOR the scramble "abcdefghijklmnopqrst".
            let want: Vec<u8> = b"secret\0".iter().zip(b"abcdefg").map(|(p, s)| p ^ s).collect();
            assert_eq!(plain, want);
            server.write_all(&packet(6, &ok(0, 2))).unwrap();
            server
        });
        static LOST_HERE: Lost = Lost::new();
        logs_in(Stream::Tcp(client), fake, &LOST_HERE);
    }

    #[test]
    fn caching_sha2_password_full_authentication_over_a_unix_socket_sends_the_password() {
        let (client, mut server) = UnixStream::pair().unwrap();
        let fake = thread::spawn(move || {
            mysql_hello(&mut server);
            server.write_all(&packet(2, &more_data(&[wire::PERFORM_FULL_AUTHENTICATION]))).unwrap();
            // A Unix socket is a secure transport: the password itself, NUL-terminated, no key asked for.
            assert_eq!(read_packet(&mut server), (3, b"secret\0".to_vec()));
            server.write_all(&packet(4, &ok(0, 2))).unwrap();
            server
        });
        static LOST_HERE: Lost = Lost::new();
        logs_in(Stream::unix(client), fake, &LOST_HERE);
    }

    #[test]
    fn the_server_may_switch_to_caching_sha2_password() {
        // A MySQL 8 server whose default is native password, and an account in caching_sha2_password:
        // the switch brings a new nonce, which both the scramble and the encrypted password use.
        let (client, mut server) = tcp_pair();
        let fake = thread::spawn(move || {
            let (key, public) = test_key();
            server.write_all(&packet(0, &mysql_greeting(wire::NATIVE_PASSWORD))).unwrap();
            let (_, response) = read_packet(&mut server);
            let (auth, _, plugin) = response_of(&response);
            assert_eq!(plugin, wire::NATIVE_PASSWORD);
            assert_eq!(auth, wire::native_password(b"secret", b"abcdefghijklmnopqrst"));
            let mut switch = vec![wire::EOF];
            switch.extend_from_slice(b"caching_sha2_password\0");
            switch.extend_from_slice(b"ABCDEFGHIJKLMNOPQRST\0");
            server.write_all(&packet(2, &switch)).unwrap();
            let (seq, auth) = read_packet(&mut server);
            assert_eq!((seq, auth), (3, auth::sha2_scramble(b"secret", b"ABCDEFGHIJKLMNOPQRST")));
            server.write_all(&packet(4, &more_data(&[wire::PERFORM_FULL_AUTHENTICATION]))).unwrap();
            assert_eq!(read_packet(&mut server), (5, vec![wire::REQUEST_PUBLIC_KEY]));
            server.write_all(&packet(6, &more_data(public.as_bytes()))).unwrap();
            let (seq, cipher) = read_packet(&mut server);
            assert_eq!(seq, 7);
            let plain = key.decrypt(Oaep::new::<sha1::Sha1>(), &cipher).unwrap();
            assert_eq!(plain, auth::xor_password(b"secret", b"ABCDEFGHIJKLMNOPQRST"));
            server.write_all(&packet(8, &ok(0, 2))).unwrap();
            server
        });
        static LOST_HERE: Lost = Lost::new();
        logs_in(Stream::Tcp(client), fake, &LOST_HERE);
    }

    #[test]
    fn a_refusal_names_the_plugin_and_what_the_server_was_asked() {
        static LOST_HERE: Lost = Lost::new();
        let denied = "Access denied for user 'bob'@'localhost' (using password: YES)";
        // Over TCP, after the encrypted password.
        let (client, mut server) = tcp_pair();
        let fake = thread::spawn(move || {
            mysql_hello(&mut server);
            server.write_all(&packet(2, &more_data(&[wire::PERFORM_FULL_AUTHENTICATION]))).unwrap();
            read_packet(&mut server);
            server.write_all(&packet(4, &more_data(test_key().1.as_bytes()))).unwrap();
            read_packet(&mut server);
            server.write_all(&packet(6, &err(1045, "28000", denied))).unwrap();
            server
        });
        let Err(e) = Conn::start_recording(Stream::Tcp(client), "bob", "db", "secret", &LOST_HERE) else {
            panic!("connected")
        };
        assert_eq!(
            describe(&e),
            "MYSQL_1045: MySQL refused user bob (caching_sha2_password, full authentication with the server's RSA \
             key): (28000) Access denied for user 'bob'@'localhost' (using password: YES)"
        );
        assert_eq!(error_kind(&e), "mysql_1045");
        drop(fake.join().unwrap());
        // Over a Unix socket, after the password in clear; and right after the scramble.
        let (client, mut server) = UnixStream::pair().unwrap();
        let fake = thread::spawn(move || {
            mysql_hello(&mut server);
            server.write_all(&packet(2, &more_data(&[wire::PERFORM_FULL_AUTHENTICATION]))).unwrap();
            read_packet(&mut server);
            server.write_all(&packet(4, &err(1045, "28000", denied))).unwrap();
            server
        });
        let Err(e) = Conn::start_recording(Stream::unix(client), "bob", "db", "secret", &LOST_HERE) else {
            panic!("connected")
        };
        assert!(
            describe(&e).starts_with(
                "MYSQL_1045: MySQL refused user bob (caching_sha2_password, full authentication with the password \
                 over the Unix socket): (28000) Access denied"
            ),
            "{}",
            describe(&e)
        );
        drop(fake.join().unwrap());
        let (client, mut server) = UnixStream::pair().unwrap();
        let fake = thread::spawn(move || {
            mysql_hello(&mut server);
            server.write_all(&packet(2, &err(1045, "28000", denied))).unwrap();
            server
        });
        let Err(e) = Conn::start_recording(Stream::unix(client), "bob", "db", "secret", &LOST_HERE) else {
            panic!("connected")
        };
        assert!(
            describe(&e).starts_with(
                "MYSQL_1045: MySQL refused user bob (caching_sha2_password, fast authentication with the scramble):"
            ),
            "{}",
            describe(&e)
        );
        drop(fake.join().unwrap());
        // A key that is no key, and AuthMoreData out of turn, are the client's errors, in one sentence.
        let (client, mut server) = tcp_pair();
        let fake = thread::spawn(move || {
            mysql_hello(&mut server);
            server.write_all(&packet(2, &more_data(&[wire::PERFORM_FULL_AUTHENTICATION]))).unwrap();
            read_packet(&mut server);
            server.write_all(&packet(4, &more_data(b""))).unwrap();
            server
        });
        let Err(e) = Conn::start_recording(Stream::Tcp(client), "bob", "db", "secret", &LOST_HERE) else {
            panic!("connected")
        };
        assert!(
            describe(&e).starts_with(
                "the server's RSA public key, for caching_sha2_password's full authentication, is empty (the server \
                 has no RSA key pair"
            ),
            "{}",
            describe(&e)
        );
        drop(fake.join().unwrap());
        let (client, mut server) = UnixStream::pair().unwrap();
        let fake = thread::spawn(move || {
            mysql_hello(&mut server);
            server.write_all(&packet(2, &more_data(&[9]))).unwrap();
            server
        });
        let Err(e) = Conn::start_recording(Stream::unix(client), "bob", "db", "secret", &LOST_HERE) else {
            panic!("connected")
        };
        assert_eq!(
            describe(&e),
            "caching_sha2_password more data [09] where fast authentication's success (03) or a request for full \
             authentication (04) was due"
        );
        drop(fake.join().unwrap());
        assert_eq!(LOST_HERE.count(), 0);
    }
}
