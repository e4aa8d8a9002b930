//! What a server engine's connection does the same whatever its protocol: the stream with its
//! write buffer, and a connection that breaks being closed for good and recorded as lost once.
//! Shared by the Postgres and MariaDB drivers; each puts its own messages into `wbuf`.

use super::lost::Lost;
use super::net::Stream;
use super::{describe, DbError};
use std::io::{self, Write};
use std::time::Duration;

/// How long a connection's start (authentication included) may wait for the server.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(10);

/// One connection's stream and state. `B` is the engine's write buffer (`postgres_protocol`
/// writes into a `BytesMut`, the MariaDB driver into a `Vec<u8>`): a type parameter, so a send
/// costs what it cost when each driver had its own.
pub struct Link<B> {
    pub stream: Stream,
    /// The request being sent; cleared, never shrunk.
    pub wbuf: B,
    pub closed: bool,
    /// Where a loss of this connection is recorded: None until the start is over (a failed
    /// connect is an error of its own, not a lost connection).
    pub lost: Option<&'static Lost>,
}

impl<B: AsRef<[u8]>> Link<B> {
    /// A connection being started: reads and writes wait at most `STARTUP_TIMEOUT`.
    pub fn starting(mut stream: Stream, wbuf: B) -> Result<Link<B>, DbError> {
        stream.set_timeouts(Some(STARTUP_TIMEOUT)).map_err(DbError::io)?;
        Ok(Link { stream, wbuf, closed: false, lost: None })
    }

    /// The start is over: no more timeouts, and from now on breaking is a lost connection,
    /// recorded in `lost`.
    pub fn established(&mut self, lost: &'static Lost) -> Result<(), DbError> {
        self.stream.set_timeouts(None).map_err(DbError::io)?;
        self.lost = Some(lost);
        Ok(())
    }

    /// Marks the connection unusable after an I/O or protocol error.
    #[cold]
    pub fn broken(&mut self, e: io::Error) -> DbError {
        let e = DbError::io(e);
        self.close_after(&e);
        e
    }

    /// Marks the connection unusable after `e`. An established connection is recorded as lost,
    /// once: `closed` stays set, and a closed connection sends nothing more. Only failures come
    /// here, so the record (a lock, the reason's text) costs a healthy query nothing.
    #[cold]
    pub fn close_after(&mut self, e: &DbError) {
        if !self.closed {
            if let Some(lost) = self.lost {
                lost.record(describe(e));
            }
        }
        self.closed = true;
    }

    /// Sends the request in `wbuf`, in one write unless the kernel takes it in parts.
    #[inline]
    pub fn send(&mut self) -> Result<(), DbError> {
        if self.closed {
            return Err(DbError::Closed("the connection is closed".into()));
        }
        match self.stream.write_all(self.wbuf.as_ref()) {
            Ok(()) => Ok(()),
            Err(e) => Err(self.broken(e)),
        }
    }

    /// Says goodbye on a connection still open (`put` writes the engine's farewell into `wbuf`),
    /// so the server does not log the end as an error. A failure is ignored: the end comes anyway.
    pub fn farewell(&mut self, put: impl FnOnce(&mut B)) {
        if !self.closed {
            put(&mut self.wbuf);
            let _ = self.stream.write_all(self.wbuf.as_ref());
        }
    }
}
