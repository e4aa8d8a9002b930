//! One blocking connection: startup and authentication, then requests that
//! each take one write and (usually) one read.

use super::wire::{self, Reader, Reply};
use crate::driver::link::Link;
use crate::driver::lost::{Lost, LOST};
use crate::driver::net::Stream;
use crate::driver::{bulk, DbError, Dialect, OnRow, Outcome, Param, Session};
use bytes::BytesMut;
use fallible_iterator::FallibleIterator;
use postgres_protocol::authentication::md5_hash;
use postgres_protocol::authentication::sasl::{ChannelBinding, ScramSha256, SCRAM_SHA_256};
use postgres_protocol::message::backend::Message;
use postgres_protocol::message::frontend;
use std::io::BufRead;

pub struct Conn {
    /// The stream, the request being written, and whether the connection is closed or lost.
    link: Link<BytesMut>,
    reader: Reader,
    reply: Reply,
    /// The last ReadyForQuery's transaction status.
    status: u8,
}

impl Conn {
    /// Starts a session on a connected socket: startup message, authentication, then waits for
    /// the first ReadyForQuery.
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
            link: Link::starting(stream, BytesMut::with_capacity(4096))?,
            reader: Reader::new(wire::READ_BUFFER),
            reply: Reply::default(),
            status: 0,
        };
        let params =
            [("user", user), ("database", dbname), ("application_name", "dbsweep-load"), ("client_encoding", "UTF8")];
        frontend::startup_message(params, &mut c.link.wbuf).map_err(DbError::client)?;
        c.link.send()?;
        c.authenticate(user, password)?;
        loop {
            // ParameterStatus, BackendKeyData and NoticeResponse come before it.
            if let Message::ReadyForQuery(body) = c.next_message()? {
                c.status = body.status();
                break;
            }
        }
        // Established: from now on, breaking is a lost connection.
        c.link.established(lost)?;
        Ok(c)
    }

    /// Answers the server's authentication requests until AuthenticationOk.
    fn authenticate(&mut self, user: &str, password: &str) -> Result<(), DbError> {
        let need_password = || DbError::Client("the server asks for a password; set DBSWEEP_PASSWORD".into());
        let mut scram: Option<ScramSha256> = None;
        loop {
            let m = self.next_message()?;
            self.link.wbuf.clear();
            match m {
                Message::AuthenticationOk => return Ok(()),
                Message::AuthenticationCleartextPassword => {
                    if password.is_empty() {
                        return Err(need_password());
                    }
                    frontend::password_message(password.as_bytes(), &mut self.link.wbuf).map_err(DbError::client)?;
                }
                Message::AuthenticationMd5Password(body) => {
                    if password.is_empty() {
                        return Err(need_password());
                    }
                    let hash = md5_hash(user.as_bytes(), password.as_bytes(), body.salt());
                    frontend::password_message(hash.as_bytes(), &mut self.link.wbuf).map_err(DbError::client)?;
                }
                Message::AuthenticationSasl(body) => {
                    if password.is_empty() {
                        return Err(need_password());
                    }
                    let mechanisms: Vec<&str> = body.mechanisms().collect().map_err(DbError::client)?;
                    if !mechanisms.contains(&SCRAM_SHA_256) {
                        return Err(DbError::Client(format!(
                            "the server offers only the SASL mechanisms {mechanisms:?}; this client speaks {SCRAM_SHA_256}"
                        )));
                    }
                    // No TLS, so no channel binding.
                    let s = ScramSha256::new(password.as_bytes(), ChannelBinding::unsupported());
                    frontend::sasl_initial_response(SCRAM_SHA_256, s.message(), &mut self.link.wbuf)
                        .map_err(DbError::client)?;
                    scram = Some(s);
                }
                Message::AuthenticationSaslContinue(body) => {
                    let s = scram.as_mut().ok_or_else(|| DbError::Client("SASL continue before SASL start".into()))?;
                    s.update(body.data()).map_err(DbError::client)?;
                    frontend::sasl_response(s.message(), &mut self.link.wbuf).map_err(DbError::client)?;
                }
                Message::AuthenticationSaslFinal(body) => {
                    let s = scram.as_mut().ok_or_else(|| DbError::Client("SASL final before SASL start".into()))?;
                    // Checks the server's signature: the server knows the password too.
                    s.finish(body.data()).map_err(DbError::client)?;
                    continue;
                }
                Message::NoticeResponse(_) | Message::ParameterStatus(_) => continue,
                _ => return Err(DbError::Client("unsupported authentication method requested by the server".into())),
            }
            self.link.send()?;
        }
    }

    /// The next whole message; an ErrorResponse becomes the error (startup is over then).
    fn next_message(&mut self) -> Result<Message, DbError> {
        match self.reader.message(&mut self.link.stream).map_err(|e| self.link.broken(e))? {
            Message::ErrorResponse(body) => {
                let e = DbError::Server(wire::error_from_body(&body).map_err(|e| self.link.broken(e))?);
                // During startup every error ends the session.
                self.link.close_after(&e);
                Err(e)
            }
            m => Ok(m),
        }
    }

    /// Reads the reply to the request just sent.
    #[inline]
    fn finish(&mut self) -> Result<Outcome, DbError> {
        self.reply.clear();
        if let Err(e) = self.reader.reply(&mut self.link.stream, &mut self.reply) {
            return Err(self.link.broken(e));
        }
        self.replied()
    }

    /// The outcome of the reply read into `self.reply`: its error (a FATAL one closes the session), or
    /// its counts.
    #[inline]
    fn replied(&mut self) -> Result<Outcome, DbError> {
        if let Some(e) = self.reply.error.take() {
            let fatal = e.fatal;
            let e = DbError::Server(e);
            if fatal {
                self.link.close_after(&e);
            } else {
                self.status = self.reply.status;
            }
            return Err(e);
        }
        self.status = self.reply.status;
        Ok(Outcome { rows: self.reply.rows, affected: self.reply.affected })
    }
}

