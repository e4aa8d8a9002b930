"""Postgres: where an install comes from, initdb, the config diff, start, probe, stop."""

from __future__ import annotations

import contextlib
import logging
import math
import re
import signal
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import psutil
import psycopg
from psycopg import sql

from dbsweep import procs
from dbsweep.engines import servers
from dbsweep.engines.base import Access, EngineError, Watermark
from dbsweep.engines.postgres import stats
from dbsweep.errors import ServerError

_log = logging.getLogger(__name__)

DB_USER = "dbsweep"
DB_NAME = "dbsweep"
# Unix socket paths are limited to 107 bytes (sun_path), including ".s.PGSQL.NNNNN".
_SOCKET_PATH_MAX = 107 - len("/.s.PGSQL.65535")


# Lines of a server log that explain a failure: severities, and the words Postgres uses when it
# refuses a setting or a file (the LOG line naming the parameter comes before the FATAL summary).
_EXPLAINING = re.compile(
    r"\b(FATAL|PANIC|ERROR|DETAIL|HINT|could not|invalid|unrecognized|outside the valid range|parameter|"
    r"No space left|Permission denied|error)\b",
    re.IGNORECASE,
)
# Lines the postmaster writes when a child crashed and it resets every backend (a crash restart).
_CRASH = re.compile(
    r"(was terminated by (signal|exception)|terminating any other active server processes|"
    r"all server processes terminated; reinitializing)"
)


def relevant_log_lines(log: Path, limit: int = 12, start: int = 0) -> str:
    """The lines of a server log (from byte `start`) that explain a failure, else its tail."""
    return servers.log_lines(log, _EXPLAINING, limit, start)


def _pidfile(datadir: Path) -> list[str]:
    try:
        return (datadir / "postmaster.pid").read_text(errors="replace").splitlines()
    except OSError:
        return []


def _is_postmaster_of(proc: psutil.Process, datadir: Path, lines: list[str]) -> str | None:
    """Why `proc` is provably the postmaster the PID file `lines` of `datadir` describes; None if it is not.

    Proof takes three facts: the PID file names this data directory (line 2), the process runs on it
    (its `-D` argument, or its working directory: the postmaster works in its data directory), and it
    started when the PID file says (line 3) - a recycled PID of another process fails the last.
    """
    try:
        recorded_dir = Path(lines[1]).resolve()
        recorded_start = float(lines[2])
    except (IndexError, ValueError):
        return None
    if recorded_dir != datadir.resolve():
        return None
    try:
        cmdline = proc.cmdline()
        on_dir = any(
            a == "-D" and i + 1 < len(cmdline) and Path(cmdline[i + 1]).resolve() == recorded_dir
            for i, a in enumerate(cmdline)
        )
        with contextlib.suppress(psutil.AccessDenied):
            on_dir = on_dir or Path(proc.cwd()).resolve() == recorded_dir
        started = proc.create_time()
    except (psutil.Error, OSError):
        return None
    # The PID file holds whole seconds; the kernel's start time is finer and may be a tick apart.
    if not on_dir or abs(started - recorded_start) > 2:
        return None
    return f"PID {proc.pid} runs on {recorded_dir} and started when its PID file says"


def stop_stale(datadir: Path) -> None:
    """Stops a server a killed dbsweep left on this data directory, if it is provably that server.

    A PID file whose process is gone, or is some other process, is set aside (renamed), never
    signalled: PIDs are recycled, and another cluster's backend may hold this one now.
    """
    lines = _pidfile(datadir)
    if not lines:
        return
    pidfile = datadir / "postmaster.pid"
    try:
        pid = int(lines[0])
        proc: psutil.Process | None = psutil.Process(pid)
    except (ValueError, IndexError):
        pid, proc = -1, None
    except psutil.Error:
        proc = None
    proof = _is_postmaster_of(proc, datadir, lines) if proc is not None else None
    servers.stop_left_behind(
        datadir,
        pidfile,
        pid,
        proc,
        proof,
        server="postmaster",
        stop=(signal.SIGINT, "fast shutdown"),
        last=(signal.SIGQUIT, "immediate shutdown"),
        patience=60,
    )


