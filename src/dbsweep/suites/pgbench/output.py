"""Parsing what pgbench writes: the load's progress and its closing `done in ...` line (`pgbench -i`), the
per-second `progress:` lines of `-P 1`, the summary it prints when a run ends and the lines that say a client
aborted. Pure functions over text; nothing here runs pgbench. The per-transaction log files of `-l` are read by
`logs` (with numpy, which a command that runs no pgbench step does not import).

Formats (pgbench 15, the Debian build this was written against; older and newer ones differ where noted):
- the load's last line: `done in 0.16 s (drop tables 0.00 s, create tables 0.01 s, client-side generate
  0.08 s, vacuum 0.04 s, primary keys 0.03 s).` (13 and later; the phases are those of `-I`);
- the load's progress with --quiet, every 5 s: `100000 of 100000 tuples (100%) done (elapsed 0.01 s, remaining
  0.00 s)` (16 adds `of pgbench_accounts` before `done`);
- a second of `-P 1`: `progress: 1.0 s, 52093.9 tps, lat 0.037 ms stddev 0.039, 0 failed` (`, N failed` from
  15 on; `, lag ...` with --rate, `, N retried ...` with --max-tries);
- an aborted client: `pgbench: error: client 0 aborted in command 4 (SQL) of script 0; perhaps the backend died
  while processing`, or `... client 1 script 0 aborted in command 2 query 0: ERROR:  division by zero`;
- a transaction's log line: `client_id transaction_no time_us script_no time_epoch time_us_part`, then the
  schedule lag with --rate and the retries with --max-tries; the time is `failed` for a transaction that
  failed (`serialization` or `deadlock` with --failures-detailed) and `skipped` for one --latency-limit skipped.
  The epoch and its microseconds are when the transaction ended (read by `logs`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

_NUM = r"(?:\d+(?:\.\d*)?|\.\d+|-?nan|-?inf|NaN)"
_DONE = re.compile(rf"^done in (?P<total>{_NUM}) s \((?P<phases>[^)]*)\)\.?\s*$")
_PHASE = re.compile(rf"^(?P<name>.+?) (?P<s>{_NUM}) s$")
_LOADED = re.compile(
    rf"^(?P<done>\d+) of (?P<total>\d+) tuples \(\d+%\) (?:of \w+ )?done "
    rf"\(elapsed (?P<elapsed>{_NUM}) s, remaining {_NUM} s\)"
)
_PROGRESS = re.compile(
    rf"^progress: (?P<t>{_NUM}) s, (?P<tps>{_NUM}) tps, lat (?P<lat>{_NUM}) ms stddev (?P<sd>{_NUM})"
    r"(?:.*?, (?P<failed>\d+) failed)?"
)
_ABORTED = re.compile(r"\bclient (?P<client>\d+) (?:script \d+ )?aborted\b")
_SUMMARY_LINE = re.compile(r"^(?P<key>[a-z][a-z ]*?)\s*(?::|=)\s*(?P<value>.*)$")
_FIRST_NUMBER = re.compile(rf"^(?P<n>{_NUM})")


def _float(text: str) -> float:
    value = float(text)
    return value if math.isfinite(value) else 0.0


# ---- the load ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Loaded:
    """The load's closing line: its seconds in all and per phase of `-I` (snake_case: client_side_generate)."""

    seconds: float
    phases: dict[str, float]


def loaded(text: str) -> Loaded:
    """The last `done in ...` line of a load's output; ValueError when there is none."""
    for line in reversed(text.splitlines()):
        m = _DONE.match(line.strip())
        if m is None:
            continue
        phases: dict[str, float] = {}
        for part in m["phases"].split(","):
            p = _PHASE.match(part.strip())
            if p is not None:
                phases[re.sub(r"\W+", "_", p["name"].strip()).strip("_")] = _float(p["s"])
        return Loaded(seconds=_float(m["total"]), phases=phases)
    raise ValueError("no 'done in ... s (...)' line")


def load_progress(line: str) -> tuple[int, int, float] | None:
    """(rows generated, rows in all, seconds elapsed) of one progress line of the load; None for another line."""
    m = _LOADED.match(line.strip())
    if m is None:
        return None
    return int(m["done"]), int(m["total"]), _float(m["elapsed"])


# ---- a run's live account ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Second:
    """One `progress:` line: seconds since the run's start, its rate, mean latency (ms) and failed transactions
    (None before pgbench 15, which printed none)."""

    t: float
    tps: float
    latency_ms: float
    stddev_ms: float
    failed: int | None


def progress(line: str) -> Second | None:
    m = _PROGRESS.match(line.strip())
    if m is None:
        return None
    return Second(
        t=_float(m["t"]),
        tps=_float(m["tps"]),
        latency_ms=_float(m["lat"]),
        stddev_ms=_float(m["sd"]),
        failed=int(m["failed"]) if m["failed"] is not None else None,
    )


def aborted(line: str) -> int | None:
    """The client a line says aborted, or None."""
    m = _ABORTED.search(line)
    return int(m["client"]) if m else None


def message(line: str) -> str:
    """A line of pgbench's stderr without its `pgbench: error: ` prefix."""
    return re.sub(r"^pgbench: (?:error|fatal|warning): ", "", line.strip())


# ---- the summary it prints at the end ---------------------------------------------------------------------


@dataclass(frozen=True)
class Summary:
    """What pgbench printed to stdout when the run ended (every figure of the whole run, warm-up included)."""

    fields: dict[str, str]  # every `key: value` and `key = value` line, as printed
    transactions: int | None  # number of transactions actually processed (without the failed ones)
    failed: int | None  # number of failed transactions (15 and later)
    failures: dict[str, int]  # by kind, with --failures-detailed
    tps: float | None
    latency_ms: float | None
    stddev_ms: float | None


def _number(value: str | None) -> float | None:
    if value is None:
        return None
    m = _FIRST_NUMBER.match(value.strip())
    return _float(m["n"]) if m else None


def summary(text: str) -> Summary:
    fields: dict[str, str] = {}
    for line in text.splitlines():
        m = _SUMMARY_LINE.match(line.strip())
        if m is not None:
            fields.setdefault(m["key"], m["value"].strip())
    processed = _number(fields.get("number of transactions actually processed"))
    failed = _number(fields.get("number of failed transactions"))
    failures = {}
    for kind in ("serialization", "deadlock", "other"):
        n = _number(fields.get(f"number of {kind} failures"))
        if n:
            failures[kind] = int(n)
    return Summary(
        fields=fields,
        transactions=int(processed) if processed is not None else None,
        failed=int(failed) if failed is not None else None,
        failures=failures,
        tps=_number(fields.get("tps")),
        latency_ms=_number(fields.get("latency average")),
        stddev_ms=_number(fields.get("latency stddev")),
    )