impl Session for Conn {
    /// Prepares named statements, (name, SQL) each, parameter types left to the server; one round trip.
    fn prepare(&mut self, statements: &[(&str, &str)]) -> Result<(), DbError> {
        self.link.wbuf.clear();
        for (name, sql) in statements {
            frontend::parse(name, sql, [], &mut self.link.wbuf).map_err(DbError::client)?;
        }
        frontend::sync(&mut self.link.wbuf);
        self.link.send()?;
        self.finish().map(|_| ())
    }

    /// Runs a prepared statement: Bind, Execute and Sync in one write, then its reply.
    #[inline]
    fn execute<'a, P: Param + 'a>(
        &mut self,
        statement: &str,
        params: impl IntoIterator<Item = &'a P>,
    ) -> Result<Outcome, DbError> {
        self.link.wbuf.clear();
        wire::bind_execute(statement, params, &mut self.link.wbuf).map_err(DbError::client)?;
        self.link.send()?;
        self.finish()
    }

    /// Runs SQL with the simple query protocol (one Query message; several statements allowed:
    /// rows add up, `affected` is the last statement's).
    #[inline]
    fn simple(&mut self, sql: &str) -> Result<Outcome, DbError> {
        self.link.wbuf.clear();
        frontend::query(sql, &mut self.link.wbuf).map_err(DbError::client)?;
        self.link.send()?;
        self.finish()
    }

    /// Runs one query with the simple protocol and returns its rows as text (NULL as None).
    fn rows(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, DbError> {
        let mut rows = Vec::new();
        self.each_row(sql, &mut |r| {
            rows.push(r.iter().map(|v| v.map(|b| String::from_utf8_lossy(b).into_owned())).collect())
        })?;
        Ok(rows)
    }

    /// Runs one query with the simple protocol, handing each row to `row` as it is read.
    fn each_row(&mut self, sql: &str, row: &mut OnRow<'_>) -> Result<u64, DbError> {
        self.link.wbuf.clear();
        frontend::query(sql, &mut self.link.wbuf).map_err(DbError::client)?;
        self.link.send()?;
        self.reply.clear();
        if let Err(e) = self.reader.rows_each(&mut self.link.stream, &mut self.reply, row) {
            return Err(self.link.broken(e));
        }
        self.replied().map(|o| o.rows)
    }

    fn dialect(&self) -> &'static dyn Dialect {
        &super::DIALECT
    }

