"""Reading pgbench's per-transaction log files (`-l`): every transaction of a run, cut at the end of its
warm-up into the step's figures (events, errors, latency and its histogram, a line per second).

A line is `client_id transaction_no time_us script_no time_epoch time_us_part`, then the schedule lag with --rate
and the retries with --max-tries; the time is `failed` for a transaction that failed (`serialization` or
`deadlock` with --failures-detailed) and `skipped` for one --latency-limit skipped. The epoch and its
microseconds are when the transaction ended. Pure functions over files; nothing here runs pgbench.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dbsweep.results.model import Latency

# Latencies are recorded in microseconds, from 1 us to one hour, with three significant digits: the load
# client's histograms (load/src/output/histogram.rs), so every suite's stored histogram reads alike.
HIST_MAX_US = 3_600_000_000
US = 1_000_000

# The time field of a transaction that did not complete, as the log writes it, and the kind of error it counts as.
NOT_DONE = {"failed": "failed", "serialization": "serialization", "deadlock": "deadlock", "skipped": "skipped"}
# Their stand-ins among the parsed numbers (a latency is never negative).
_CODES = {word: -(i + 1) for i, word in enumerate(NOT_DONE)}


@dataclass(frozen=True)
class Transactions:
    """Every logged transaction of a run, one array element each: its client, when it ended (µs since the epoch)
    and its latency in µs, or the negative code of how it did not complete (`_CODES`)."""

    client: np.ndarray[Any, np.dtype[np.int64]]
    end_us: np.ndarray[Any, np.dtype[np.int64]]
    latency_us: np.ndarray[Any, np.dtype[np.int64]]
    malformed: int = 0  # lines left out: not what a transaction's line holds

    def __len__(self) -> int:
        return len(self.end_us)


def _empty() -> np.ndarray[Any, np.dtype[np.int64]]:
    return np.zeros(0, dtype=np.int64)


def _parse(text: str) -> tuple[np.ndarray[Any, np.dtype[np.int64]], int]:
    """The log's numbers as one row per line, and the lines left out. A line has six fields, or seven or eight
    with --rate and --max-tries: every line of one file has as many."""
    for word, code in _CODES.items():
        text = text.replace(word, str(code))
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return np.zeros((0, 6), dtype=np.int64), 0
    width = len(lines[0].split())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            flat = np.fromstring("\n".join(lines), dtype=np.int64, sep=" ")
        except (ValueError, DeprecationWarning):
            flat = None
    if flat is not None and width >= 6 and flat.size == width * len(lines):
        return flat.reshape(len(lines), width), 0
    # Something in it is not a transaction's line (a file cut short by a crash): read it line by line.
    rows = []
    for ln in lines:
        parts = ln.split()
        if len(parts) >= 6 and all(re.fullmatch(r"-?\d+", p) for p in parts[:6]):
            rows.append([int(p) for p in parts[:6]])
    table = np.array(rows, dtype=np.int64).reshape(-1, 6)
    return table, len(lines) - len(rows)


def read_logs(paths: Iterable[Path]) -> Transactions:
    """The transactions of a run's log files (one per thread: `prefix.PID` and `prefix.PID.N`)."""
    clients, ends, latencies = [], [], []
    malformed = 0
    for path in sorted(paths):
        table, bad = _parse(path.read_text(errors="replace"))
        malformed += bad
        clients.append(table[:, 0])
        ends.append(table[:, 4] * US + table[:, 5])
        latencies.append(table[:, 2])
    if not ends:
        return Transactions(_empty(), _empty(), _empty())
    return Transactions(np.concatenate(clients), np.concatenate(ends), np.concatenate(latencies), malformed)


@dataclass
class Measured:
    """A run's transactions cut at the end of its warm-up: what was measured, its latency and its seconds."""

    events: int  # completed transactions that ended after the warm-up
    warmup_events: int  # those that ended in it
    seconds: float  # from the end of the warm-up to the last transaction's end
    errors: dict[str, int]  # transactions that ended after the warm-up without completing, by kind
    latency: Latency
    histogram: str | None  # HDR V2, deflated, base64: the measured transactions' latencies in µs
    lines: list[dict[str, Any]]  # one per second of the run, as the load client's second lines
    start_us: int  # when the first transaction began (µs since the epoch): the run's second 0
    # The latency's standard deviation (µs) over the measured transactions.
    stddev_us: float = 0.0
    clients_seen: list[int] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.events / self.seconds if self.seconds > 0 else 0.0

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())


