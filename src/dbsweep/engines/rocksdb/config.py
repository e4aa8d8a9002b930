"""RocksDB configs: named option sets (`configs/rocksdb/<name>.conf`) for `db_bench`, one `option = value` a
line, `#` comments, `include 'other.conf'` inlined. Each line becomes `--option=value` on every db_bench run of
a target, after the suite's own flags, so a config's value wins.

The block cache's type is version-aware: `cache_type = lru` or `cache_type = hyper_clock` is fitted to what
each version's db_bench calls it (`lru_cache`; `hyper_clock_cache` from 7.7, `auto_hyper_clock_cache` from
8.5, as the method's write-ups use them), and a version before `--cache_type` existed gets LRU, its only
cache, without the flag. The fitted line says which word each version got. Any other option is checked
against the flags the binary lists in `db_bench --help`."""

from __future__ import annotations

import re

from dbsweep.configdiff import ConfigDiff, Setting
from dbsweep.engines.rocksdb.source import release_of
from dbsweep.errors import DbsweepError

_LINE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(\S+)\s*$")
# The flags the suite sets for every step (what to run, for how long, on which keys): a config that set
# them would change the workload behind the study's back.
SUITE_OWNED = frozenset(
    {
        "db",
        "benchmarks",
        "threads",
        "duration",
        "num",
        "reads",
        "writes",
        "use_existing_db",
        "report_file",
        "report_interval_seconds",
        "histogram",
        "seed",
        "key_size",
        "value_size",
        "benchmark_write_rate_limit",
        "options_file",
    }
)
# Flags a config may set only where the study allows them (`allow_unsafe_settings`), and why: every flag that
# takes a path (db_bench works on the instance's database directory alone), and those that read more flags or
# pick another file system, which dbsweep could not check.
_READS_FLAGS = "reads more flags, which dbsweep cannot check"
_PATH = "reads or writes files at a path of its choosing, outside the instance's directory"
UNSAFE = {
    "flagfile": _READS_FLAGS + ", from a file",
    "fromenv": _READS_FLAGS + ", from the environment",
    "tryfromenv": _READS_FLAGS + ", from the environment",
    "env_uri": "puts the database on an environment of its choosing (a plugin, possibly remote)",
    "fs_uri": "puts the database on a file system of its choosing (a plugin, possibly remote)",
    "wal_dir": "writes the write-ahead log outside the instance's directory",
    "backup_dir": _PATH,
    "restore_dir": _PATH,
    "read_cache_path": _PATH,
    "secondary_path": _PATH,
    "simulate_hybrid_fs_file": _PATH,
    "trace_file": _PATH,
    "block_cache_trace_file": _PATH,
    "io_trace_file": _PATH,
    "truth_db": _PATH,
    # The trace analysers' flags, which db_bench's binary lists too.
    "block_cache_trace_path": _PATH,
    "block_cache_analysis_result_dir": _PATH,
    "block_cache_sim_config_path": _PATH,
    "human_readable_trace_file_path": _PATH,
    "trace_path": _PATH,
    "key_space_dir": _PATH,
    "output_dir": _PATH,
}
CACHE_WORDS = ("lru", "hyper_clock")
HYPER_CLOCK_FROM = (7, 7)
AUTO_HYPER_CLOCK_FROM = (8, 5)


def parse(lines: list[tuple[str, str]]) -> tuple[Setting, ...]:
    out: list[Setting] = []
    for line, origin in lines:
        body = line.split("#", 1)[0].strip()
        if not body:
            continue
        m = _LINE.match(body)
        if not m:
            raise DbsweepError(f"{origin}: cannot read {line.strip()!r} as `option = value` (a db_bench flag)")
        name, value = m.group(1).lower(), m.group(2)
        if name in SUITE_OWNED:
            raise DbsweepError(
                f"{origin}: {name} is set by the dbbench suite for every step; set it in the study's [suite] table"
            )
        out.append(Setting(name, value, origin))
    return tuple(out)


