"""Parsing RocksDB `db_bench` output: the per-benchmark result lines with their latency histograms, the
`--report_file` CSV of per-interval rates, and the engine's own stats dump (methodology §6's `lsm_sz`,
`c_wgb`, `w_amp`, ... columns). Pure functions over text; nothing here runs db_bench.

The stats dump: db_bench 7.8.3 prints `rocksdb.stats` (the "** Compaction Stats" and "** DB Stats **"
blocks) to stdout only when the `stats` benchmark runs, so append it to the list, as `tools/benchmark.sh`
does: `--benchmarks=readrandom,stats`. `--stats_interval_seconds=N --stats_per_interval=1` adds dumps to
stderr from inside the benchmark loop, but only once N seconds have passed, so a short run prints none.
`levelstats` and `memstats` print other tables ("Level Files Size(MB)", `rocksdb.*-mem-table*` lines),
which this module ignores.

Formats handled (from RocksDB's tools/db_bench_tool.cc and db/internal_stats.cc):
- result line, 7.3 and later: `overwrite    :  14.495 micros/op 68986 ops/sec 3.001 seconds 206999 operations;
  27.6 MB/s`; before 7.3 (6.x, 7.0-7.2) the same without `<s> seconds <n> operations`. The MB/s and a
  message such as `(N of M found)` follow when the benchmark has them.
- stall counts: `Stalls(count): ...` up to 8.0, `Write Stall (count): ... total-delays: N, total-stops: N`
  from 8.1.
- compaction table columns are found by their header names, since 10.4 added `WPreComp(GB)` before
  `Wnew(GB)` and 6.x had no `Rblob(GB)`/`Wblob(GB)`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

_NUM = r"(?:[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf))"

# The name is printed with "%-12s : ", so longer names ("seekrandomwhilewriting") push the colon right.
_RESULT = re.compile(
    rf"^(?P<name>\S+)\s+:\s+(?P<micros>{_NUM}) micros/op (?P<ops>{_NUM}) ops/sec"
    rf"(?: (?P<secs>{_NUM}) seconds (?P<n>\d+) operations)?;(?P<rest>.*)$"
)
_MB = re.compile(rf"^\s*(?P<mb>{_NUM}) MB/s")
_FOUND = re.compile(r"\((?P<found>\d+) of (?P<of>\d+) found")
_HIST_HEAD = re.compile(r"^Microseconds per (?P<kind>\S+):\s*$")
_HIST_COUNT = re.compile(rf"^Count: (?P<count>\d+) Average: (?P<avg>{_NUM})\s+StdDev: (?P<sd>{_NUM})\s*$")
_HIST_MIN = re.compile(rf"^Min: (?P<min>{_NUM})\s+Median: (?P<median>{_NUM})\s+Max: (?P<max>{_NUM})\s*$")
_HIST_PCT = re.compile(rf"P(?P<p>[\d.]+): (?P<v>{_NUM})")
_BUCKET = re.compile(rf"^[\[(]\s*(?P<lo>{_NUM}),\s*(?P<hi>{_NUM}) \]\s+(?P<n>\d+)\s")

_UNIT_GB = {"KB": 1 / 1024**2, "MB": 1 / 1024, "GB": 1.0, "TB": 1024.0}


@dataclass(frozen=True)
class Histogram:
    count: int
    average: float
    stddev: float
    min: float
    median: float
    max: float
    percentiles: dict[str, float]  # "p50", "p75", "p99", "p99.9", "p99.99" as printed
    buckets: list[tuple[float, float, int]]  # (low, high, count) as printed; empty buckets are not printed


@dataclass(frozen=True)
class BenchResult:
    name: str  # as db_bench prints it before the colon
    micros_per_op: float
    ops_per_sec: float
    seconds: float | None  # None before 7.3
    operations: int | None  # None before 7.3
    mb_per_sec: float | None
    found: tuple[int, int] | None  # "(N of M found)"; with --threads > 1 only one thread's counts
    histogram: Histogram | None
    histogram_kind: str | None  # as printed after "Microseconds per"


def _histogram(lines: list[str], i: int) -> tuple[Histogram, int] | None:
    """The histogram whose "Count:" line is lines[i], and the index after its last bucket."""
    if i + 2 >= len(lines):
        return None
    count, mins = _HIST_COUNT.match(lines[i]), _HIST_MIN.match(lines[i + 1])
    if count is None or mins is None or not lines[i + 2].startswith("Percentiles:"):
        return None
    percentiles = {f"p{m['p']}": float(m["v"]) for m in _HIST_PCT.finditer(lines[i + 2])}
    j = i + 3
    if j < len(lines) and lines[j].startswith("---"):
        j += 1
    buckets: list[tuple[float, float, int]] = []
    while j < len(lines) and (b := _BUCKET.match(lines[j])):
        buckets.append((float(b["lo"]), float(b["hi"]), int(b["n"])))
        j += 1
    hist = Histogram(
        count=int(count["count"]),
        average=float(count["avg"]),
        stddev=float(count["sd"]),
        min=float(mins["min"]),
        median=float(mins["median"]),
        max=float(mins["max"]),
        percentiles=percentiles,
        buckets=buckets,
    )
    return hist, j


def _following_histogram(lines: list[str], i: int) -> tuple[str, Histogram] | None:
    """The first "Microseconds per X:" block right after a result line at lines[i - 1]. Blank lines may sit
    in between: messages like "(N of M found)\\n" end in their own newline. A benchmark with several
    operation types (readrandomwriterandom) prints one block per type; this takes the first."""
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i < len(lines) and (head := _HIST_HEAD.match(lines[i])):
        parsed = _histogram(lines, i + 1)
        if parsed is not None:
            return head["kind"], parsed[0]
    return None


def results(text: str) -> list[BenchResult]:
    """Every benchmark result line in a db_bench log, in order, each with its histogram.

    Steps that print no rate line (waitforcompaction, flush, compact0, levelstats, memstats, stats) are not
    in the list."""
    lines = text.splitlines()
    out: list[BenchResult] = []
    for i, line in enumerate(lines):
        m = _RESULT.match(line)
        if m is None:
            continue
        rest = m["rest"]
        mb = _MB.match(rest)
        found = _FOUND.search(rest)
        hist = _following_histogram(lines, i + 1)
        out.append(
            BenchResult(
                name=m["name"],
                micros_per_op=float(m["micros"]),
                ops_per_sec=float(m["ops"]),
                seconds=float(m["secs"]) if m["secs"] is not None else None,
                operations=int(m["n"]) if m["n"] is not None else None,
                mb_per_sec=float(mb["mb"]) if mb else None,
                found=(int(found["found"]), int(found["of"])) if found else None,
                histogram=hist[1] if hist else None,
                histogram_kind=hist[0] if hist else None,
            )
        )
    return out


def result(text: str, benchmark: str) -> BenchResult:
    """The result of one benchmark (by the name db_bench prints; e.g. 'seekrandomwhilewriting', 'overwrite');
    raises ValueError naming what is missing. The last one when the log has it more than once."""
    found = [r for r in results(text) if r.name == benchmark]
    if not found:
        printed = ", ".join(r.name for r in results(text)) or "none"
        raise ValueError(f"db_bench printed no result line for {benchmark!r} (result lines: {printed})")
    return found[-1]


def interval_rates(csv_text: str) -> list[tuple[float, float]]:
    """The --report_file CSV: (secs_elapsed, interval_qps) per interval, header skipped, malformed lines
    skipped."""
    out: list[tuple[float, float]] = []
    for line in csv_text.splitlines():
        fields = line.strip().split(",")
        if len(fields) != 2:
            continue
        try:
            secs, qps = float(fields[0]), float(fields[1])
        except ValueError:  # the "secs_elapsed,interval_qps" header, or junk
            continue
        if math.isfinite(secs) and math.isfinite(qps):
            out.append((secs, qps))
    return out


@dataclass(frozen=True)
class LsmStats:
    """Methodology §6's report columns that come from the engine's stats dump; None when not printed."""

    lsm_gb: float | None  # lsm_sz: the "Sum" row's Size
    blob_gb: float | None  # blob_sz: "Blob file count: N, total size: X GB" (6.20+)
    compaction_write_gb: float | None  # c_wgb: "Cumulative compaction: X GB write"
    compaction_mb_per_s: float | None  # c_mbps: the write MB/s on that line
    compaction_seconds: float | None  # c_wsecs: the Sum row's Comp(sec)
    compaction_cpu_seconds: float | None  # c_csecs: the Sum row's CompMergeCPU(sec)
    write_amp: float | None  # w_amp: (compaction_write_gb + flush_gb) / ingest_gb
    uptime_s: float | None  # "Uptime(secs): X total"
    stall_pct: float | None  # "Cumulative stall: ..., X percent"
    stall_count: int | None  # Nstall
    flush_gb: float | None  # "Flush(GB): cumulative X"
    ingest_gb: float | None  # "Cumulative writes: ... ingest: X GB"


_UPTIME = re.compile(rf"^Uptime\(secs\): (?P<v>{_NUM}) total")
_STALL_PCT = re.compile(rf"^Cumulative stall: .*?, (?P<v>{_NUM}) percent")
_FLUSH = re.compile(rf"^Flush\(GB\): cumulative (?P<v>{_NUM})")
_INGEST = re.compile(rf"^Cumulative writes: .*\bingest: (?P<v>{_NUM}) (?P<unit>[KMGT]B)")
_COMPACTION = re.compile(
    rf"^Cumulative compaction: (?P<gb>{_NUM}) (?P<unit>[KMGT]B) write, (?P<mbps>{_NUM}) MB/s write"
)
_BLOB = re.compile(rf"^Blob file count: \d+, total size: (?P<v>{_NUM}) (?P<unit>[KMGT]B)")
_STALLS_OLD = re.compile(r"^Stalls\(count\): ")
_STALL_PAIR_OLD = re.compile(r"(?P<n>\d+) (?P<what>[a-z0-9_ ]+?)(?:,|$)")
_STALLS_NEW = re.compile(r"^Write Stall \(count\): ")
_STALL_PAIR_NEW = re.compile(r"(?P<what>[a-z0-9-]+): (?P<n>\d+)")


def _last(pattern: re.Pattern[str], lines: list[str]) -> re.Match[str] | None:
    # Like benchmark.sh's `grep ... | tail -1`: a log can hold periodic dumps (--stats_interval_seconds) and
    # the final one from the `stats` benchmark; the last is the whole run's.
    for line in reversed(lines):
        if m := pattern.match(line):
            return m
    return None


def _sum_row(lines: list[str]) -> dict[str, str] | None:
    """The last compaction table's "Sum" row as {header name: value}. The Size column prints as two
    tokens ("6.48 MB"), so it is joined back before pairing the tokens with the header."""
    header: list[str] | None = None
    row: dict[str, str] | None = None
    for line in lines:
        tokens = line.split()
        if len(tokens) > 3 and tokens[:3] == ["Level", "Files", "Size"]:
            header = tokens
        elif header is not None and tokens and tokens[0] == "Sum" and len(tokens) == len(header) + 1:
            values = [*tokens[:2], f"{tokens[2]} {tokens[3]}", *tokens[4:]]
            row = dict(zip(header, values, strict=True))
    return row


def _gb(value: str, unit: str) -> float:
    return float(value) * _UNIT_GB[unit]


def _float(row: dict[str, str] | None, column: str) -> float | None:
    if row is None or column not in row:
        return None
    try:
        return float(row[column])
    except ValueError:
        return None


def _size_gb(row: dict[str, str] | None) -> float | None:
    if row is None or "Size" not in row:
        return None
    value, _, unit = row["Size"].partition(" ")
    try:
        return _gb(value, unit) if unit in _UNIT_GB else None
    except ValueError:
        return None


def _stall_count(lines: list[str]) -> int | None:
    for line in reversed(lines):
        if old := _STALLS_OLD.match(line):
            # Up to 8.0. benchmark.sh sums awk fields $2 $6 $10 $14 $18 $20: level0_slowdown, level0_numfiles,
            # the two pending_compaction_bytes counts and the two memtable counts; that leaves out the
            # *_with_compaction counts (stalls counted again when a compaction was running) and the trailing
            # "interval N total count". RocksDB's own total_stall_count is the same sum.
            total = 0
            for p in _STALL_PAIR_OLD.finditer(line[old.end() :]):
                what = p["what"].strip()
                if not what.endswith("_with_compaction") and not what.startswith("total"):
                    total += int(p["n"])
            return total
        if _STALLS_NEW.match(line) and "total-" in line:
            # 8.1+ (benchmark.sh's grep finds nothing there): RocksDB's total is total-delays + total-stops.
            # The DB-scope "Write Stall (count): write-buffer-manager-limit-stops" line has no totals.
            pairs = {p["what"]: int(p["n"]) for p in _STALL_PAIR_NEW.finditer(line)}
            return pairs.get("total-delays", 0) + pairs.get("total-stops", 0)
    return None


def lsm_stats(text: str) -> LsmStats:
    """From the last stats dump in the log."""
    lines = text.splitlines()
    row = _sum_row(lines)
    compaction = _last(_COMPACTION, lines)
    flush = _last(_FLUSH, lines)
    ingest = _last(_INGEST, lines)
    blob = _last(_BLOB, lines)
    uptime = _last(_UPTIME, lines)
    stall_pct = _last(_STALL_PCT, lines)

    c_wgb = _gb(compaction["gb"], compaction["unit"]) if compaction else None
    flush_gb = float(flush["v"]) if flush else None
    ingest_gb = _gb(ingest["v"], ingest["unit"]) if ingest else None
    # benchmark.sh gives NA when ingest is 0.0 (a read-only run); it rounds each term to 0.1 GB first, which
    # this does not, so small runs keep their precision.
    write_amp = (
        (c_wgb + flush_gb) / ingest_gb
        if c_wgb is not None and flush_gb is not None and ingest_gb is not None and ingest_gb > 0
        else None
    )
    return LsmStats(
        lsm_gb=_size_gb(row),
        blob_gb=_gb(blob["v"], blob["unit"]) if blob else None,
        compaction_write_gb=c_wgb,
        compaction_mb_per_s=float(compaction["mbps"]) if compaction else None,
        compaction_seconds=_float(row, "Comp(sec)"),
        compaction_cpu_seconds=_float(row, "CompMergeCPU(sec)"),
        write_amp=write_amp,
        uptime_s=float(uptime["v"]) if uptime else None,
        stall_pct=float(stall_pct["v"]) if stall_pct else None,
        stall_count=_stall_count(lines),
        flush_gb=flush_gb,
        ingest_gb=ingest_gb,
    )
