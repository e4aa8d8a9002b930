"""A config's flags as db_bench takes them, checked before any work: the install's db_bench parses them (gflags
refuses an illegal value with its own message) and opens a database in a temporary directory with no benchmark
(`--benchmarks=` empty), which is where it checks the rest (an unknown cache type, a compression it lacks), then
exits. The sizes are bounded first, by this machine's memory and the threads it can start, so a flag that would
allocate or start more than the machine has is said, not tried."""

from __future__ import annotations

import re
import signal
import subprocess
import tempfile
from pathlib import Path

from dbsweep.configdiff import ConfigDiff, Setting
from dbsweep.engines import base
from dbsweep.engines.rocksdb import config
from dbsweep.engines.rocksdb.install import Install

_TIMEOUT_S = 60.0
# Flags whose bytes db_bench allocates for its caches (the estimate of its memory beside the suite's cache).
MEMORY_FLAGS = ("cache_size", "row_cache_size", "compressed_cache_size", "sim_cache_size")
# Flags whose count of background threads RocksDB starts.
THREAD_FLAGS = ("max_background_jobs", "max_background_compactions", "max_background_flushes")
# gflags: "ERROR: illegal value 'lots' specified for int64 flag 'write_buffer_size'".
_FLAG = re.compile(r"flag '([A-Za-z0-9_]+)'")
_INT = re.compile(r"^[+-]?\d+$")


def check(diff: ConfigDiff, install: Install, text: str) -> list[str]:
    flags = config.settings(text)
    if not flags:
        return []
    version = f"RocksDB {install.short_version}'s db_bench"
    last = {s.name: s for s in diff.settings}
    bounds = size_problems(diff.name, [last[n] for n, _ in flags if n in last])
    if bounds:
        return bounds
    # A path flag the study allowed would write outside the scratch directory: it is not passed to the check.
    argv = [f"--{n}={v}" for n, v in flags if n not in config.UNSAFE]
    with tempfile.TemporaryDirectory(prefix="dbsweep-check-") as scratch:
        cmd = [str(install.db_bench), f"--db={Path(scratch) / 'db'}", "--benchmarks=", *argv]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=_TIMEOUT_S, check=False, cwd=scratch)
        except (OSError, subprocess.TimeoutExpired) as e:
            return [base.refused_config(diff.name, version, f"{install.db_bench} failed: {e}")]
    if r.returncode == 0:
        return []
    said = [" ".join(ln.split()) for ln in r.stderr.splitlines() if ln.strip()]
    if r.returncode < 0:
        said.append(f"killed by {signal.Signals(-r.returncode).name}")
    if not said:
        said = [" ".join(ln.split()) for ln in r.stdout.splitlines() if ln.strip()][-2:]
    return refusals(diff, said or [f"exit code {r.returncode}"], version)


def refusals(diff: ConfigDiff, said: list[str], version: str) -> list[str]:
    """db_bench's lines, each under the flag it names (gflags quotes it; db_bench's own checks say it in words)."""
    settings = list(diff.settings)
    by_setting: dict[str, tuple[Setting, list[str]]] = {}
    loose: list[str] = []
    for words in said:
        named = _FLAG.search(words)
        s = base.setting_named(named.group(1) if named else words, settings)
        if s is None:
            loose.append(words)
        else:
            by_setting.setdefault(s.name, (s, []))[1].append(words.removeprefix("ERROR: "))
    out = [base.refused_value(diff.name, s, version, "; ".join(lines)) for s, lines in by_setting.values()]
    if loose:
        out.append(base.refused_config(diff.name, version, "; ".join(loose)))
    return out


def size_problems(name: str, settings: list[Setting]) -> list[str]:
    """The config's caches against this machine's memory and its background threads against what it can start."""
    out: list[str] = []
    sizes = {s.name: int(s.value) for s in settings if s.name in MEMORY_FLAGS and _INT.match(s.value)}
    estimate = sum(v for v in sizes.values() if v > 0)
    biggest = max((s for s in settings if s.name in sizes), key=lambda s: sizes[s.name], default=None)
    if biggest is not None:
        problem = base.over_memory(name, biggest, "db_bench's caches", estimate, sizes[biggest.name])
        if problem:
            out.append(problem)
    for s in settings:
        if s.name in THREAD_FLAGS and _INT.match(s.value):
            problem = base.over_tasks(name, s, int(s.value), "background threads RocksDB would start")
            if problem:
                out.append(problem)
    return out
