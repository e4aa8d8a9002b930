"""The dbbench suite's own report tables: per step and target the columns of the method's `report.tsv`
(methodology §6), medians over the repetitions, each with its ratio to the base; and the throughput over time
of the while-writing steps and overwriteandwait, in sixths of the step, for the formats without charts (the
HTML page also draws every second)."""

from __future__ import annotations

import itertools
import math
import statistics
from typing import Any

from dbsweep.report import fmt
from dbsweep.report.data import Entry, ReportData
from dbsweep.report.tables import ExtraTable, Value
from dbsweep.suites.dbbench import Dbbench
from dbsweep.suites.dbbench.steps import WHILE_WRITING

SECTION = "db_bench"
# (column as report.tsv names it, how to read it from a stored summary, how to print it)
_KB_PER_MB = 1024.0


def _lat(key: str) -> Any:
    return lambda s: (s.get("latency_us") or {}).get(key)


COLUMNS: tuple[tuple[str, Any, Any], ...] = (
    ("ops_sec", lambda s: s.get("rate"), fmt.num),
    ("mb_sec", lambda s: s.get("mb_sec"), fmt.ratio),
    ("lsm_sz", lambda s: s.get("lsm_sz_gb"), lambda v: f"{v:.2f}G"),
    ("c_wgb", lambda s: s.get("c_wgb"), lambda v: f"{v:.2f}"),
    ("w_amp", lambda s: s.get("w_amp"), lambda v: f"{v:.2f}"),
    ("c_mbps", lambda s: s.get("c_mbps"), lambda v: f"{v:.1f}"),
    ("stall%", lambda s: s.get("stall_pct"), lambda v: f"{v:.1f}"),
    ("Nstall", lambda s: s.get("nstall"), lambda v: f"{v:.0f}"),
    ("usec_op", lambda s: s.get("micros_per_op"), lambda v: f"{v:.3f}"),
    ("p50", _lat("p50"), lambda v: f"{v:.1f}"),
    ("p99", _lat("p99"), lambda v: f"{v:.1f}"),
    ("p99.9", _lat("p999"), lambda v: f"{v:.1f}"),
    ("pmax", _lat("max"), lambda v: f"{v:.0f}"),
    ("u_cpu", lambda s: s.get("u_cpu"), lambda v: f"{v:.2f}"),
    ("s_cpu", lambda s: s.get("s_cpu"), lambda v: f"{v:.2f}"),
    ("rss", lambda s: (s.get("rss_kb") or 0) / _KB_PER_MB or None, lambda v: f"{v:.0f}M"),
)


def _median(cell: Entry, read: Any) -> float | None:
    vals = [float(v) for s in cell.summaries if (v := read(s)) is not None and math.isfinite(float(v))]
    return statistics.median(vals) if vals else None


# What fits a terminal; the markdown and HTML reports have every column.
TERMINAL = ("ops_sec", "lsm_sz", "w_amp", "stall%", "p99", "u_cpu", "s_cpu", "rss")


def tables(data: ReportData, suite: Dbbench) -> list[ExtraTable]:
    rows = [r for r in data.rows if r.step in suite.step_names()]
    if not rows:
        return []
    extra = _left_out(data, rows)
    wide = _table(data, rows, COLUMNS, "dbbench-columns", frozenset({"markdown", "html"}), extra)
    narrow = [c for c in COLUMNS if c[0] in TERMINAL]
    out = [wide, _table(data, rows, tuple(narrow), "dbbench-columns-short", frozenset({"terminal"}), extra)]
    timed = [r for r in rows if r.step in OVER_TIME]
    if timed and any(rep.samples for r in timed for t in data.ordered for rep in r.cells[t].reps):
        out.append(_over_time(data, timed))
    return out


# The steps whose throughput over time the method watches: the writer's pace, stalls, compaction's debt.
OVER_TIME = (*WHILE_WRITING, "overwriteandwait")
WINDOWS = 6


def _windows(samples: list[Any]) -> tuple[list[float | None], float | None, float | None]:
    """A repetition's ops/s in each sixth of its measured seconds, its slowest second, and the CV of its seconds."""
    secs = sorted((float(x.t), x.ops) for x in samples if x.phase == "measure")
    if len(secs) < 2:
        return [None] * WINDOWS, None, None
    end = secs[-1][0]
    edges = [end * i / WINDOWS for i in range(WINDOWS + 1)]
    rates: list[float | None] = []
    for lo, hi in itertools.pairwise(edges):
        inside = [n for t, n in secs if lo < t <= hi]
        # A step shorter than six report intervals leaves some sixths without a row: no figure, not zero.
        rates.append(sum(inside) / (hi - lo) if inside and hi > lo else None)
    per_s: list[float] = []
    last = 0.0
    for t, n in secs:
        per_s.append(n / max(t - last, 1e-9))
        last = t
    mean = statistics.fmean(per_s)
    cv = statistics.pstdev(per_s) / mean if mean else None
    return rates, min(per_s), cv


