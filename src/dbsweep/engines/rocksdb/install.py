"""RocksDB installs: a build's `db_bench`, or Debian's from `rocksdb-tools` (`source = "system"`). db_bench is
engine and client at once: it links RocksDB and drives it, so its version line and the libraries it links
are the install's identity."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from dbsweep.engines import base
from dbsweep.engines.rocksdb import config
from dbsweep.errors import DbsweepError

SYSTEM_DB_BENCH = Path("/usr/bin/db_bench")
_VERSION_LINE = re.compile(r"db_bench version (\d+\.\d+\.\d+)")


@dataclass(frozen=True)
class Install(base.Install):
    """A db_bench and the RocksDB it links."""

    def __post_init__(self) -> None:
        if not self.short_version:
            m = _VERSION_LINE.search(self.version)
            object.__setattr__(self, "short_version", m.group(1) if m else self.version.split()[-1])

    @property
    def db_bench(self) -> Path:
        return self.bin("db_bench")


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise DbsweepError(f"cannot run {argv[0]}: {e}") from None


@cache
def version_line(db_bench: str, mtime: float) -> str:
    """What `db_bench --version` prints ("db_bench version 7.8.3")."""
    r = _run([db_bench, "--version"])
    m = _VERSION_LINE.search(r.stdout + r.stderr)
    if r.returncode == 0 and m is None and (r.stdout + r.stderr).strip() == "db_bench":
        return "db_bench"  # 6.x prints its name alone; a build's record holds the tree's version
    if r.returncode != 0 or m is None:
        raise DbsweepError(f"{db_bench} is not a db_bench that says its version: {(r.stdout + r.stderr).strip()[:200]}")
    return m.group(0)


@cache
def known_flags(db_bench: str, mtime: float) -> frozenset[str]:
    """Every flag the binary lists in `db_bench --help`."""
    r = _run([db_bench, "--help"])
    found = config.help_flags(r.stdout + r.stderr)
    if "benchmarks" not in found:
        raise DbsweepError(f"{db_bench} --help lists no --benchmarks flag; is it db_bench?")
    return frozenset(found)


@cache
def known_benchmarks(db_bench: str, mtime: float) -> frozenset[str]:
    """Every benchmark the binary names in `db_bench --help`."""
    r = _run([db_bench, "--help"])
    return frozenset(config.help_benchmarks(r.stdout + r.stderr))


def linked_libraries(binary: Path) -> list[str]:
    """The shared libraries the binary links (ldd), by name: which compression libraries it has, and whether
    RocksDB is linked in or a shared librocksdb."""
    r = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=False)
    return [ln.split()[0] for ln in r.stdout.splitlines() if ln.strip() and "=>" in ln]


def system_versions() -> list[str]:
    if not SYSTEM_DB_BENCH.is_file():
        return []
    try:
        line = version_line(str(SYSTEM_DB_BENCH), SYSTEM_DB_BENCH.stat().st_mtime)
    except DbsweepError:
        return []
    return [line.split()[-1]]


def system_install(source: str) -> Install:
    """Debian's db_bench: `system`, or `system:VERSION` to insist on the version installed."""
    if not SYSTEM_DB_BENCH.is_file():
        raise DbsweepError(
            f"source {source!r}: Debian's db_bench is not installed; run scripts/setup.sh (it installs rocksdb-tools)."
        )
    line = version_line(str(SYSTEM_DB_BENCH), SYSTEM_DB_BENCH.stat().st_mtime)
    version = line.split()[-1]
    want = source.partition(":")[2]
    if want and want != version and not version.startswith(want + "."):
        raise DbsweepError(f"source {source!r}: the installed db_bench is {version}, not {want}")
    prov: dict[str, Any] = {
        "source": source,
        "source_identity": base.debian_package_of(SYSTEM_DB_BENCH),
        "version": line,
        "bindir": str(SYSTEM_DB_BENCH.parent),
        "cc": "Debian's build",
        "cflags": "",
        "linked": linked_libraries(SYSTEM_DB_BENCH),
    }
    return Install(bindir=SYSTEM_DB_BENCH.parent, version=line, source=source, provenance=prov)
