//! Connections to the engine under test: a minimal, blocking client of the
//! Postgres frontend/backend protocol v3. One connection per client thread.

mod conn;
pub mod lost;
pub mod wire;

pub use conn::Conn;
pub use wire::{put_int, Param};

use clap::Args;
use conn::Stream;
use std::io;
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::time::Duration;
use wire::ServerError;

/// Where and how to connect. The password comes from the environment so it
/// never shows in the process list.
#[derive(Args, Debug, Clone)]
pub struct ConnOpts {
    /// Host name, IP address, or the directory of the server's Unix socket.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    #[arg(long, default_value_t = 5432)]
    pub port: u16,
    #[arg(long, default_value = "dbsweep")]
    pub user: String,
    #[arg(long, default_value = "dbsweep")]
    pub dbname: String,
    /// Password (read from the environment only).
    #[arg(long = "password-env-unused", env = "DBSWEEP_PGPASSWORD", hide = true, default_value = "")]
    pub password: String,
}

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

impl ConnOpts {
    pub fn connect(&self) -> Result<Conn, String> {
        self.try_connect()
            .map_err(|e| format!("cannot connect to {}:{} as {}: {}", self.host, self.port, self.user, describe(&e)))
    }

    fn try_connect(&self) -> Result<Conn, DbError> {
        let stream = if self.host.starts_with('/') {
            let path = format!("{}/.s.PGSQL.{}", self.host.trim_end_matches('/'), self.port);
            let s = UnixStream::connect(&path);
            Stream::unix(s.map_err(|e| DbError::Client(format!("error connecting to server {path}: {e}")))?)
        } else {
            Stream::Tcp(tcp_connect(&self.host, self.port)?)
        };
        Conn::start(stream, &self.user, &self.dbname, &self.password)
    }
}

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

/// Why a request failed.
#[derive(Debug)]
pub enum DbError {
    /// The server reported an error.
    Server(ServerError),
    /// The connection is gone (closed by the server, reset, or never made).
    Closed(String),
    /// The client failed on its own: a protocol violation, a bad value, an unsupported request.
    Client(String),
}

impl DbError {
    pub fn io(e: io::Error) -> DbError {
        use io::ErrorKind::*;
        match e.kind() {
            UnexpectedEof | ConnectionReset | ConnectionAborted | BrokenPipe | NotConnected => {
                DbError::Closed(e.to_string())
            }
            _ => DbError::Client(e.to_string()),
        }
    }

    pub fn client(e: impl std::fmt::Display) -> DbError {
        DbError::Client(e.to_string())
    }
}

/// One line for an error: the server's message when there is one.
pub fn describe(e: &DbError) -> String {
    match e {
        DbError::Server(s) => format!("{}: {}", s.code, s.message),
        DbError::Closed(m) => format!("connection closed: {m}"),
        DbError::Client(m) => m.clone(),
    }
}

/// The kind an error is counted under: the SQLSTATE when the server sent
/// one, else a short name for the client-side failure.
pub fn error_kind(e: &DbError) -> String {
    match e {
        DbError::Server(s) => format!("sqlstate-{}", s.code),
        DbError::Closed(_) => "connection-closed".to_string(),
        DbError::Client(_) => "client".to_string(),
    }
}
