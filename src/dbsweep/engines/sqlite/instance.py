"""An SQLite database behind the engine boundary: a file in a directory of its own, and no server.

The library runs inside the load client, so there is nothing to start, probe or stop, no process to watch
(`pid` is None: the samplers charge the CPU to the client) and no server to be disturbed; what a step did
shows in the client's own summary. What dbsweep does to the database itself (creating it with the config's
pragmas, the maintenance after writes, the statistics after a step) goes through the install's own
`sqlite3` shell, built from the same code as the library, as argument lists: never a command line pasted
from strings.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dbsweep import configdiff
from dbsweep.engines import base
from dbsweep.engines.base import Access, EngineError, Watermark
from dbsweep.engines.sqlite import config
from dbsweep.engines.sqlite.install import Install, library_facts
from dbsweep.errors import DbsweepError, ServerError

DB_FILE = "dbsweep.db"
# The env variable that makes the load client record every statement it runs (tests: statement counts).
CAPTURE_ENV = "DBSWEEP_SQLITE_STATEMENTS"
_MARK = "@@dbsweep@@"
_SHELL_TIMEOUT_S = 3600.0


class Database(base.Instance):
    """One SQLite database file, with the config's pragmas."""

    def __init__(
        self,
        install: Install,
        home: Path,
        config_name: str,
        config_text: str,
        user: str | None = None,
        wrapper: list[str] | None = None,
        engine: base.Engine | None = None,
    ) -> None:
        self.install = install
        # Whose named configs give each pragma's file and line (None: the lines of the config text).
        self.engine = engine
        self.home = home.resolve()
        self.config_name = config_name
        self.config_text = config_text
        self.user = user
        self.wrapper = wrapper
        self.capture: Path | None = None  # a file for the load client's statement record, when set
        self._prewarm = False
        self._open = False

    # ---- where things are

    @property
    def datadir(self) -> Path:
        return self.home / "data"

    @property
    def database(self) -> Path:
        return self.datadir / DB_FILE

    @property
    def wal(self) -> Path:
        return self.datadir / f"{DB_FILE}-wal"

    @property
    def log(self) -> Path:
        return self.home / "sqlite.log"

    @property
    def pid(self) -> int | None:
        return None

    # ---- the shell

    def _shell(self, sql: str, what: str) -> list[str]:
        """Runs SQL in the install's shell on the database; its output lines. -bail: the first error ends it."""
        cmd = [str(self.install.shell), "-batch", "-bail", "-noheader", "-list", str(self.database), sql]
        self.home.mkdir(parents=True, exist_ok=True)
        with self.log.open("a") as log:
            log.write(f"-- {time.strftime('%Y-%m-%dT%H:%M:%S')} {what}\n{sql}\n")
            try:
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=_SHELL_TIMEOUT_S, check=False)
            except (OSError, subprocess.TimeoutExpired) as e:
                log.write(f"-- failed: {e}\n")
                raise EngineError(f"{what}: the sqlite3 shell {self.install.shell} failed: {e}") from None
            log.write(r.stdout + r.stderr)
        if r.returncode != 0:
            err = " ".join(r.stderr.split()) or f"exit code {r.returncode}"
            raise EngineError(f"{what}: {err}")
        return r.stdout.splitlines()

    def _pragma(self, name: str) -> str | None:
        lines = self._shell(f"PRAGMA {name};", f"PRAGMA {name}")
        return lines[0] if lines else None

    # ---- lifecycle

    def initialized(self) -> bool:
        return self.database.is_file() and (self.home / "initialized").is_file()

    def init(self) -> None:
        """A fresh database file with the config's pragmas; each one read back, so a value SQLite did not take
        fails here, with its file and line."""
        shutil.rmtree(self.datadir, ignore_errors=True)
        (self.home / "initialized").unlink(missing_ok=True)
        self.datadir.mkdir(parents=True)
        settings = config.parse([(ln, "") for ln in self.config_text.splitlines()])
        # One shell session, in file order (page_size must come before WAL makes the file), each value
        # followed by a marker and its read-back.
        sql = _set_and_read([(s.name, s.value) for s in settings])
        try:
            lines = self._shell(sql + "CREATE TABLE dbsweep_init(x); DROP TABLE dbsweep_init;", "creating the database")
        except EngineError as e:
            raise ServerError(f"SQLite {self.install.short_version} refused config {self.config_name}: {e}") from None
        readback = _readbacks(lines)
        origins = self._origins()
        last = {s.name: s for s in settings}  # a pragma set twice (an include, then the file) ends as the last
        for s in last.values():
            try:
                config.check_readback(
                    s.name,
                    s.value,
                    readback.get(s.name),
                    origins.get(s.name, "?"),
                    self.config_name,
                    self.install.short_version,
                )
            except DbsweepError as e:
                raise ServerError(str(e)) from None
        (self.home / "initialized").write_text(self.config_name + "\n")

    def _origins(self) -> dict[str, str]:
        """Each pragma's last line in the named config's file, or in the config text when no file has the name
        (the fitted text keeps the file's settings in order)."""
        if self.engine is not None:
            with contextlib.suppress(DbsweepError):
                return {s.name: s.origin for s in configdiff.read(self.engine, self.config_name).settings}
        lines = self.config_text.splitlines()
        settings = config.parse([(ln, f"line {n} of the config") for n, ln in enumerate(lines, 1)])
        return {s.name: s.origin for s in settings}

    def start(self, timeout: float | None = None) -> None:
        """Nothing runs: checks that the database is there and the library loads and answers."""
        if not self.database.is_file():
            raise ServerError(f"the database {self.database} does not exist; it was never initialised")
        try:
            library_facts(str(self.install.library))
        except DbsweepError as e:
            raise ServerError(str(e)) from None
        self._open = True

    def stop(self) -> None:
        self._open = False

    def watermark(self) -> Watermark:
        return base.path_watermark(self.database, self.log)

    def disturbance_since(self, mark: Watermark) -> str | None:
        return base.path_disturbance(mark, self.database, "database file", " (another file is there now)")

    # ---- the load client's way in

    def access(self, via_socket: bool = False) -> Access:
        args = [
            "--engine",
            "sqlite",
            "--library",
            str(self.install.library),
            "--database",
            str(self.database),
        ]
        for p in config.connection_pragmas(self.config_text):
            args += ["--pragma", p]
        if self._prewarm:
            args.append("--prewarm")
        env = {CAPTURE_ENV: str(self.capture)} if self.capture is not None else {}
        return Access(args, env, wrapper=list(self.wrapper or []))

    # ---- maintenance and what a step leaves

    def postwrite(self, tables: list[str], budget: float, say: Callable[[str], None]) -> dict[str, float]:
        """ANALYZE, then a WAL checkpoint that empties the WAL. Nothing runs in the background of an embedded
        engine, so there is nothing to wait out: the rest of the budget is not slept."""
        t0 = time.monotonic()
        say("maintenance: ANALYZE")
        self._shell("ANALYZE;", "ANALYZE")
        t1 = time.monotonic()
        say("maintenance: PRAGMA wal_checkpoint(TRUNCATE)")
        self._checkpoint()
        t2 = time.monotonic()
        return {"analyze_s": t1 - t0, "checkpoint_s": t2 - t1, "wait_s": 0.0}

    def _checkpoint(self) -> None:
        lines = self._shell("PRAGMA wal_checkpoint(TRUNCATE);", "PRAGMA wal_checkpoint(TRUNCATE)")
        # busy|log|checkpointed: busy 1 means a reader or writer kept it from finishing.
        if lines and lines[0].split("|")[0] == "1":
            raise EngineError(f"the WAL checkpoint could not finish: another connection held the database ({lines[0]})")

    def statistics(self) -> dict[str, Any]:
        """After a step: the file's pages, free pages and WAL size (`database`), and the bytes and pages of
        each table and index (`objects`, where the library has the dbstat table)."""
        names = ("page_size", "page_count", "freelist_count", "journal_mode")
        sql = "".join(f"SELECT '{_MARK}{n}'; PRAGMA {n};\n" for n in names)
        values = _readbacks(self._shell(sql, "statistics"))
        database: dict[str, Any] = {n: _number(values.get(n)) for n in names}
        database["db_file_bytes"] = _size(self.database)
        database["wal_bytes"] = _size(self.wal)
        out: dict[str, Any] = {"database": database}
        if "ENABLE_DBSTAT_VTAB" in self.compile_options():
            rows = self._shell("SELECT name, sum(pgsize), count(*) FROM dbstat GROUP BY name ORDER BY name;", "dbstat")
            cells = [r.split("|") for r in rows if r.count("|") == 2]
            out["objects"] = {name: {"bytes": int(size), "pages": int(pages)} for name, size, pages in cells}
        return out

    def tables(self) -> set[str] | None:
        return set(self._shell("SELECT name FROM sqlite_master WHERE type = 'table';", "listing the tables"))

    def compile_options(self) -> list[str]:
        return list(self.install.provenance.get("compile_options") or [])

    def data_bytes(self) -> int | None:
        size, count = self._pragma("page_size"), self._pragma("page_count")
        if size is None or count is None:
            return None
        return int(size) * int(count)

    def settings(self) -> list[dict[str, Any]]:
        """The config's pragmas as a fresh connection reads them back after setting them (per-connection ones
        such as cache_size hold only on the connection that set them)."""
        pairs = config.pragmas(self.config_text)
        if not pairs or not self.database.is_file():
            return []
        values = _readbacks(self._shell(_set_and_read(pairs), "settings"))
        return [{"name": n, "setting": values.get(n), "set_to": v, "source": "config"} for n, v in pairs]

    def server_version(self) -> str:
        return self.install.version

    def log_excerpt(self, start: int = 0) -> str:
        if not self.log.is_file():
            return ""
        with self.log.open("rb") as f:
            f.seek(start)
            lines = f.read().decode(errors="replace").splitlines()
        return "\n".join(f"    {ln}" for ln in lines[-10:])

    # ---- a settled state for counting instructions

    def settle(self) -> None:
        """ANALYZE and an empty WAL: every target's file in the same state before a count."""
        self._shell("ANALYZE;", "ANALYZE")
        self._checkpoint()

    def prewarm(self, tables: list[str]) -> None:
        """Each load client process has its own page cache: it reads the tables in when it connects."""
        self._prewarm = True


def _set_and_read(pairs: list[tuple[str, str]]) -> str:
    """SQL that sets each pragma, then prints a marker and what the pragma reads back (see `_readbacks`)."""
    return "".join(f"PRAGMA {n} = {v}; SELECT '{_MARK}{n}'; PRAGMA {n};\n" for n, v in pairs)


def _readbacks(lines: list[str]) -> dict[str, str]:
    """name -> the line after its marker (None-less: a pragma that printed nothing is absent)."""
    out: dict[str, str] = {}
    for i, line in enumerate(lines):
        if line.startswith(_MARK) and i + 1 < len(lines) and not lines[i + 1].startswith(_MARK):
            out[line.removeprefix(_MARK)] = lines[i + 1]
    return out


def _number(value: str | None) -> int | str | None:
    if value is None:
        return None
    return int(value) if value.lstrip("-").isdigit() else value


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
