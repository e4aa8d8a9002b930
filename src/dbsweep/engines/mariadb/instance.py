"""MariaDB: a data directory made by the install's mariadb-install-db, the config diff, start, probe, stop.

Every instance's home holds:

    my.cnf        the only option file the server reads (`--defaults-file` is its first argument, so
                  /etc/mysql is never read): a [mariadbd] section with where everything is, then the diff
    data/         the data directory, with the server's PID file (mariadbd.pid)
    sock/         a private directory (0700) for the server's Unix socket (or one in /tmp, for a long path)
    tmp/          the server's tmpdir (0700): a server starting deletes every `#sql*` file of its tmpdir, so
                  in a shared /tmp one server's start removed another's temporary tables mid-bootstrap
    password      the generated password of the user `dbsweep` (0600)
    server.log    the server's error log and whatever it writes before it opens it

The server listens on a free loopback port and the private socket only. Its accounts: `dbsweep` at
127.0.0.1 and localhost with the generated password and every privilege (the load client creates tables
and databases; dbsweep's own queries set globals and read the status), `root` at localhost through the
socket for the system's root only (mariadb-install-db's default, which no password opens), `mariadb.sys`
(the owner of the sys schema's views, which cannot log in); no anonymous user, no test database.

MariaDB serves every connection in its one process (threads): there is no backend process to kill alone
and no crash restart without mysqld_safe, so a server that crashed is a server that died.
"""

from __future__ import annotations

import contextlib
import logging
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import psutil
import pymysql
from pymysql.connections import Connection

from dbsweep import procs
from dbsweep.engines import servers
from dbsweep.engines.base import Access, EngineError
from dbsweep.engines.mariadb import config, stats
from dbsweep.engines.mariadb.install import ROCKSDB_PLUGIN, Install, known_settings
from dbsweep.errors import ServerError

_log = logging.getLogger(__name__)

DB_USER = "dbsweep"
DB_NAME = "dbsweep"
DEFAULTS_FILE = "my.cnf"
PID_FILE = "mariadbd.pid"
SOCKET_NAME = "mariadb.sock"
# Unix socket paths are limited to 107 bytes (sun_path); mariadbd also makes "<socket>.lock" beside it.
_SOCKET_PATH_MAX = 107 - len(f"/{SOCKET_NAME}.lock")
# mariadb-install-db's account for the system's root, through the socket only, which no password opens.
_ROOT_SOCKET_USER = "root"
# InnoDB's default buffer pool (innodb_buffer_pool_size).
DEFAULT_BUFFER_POOL = "128M"
# Seconds to wait for a server to answer: valgrind slows start-up (and recovery) tens of times.
READY_TIMEOUT = 120.0
WRAPPED_READY_TIMEOUT = 1200.0
# Seconds a clean shutdown may take (InnoDB writes its dirty pages; with innodb_fast_shutdown=0 it purges
# first), then the server is killed.
STOP_TIMEOUT = 300.0
WRAPPED_STOP_TIMEOUT = 1800.0
FAILED_START_STOP_TIMEOUT = 30.0
# The server's error for credentials it refuses (ER_ACCESS_DENIED_ERROR).
_ACCESS_DENIED = 1045

# Lines of a server log that explain a failure: its errors and warnings (an option it could not set, a
# file it could not open), what it printed before it opened the log, and a crash's report.
_EXPLAINING = re.compile(
    r"(\[ERROR\]|\[Warning\]|\bERROR\b|\bAborting\b|unknown (variable|option)|Incorrect|Error while setting|"
    r"not a compiled character set|Can't|cannot|Could not|Permission denied|No space left|got signal|"
    r"Assertion|Fatal|\bsignal \d+)",
    re.IGNORECASE,
)
# The line a server writes when it gives up starting.
_ABORTING = re.compile(r"\[ERROR\] Aborting")
# Routine warnings that explain nothing (a container's file limit).
_NOISE = re.compile(r"Could not increase number of max_open_files|'proxies_priv' entry")


def relevant_log_lines(log: Path, limit: int = 12, start: int = 0) -> str:
    """The lines of a server log (from byte `start`) that explain a failure, else its tail."""
    return servers.log_lines(log, _EXPLAINING, limit, start, _NOISE)


def relevant_lines(lines: list[str], limit: int = 12) -> str:
    """Of a server's (or its bootstrap's) output, the lines that explain a failure, else the last ones."""
    return servers.explaining_lines(lines, _EXPLAINING, limit, _NOISE)


