"""A RocksDB database behind the engine boundary: a directory that `db_bench` opens, and no server.

db_bench is engine and client in one process: every step runs it on the directory, so there is nothing to
start or stop between steps, no process to watch (`pid` is None: the samplers charge db_bench's tree as the
client) and no server to be disturbed. The method's `flush_mt_l0` job (flush the memtable, compact L0, wait
for compaction) is this engine's postwrite maintenance; it opens the database with the options it was last
opened with, from the OPTIONS file RocksDB keeps in the directory, so it never reshapes the LSM tree.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dbsweep.engines import base
from dbsweep.engines.base import Access, EngineError, Watermark
from dbsweep.engines.rocksdb import config
from dbsweep.engines.rocksdb.install import Install, known_benchmarks
from dbsweep.errors import ServerError

# The method's flush_mt_l0 job, as benchmark.sh runs it (levelstats and memstats print the shape around it).
FLUSH_MT_L0 = ("levelstats", "flush", "waitforcompaction", "compact0", "waitforcompaction", "memstats", "levelstats")


class Store(base.Instance):
    """One RocksDB database directory, run by db_bench with the config's options."""

    def __init__(
        self,
        install: Install,
        home: Path,
        config_name: str,
        config_text: str,
        user: str | None = None,
        wrapper: list[str] | None = None,
    ) -> None:
        self.install = install
        self.home = home.resolve()
        self.config_name = config_name
        self.config_text = config_text
        self.user = user
        self.wrapper = wrapper

    @property
    def datadir(self) -> Path:
        return self.home / "data"

    @property
    def db(self) -> Path:
        return self.datadir / "db"

    @property
    def log(self) -> Path:
        """RocksDB's own info log in the database directory."""
        return self.db / "LOG"

    @property
    def pid(self) -> int | None:
        return None

    # ---- lifecycle

    def initialized(self) -> bool:
        return (self.home / "initialized").is_file()

    def init(self) -> None:
        """An empty directory: the load step creates the database (`--use_existing_db=0`)."""
        shutil.rmtree(self.datadir, ignore_errors=True)
        (self.home / "initialized").unlink(missing_ok=True)
        self.datadir.mkdir(parents=True)
        (self.home / "initialized").write_text(self.config_name + "\n")

    def start(self, timeout: float | None = None) -> None:
        """Nothing runs between steps: checks that the directory is there and db_bench runs."""
        if not self.datadir.is_dir():
            raise ServerError(f"the database directory {self.datadir} does not exist; it was never initialised")
        if not self.install.db_bench.is_file():
            raise ServerError(f"{self.install.db_bench} is missing")

    def stop(self) -> None:
        """No process outlives a step: db_bench runs as the step's child, which the step stops."""

    def watermark(self) -> Watermark:
        return base.path_watermark(self.datadir, self.log)

    def disturbance_since(self, mark: Watermark) -> str | None:
        return base.path_disturbance(mark, self.datadir, "database directory")

    # ---- how a step reaches it

    def access(self, via_socket: bool = False) -> Access:
        """db_bench itself, on this directory, with the config's options (after the suite's: they win)."""
        return Access(
            [f"--db={self.db}", *config.flags(self.config_text)],
            {},
            wrapper=list(self.wrapper or []),
            program=self.install.db_bench,
            operations=self.benchmarks(),
        )

    def benchmarks(self) -> frozenset[str]:
        """The benchmarks this db_bench knows, from its --help."""
        db_bench = self.install.db_bench
        return known_benchmarks(str(db_bench), db_bench.stat().st_mtime)

    # ---- maintenance and what a step leaves

    def options_file(self) -> Path | None:
        """The OPTIONS file RocksDB wrote when the database was last opened (the newest one)."""
        files = sorted(
            self.db.glob("OPTIONS-*"), key=lambda p: int(p.name.split("-")[1]) if p.name.split("-")[1].isdigit() else 0
        )
        return files[-1] if files else None

    def postwrite(self, tables: list[str], budget: float, say: Callable[[str], None]) -> dict[str, Any]:
        """The method's flush_mt_l0: flush the memtable, wait for compaction, compact L0, wait again. Nothing
        else runs in the background of a closed database, so the rest of the budget is not slept.

        A db_bench that lacks some of these benchmarks (6.x has no flush, waitforcompaction, compact0 nor
        memstats) runs those it has, and the result says which it lacked: the method's job would stop at the
        first unknown one. Opening the database still replays its WAL into an L0 file, which is the flush."""
        known = self.benchmarks()
        ran = [b for b in FLUSH_MT_L0 if b in known]
        lacks = sorted({b for b in FLUSH_MT_L0 if b not in known})
        if not ran:
            raise EngineError(f"{self.install.db_bench} knows none of flush_mt_l0's benchmarks ({','.join(lacks)})")
        what = "flush the memtable, compact L0, wait for compaction (flush_mt_l0)"
        if lacks:
            what = f"flush_mt_l0 as far as this db_bench goes: {','.join(ran)} (it lacks {', '.join(lacks)})"
        say(f"maintenance: {what}")
        t0 = time.monotonic()
        self._run_on_db(ran, "flush_mt_l0", max(budget, 600.0))
        done: dict[str, Any] = {"flush_mt_l0_s": time.monotonic() - t0, "wait_s": 0.0}
        if lacks:
            done["flush_mt_l0_ran"] = ",".join(ran)
            done["flush_mt_l0_lacks"] = ",".join(lacks)
        return done

    def settle(self) -> None:
        """Before instructions are counted: the whole database compacted into its last level (`compact`, which
        every db_bench has), so every version reads the same shape and no compaction is left for a counted run."""
        self._run_on_db(["compact"], "settle", 3600.0)

    def _run_on_db(self, benchmarks: list[str], name: str, timeout: float) -> None:
        """db_bench's `benchmarks` on the database, opened with the options it was last opened with."""
        opts = self.options_file()
        if opts is None:
            raise EngineError(f"no OPTIONS file in {self.db}: the database was never created")
        out = self.home / "client" / f"{name}.log"
        out.parent.mkdir(parents=True, exist_ok=True)
        argv = [
            str(self.install.db_bench),
            f"--db={self.db}",
            "--use_existing_db=1",
            f"--options_file={opts}",
            f"--benchmarks={','.join(benchmarks)}",
        ]
        with out.open("w") as f:
            try:
                r = subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT, timeout=timeout, check=False)
            except subprocess.TimeoutExpired:
                raise EngineError(f"{name} did not finish in {timeout:.0f} s") from None
        if r.returncode != 0:
            tail = " ".join(out.read_text(errors="replace").split()[-40:])
            raise EngineError(f"{name} failed (exit {r.returncode}): {tail}")

    def statistics(self) -> dict[str, Any]:
        """After a step: the database's files by kind (the LSM tree's shape is in the step's own stats dump)."""
        kinds: dict[str, dict[str, int]] = {}
        for f in self.db.iterdir() if self.db.is_dir() else []:
            kind = f.suffix.lstrip(".") or f.name.split("-")[0]
            entry = kinds.setdefault(kind, {"files": 0, "bytes": 0})
            entry["files"] += 1
            entry["bytes"] += f.stat().st_size if f.is_file() else 0
        return {"files": kinds}

    def data_bytes(self) -> int | None:
        if not self.datadir.is_dir():
            return None
        if not self.db.is_dir():
            return 0  # the load makes it: a directory without it holds no data
        return sum(f.stat().st_size for f in self.db.iterdir() if f.is_file())

    def settings(self) -> list[dict[str, Any]]:
        return [{"name": n, "setting": v, "source": "config"} for n, v in config.settings(self.config_text)]

    def server_version(self) -> str:
        return self.install.version

    def log_excerpt(self, start: int = 0) -> str:
        if not self.log.is_file():
            return ""
        with self.log.open("rb") as f:
            f.seek(start)
            lines = f.read().decode(errors="replace").splitlines()
        picked = [ln for ln in lines if "error" in ln.lower() or "corrupt" in ln.lower()] or lines
        return "\n".join(f"    {ln}" for ln in picked[-10:])