def _wrapped_leftovers(datadir: Path) -> list[psutil.Process]:
    """Processes of a wrapped server on `datadir`: under valgrind every backend keeps the postmaster's
    command line (the guest's process title never reaches /proc), `-D DATADIR` included. Only those
    count: a process that merely mentions the path (a `du`, an editor) is not ours to stop."""
    found = []
    want = datadir.resolve()
    for p in psutil.process_iter(["cmdline"]):
        with contextlib.suppress(psutil.Error, OSError):
            cmd = p.info["cmdline"] or []
            on_dir = any(
                a == "-D" and i + 1 < len(cmd) and Path(cmd[i + 1]).resolve() == want for i, a in enumerate(cmd)
            )
            if on_dir and p.status() != psutil.STATUS_ZOMBIE:
                found.append(p)
    return found


# Seconds to wait for a server to answer: valgrind slows start-up (and crash recovery) tens of times.
READY_TIMEOUT = 120.0
WRAPPED_READY_TIMEOUT = 1200.0


@dataclass
class Server(servers.ServerInstance):
    """One Postgres instance: a data directory (pgdata/) in the workspace and, while running, its postmaster."""

    title: ClassVar[str] = "Postgres"
    died_process: ClassVar[str] = "its postmaster"
    replaced_process: ClassVar[str] = "the server's postmaster"
    # SIGINT is the fast shutdown: backends abort their transactions, and a shutdown checkpoint follows.
    shutdown_signal: ClassVar[signal.Signals] = signal.SIGINT
    socket_path_max: ClassVar[int] = _SOCKET_PATH_MAX
    ready_timeout: ClassVar[float] = READY_TIMEOUT
    wrapped_ready_timeout: ClassVar[float] = WRAPPED_READY_TIMEOUT
    explaining: ClassVar[re.Pattern[str]] = _EXPLAINING

    @property
    def datadir(self) -> Path:
        return self.home / "pgdata"

    def initialized(self) -> bool:
        return (
            (self.datadir / "PG_VERSION").is_file()
            and self.password_file.is_file()
            and (self.home / "initialized").is_file()
        )

    def init(self) -> None:
        """A fresh data directory with the config diff appended and a generated password."""
        self._fresh_home()
        r = procs.run_as(
            [
                self.install.bin("initdb"),
                "-D",
                self.datadir,
                "-U",
                DB_USER,
                f"--pwfile={self.password_file}",
                "--auth=scram-sha-256",
                "--encoding=UTF8",
                "--locale=C",
                "--data-checksums",
            ],
            user=self.user,
        )
        if r.returncode != 0:
            tail = "\n".join("    " + ln for ln in r.stdout.splitlines()[-12:])
            raise ServerError(f"initdb failed for {self.home} (exit {r.returncode}):\n{tail}")
        conf = self.datadir / "postgresql.conf"
        with conf.open("a") as f:
            f.write(f"\n# ---- dbsweep: config diff {self.config_name} ----\n{self.config_text.rstrip()}\n")
        (self.home / "initialized").write_text(self.config_name + "\n")

    def _stop_stale(self) -> None:
        stop_stale(self.datadir)

    def _server_argv(self) -> list[str | Path]:
        return [
            self.install.bin("postgres"),
            "-D",
            self.datadir,
            "-c",
            f"port={self.port}",
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            f"unix_socket_directories={self.socket_dir}",
            "-c",
            "unix_socket_permissions=0700",
        ]

    def _bind_failed(self) -> bool:
        return "could not bind" in self.log.read_text(errors="replace")[-2000:]

    def _after_ready(self) -> None:
        self._ensure_database()

    def disturbance_since(self, mark: Watermark) -> str | None:
        """Why the server that served a step is not the whole server that began it, in one sentence
        with its evidence; None when it is the same postmaster and none of its backends crashed."""
        found = super().disturbance_since(mark)
        if found is not None:
            return found
        try:
            with self.log.open("rb") as f:
                f.seek(mark.log_offset)
                new = f.read().decode(errors="replace").splitlines()
        except OSError:
            new = []
        crash = [ln for ln in new if _CRASH.search(ln)]
        if crash:
            # The line without its timestamp and severity prefix: "server process (PID 7) was terminated by ...".
            line = re.sub(r"^.*?\b(LOG|FATAL|PANIC):\s+", "", crash[0]).strip()
            return f"the server crash-restarted its backends during the step (every connection was reset): {line}"
        return None

    def access(self, via_socket: bool = False) -> Access:
        """Loopback TCP, or the private Unix socket; the password travels in the environment."""
        host = str(self.socket_dir) if via_socket else "127.0.0.1"
        args = ["--host", host, "--port", str(self.port), "--user", DB_USER, "--dbname", DB_NAME]
        return Access(args, {"DBSWEEP_PASSWORD": self.password})

    def statistics(self) -> dict[str, Any]:
        try:
            with self.connect() as c:
                return stats.snapshot(c)
        except psycopg.Error as e:
            raise EngineError(_one_line(e)) from None

    def data_bytes(self) -> int | None:
        try:
            with self.connect() as c:
                row = c.execute("SELECT pg_database_size(current_database())").fetchone()
        except psycopg.Error as e:
            raise EngineError(_one_line(e)) from None
        return int(row[0]) if row and row[0] is not None else None

    # ---- instruction counting: a settled, quiet server ----------------------------------------------

    # Nothing may run in the background of the measured backend, and the work must stay in the one process
    # that is counted (parallel workers would take part of it elsewhere).
    # synchronous_commit: with asynchronous commit a scan may set a row's hint bits (and mark an index entry
    # dead) only once the WAL writer has flushed the row's commit, which is timing, so every later scan's work
    # varied: 2.2 % between pairs of l.i1 against 0.02 % with commits flushed by their own backend.
    # The WAL writer and the background writer wake by the clock (every 200 ms by default, 100 ms in the
    # method's configs): how much they did, and so how much WAL and how many dirty pages the backend found
    # already written, followed how long a run took. At their slowest, they do not wake within a counted run,
    # and the backend writes its own WAL and pages, the same for every target.
    quiet_config = """\
# ---- dbsweep: instruction counting ----
autovacuum = off
max_parallel_workers_per_gather = 0
synchronous_commit = on
wal_writer_delay = 10s
bgwriter_delay = 10s
bgwriter_lru_maxpages = 0
"""

    def settle(self) -> None:
        """Frozen, analysed and checkpointed: no read sets hint bits, no background work is left."""
        try:
            with self.connect() as c:
                # In the pristine copy, so that every counted run's warm-up can read blocks without a row's work.
                if c.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'pg_prewarm'").fetchone():
                    c.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
                # ANALYZE samples 300 rows per unit of the statistics target, at random: two loads of one table
                # got other most-common values, and the planner's work per query (and even its plan) moved by up
                # to 12 % between two targets of one build. A target that covers every row makes it the same.
                rows = max((_rows(c, t) for t in self.tables() or ()), default=0)
                target = min(max(math.ceil(rows / 300), 100), 10000)
                c.execute(sql.SQL("SET default_statistics_target = {}").format(sql.Literal(target)))
                c.execute("VACUUM (FREEZE, ANALYZE)")
                c.execute("CHECKPOINT")
        except psycopg.Error as e:
            raise EngineError(_one_line(e)) from None

    def prewarm(self, tables: list[str]) -> None:
        """Reads every table and index into shared buffers: a miss costs the backend thousands of
        instructions, and the short run would take more of them per operation than the long one. Plain
        SQL on whatever the suite's tables hold where the pg_prewarm extension is not installed; with it, block by
        block (under valgrind a fifth of the time of a scan that reads every row)."""
        try:
            with self.connect() as c:
                if c.execute("SELECT 1 FROM pg_extension WHERE extname = 'pg_prewarm'").fetchone():
                    for t in tables:
                        c.execute(
                            "SELECT pg_prewarm(r) FROM (SELECT %s::regclass AS r UNION ALL "
                            "SELECT indexrelid FROM pg_index WHERE indrelid = %s::regclass) rels",
                            (t, t),
                        )
                    return
                for t in tables:
                    name = sql.Identifier(t)
                    # The heap, by a sequential scan that reads every row.
                    c.execute(sql.SQL("SELECT sum(length(t::text)) FROM {} t").format(name))
                    # Each index, by a full scan of it: IS NOT NULL on its first column is an index condition.
                    firsts = c.execute(
                        "SELECT DISTINCT a.attname FROM pg_index i JOIN pg_attribute a "
                        "ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0] WHERE i.indrelid = %s::regclass",
                        (t,),
                    ).fetchall()
                    c.execute("SET enable_seqscan = off")
                    c.execute("SET enable_bitmapscan = off")
                    for (col,) in firsts:
                        c.execute(
                            sql.SQL("SELECT count(*) FROM {} WHERE {} IS NOT NULL").format(name, sql.Identifier(col))
                        )
                    c.execute("RESET ALL")
        except psycopg.Error as e:
            raise EngineError(_one_line(e)) from None

    def workers(self) -> set[int]:
        """The postmaster's children: backends and background processes."""
        if self.proc is None:
            return set()
        try:
            return {c.pid for c in psutil.Process(self.proc.pid).children()}
        except psutil.Error:
            return set()

    def roles(self) -> dict[int, str]:
        """The postmaster and its background processes by type (checkpointer, walwriter, ...); backends aside."""
        if self.proc is None:
            return {}
        try:
            with self.connect() as c:
                rows = c.execute(
                    "SELECT pid, backend_type FROM pg_stat_activity "
                    "WHERE backend_type <> 'client backend' AND pid <> pg_backend_pid()"
                ).fetchall()
        except psycopg.Error as e:
            raise EngineError(_one_line(e)) from None
        out = {int(pid): str(kind).replace(" ", "-") for pid, kind in rows}
        out[self.proc.pid] = "postmaster"
        return out

    def conninfo(self, dbname: str = DB_NAME) -> dict[str, Any]:
        return {
            "host": "127.0.0.1",
            "port": self.port,
            "user": DB_USER,
            "password": self.password,
            "dbname": dbname,
            "connect_timeout": 5,
        }

    def connect(self, dbname: str = DB_NAME, autocommit: bool = True) -> psycopg.Connection[Any]:
        return psycopg.connect(**self.conninfo(dbname), autocommit=autocommit)

    def tables(self) -> set[str] | None:
        try:
            with self.connect() as c:
                rows = c.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()").fetchall()
        except psycopg.Error as e:
            raise EngineError(str(e).strip().splitlines()[0]) from None
        return {str(r[0]) for r in rows}

    def _probe(self) -> None:
        try:
            with psycopg.connect(**self.conninfo("postgres")) as c:
                c.execute("SELECT 1")
        except psycopg.OperationalError as e:
            last = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise servers.NotReady(last, refused="authentication failed" in last) from None

    def _too_early_to_probe(self) -> bool:
        # Until the postmaster says it is ready, a probe would make it fork a child just to refuse it: under
        # valgrind each such child costs millions of counted instructions, and their number would vary.
        return self._pid_file_status() == "starting"

    def _pid_file_status(self) -> str:
        """The postmaster's status line in postmaster.pid ("starting", "ready", ...); "starting" while the file
        or its line is not written yet."""
        try:
            lines = (self.datadir / "postmaster.pid").read_text().splitlines()
        except OSError:
            return "starting"
        return lines[7].strip() if len(lines) > 7 else "starting"

    def _ensure_database(self) -> None:
        try:
            with self.connect("postgres") as c:
                if c.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DB_NAME,)).fetchone() is None:
                    c.execute(f"CREATE DATABASE {DB_NAME}")
        except psycopg.Error as e:
            # It answered, then failed its first connection: the log says why (a backend that crashed).
            raise ServerError(
                f"Postgres started but its first connection failed ({_one_line(e)}); from {self.log}:\n"
                f"{self.log_excerpt()}"
            ) from None

    def settings(self) -> list[dict[str, Any]]:
        """Settings that differ from the built-in defaults, as the running server reports them."""
        try:
            return self._settings()
        except psycopg.Error as e:
            raise EngineError(_one_line(e)) from None

    def _settings(self) -> list[dict[str, Any]]:
        with self.connect() as c:
            rows = c.execute(
                "SELECT name, setting, unit, source FROM pg_settings "
                "WHERE source NOT IN ('default', 'override', 'client', 'session')"
            ).fetchall()
        # Sorted here, not by the server: a config with a tiny work_mem and temp_file_limit must not break it.
        return sorted(
            ({"name": r[0], "setting": r[1], "unit": r[2], "source": r[3]} for r in rows), key=lambda d: d["name"]
        )

    def server_version(self) -> str:
        try:
            with self.connect() as c:
                row = c.execute("SHOW server_version").fetchone()
        except psycopg.Error as e:
            raise EngineError(_one_line(e)) from None
        return str(row[0]) if row else ""

    def postwrite(self, tables: list[str], budget: float, say: Callable[[str], None]) -> dict[str, float]:
        """The method's maintenance: VACUUM (ANALYZE) every table in parallel, CHECKPOINT, then wait
        out what is left of `budget` seconds so the next step starts on a quiet server."""
        try:
            return self._postwrite(tables, budget, say)
        except psycopg.Error as e:
            raise EngineError(_one_line(e)) from None

    def _postwrite(self, tables: list[str], budget: float, say: Callable[[str], None]) -> dict[str, float]:
        t0 = time.monotonic()
        version = int(self.server_version_num())
        options = "VERBOSE, ANALYZE" + (", INDEX_CLEANUP ON" if version >= 120000 else "")

        def vacuum(table: str) -> None:
            with self.connect() as c:
                c.execute(sql.SQL("VACUUM ({}) {}").format(sql.SQL(options), sql.Identifier(table)))

        say(f"maintenance: VACUUM ({options}) of {len(tables)} tables in parallel")
        with ThreadPoolExecutor(max_workers=len(tables)) as pool:
            list(pool.map(vacuum, tables))
        t1 = time.monotonic()
        say("maintenance: CHECKPOINT")
        with self.connect() as c:
            c.execute("CHECKPOINT")
        t2 = time.monotonic()
        wait = max(0.0, budget - (t2 - t0))
        if wait:
            say(f"maintenance: waiting {wait:.0f} s")
            time.sleep(wait)
        return {"vacuum_s": t1 - t0, "checkpoint_s": t2 - t1, "wait_s": wait}

    def server_version_num(self) -> str:
        with self.connect() as c:
            row = c.execute("SHOW server_version_num").fetchone()
        return str(row[0]) if row else "0"

    def stop(self) -> None:
        """Fast shutdown, then immediate, then kill: never leaves the server behind."""
        self._stop(timeout=120)

    def _after_stop(self) -> None:
        if self.wrapper:
            self._stop_wrapped_leftovers()

    def _stop_wrapped_leftovers(self) -> None:
        """Backends exit on their own once the postmaster is gone, but under a wrapper that can take a
        while (valgrind writes its output at exit); any still there after a grace period are killed."""
        left = _wrapped_leftovers(self.datadir)
        if left:
            _log.info("waiting up to 60 s for %d backends of the wrapped server on %s to exit", len(left), self.datadir)
        _, alive = psutil.wait_procs(left, timeout=60)
        for p in alive:
            with contextlib.suppress(psutil.Error):
                p.kill()
        psutil.wait_procs(alive, timeout=10)


def _one_line(e: psycopg.Error) -> str:
    """A driver error as the server said it, in one line."""
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _rows(c: psycopg.Connection[Any], table: str) -> int:
    row = c.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone()
    return int(row[0]) if row else 0