    /// COPY table FROM STDIN in the text format, '|' between fields and an empty field NULL: the rows
    /// go in CopyData messages of about `wire::COPY_CHUNK` bytes, then CopyDone, and the command's tag
    /// counts them. A row of the wrong form or an error reading them sends CopyFail instead, so the
    /// server loads none of them, and that error is returned.
    fn bulk_load(&mut self, table: &str, columns: usize, rows: &mut dyn BufRead) -> Result<u64, DbError> {
        let sql = format!("COPY {table} FROM STDIN WITH (FORMAT text, DELIMITER '|', NULL '')");
        self.link.wbuf.clear();
        frontend::query(&sql, &mut self.link.wbuf).map_err(DbError::client)?;
        self.link.send()?;
        self.reply.clear();
        match self.reader.copy_in(&mut self.link.stream, &mut self.reply) {
            Ok(true) => {}
            // Refused (no such table, say): the error, or a reply that loaded nothing.
            Ok(false) => return self.replied().map(|o| o.affected),
            Err(e) => return Err(self.link.broken(e)),
        }
        let mut line = Vec::new();
        let mut number = 0u64;
        wire::begin_copy_data(&mut self.link.wbuf);
        let failure = loop {
            line.clear();
            match rows.read_until(b'\n', &mut line) {
                Ok(0) => break None,
                Ok(_) => {}
                Err(e) => break Some(bulk::read_error(&e, number + 1)),
            }
            number += 1;
            if let Err(e) = bulk::write_row(&line, columns, b"", number, &mut self.link.wbuf) {
                break Some(e);
            }
            if self.link.wbuf.len() >= wire::COPY_CHUNK {
                wire::end_copy_data(&mut self.link.wbuf);
                self.link.send()?;
                wire::begin_copy_data(&mut self.link.wbuf);
            }
        };
        if wire::end_copy_data(&mut self.link.wbuf) {
            self.link.send()?;
        }
        self.link.wbuf.clear();
        match &failure {
            None => frontend::copy_done(&mut self.link.wbuf),
            Some(why) => frontend::copy_fail(why, &mut self.link.wbuf).map_err(DbError::client)?,
        }
        self.link.send()?;
        let done = self.finish();
        match (failure, done) {
            (None, done) => done.map(|o| o.affected),
            // The server's answer to CopyFail is an error that repeats the reason: the reason is the error.
            (Some(_), Err(e @ DbError::Closed(_))) => Err(e),
            (Some(why), _) => Err(DbError::Client(why)),
        }
    }

    fn set_statement_timeout(&mut self, seconds: u64) -> Result<(), DbError> {
        self.simple(&format!("SET statement_timeout = '{seconds}s'")).map(|_| ())
    }

    fn is_closed(&self) -> bool {
        self.link.closed
    }

    /// Inside a transaction block, failed or not (the last ReadyForQuery said so).
    fn in_transaction(&self) -> bool {
        matches!(self.status, b'T' | b'E')
    }
}

