//! MariaDB and Oracle's MySQL: a minimal, blocking client of the MySQL client/server protocol
//! (`conn`, `wire`, and `auth` for caching_sha2_password), one connection per client thread, and
//! MySQL's SQL (`dialect`). One engine for both servers: where they differ (statement timeouts), the
//! server's greeting says which it is.

mod auth;
mod conn;
mod dialect;
pub mod wire;

pub use conn::Conn;
pub use dialect::DIALECT;

/// The errors a statement ends with when the session's time limit stops it: MariaDB's
/// max_statement_time (ER_STATEMENT_TIMEOUT) and MySQL's max_execution_time (ER_QUERY_TIMEOUT).
pub const TIMEOUT_CODES: &[&str] = &["MYSQL_1969", "MYSQL_3024"];

use super::net::{tcp_connect, Stream};
use super::{describe, DbError, Dialect, Driver, Endpoint};
use std::os::unix::net::UnixStream;
use std::path::Path;

/// Connects to one MariaDB or MySQL database: over TCP, or over the server's Unix socket when the host is
/// the socket file's absolute path (the port is then unused).
#[derive(Debug, Clone)]
pub struct MysqlDriver {
    endpoint: Endpoint,
}

impl MysqlDriver {
    pub fn new(endpoint: Endpoint) -> MysqlDriver {
        MysqlDriver { endpoint }
    }

    fn try_connect(&self) -> Result<Conn, DbError> {
        let e = &self.endpoint;
        let stream = if e.host.starts_with('/') {
            let s = UnixStream::connect(&e.host).map_err(|err| {
                let hint =
                    if Path::new(&e.host).is_dir() { " (--host is the socket file, not its directory)" } else { "" };
                DbError::Client(format!("error connecting to server {}: {err}{hint}", e.host))
            })?;
            Stream::unix(s)
        } else {
            Stream::Tcp(tcp_connect(&e.host, e.port)?)
        };
        Conn::start(stream, &e.user, &e.dbname, &e.password)
    }

    /// The server as the errors name it.
    fn place(&self) -> String {
        let e = &self.endpoint;
        if e.host.starts_with('/') {
            e.host.clone()
        } else {
            format!("{}:{}", e.host, e.port)
        }
    }
}

impl Driver for MysqlDriver {
    type Session = Conn;

    fn connect(&self) -> Result<Conn, String> {
        self.try_connect()
            .map_err(|err| format!("cannot connect to {} as {}: {}", self.place(), self.endpoint.user, describe(&err)))
    }

    fn dialect(&self) -> &'static dyn Dialect {
        &DIALECT
    }
}