def _hdr(latencies: np.ndarray[Any, np.dtype[np.int64]]) -> Any:
    """The latencies (µs) in an HDR histogram as the load client keeps its own: 1 µs to an hour, three digits."""
    from hdrh.histogram import HdrHistogram

    h = HdrHistogram(1, HIST_MAX_US, 3)
    values, counts = np.unique(np.clip(latencies, 1, HIST_MAX_US), return_counts=True)
    for v, n in zip(values.tolist(), counts.tolist(), strict=True):
        h.record_value(v, n)
    return h


def histogram(latencies: np.ndarray[Any, np.dtype[np.int64]]) -> str | None:
    """The latencies (µs) as the load client encodes its histograms."""
    if latencies.size == 0:
        return None
    encoded: bytes = _hdr(latencies).encode()
    return encoded.decode("ascii")


def latency(latencies: np.ndarray[Any, np.dtype[np.int64]]) -> Latency:
    """min, mean, the percentiles and max in µs: the extremes and mean exact, the percentiles as the load client
    reads them from its histogram (the highest value of the histogram's bucket the share falls in)."""
    if latencies.size == 0:
        return Latency()
    h = _hdr(latencies)
    return Latency(
        min=float(latencies.min()),
        mean=float(latencies.mean()),
        p50=float(h.get_value_at_percentile(50)),
        p90=float(h.get_value_at_percentile(90)),
        p95=float(h.get_value_at_percentile(95)),
        p99=float(h.get_value_at_percentile(99)),
        p999=float(h.get_value_at_percentile(99.9)),
        max=float(latencies.max()),
    )


def measured(tx: Transactions, warmup_s: float) -> Measured:
    """The transactions that ended more than `warmup_s` seconds after the run's first transaction began.

    The run's second 0 is when its first transaction began (its end less its latency): pgbench starts every
    client's first transaction then, once all are connected. Second k holds the transactions that ended in
    (k - 1, k]; the seconds up to `warmup_s` are the warm-up. The measured seconds run from the warm-up's end to
    the last transaction's end."""
    done = tx.latency_us >= 0
    if len(tx) == 0:
        return Measured(0, 0, 0.0, {}, Latency(), None, [], 0)
    starts = tx.end_us[done] - tx.latency_us[done]
    origin = int(starts.min()) if starts.size else int(tx.end_us.min())
    boundary = origin + round(warmup_s * US)
    # Second k: (k - 1, k] after the origin; an end at the origin itself (a 0 µs failure) is second 1.
    second = np.maximum(1, -((origin - tx.end_us) // US)).astype(np.int64)
    after = tx.end_us > boundary
    kept = done & after
    lat = tx.latency_us[kept]
    errors: dict[str, int] = {}
    for word, code in _CODES.items():
        n = int(np.count_nonzero(after & (tx.latency_us == code)))
        if n:
            errors[NOT_DONE[word]] = n
    last = int(tx.end_us.max())
    seconds = max(0.0, (last - boundary) / US) if after.any() else 0.0
    lines = _seconds(second, done, tx.latency_us, warmup_s)
    return Measured(
        events=int(np.count_nonzero(kept)),
        warmup_events=int(np.count_nonzero(done & ~after)),
        seconds=seconds,
        errors=errors,
        latency=latency(lat),
        histogram=histogram(lat),
        lines=lines,
        start_us=origin,
        stddev_us=float(lat.std()) if lat.size else 0.0,
        clients_seen=sorted(set(tx.client.tolist())),
    )


def _seconds(
    second: np.ndarray[Any, np.dtype[np.int64]],
    done: np.ndarray[Any, np.dtype[np.bool_]],
    latency_us: np.ndarray[Any, np.dtype[np.int64]],
    warmup_s: float,
) -> list[dict[str, Any]]:
    """A line per second of the run up to its last transaction: transactions completed, failed, the slowest."""
    n = int(second.max()) if second.size else 0
    ops = np.bincount(second[done], minlength=n + 1)
    errors = np.bincount(second[~done], minlength=n + 1)
    slowest = np.zeros(n + 1, dtype=np.int64)
    np.maximum.at(slowest, second[done], latency_us[done])
    return [
        {
            "type": "second",
            "t": k,
            "phase": "warmup" if k <= warmup_s else "measure",
            "ops": int(ops[k]),
            "errors": int(errors[k]),
            "max_us": int(slowest[k]),
        }
        for k in range(1, n + 1)
    ]