impl Drop for Conn {
    /// Says goodbye, so the server does not log an unexpected EOF.
    fn drop(&mut self) {
        self.link.farewell(|b| {
            b.clear();
            frontend::terminate(b);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::pg::wire::tests::{complete, data_row, error, msg, ready};
    use crate::driver::{describe, error_kind};
    use std::io::{Read, Write};
    use std::os::unix::net::UnixStream;
    use std::thread;
    use std::time::Instant;

    /// Reads one frontend message (tag, body); the startup message has no tag (reported as 0).
    fn read_msg(s: &mut UnixStream, startup: bool) -> (u8, Vec<u8>) {
        let mut tag = [0u8];
        if !startup {
            s.read_exact(&mut tag).unwrap();
        }
        let mut len = [0u8; 4];
        s.read_exact(&mut len).unwrap();
        let mut body = vec![0; i32::from_be_bytes(len) as usize - 4];
        s.read_exact(&mut body).unwrap();
        (tag[0], body)
    }

    /// A fake server: md5 authentication, then scripted answers to each request; returns its end
    /// of the socket, still open.
    fn serve(mut s: UnixStream, answers: Vec<(u8, Vec<u8>)>) -> UnixStream {
        let (_, startup) = read_msg(&mut s, true);
        assert!(startup.windows(8).any(|w| w == b"user\0bob"));
        let salt = [1, 2, 3, 4];
        s.write_all(&msg(b'R', &[0, 0, 0, 5, 1, 2, 3, 4])).unwrap();
        let (tag, body) = read_msg(&mut s, false);
        assert_eq!(tag, b'p');
        assert_eq!(&body[..body.len() - 1], md5_hash(b"bob", b"secret", salt).as_bytes());
        let mut hello = msg(b'R', &[0, 0, 0, 0]);
        hello.extend(msg(b'S', b"server_version\x0015.4\0"));
        hello.extend(msg(b'K', &[0, 0, 0, 1, 0, 0, 0, 2]));
        hello.extend(ready(b'I'));
        s.write_all(&hello).unwrap();
        for (last_tag, answer) in answers {
            // Read up to the request's last message (Sync or Query).
            while read_msg(&mut s, false).0 != last_tag {}
            // Answer in two writes, split inside a message.
            let half = answer.len() / 2;
            s.write_all(&answer[..half]).unwrap();
            s.write_all(&answer[half..]).unwrap();
        }
        s
    }

    #[test]
    fn a_session_against_a_fake_server() {
        let (client, server) = UnixStream::pair().unwrap();
        let mut select = msg(b'2', &[]);
        select.extend(data_row(&[b"a"]));
        select.extend(data_row(&[b"b"]));
        select.extend(complete("SELECT 2"));
        select.extend(ready(b'I'));
        let mut begin = complete("BEGIN");
        begin.extend(ready(b'T'));
        let mut failed = msg(b'2', &[]);
        failed.extend(error("ERROR", "23505", "duplicate key"));
        failed.extend(ready(b'E'));
        let mut rollback = complete("ROLLBACK");
        rollback.extend(ready(b'I'));
        let fatal = error("FATAL", "57P01", "terminating connection");
        let script = vec![
            (b'S', [msg(b'1', &[]), ready(b'I')].concat()),
            (b'S', select),
            (b'Q', begin),
            (b'S', failed),
            (b'Q', rollback),
            (b'S', fatal),
        ];
        let fake = thread::spawn(move || serve(server, script));
        // Each test records losses in its own registry: the process-wide one is shared by the test threads.
        static LOST_HERE: Lost = Lost::new();
        let mut c = Conn::start_recording(Stream::unix(client), "bob", "db", "secret", &LOST_HERE).unwrap();
        c.prepare(&[("s1", "SELECT c FROM t WHERE id=$1")]).unwrap();
        assert_eq!(c.execute("s1", &[7i64]).unwrap(), Outcome { rows: 2, affected: 2 });
        assert!(!c.in_transaction());
        c.simple("BEGIN").unwrap();
        assert!(c.in_transaction());
        match c.execute("s1", &[8i64]) {
            Err(DbError::Server(e)) => assert_eq!(e.code, "23505"),
            other => panic!("{other:?}"),
        }
        assert!(c.in_transaction() && !c.is_closed());
        c.simple("ROLLBACK").unwrap();
        assert!(!c.in_transaction());
        let e = c.execute("s1", &[9i64]).unwrap_err();
        assert_eq!(error_kind(&e), "sqlstate-57P01");
        assert!(c.is_closed());
        drop(fake.join().unwrap());
        let e = c.simple("SELECT 1").unwrap_err();
        assert_eq!(error_kind(&e), "connection-closed");
        // The FATAL lost the connection, once; the error after it is no second loss.
        drop(c);
        assert_eq!(LOST_HERE.count(), 1);
        assert_eq!(LOST_HERE.ended_early(Instant::now()).unwrap().reason, "57P01: terminating connection");
    }

    fn answer(tag: &str) -> Vec<u8> {
        [complete(tag), ready(b'I')].concat()
    }

    #[test]
    fn a_connection_the_server_drops_mid_session_is_lost() {
        static LOST_HERE: Lost = Lost::new();
        let (client, server) = UnixStream::pair().unwrap();
        let fake = thread::spawn(move || {
            let mut s = serve(server, vec![(b'Q', answer("SELECT 1"))]);
            // The next request is read and never answered: the backend is gone (killed, say).
            assert_eq!(read_msg(&mut s, false).0, b'Q');
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
        drop(c);
        let early = LOST_HERE.ended_early(t0).unwrap();
        assert_eq!(early.connections_lost, 1);
        assert_eq!(early.reason, "connection closed: the server closed the connection");
        assert!(early.at_s >= 0.0 && early.at_s < t0.elapsed().as_secs_f64() + 0.001);
    }

    #[test]
    fn a_fatal_error_mid_session_is_lost() {
        static LOST_HERE: Lost = Lost::new();
        let (client, server) = UnixStream::pair().unwrap();
        let crash = "terminating connection because of crash of another server process";
        let script = vec![(b'Q', answer("SELECT 1")), (b'Q', error("FATAL", "57P02", crash))];
        let fake = thread::spawn(move || serve(server, script));
        let t0 = Instant::now();
        let mut c = Conn::start_recording(Stream::unix(client), "bob", "db", "secret", &LOST_HERE).unwrap();
        assert_eq!(c.rows("SELECT 1").unwrap(), Vec::<Vec<Option<String>>>::new());
        let e = c.rows("SELECT 2").unwrap_err();
        assert_eq!(error_kind(&e), "sqlstate-57P02");
        assert!(c.is_closed());
        drop(fake.join().unwrap());
        assert!(c.simple("SELECT 3").is_err());
        drop(c);
        let early = LOST_HERE.ended_early(t0).unwrap();
        assert_eq!(early.connections_lost, 1);
        assert_eq!(early.reason, format!("57P02: {crash}"));
    }

    #[test]
    fn a_normal_end_an_error_and_a_failed_start_are_no_losses() {
        static LOST_HERE: Lost = Lost::new();
        let (client, server) = UnixStream::pair().unwrap();
        let mut failed = error("ERROR", "42P01", "relation \"t\" does not exist");
        failed.extend(ready(b'I'));
        let fake = thread::spawn(move || serve(server, vec![(b'Q', answer("SELECT 1")), (b'Q', failed)]));
        let mut c = Conn::start_recording(Stream::unix(client), "bob", "db", "secret", &LOST_HERE).unwrap();
        c.simple("SELECT 1").unwrap();
        // An ERROR leaves the session usable.
        assert_eq!(error_kind(&c.simple("SELECT * FROM t").unwrap_err()), "sqlstate-42P01");
        assert!(!c.is_closed());
        let mut s = fake.join().unwrap();
        // The end of a step: the client says goodbye (Terminate), and nothing is lost.
        drop(c);
        assert_eq!(read_msg(&mut s, false).0, b'X');
        drop(s);
        // A connect that fails, on a closed socket or a FATAL during startup, is an error of its own.
        let (client, server) = UnixStream::pair().unwrap();
        drop(server);
        assert!(Conn::start_recording(Stream::unix(client), "bob", "db", "secret", &LOST_HERE).is_err());
        let (client, mut server) = UnixStream::pair().unwrap();
        let fake = thread::spawn(move || {
            read_msg(&mut server, true);
            server.write_all(&error("FATAL", "28P01", "password authentication failed")).unwrap();
            server
        });
        let Err(e) = Conn::start_recording(Stream::unix(client), "bob", "db", "secret", &LOST_HERE) else {
            panic!("connected")
        };
        assert_eq!(error_kind(&e), "sqlstate-28P01");
        drop(fake.join().unwrap());
        assert_eq!(LOST_HERE.count(), 0);
        assert_eq!(LOST_HERE.ended_early(Instant::now()), None);
    }

    /// The server's side of one COPY FROM STDIN: the Query's text, then (after a CopyInResponse) every
    /// CopyData's body until CopyDone or CopyFail, whose tag and body it returns too.
    fn copy_in(s: &mut UnixStream) -> (String, Vec<Vec<u8>>, u8, Vec<u8>) {
        let (tag, query) = read_msg(s, false);
        assert_eq!(tag, b'Q');
        s.write_all(&msg(b'G', &[0, 0, 2, 0, 0, 0, 0])).unwrap();
        let mut data = Vec::new();
        loop {
            match read_msg(s, false) {
                (b'd', body) => data.push(body),
                (end, body) => return (String::from_utf8(query).unwrap(), data, end, body),
            }
        }
    }

    #[test]
    fn a_bulk_load_copies_the_rows_in_chunks() {
        use std::io::Cursor;
        let (client, server) = UnixStream::pair().unwrap();
        let fake = thread::spawn(move || {
            let mut s = serve(server, vec![]);
            let first = copy_in(&mut s);
            s.write_all(&[complete("COPY 20000"), ready(b'I')].concat()).unwrap();
            let second = copy_in(&mut s);
            let mut failed = error("ERROR", "57014", "COPY from stdin failed: row 2 ...");
            failed.extend(ready(b'I'));
            s.write_all(&failed).unwrap();
            // Refused before any row: no such table.
            read_msg(&mut s, false);
            let mut missing = error("ERROR", "42P01", "relation \"nope\" does not exist");
            missing.extend(ready(b'I'));
            s.write_all(&missing).unwrap();
            (s, first, second)
        });
        static LOST_HERE: Lost = Lost::new();
        let mut c = Conn::start_recording(Stream::unix(client), "bob", "db", "secret", &LOST_HERE).unwrap();
        let rows: String = (0..20_000).map(|i| format!("{i}|name {i}||\n")).collect();
        assert_eq!(c.bulk_load("t", 3, &mut Cursor::new(rows.clone().into_bytes())).unwrap(), 20_000);
        let e = c.bulk_load("t", 3, &mut Cursor::new(b"1|a||\n2|b|\n".to_vec())).unwrap_err();
        assert_eq!(describe(&e), "row 2 has 2 fields where the table has 3 columns");
        let e = c.bulk_load("nope", 1, &mut Cursor::new(b"1|\n".to_vec())).unwrap_err();
        assert_eq!(error_kind(&e), "sqlstate-42P01");
        assert!(!c.is_closed() && !c.in_transaction());
        let (_s, (query, data, end, _), (_, second, fail, why)) = fake.join().unwrap();
        assert_eq!(query, "COPY t FROM STDIN WITH (FORMAT text, DELIMITER '|', NULL '')\0");
        // Chunks of about 64 KiB, each whole rows, without the last field's '|'.
        assert!(data.len() > 3 && data.iter().all(|d| d.len() <= wire::COPY_CHUNK + 100 && d.ends_with(b"\n")));
        let sent: Vec<u8> = data.concat();
        assert_eq!(sent, rows.replace("||\n", "|\n").into_bytes());
        assert_eq!(end, b'c');
        // The bad row's error goes to the server as CopyFail, after the rows before it.
        assert_eq!(second.concat(), b"1|a|\n");
        assert_eq!((fail, why), (b'f', b"row 2 has 2 fields where the table has 3 columns\0".to_vec()));
        drop(c);
        assert_eq!(LOST_HERE.count(), 0);
    }

    #[test]
    fn rows_are_handed_over_as_they_come_and_a_timeout_is_its_kind() {
        let (client, server) = UnixStream::pair().unwrap();
        let mut select = msg(b'T', &[0, 0]);
        select.extend(data_row(&[b"1", b"a|b"]));
        let mut null_row = 2i16.to_be_bytes().to_vec();
        null_row.extend_from_slice(&(-1i32).to_be_bytes());
        null_row.extend_from_slice(&0i32.to_be_bytes());
        select.extend(msg(b'D', &null_row));
        select.extend(complete("SELECT 2"));
        select.extend(ready(b'I'));
        let mut timeout = error("ERROR", "57014", "canceling statement due to statement timeout");
        timeout.extend(ready(b'I'));
        let script = vec![(b'Q', answer("SET")), (b'Q', select), (b'Q', timeout)];
        let fake = thread::spawn(move || serve(server, script));
        static LOST_HERE: Lost = Lost::new();
        let mut c = Conn::start_recording(Stream::unix(client), "bob", "db", "secret", &LOST_HERE).unwrap();
        c.set_statement_timeout(5).unwrap();
        let mut seen = Vec::new();
        let n = c.each_row("SELECT", &mut |r| seen.push(format!("{r:?}"))).unwrap();
        assert_eq!(n, 2);
        assert_eq!(seen, [format!("{:?}", [Some(&b"1"[..]), Some(b"a|b")]), format!("{:?}", [None, Some(&b""[..])])]);
        let e = c.each_row("SELECT pg_sleep(10)", &mut |_| {}).unwrap_err();
        assert_eq!(error_kind(&e), "timeout");
        assert!(!c.is_closed());
        drop(fake.join().unwrap());
    }

    #[test]
    fn a_closed_socket_is_connection_closed() {
        let (client, server) = UnixStream::pair().unwrap();
        drop(server);
        let Err(e) = Conn::start(Stream::unix(client), "bob", "db", "secret") else { panic!("connected") };
        assert_eq!(error_kind(&e), "connection-closed", "{e:?}");
    }
}