def _over_time(data: ReportData, rows: list[Any]) -> ExtraTable:
    lines: list[list[Value]] = []
    rules: set[int] = set()
    for r in rows:
        for t in data.ordered:
            per_rep = [_windows(rep.samples) for rep in r.cells[t].reps if rep.samples]
            line = [Value(r.name), Value(t)]
            for i in range(WINDOWS):
                vals: list[float] = [x for w in per_rep if (x := w[0][i]) is not None]
                v = statistics.median(vals) if vals else None
                line.append(Value(fmt.num(v), sort=v))
            slowest: list[float] = [x for w in per_rep if (x := w[1]) is not None]
            cvs: list[float] = [x for w in per_rep if (x := w[2]) is not None]
            low = statistics.median(slowest) if slowest else None
            cv = statistics.median(cvs) if cvs else None
            line += [Value(fmt.num(low), sort=low), Value(fmt.DASH if cv is None else f"{cv:.1%}", sort=cv)]
            lines.append(line)
        rules.add(len(lines) - 1)
    return ExtraTable(
        "dbbench-over-time",
        f"{data.title}: throughput over time, ops/s in each sixth of the step (median over the repetitions)",
        ["test", "target", *(f"{i}/6" for i in range(1, WINDOWS + 1)), "slowest 1 s", "CV of 1 s"],
        lines,
        "From db_bench's --report_interval_seconds=1 rows: a dip in the later sixths is the writer's compaction "
        "debt or a write stall; 'slowest 1 s' and 'CV of 1 s' (medians over the repetitions) say how uneven the "
        "seconds were. The HTML report draws every second.",
        labels=2,
        section=SECTION,
        rules=frozenset(rules),
    )


def _left_out(data: ReportData, rows: list[Any]) -> str:
    """What an old db_bench left out of the method's jobs, per target, as its results recorded it."""
    said: dict[str, set[str]] = {}
    for r in rows:
        for t in data.ordered:
            for s in r.cells[t].summaries:
                if s.get("lacks"):
                    said.setdefault(t, set()).add(f"{r.step} ran without {', '.join(s['lacks'])}")
                lacks = (s.get("maintenance_before") or {}).get("flush_mt_l0_lacks")
                if lacks:
                    ran = ", ".join(dict.fromkeys(s["maintenance_before"].get("flush_mt_l0_ran", "").split(",")))
                    said.setdefault(t, set()).add(f"flush_mt_l0 ran {ran} only (no {lacks.replace(',', ', ')})")
    if not said:
        return ""
    parts = [f"{t}: {'; '.join(sorted(v))}" for t, v in said.items()]
    return " Left out where the binary lacks it (the method's own fallback): " + ". ".join(parts) + "."


def _table(
    data: ReportData,
    rows: list[Any],
    columns: tuple[tuple[str, Any, Any], ...],
    key: str,
    formats: frozenset[str],
    extra_note: str = "",
) -> ExtraTable:
    lines: list[list[Value]] = []
    rules: set[int] = set()
    for r in rows:
        base = {name: _median(r.cells[data.base], read) for name, read, _ in columns}
        for t in data.ordered:
            line = [Value(r.name), Value(t)]
            for name, read, show in columns:
                v = _median(r.cells[t], read)
                text = fmt.DASH if v is None else show(v)
                b = base[name]
                if t != data.base and v is not None and b:
                    text += f" ({v / b:.2f})"
                line.append(Value(text, sort=v))
            lines.append(line)
        rules.add(len(lines) - 1)
    return ExtraTable(
        key,
        f"{data.title}: db_bench's columns per step (report.tsv), medians, (ratio to {data.base})",
        ["test", "target", *(name for name, _, _ in columns)],
        lines,
        "ops_sec and usec_op from the result line; lsm_sz (GB), c_wgb (GB written by compaction), w_amp "
        "((compaction + flush GB) / ingest GB), c_mbps, stall% and Nstall from the stats dump after the step; "
        "p50-pmax in µs from the histogram; u_cpu and s_cpu in CPU seconds, rss the peak, of db_bench." + extra_note,
        labels=2,
        section=SECTION,
        rules=frozenset(rules),
        formats=formats,
    )
