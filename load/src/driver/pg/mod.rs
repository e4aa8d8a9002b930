//! Postgres: a minimal, blocking client of the frontend/backend protocol v3 (`conn`, `wire`), one
//! connection per client thread, and Postgres's SQL (`dialect`).

mod conn;
mod dialect;
pub mod wire;

pub use conn::Conn;
pub use dialect::DIALECT;

use super::{describe, DbError, Dialect, Driver, Endpoint};
use conn::Stream;
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::time::Duration;

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

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Tries each address the host resolves to; no Nagle delay on the small requests.
fn tcp_connect(host: &str, port: u16) -> Result<TcpStream, DbError> {
    let addrs = (host, port).to_socket_addrs().map_err(|e| DbError::Client(format!("cannot resolve {host}: {e}")))?;
    let mut last = DbError::Client(format!("{host} resolves to no address"));
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT) {
            Ok(s) => {
                s.set_nodelay(true).map_err(DbError::io)?;
                return Ok(s);
            }
            Err(e) => last = DbError::Client(format!("error connecting to server {addr}: {e}")),
        }
    }
    Err(last)
}
