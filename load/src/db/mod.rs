//! Connections to the engine under test. One connection per client thread.

use clap::Args;
use postgres::{Client, Config, NoTls};
use std::time::Duration;

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

impl ConnOpts {
    pub fn connect(&self) -> Result<Client, String> {
        let mut cfg = Config::new();
        cfg.host(&self.host)
            .port(self.port)
            .user(&self.user)
            .dbname(&self.dbname)
            .application_name("dbsweep-load")
            .connect_timeout(Duration::from_secs(10));
        if !self.password.is_empty() {
            cfg.password(&self.password);
        }
        cfg.connect(NoTls)
            .map_err(|e| format!("cannot connect to {}:{} as {}: {}", self.host, self.port, self.user, describe(&e)))
    }
}

/// One line for an error: the server's message when there is one.
pub fn describe(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{}: {}", db.code().code(), db.message()),
        None => {
            let mut s = e.to_string();
            let mut src = std::error::Error::source(e);
            while let Some(inner) = src {
                s.push_str(": ");
                s.push_str(&inner.to_string());
                src = inner.source();
            }
            s
        }
    }
}

/// The kind an error is counted under: the SQLSTATE when the server sent
/// one, else a short name for the client-side failure.
pub fn error_kind(e: &postgres::Error) -> String {
    match e.code() {
        Some(code) => format!("sqlstate-{}", code.code()),
        None if e.is_closed() => "connection-closed".to_string(),
        None => "client".to_string(),
    }
}