def cache_flag(word: str, version: str) -> tuple[str | None, str]:
    """The `--cache_type` value a version's db_bench takes for `lru` or `hyper_clock` (None: pass no flag), and
    why, for the fitted line. Raises DbsweepError for a cache the version does not have."""
    release = release_of(version)[:2]
    if word == "lru":
        return "lru_cache", "LRU"
    if release < HYPER_CLOCK_FROM:
        raise DbsweepError(f"RocksDB {version} has no hyper clock cache (it came in 7.7)")
    if release < AUTO_HYPER_CLOCK_FROM:
        return "hyper_clock_cache", "hyper clock, 7.7 to 8.4"
    return "auto_hyper_clock_cache", "hyper clock, 8.5 and later"


def fit(diff: ConfigDiff, known: set[str], version: str, optional: set[str]) -> tuple[str, list[str]]:
    """The diff as this version's db_bench takes it: the cache words fitted, and an option the binary does not
    list is an error unless optional, then commented out and listed as skipped."""
    out: list[str] = []
    skipped: list[str] = []
    for s in diff.settings:
        line = f"{s.name} = {s.value}"
        refusal = None  # why the binary cannot take the line, as the error says it
        if s.name == "cache_type" and s.value.lower() in CACHE_WORDS:
            word = s.value.lower()
            if "cache_type" not in known:
                if word == "lru":
                    out.append(
                        f"# cache_type = lru: RocksDB {version}'s db_bench has no --cache_type; LRU is its cache"
                    )
                    continue
                why = f"RocksDB {version}'s db_bench has no --cache_type"
            else:
                try:
                    value, why = cache_flag(word, version)
                except DbsweepError as e:
                    why = str(e)
                else:
                    out.append(f"cache_type = {value}  # {word} ({why}), from {s.origin}")
                    continue
            refusal = (
                f"config {diff.name} asks for the {word} cache ({s.origin}): {why}; list cache_type in the "
                "study's optional_settings to run such versions with their default cache."
            )
        elif s.name not in known:
            refusal = (
                f"config {diff.name} sets {s.name} ({s.origin}), which RocksDB {version}'s db_bench does not "
                "know; list it in the study's optional_settings to apply it only where supported."
            )
        if refusal is not None:
            if s.name not in optional:
                raise DbsweepError(refusal)
            skipped.append(s.name)
            out.append(f"# not in RocksDB {version}, skipped: {line}")
            continue
        out.append(f"{line}  # {s.origin}")
    return "\n".join(out) + "\n", sorted(set(skipped))


def flags(text: str) -> list[str]:
    """db_bench's `--option=value` arguments for a fitted config's text (its commented lines left out)."""
    out: list[str] = []
    for line in text.splitlines():
        body = line.split("#", 1)[0].strip()
        m = _LINE.match(body)
        if m:
            out.append(f"--{m.group(1)}={m.group(2)}")
    return out


def settings(text: str) -> list[tuple[str, str]]:
    """(option, value) of a fitted config's text."""
    return [(f[2:].split("=", 1)[0], f.split("=", 1)[1]) for f in flags(text)]


_HELP_FLAG = re.compile(r"^\s+-([A-Za-z_][A-Za-z0-9_]*) \(", re.MULTILINE)


def help_flags(help_text: str) -> set[str]:
    """The flags a `db_bench --help` lists (gflags prints `    -name (what it does) type: ... default: ...`)."""
    return {m.lower() for m in _HELP_FLAG.findall(help_text)}


_HELP_BENCHMARK = re.compile(r"^\s*\t\s*([A-Za-z0-9_]+)\s+--?\s", re.MULTILINE)
_HELP_DEFAULT = re.compile(r'default: "([^"]*)"')


def help_benchmarks(help_text: str) -> set[str]:
    """The benchmarks a `db_bench --help` names in its --benchmarks flag: the list it describes (`\tname --
    what it does`) and its default list. Old binaries lack some the method runs (6.x has no `flush` nor
    `waitforcompaction`), and stop at the first they do not know."""
    start = re.search(r"^\s+-benchmarks \(", help_text, re.MULTILINE)
    if start is None:
        return set()
    end = _HELP_FLAG.search(help_text, start.end())
    block = help_text[start.start() : end.start() if end else len(help_text)]
    found = set(_HELP_BENCHMARK.findall(block))
    m = _HELP_DEFAULT.search(block)
    if m:
        found |= {b.strip() for b in m.group(1).split(",") if b.strip()}
    return found
