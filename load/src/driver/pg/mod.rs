//! Postgres: a minimal, blocking client of the frontend/backend protocol v3 (`conn`, `wire`), one
//! connection per client thread, and Postgres's SQL (`dialect`).

mod conn;
mod dialect;
pub mod wire;

pub use conn::Conn;
pub use dialect::DIALECT;

/// The SQLSTATE a statement ends with when statement_timeout stops it (query_canceled).
pub const TIMEOUT_CODES: &[&str] = &["57014"];

use super::net::{tcp_connect, Stream};
use super::{describe, DbError, Dialect, Driver, Endpoint};
use std::os::unix::net::UnixStream;

/// Connects to one Postgres database.
#[derive(Debug, Clone)]
pub struct PgDriver {
    endpoint: Endpoint,
}

impl PgDriver {
    pub fn new(endpoint: Endpoint) -> PgDriver {
        PgDriver { endpoint }
    }

    fn try_connect(&self) -> Result<Conn, DbError> {
        let e = &self.endpoint;
        let stream = if e.host.starts_with('/') {
            let path = format!("{}/.s.PGSQL.{}", e.host.trim_end_matches('/'), e.port);
            let s = UnixStream::connect(&path);
            Stream::unix(s.map_err(|err| DbError::Client(format!("error connecting to server {path}: {err}")))?)
        } else {
            Stream::Tcp(tcp_connect(&e.host, e.port)?)
        };
        Conn::start(stream, &e.user, &e.dbname, &e.password)
    }
}

impl Driver for PgDriver {
    type Session = Conn;

    fn connect(&self) -> Result<Conn, String> {
        let e = &self.endpoint;
        self.try_connect()
            .map_err(|err| format!("cannot connect to {}:{} as {}: {}", e.host, e.port, e.user, describe(&err)))
    }

    fn dialect(&self) -> &'static dyn Dialect {
        &DIALECT
    }
}
