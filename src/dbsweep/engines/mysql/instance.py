"""One MySQL instance: MariaDB's server lifecycle (`engines.mariadb.instance`), where MySQL differs:

- the data directory is made by the server itself (`mysqld --initialize-insecure`), which runs our accounts'
  SQL after its own (`--init-file`); root is locked, so only dbsweep's generated account can log in;
- the option file's section is `[mysqld]` (MySQL reads neither `[mariadbd]` nor `[mariadb]`);
- accounts authenticate with caching_sha2_password, MySQL's default: dbsweep's own connections take the
  private Unix socket, over which the password may go in clear, and the load client takes loopback TCP
  with the server's RSA key (made by `--initialize`);
- the server's settings are in performance_schema (MariaDB has INFORMATION_SCHEMA.SYSTEM_VARIABLES), and a
  connection's thread runs `handle_connection`;
- LOAD DATA LOCAL (the analytic loads) is off by default in MySQL 8 and later: dbsweep's section turns it on;
- there is no `ssl` option to turn off for counts: `--initialize` makes the certificates and keys once, so
  no start spends instructions making them.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from dbsweep import procs
from dbsweep.engines.mariadb import instance as mariadb
from dbsweep.engines.mariadb import stats
from dbsweep.engines.mariadb.instance import DB_NAME, DB_USER
from dbsweep.errors import ServerError

# MySQL writes "[ERROR] [MY-010119] [Server] Aborting" when it gives up its start.
_ABORTING = re.compile(r"\[ERROR\] (?:\[MY-\d+\] \[Server\] )?Aborting")


@dataclass
class Server(mariadb.Server):
    """One MySQL instance: a data directory in the workspace and, while running, its process."""

    client_thread_functions: ClassVar[tuple[str, ...]] = ("handle_connection",)
    # At one fixed real-time priority on one CPU MySQL 9.7 does not get through a 1,000-row load: its connection
    # thread spun for minutes (measured here, under valgrind and without it), as a thread that waits by spinning
    # keeps the CPU from the one it waits for. Its counts run pinned under the normal scheduler.
    lockstep: ClassVar[bool] = False
    title: ClassVar[str] = "MySQL"
    died_process: ClassVar[str] = "mysqld"
    aborting: ClassVar[re.Pattern[str]] = _ABORTING
    option_group: ClassVar[str] = "mysqld"
    enabled_metrics: ClassVar[str] = stats.MYSQL_METRICS
    own_settings: ClassVar[tuple[str, ...]] = ("local_infile = ON",)  # off by default from MySQL 8
    quiet_config: ClassVar[str] = "\n".join(
        line for line in mariadb.Server.quiet_config.splitlines() if not line.startswith("ssl ")
    )

    # ---- init

    def _account_statements(self, password: str) -> str:
        """dbsweep's account at 127.0.0.1 and localhost (caching_sha2_password, MySQL's default), the benchmark
        database, and root locked behind a random password nobody keeps."""
        if not re.fullmatch(r"[A-Za-z0-9_-]+", password):
            raise ServerError("a generated password must be plain letters, digits, '-' and '_'")
        users = [f"'{DB_USER}'@'127.0.0.1'", f"'{DB_USER}'@'localhost'"]
        root = secrets.token_urlsafe(24)
        return "\n".join(
            [
                f"CREATE DATABASE IF NOT EXISTS `{DB_NAME}`;",
                *(f"CREATE USER {u} IDENTIFIED BY '{password}';" for u in users),
                *(f"GRANT ALL PRIVILEGES ON *.* TO {u};" for u in users),
                f"ALTER USER 'root'@'localhost' IDENTIFIED BY '{root}' ACCOUNT LOCK;",
                "",
            ]
        )

    def _make_datadir(self, accounts: Path) -> None:
        """The system tables by the server's own initialisation, which then runs `accounts` (--init-file)."""
        r = procs.run_as(
            [
                self._server_binary(),
                f"--defaults-file={self.defaults_file}",
                "--initialize-insecure",
                f"--init-file={accounts}",
            ],
            user=self.user,
        )
        self._check_bootstrap("mysqld --initialize-insecure", r)

    # ---- dbsweep's own connections

    def _where(self) -> dict[str, Any]:
        """The private Unix socket: caching_sha2_password's first login sends the password in clear, which MySQL
        allows over a socket only (over TCP it wants TLS or its RSA key)."""
        return {"unix_socket": str(self.socket_path)}

    def settings(self) -> list[dict[str, Any]]:
        """Settings the config or command line set, or that changed since start, as the running server reports
        them (MySQL keeps no default beside each value)."""
        rows = self._query(
            "SELECT LOWER(v.VARIABLE_NAME), g.VARIABLE_VALUE, v.VARIABLE_SOURCE "
            "FROM performance_schema.variables_info v "
            "JOIN performance_schema.global_variables g ON g.VARIABLE_NAME = v.VARIABLE_NAME "
            "WHERE v.VARIABLE_SOURCE <> 'COMPILED'"
        )
        return sorted(
            ({"name": r[0], "setting": r[1], "default": None, "source": str(r[2]).lower()} for r in rows),
            key=lambda d: str(d["name"]),
        )

    def _global(self, name: str) -> str | None:
        rows = self._query(
            "SELECT VARIABLE_VALUE FROM performance_schema.global_variables WHERE VARIABLE_NAME = %s", (name,)
        )
        return str(rows[0][0]) if rows and rows[0][0] is not None else None