def _one_line(e: Exception) -> str:
    """A driver error as the server said it, in one line: "(1045) Access denied for user ..."."""
    if isinstance(e, pymysql.err.MySQLError) and len(e.args) >= 2:
        return f"({e.args[0]}) {str(e.args[1]).strip().splitlines()[0] if str(e.args[1]).strip() else ''}".strip()
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


# ---- a server left behind, and proof that it is ours ----------------------------------------------------


def _read_pid(pidfile: Path) -> int | None:
    try:
        text = pidfile.read_text(errors="replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else -1


def _defaults_file_of(cmdline: list[str]) -> Path | None:
    """The option file a server's command line names (`--defaults-file=F`, its first option)."""
    for a in cmdline:
        if a.startswith("--defaults-file="):
            return Path(a.partition("=")[2])
    return None


def _datadir_in(defaults: Path) -> Path | None:
    """The datadir a my.cnf of dbsweep's names."""
    try:
        text = defaults.read_text(errors="replace")
    except OSError:
        return None
    m = re.search(r"^datadir\s*=\s*(.+?)\s*$", text, re.MULTILINE)
    return Path(m.group(1)) if m else None


def _is_server_of(proc: psutil.Process, datadir: Path, pidfile: Path) -> str | None:
    """Why `proc` is provably the server dbsweep started on `datadir`; None if it is not.

    Proof takes three facts: its command line names the option file of this data directory's home
    (`--defaults-file=<home>/my.cnf`; under a wrapper such as valgrind the server's arguments stay on it),
    that file names this data directory, and the process started before the PID file was written (a
    recycled PID belongs to a process that started after).
    """
    want = (datadir.parent / DEFAULTS_FILE).resolve()
    try:
        defaults = _defaults_file_of(proc.cmdline())
        started = proc.create_time()
        written = pidfile.stat().st_mtime
    except (psutil.Error, OSError):
        return None
    if defaults is None or defaults.resolve() != want:
        return None
    named = _datadir_in(want)
    if named is None or named.resolve() != datadir.resolve():
        return None
    if started > written + 1:  # the kernel's start time is in clock ticks
        return None
    return f"PID {proc.pid} runs with {want}, which names {datadir}, and started before its PID file"


def stop_stale(datadir: Path) -> None:
    """Stops a server a killed dbsweep left on this data directory, if it is provably that server.

    A PID file whose process is gone, or is some other process, is set aside (renamed), never signalled:
    PIDs are recycled.
    """
    pidfile = datadir / PID_FILE
    pid = _read_pid(pidfile)
    if pid is None:
        return
    proc: psutil.Process | None
    try:
        proc = psutil.Process(pid) if pid > 0 else None
    except psutil.Error:
        proc = None
    proof = _is_server_of(proc, datadir, pidfile) if proc is not None else None
    servers.stop_left_behind(
        datadir,
        pidfile,
        pid,
        proc,
        proof,
        server="server",
        stop=(signal.SIGTERM, "SIGTERM"),  # a clean shutdown
        last=(signal.SIGKILL, "killing it"),
        patience=120,
    )


# ---- the instance ------------------------------------------------------------------------------------------


@dataclass
class Server(servers.ServerInstance):
    """One MariaDB instance: a data directory in the workspace and, while running, its process."""

    # Whether init makes the accounts in mariadb-install-db's own bootstrap (--extra-file, where the script
    # has it); False makes them in a bootstrap of their own, the path an older script takes.
    accounts_with_install_db: bool = True

    # One process, many threads: the instruction count is taken per thread; a connection's thread (one per
    # client, the default thread_handling) runs do_handle_one_connection, the background threads do not.
    threaded: ClassVar[bool] = True
    client_thread_functions: ClassVar[tuple[str, ...]] = ("do_handle_one_connection",)

    title: ClassVar[str] = "MariaDB"
    died_process: ClassVar[str] = "mariadbd"
    replaced_process: ClassVar[str] = "the server"
    # SIGTERM is the clean shutdown (InnoDB writes back its dirty pages).
    shutdown_signal: ClassVar[signal.Signals] = signal.SIGTERM
    socket_path_max: ClassVar[int] = _SOCKET_PATH_MAX
    ready_timeout: ClassVar[float] = READY_TIMEOUT
    wrapped_ready_timeout: ClassVar[float] = WRAPPED_READY_TIMEOUT
    explaining: ClassVar[re.Pattern[str]] = _EXPLAINING
    noise: ClassVar[re.Pattern[str] | None] = _NOISE
    # The line the server writes when it gives up its start.
    aborting: ClassVar[re.Pattern[str]] = _ABORTING
    # The section of the option file the server reads (a MySQL server reads [mysqld] instead).
    option_group: ClassVar[str] = "mariadbd"
    enabled_metrics: ClassVar[str] = stats.MARIADB_METRICS
    # What dbsweep's section sets beside where everything is (before the config diff, which may undo it).
    own_settings: ClassVar[tuple[str, ...]] = ()

    @property
    def datadir(self) -> Path:
        return self.home / "data"

    @property
    def defaults_file(self) -> Path:
        return self.home / DEFAULTS_FILE

    @property
    def socket_path(self) -> Path | None:
        return self.socket_dir / SOCKET_NAME if self.socket_dir is not None else None

    @property
    def _install(self) -> Install:
        if not isinstance(self.install, Install):
            raise TypeError(f"not a MariaDB install: {self.install!r}")
        return self.install

    def _server_binary(self) -> Path:
        """The server program, which runs the bootstraps too."""
        return self._install.server

    def initialized(self) -> bool:
        return (
            (self.datadir / "mysql").is_dir() and self.password_file.is_file() and (self.home / "initialized").is_file()
        )

    # ---- init

    def init(self) -> None:
        """A fresh data directory made by mariadb-install-db with our option file, and the accounts."""
        password = self._fresh_home()
        # The accounts, made by the bootstrap: read from a file the server user alone can read, never from a
        # command line.
        accounts = self.home / "accounts.sql"
        self._private_file(accounts, self._account_statements(password))
        self._write_defaults(port=0)
        try:
            self._make_datadir(accounts)
        finally:
            accounts.unlink(missing_ok=True)
        (self.home / "initialized").write_text(self.config_name + "\n")

    def _account_statements(self, password: str) -> str:
        """The SQL that makes the accounts (each server family keeps its grant tables its own way)."""
        return _accounts_sql(password)

    def _make_datadir(self, accounts: Path) -> None:
        """The system tables by mariadb-install-db, and the `accounts` SQL run by its bootstrap (the script's
        --extra-file runs after its own SQL) or, for a script without it, by a bootstrap of our own."""
        install = self._install
        script = install.bin("mariadb-install-db")
        extra_file = self.accounts_with_install_db and _takes_extra_file(script)
        r = procs.run_as(
            [
                script,
                f"--defaults-file={self.defaults_file}",
                f"--basedir={install.basedir}",
                f"--datadir={self.datadir}",
                "--auth-root-authentication-method=socket",
                f"--auth-root-socket-user={_ROOT_SOCKET_USER}",
                "--skip-test-db",
                "--skip-name-resolve",
                *([f"--extra-file={accounts}"] if extra_file else []),
            ],
            user=self.user,
        )
        self._check_bootstrap("mariadb-install-db", r)
        if not extra_file:
            self._bootstrap_accounts(accounts)

    def _bootstrap_accounts(self, accounts: Path) -> None:
        """The accounts by a bootstrap of our own, the SQL on its stdin."""
        with accounts.open() as sql:
            r = procs.run_as(
                [self._server_binary(), f"--defaults-file={self.defaults_file}", "--bootstrap"],
                user=self.user,
                stdin=sql,
            )
        self._check_bootstrap("the bootstrap that makes the accounts", r)

    def _check_bootstrap(self, what: str, r: subprocess.CompletedProcess[str]) -> None:
        if r.returncode == 0 and (self.datadir / "mysql").is_dir():
            return
        # The bootstrap's server reads the config too: what it refused is in the script's output (what it
        # printed before it opened its log) or in the log.
        out = r.stdout.splitlines()
        said = [ln for ln in out if self.explaining.search(ln) and not (self.noise and self.noise.search(ln))]
        parts = [servers.explaining_lines(said, self.explaining, noise=self.noise)] if said else []
        if self.log.is_file():
            parts.append(f"from {self.log}:\n{self.log_excerpt()}")
        if not parts:
            parts.append(servers.explaining_lines(out, self.explaining, noise=self.noise))
        raise ServerError(f"{what} failed for {self.home} (exit {r.returncode}):\n" + "\n".join(parts))

    def defaults_text(self, port: int) -> str:
        """The server's option file: where everything is (dbsweep's, which a diff cannot set), then the diff."""
        install = self._install
        sock = self.socket_path or self.home / "sock" / SOCKET_NAME
        section = f"[{self.option_group}]"
        lines = [
            "# Written by dbsweep for this instance; the server reads no other option file.",
            section,
            f"basedir = {install.basedir}",
            f"datadir = {self.datadir}",
            f"plugin_dir = {install.plugin_dir}",
            f"port = {port}",
            "bind_address = 127.0.0.1",
            f"socket = {sock}",
            f"pid_file = {self.datadir / PID_FILE}",
            f"log_error = {self.log}",
            f"tmpdir = {self.tmpdir}",
            "skip_name_resolve",
        ]
        if config.uses_rocksdb(self.config_text) and not config.loads_rocksdb(self.config_text):
            lines.append(f"plugin_load_add = {ROCKSDB_PLUGIN}")
        lines += list(self.own_settings)
        lines += ["", f"# ---- dbsweep: config diff {self.config_name} ----", section, self.config_text.rstrip()]
        if self.wrapper:
            lines += ["", "# ---- dbsweep: what the server needs to run under a wrapper (valgrind) ----", section]
            lines += [f"{name} = {value}" for name, value in self.wrapped_settings().items()]
        return "\n".join(lines) + "\n"

    def wrapped_settings(self) -> dict[str, str]:
        """Valgrind runs neither InnoDB's io_uring nor its native AIO (the start hangs at "Using io_uring"), and
        cannot map the 8 TB of address space 10.11.12+ reserves for the buffer pool to grow into: under a
        wrapper InnoDB does its I/O in threads, and the pool cannot grow past its size."""
        out = {"innodb_use_native_aio": "OFF"}
        settings = config.last_settings(config.settings_of(self.config_text))
        if (
            "innodb_buffer_pool_size_max" in known_settings(self._install)
            and "innodb_buffer_pool_size_max" not in settings
        ):
            pool = settings.get("innodb_buffer_pool_size")
            out["innodb_buffer_pool_size_max"] = pool.value if pool is not None else DEFAULT_BUFFER_POOL
        return out

    @property
    def tmpdir(self) -> Path:
        return self.home / "tmp"

    def _write_defaults(self, port: int) -> None:
        self.tmpdir.mkdir(mode=0o700, exist_ok=True)
        servers.chown(self.tmpdir, self.user)
        self.defaults_file.write_text(self.defaults_text(port))
        self.defaults_file.chmod(0o644)
        servers.chown(self.defaults_file, self.user)

    # ---- start and stop

    def _pick_socket_dir(self) -> Path:
        path = super()._pick_socket_dir()
        # A server that was killed leaves its socket and the lock beside it, which names its old PID: a start
        # would refuse the lock if that PID is now another live process. Nothing runs here now.
        for leftover in (path / SOCKET_NAME, path / f"{SOCKET_NAME}.lock"):
            leftover.unlink(missing_ok=True)
        return path

    def _stop_stale(self) -> None:
        stop_stale(self.datadir)

    def _before_launch(self) -> None:
        self._write_defaults(self.port)

    def _server_argv(self) -> list[str | Path]:
        # The option file first: a server reads /etc/mysql unless its first argument says otherwise.
        return [self._server_binary(), f"--defaults-file={self.defaults_file}"]

    def _bind_failed(self) -> bool:
        return "Bind on TCP/IP port" in self._log_since_start()

    def _gave_up(self) -> bool:
        return self.aborting.search(self._log_since_start()) is not None

    def _abandon(self) -> None:
        # A server that never served has nothing to save.
        self._stop(timeout=FAILED_START_STOP_TIMEOUT)

    def _probe(self) -> None:
        """Our server answers on its port. Another process may have bound the port first (our server then gives
        up): it must neither hold the probe (a read timeout) nor pass for ours (the answer names our socket)."""
        try:
            with self.connect(connect_timeout=2, read_timeout=5) as c, c.cursor() as cur:
                cur.execute("SELECT @@socket")
                row = cur.fetchone()
        except pymysql.err.OperationalError as e:
            raise servers.NotReady(_one_line(e), refused=bool(e.args and e.args[0] == _ACCESS_DENIED)) from None
        if row is None or str(row[0]) != str(self.socket_path):
            raise servers.NotReady(f"another server answers on port {self.port}")

    def stop(self) -> None:
        """A clean shutdown (SIGTERM to the server we started), then a kill: never leaves the server behind."""
        self._stop(WRAPPED_STOP_TIMEOUT if self.wrapper else STOP_TIMEOUT)

    def access(self, via_socket: bool = False) -> Access:
        """Loopback TCP, or the private Unix socket (its file); the password travels in the environment."""
        host = str(self.socket_path) if via_socket and self.socket_path is not None else "127.0.0.1"
        args = ["--engine", "mariadb", "--host", host, "--port", str(self.port), "--user", DB_USER]
        return Access([*args, "--dbname", DB_NAME], {"DBSWEEP_PASSWORD": self.password})

    # ---- dbsweep's own queries

    def connect(
        self, database: str | None = DB_NAME, connect_timeout: float = 10, read_timeout: float | None = None
    ) -> Connection[Any]:
        return pymysql.connect(
            **self._where(),
            user=DB_USER,
            password=self.password,
            database=database,
            autocommit=True,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
        )

    def _where(self) -> dict[str, Any]:
        """Where dbsweep's own connections go: loopback TCP."""
        return {"host": "127.0.0.1", "port": self.port}

    @contextlib.contextmanager
    def _cursor(self) -> Iterator[Any]:
        """A cursor on a fresh connection; a driver error becomes an EngineError in the server's words."""
        try:
            with self.connect() as c, c.cursor() as cur:
                yield cur
        except pymysql.err.MySQLError as e:
            raise EngineError(_one_line(e)) from None

    def _query(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._cursor() as cur:
            cur.execute(sql, args or None)
            return list(cur.fetchall())

    def tables(self) -> set[str] | None:
        return {str(r[0]) for r in self._query("SHOW TABLES")}

    def statistics(self) -> dict[str, Any]:
        try:
            with self.connect() as c:
                return stats.snapshot(c, self.enabled_metrics)
        except pymysql.err.MySQLError as e:
            raise EngineError(_one_line(e)) from None

    def data_bytes(self) -> int | None:
        """The benchmark database on disk: the files of its directory (each table's definition, an InnoDB table's
        own tablespace: what the disk holds, however stale InnoDB's statistics are), and for a table kept
        elsewhere its engine's own data and index length (MyRocks keeps every table in .rocksdb/ and reports each
        table's share; InnoDB's system tablespace, without innodb_file_per_table)."""
        rows = self._query(
            "SELECT TABLE_NAME, ENGINE, COALESCE(DATA_LENGTH, 0) + COALESCE(INDEX_LENGTH, 0) "
            "FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_TYPE = 'BASE TABLE'",
            (DB_NAME,),
        )
        directory = self.datadir / DB_NAME
        total = 0
        with contextlib.suppress(OSError):
            total = sum(f.stat().st_size for f in directory.iterdir() if f.is_file())
        for name, engine, reported in rows:
            own_file = str(engine).lower() == "innodb" and (directory / f"{name}.ibd").is_file()
            if not own_file:
                total += int(reported or 0)
        return total

    def settings(self) -> list[dict[str, Any]]:
        """Settings that differ from the built-in defaults, or that the config or command line set, as the
        running server reports them."""
        rows = self._query(
            "SELECT LOWER(VARIABLE_NAME), GLOBAL_VALUE, DEFAULT_VALUE, GLOBAL_VALUE_ORIGIN "
            "FROM INFORMATION_SCHEMA.SYSTEM_VARIABLES "
            "WHERE GLOBAL_VALUE_ORIGIN IN ('CONFIG', 'COMMAND-LINE', 'SQL') OR NOT (GLOBAL_VALUE <=> DEFAULT_VALUE)"
        )
        return sorted(
            ({"name": r[0], "setting": r[1], "default": r[2], "source": str(r[3]).lower()} for r in rows),
            key=lambda d: str(d["name"]),
        )

    def server_version(self) -> str:
        rows = self._query("SELECT VERSION()")
        return str(rows[0][0]) if rows else ""

    def _global(self, name: str) -> str | None:
        """A global variable's value, None when this server has no such variable."""
        rows = self._query(
            "SELECT GLOBAL_VALUE FROM INFORMATION_SCHEMA.SYSTEM_VARIABLES WHERE VARIABLE_NAME = %s", (name,)
        )
        return str(rows[0][0]) if rows and rows[0][0] is not None else None

    def _status(self, *names: str) -> dict[str, float]:
        with self._cursor() as cur:
            return {n: v for n, v in stats.global_status(cur.connection).items() if n in names}

    def _engines_of(self, tables: list[str] | None) -> dict[str, str]:
        """The storage engine of each of `tables` that exists in the benchmark's database (None: of every table)."""
        if tables is not None and not tables:
            return {}
        where = f" AND TABLE_NAME IN ({', '.join(['%s'] * len(tables))})" if tables is not None else ""
        rows = self._query(
            "SELECT TABLE_NAME, LOWER(ENGINE) FROM INFORMATION_SCHEMA.TABLES "
            "WHERE TABLE_SCHEMA = %s AND TABLE_TYPE = 'BASE TABLE'" + where,
            (DB_NAME, *(tables or [])),
        )
        return {str(t): str(e) for t, e in rows}

    # ---- maintenance after writes (the method's postwrite, 1.6)

    def postwrite(self, tables: list[str], budget: float, say: Callable[[str], None]) -> dict[str, float]:
        """The method's maintenance: ANALYZE TABLE of every table in the background; for InnoDB the dirty
        pages written back (innodb_max_dirty_pages_pct and its low-water mark held at 1) and purge caught up;
        for MyRocks the memtables flushed and L0 compacted; then a wait to `budget` seconds, so the next step
        starts on a quiet server. Returns the seconds of each part."""
        t0 = time.monotonic()
        deadline = t0 + budget
        engines = self._engines_of(tables)
        present = [t for t in tables if t in engines]
        out: dict[str, float] = {}
        say(f"maintenance: ANALYZE TABLE of {len(present)} tables in parallel")
        with ThreadPoolExecutor(max_workers=max(1, len(present))) as pool:
            analyses = [pool.submit(self._query, f"ANALYZE TABLE {_quoted(t)}") for t in present]
            if any(e == "innodb" for e in engines.values()):
                out.update(self._innodb_write_back(deadline, say))
            if any(e == "rocksdb" for e in engines.values()):
                out.update(self._rocksdb_flush_and_compact(deadline, say))
            for f in analyses:
                f.result()
        t1 = time.monotonic()
        out["analyze_s"] = t1 - t0
        wait = max(0.0, deadline - t1)
        if wait:
            say(f"maintenance: waiting {wait:.0f} s")
            time.sleep(wait)
        out["wait_s"] = wait
        return out

    def _innodb_write_back(self, deadline: float, say: Callable[[str], None]) -> dict[str, float]:
        """Holds the dirty-page limits at 1 % until the dirty pages and the history list are small (or the
        budget is spent), then gives them back. MariaDB has no innodb_idle_flush_pct (MySQL 8.0's) from
        10.5 on: it is set only where the server has it."""
        t0 = time.monotonic()
        held = [("innodb_max_dirty_pages_pct_lwm", "1"), ("innodb_max_dirty_pages_pct", "1")]
        if self._global("INNODB_IDLE_FLUSH_PCT") is not None:
            held.append(("innodb_idle_flush_pct", "100"))
        saved: list[tuple[str, str | None]] = [(name, self._global(name.upper())) for name, _ in held]
        say("maintenance: InnoDB dirty pages written back (innodb_max_dirty_pages_pct = 1), purge caught up")
        try:
            for name, value in held:  # the low-water mark first: it may not exceed the limit
                self._query(f"SET GLOBAL {name} = {value}")
            flushed = purged = None
            while True:
                now = time.monotonic()
                s = self._status(
                    "Innodb_buffer_pool_pages_dirty", "Innodb_buffer_pool_pages_total", "Innodb_history_list_length"
                )
                dirty, total = s.get("Innodb_buffer_pool_pages_dirty", 0), s.get("Innodb_buffer_pool_pages_total", 1)
                if flushed is None and dirty <= max(_DIRTY_PAGES_SETTLED, 0.01 * total):
                    flushed = now - t0
                if purged is None and s.get("Innodb_history_list_length", 0) <= _HISTORY_SETTLED:
                    purged = now - t0
                if (flushed is not None and purged is not None) or now >= deadline:
                    break
                time.sleep(0.5)
        finally:
            for name, old in reversed(saved):  # the limit first, then its low-water mark
                if old is not None:
                    self._query(f"SET GLOBAL {name} = {_number(old)}")
        spent = time.monotonic() - t0
        return {
            "innodb_flush_s": flushed if flushed is not None else spent,
            "innodb_purge_s": purged if purged is not None else spent,
            "innodb_settled": 1.0 if flushed is not None and purged is not None else 0.0,
        }

    def _rocksdb_flush_and_compact(self, deadline: float, say: Callable[[str], None]) -> dict[str, float]:
        """The method's MyRocks steps: wait for running compactions, flush the memtables, wait (20 s at most),
        compact L0 (MariaDB's rocksdb_force_flush_memtable_and_lzero_now; FB MySQL's rocksdb_compact_lzero_now
        where the server has it), and wait for the compactions that started."""
        t0 = time.monotonic()
        self._wait_rocksdb_idle(deadline)
        say("maintenance: MyRocks memtables flushed")
        self._query("SET GLOBAL rocksdb_force_flush_memtable_now = 1")
        t1 = time.monotonic()
        time.sleep(max(0.0, min(20.0, deadline - t1)))
        lzero = (
            "rocksdb_compact_lzero_now"
            if self._global("ROCKSDB_COMPACT_LZERO_NOW") is not None
            else "rocksdb_force_flush_memtable_and_lzero_now"
        )
        say(f"maintenance: MyRocks L0 compacted ({lzero})")
        self._query(f"SET GLOBAL {lzero} = 1")
        self._wait_rocksdb_idle(deadline)
        return {"rocksdb_flush_s": t1 - t0, "rocksdb_compact_s": time.monotonic() - t1}

    def _wait_rocksdb_idle(self, deadline: float) -> None:
        """Until no column family has a flush or a compaction pending (or the budget is spent)."""
        while time.monotonic() < deadline:
            rows = self._query(
                "SELECT COALESCE(SUM(VALUE), 0) FROM INFORMATION_SCHEMA.ROCKSDB_CFSTATS "
                "WHERE STAT_TYPE IN ('COMPACTION_PENDING', 'MEM_TABLE_FLUSH_PENDING')"
            )
            running = self._status("Rocksdb_manual_compactions_running").get("Rocksdb_manual_compactions_running", 0)
            if not int(rows[0][0]) and not running:
                return
            time.sleep(1.0)

    # ---- instruction counting: a settled, quiet server ----------------------------------------------

    # Background work that depends on timing rather than on the statements would make two runs of the same
    # work count differently:
    # * innodb_stats_auto_recalc: the statistics thread recalculates a table's statistics once a tenth of its
    #   rows changed, when it wakes; off, the statistics `settle` made stay (and so do the plans).
    # * innodb_buffer_pool_load_at_startup / dump_at_shutdown: the load at start reads pages in a background
    #   thread racing the client's first statements; `prewarm` reads every page the run needs instead.
    # * innodb_fast_shutdown = 0: the shutdown that ends each run finishes the purge (and the change buffer's
    #   merges) its writes left, so a run counts all of that work, not what purge got to before the stop.
    # * innodb_adaptive_flushing off, innodb_max_dirty_pages_pct_lwm = 0: the page cleaner writes pages back
    #   only past innodb_max_dirty_pages_pct, never by the clock, so a page is written once, at shutdown.
    # * innodb_use_native_aio off: valgrind runs neither io_uring nor native AIO (`wrapped_settings`).
    # * ssl off: from 11.4 a server without a certificate makes one at start-up, and the RSA key's random prime
    #   search moved the main thread's count by up to 15 billion instructions between two starts of 11.8.6.
    # MyRocks's compactions are not held (their options are the column families'); `settle` leaves none pending.
    # Timer-driven background threads (InnoDB's 1 s tasks, the page cleaner's wake-ups) run in the one process
    # the count covers: their share grows with a run's length, which the pairs' spread shows.
    quiet_config = """\
# ---- dbsweep: instruction counting ----
innodb_use_native_aio = OFF
innodb_stats_auto_recalc = OFF
innodb_buffer_pool_load_at_startup = OFF
innodb_buffer_pool_dump_at_shutdown = OFF
innodb_fast_shutdown = 0
innodb_adaptive_flushing = OFF
innodb_max_dirty_pages_pct_lwm = 0
ssl = OFF
"""

    def settle(self) -> None:
        """Analysed, written back and compacted: nothing is left for background work."""
        tables = self._engines_of(None)
        for t in tables:
            self._query(f"ANALYZE TABLE {_quoted(t)}")
        engines = set(tables.values())
        far = time.monotonic() + _SETTLE_S
        if "innodb" in engines:
            self._innodb_write_back(far, lambda _: None)
        if "rocksdb" in engines:
            self._query("SET GLOBAL rocksdb_force_flush_memtable_and_lzero_now = 1")
            self._wait_rocksdb_idle(far)

    def prewarm(self, tables: list[str]) -> None:
        """Reads every row (CHECKSUM TABLE scans the table through its primary key) and every secondary index
        (a count through it) into the cache: a miss costs the server thousands of instructions, and the short
        run would take more of them per operation than the long one."""
        for t in tables:
            self._query(f"CHECKSUM TABLE {_quoted(t)}")
            indexes = self._query(
                "SELECT DISTINCT INDEX_NAME FROM INFORMATION_SCHEMA.STATISTICS "
                "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s AND INDEX_NAME <> 'PRIMARY'",
                (DB_NAME, t),
            )
            for (index,) in indexes:
                self._query(f"SELECT COUNT(*) FROM {_quoted(t)} FORCE INDEX ({_quoted(str(index))})")

    # InnoDB's purge removes what committed writes left (old row versions, delete-marked index entries) when
    # its threads get to it: whether a write then finds a page purged or not, reuses an undo page or
    # allocates one, splits a page or not, depends on timing, and moved the writing thread's count by up to
    # 15 % between two runs of update-index. A read view held open from before the run until after it keeps
    # purge from removing anything the run wrote; the shutdown (innodb_fast_shutdown = 0) then purges it all.
    held_during_count: ClassVar[tuple[str, ...]] = (
        "a read view open through each counted run: InnoDB purges the run's writes at shutdown",
    )

    # SLEEP(0) returns at once, and nothing a benchmark runs calls it (MariaDB's and MySQL's name alike).
    dump_marker: ClassVar[tuple[str, str] | None] = ("DO SLEEP(0)", "Item_func_sleep::val_int*")

    @contextlib.contextmanager
    def marker(self) -> Iterator[Callable[[], None]]:
        try:
            # A dump under valgrind takes seconds; a server that stalls in one fails the step, not the pass.
            conn = self.connect(read_timeout=_MARK_TIMEOUT_S)
        except pymysql.err.MySQLError as e:
            raise EngineError(_one_line(e)) from None
        assert self.dump_marker is not None
        statement = self.dump_marker[0]

        def mark() -> None:
            try:
                with conn.cursor() as cur:
                    cur.execute(statement)
            except pymysql.err.MySQLError as e:
                raise EngineError(_one_line(e)) from None

        try:
            yield mark
        finally:
            conn.close()

    @contextlib.contextmanager
    def held_still(self) -> Iterator[None]:
        try:
            conn = self.connect()
            with conn.cursor() as cur:
                cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        except pymysql.err.MySQLError as e:
            raise EngineError(_one_line(e)) from None
        try:
            yield
            conn.rollback()
        except pymysql.err.MySQLError as e:
            raise EngineError(_one_line(e)) from None
        finally:
            conn.close()

    def workers(self) -> set[int]:
        """The one process that serves every client."""
        pid = self.pid
        return {pid} if pid is not None else set()


_MARK_TIMEOUT_S = 600.0  # at most, for a count's marker statement (callgrind's dump) to return
_SETTLE_S = 600.0  # at most, for the pages to be written back and the compactions to end before a count
_DIRTY_PAGES_SETTLED = 100  # pages still dirty that count as written back (a busy system table's few)
_HISTORY_SETTLED = 1000  # undo records not yet purged that count as caught up


def _quoted(name: str) -> str:
    """An identifier quoted for SQL (backticks doubled)."""
    return "`" + name.replace("`", "``") + "`"


def _number(value: str) -> str:
    """A numeric global's value back as SQL: digits (or a decimal) only, never text from elsewhere."""
    if not re.fullmatch(r"\d+(\.\d+)?", value.strip()):
        raise EngineError(f"cannot restore the value {value!r}: not a number")
    return value.strip()


def _takes_extra_file(script: Path) -> bool:
    """Whether an install's mariadb-install-db runs an SQL file of ours after its own (--extra-file)."""
    try:
        return "--extra-file" in script.read_text(errors="replace")
    except OSError:
        return False


def _accounts_sql(password: str) -> str:
    """The bootstrap's accounts: `dbsweep` with the generated password at 127.0.0.1 and localhost, the
    benchmark database; no anonymous user, no root but the socket's."""
    if not re.fullmatch(r"[A-Za-z0-9_-]+", password):
        raise ServerError("a generated password must be plain letters, digits, '-' and '_'")
    users = [f"'{DB_USER}'@'127.0.0.1'", f"'{DB_USER}'@'localhost'"]
    return "\n".join(
        [
            "DELETE FROM mysql.global_priv WHERE User = '' OR (User = 'root' AND Host <> 'localhost');",
            "DELETE FROM mysql.proxies_priv WHERE Host <> 'localhost';",
            "FLUSH PRIVILEGES;",
            f"CREATE DATABASE IF NOT EXISTS {_quoted(DB_NAME)};",
            *(f"CREATE USER {u} IDENTIFIED BY '{password}';" for u in users),
            *(f"GRANT ALL PRIVILEGES ON *.* TO {u};" for u in users),
            "",
        ]
    )
