"""The analytics suite's own tables, as seed 004 reads a compiler study: per target the load's phases in seconds;
per query the time of one run and its ratio to the base with interval and verdict; per target the sum and the
geometric mean of the query times, a failed or timed-out query counted as ClickBench counts it (twice the worst
time any target took for it), with the geometric mean's ratio, interval and verdict."""

from __future__ import annotations

import math
import statistics
from typing import Any

from dbsweep.report import fmt
from dbsweep.report.data import Entry, ReportData, Row
from dbsweep.report.tables import ExtraTable, Value
from dbsweep.suites.analytics import LOAD, Analytics
from dbsweep.verdicts import judging

SECTION = "Analytic queries"
PHASES = (("load", "load_s"), ("keys", "keys_s"), ("analyze", "analyze_s"))
PENALTY = 2.0  # a failed query counts as this many times the worst time taken for it (ClickBench)


def _run_s(summary: dict[str, Any]) -> float | None:
    """One measured run's seconds: the median run, else the step's seconds per run."""
    v = summary.get("query_s")
    if isinstance(v, int | float):
        return float(v)
    ops, secs = summary.get("operations"), summary.get("seconds")
    return float(secs) / int(ops) if ops and secs else None


def _times(e: Entry) -> dict[int, float]:
    return {r.repetition: t for r in e.reps if (t := _run_s(r.summary)) is not None}


def _ratio_text(ratio: float | None, low: float | None, high: float | None) -> str:
    if ratio is None:
        return fmt.DASH
    return f"{ratio:.3f}" + (f" ({low:.3f}-{high:.3f})" if low is not None and high is not None else "")


def _phases(data: ReportData, load: Row) -> ExtraTable:
    lines: list[list[Value]] = []
    base_total = statistics.median(v) if (v := _totals(load.cells[data.base])) else None
    for t in data.ordered:
        e = load.cells[t]
        line = [Value(t)]
        for _, key in PHASES:
            vals = [float(p[key]) for s in e.summaries if isinstance(p := s.get("phases"), dict) and key in p]
            m = statistics.median(vals) if vals else None
            line.append(Value(fmt.DASH if m is None else f"{m:.2f}", sort=m))
        totals = _totals(e)
        total = statistics.median(totals) if totals else None
        rel = total / base_total if total is not None and base_total and t != data.base else None
        rows = e.summary_median("operations")
        line += [
            Value(fmt.DASH if total is None else f"{total:.2f}", sort=total),
            Value(fmt.DASH if rel is None else f"{rel:.3f}", sort=rel),
            Value(fmt.num(rows), sort=rows),
            Value(f"{e.failed} failed" if e.failed else ""),
        ]
        lines.append(line)
    return ExtraTable(
        "analytics-load",
        f"{data.title}: the load, seconds per phase (median over the repetitions)",
        ["target", *(name for name, _ in PHASES), "total", "total / base", "rows", ""],
        lines,
        "load: every table streamed from the generator by the engine's bulk path; keys: the primary keys (a unique "
        "index where the engine cannot add one); analyze: the engine's post-load work (VACUUM FREEZE and ANALYZE, "
        "ANALYZE TABLE). total: the three phases, the seconds the rate of the load step is taken over.",
        section=SECTION,
    )


def _totals(e: Entry) -> list[float]:
    return [float(s["seconds"]) for s in e.summaries if isinstance(s.get("seconds"), int | float)]


def _queries(data: ReportData, rows: list[Row]) -> ExtraTable:
    lines: list[list[Value]] = []
    rules: set[int] = set()
    for r in rows:
        for t in data.ordered:
            e = r.cells[t]
            times = list(_times(e).values())
            mid = statistics.median(times) if times else None
            firsts = [float(w[0]) for s in e.summaries if isinstance(w := s.get("warmup_s"), list) and w]
            first = statistics.median(firsts) if firsts else None
            line = [
                Value(r.step),
                Value(t),
                Value(fmt.DASH if first is None else f"{first:.3f}", sort=first),
                Value(fmt.DASH if mid is None else f"{mid:.3f}", sort=mid),
            ]
            c = r.cmp.get(t) if t != data.base else None
            if c is not None and c.ratio:
                # rQPS is runs per second: the time ratio is its inverse, and so is the interval.
                low = 1 / c.high if c.high else None
                high = 1 / c.low if c.low else None
                text = _ratio_text(1 / c.ratio, low, high)
                line += [Value(text, sort=1 / c.ratio), Value(fmt.verdict(c), colour=fmt.verdict_colour(c.verdict))]
            else:
                line += [Value(fmt.DASH), Value(fmt.DASH)]
            line.append(Value(f"{len(e.reps)}" + (f" ({e.failed} failed)" if e.failed else "")))
            lines.append(line)
        rules.add(len(lines) - 1)
    return ExtraTable(
        "analytics-queries",
        f"{data.title}: seconds per query run (median), and the time relative to {data.base}",
        ["query", "target", "first run", "seconds", "time / base (95% CI)", "verdict", "reps"],
        lines,
        "first run: the first warm-up run (the cold one: after the page cache was dropped where the study sets cold "
        "= true), apart from the measured ones. seconds: the median of a repetition's measured runs, then the median "
        "over the repetitions. time / base below 1 is faster; the verdict is the same as the QPS table's (runs per "
        "second).",
        labels=2,
        section=SECTION,
        rules=frozenset(rules),
    )


def penalised(targets: list[str], rows: list[Row], timeout: float) -> dict[str, dict[int, list[float]]]:
    """target -> repetition -> each query's seconds, a failed query's as PENALTY x the worst seconds any target
    took for it (PENALTY x the timeout when none ran it)."""
    reps = sorted({rep.repetition for r in rows for t in targets for rep in r.cells[t].reps})
    out: dict[str, dict[int, list[float]]] = {t: {k: [] for k in reps} for t in targets}
    for r in rows:
        times = {t: _times(r.cells[t]) for t in targets}
        seen = [v for per in times.values() for v in per.values()]
        worst = PENALTY * (max(seen) if seen else timeout)
        for t in targets:
            for k in reps:
                out[t][k].append(times[t].get(k, worst))
    return out


def _geomean(values: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(max(v, 1e-9)) for v in values))


def _summary(data: ReportData, rows: list[Row], suite: Analytics) -> ExtraTable:
    per = penalised(data.ordered, rows, float(suite.settings.query_timeout))
    geo = {t: {k: _geomean(v) for k, v in reps.items() if v} for t, reps in per.items()}
    lines: list[list[Value]] = []
    for t in data.ordered:
        failed = sum(1 for r in rows if r.cells[t].failed or not r.cells[t].reps)
        sums = [sum(v) for v in per[t].values() if v]
        total = statistics.median(sums) if sums else None
        g = statistics.median(list(geo[t].values())) if geo[t] else None
        line = [
            Value(t),
            Value(f"{len(rows) - failed} of {len(rows)}"),
            Value(fmt.DASH if total is None else f"{total:.2f}", sort=total),
            Value(fmt.DASH if g is None else f"{g:.4f}", sort=g),
        ]
        if failed == len(rows):
            # Nothing ran: penalties alone make no verdict.
            line += [Value(fmt.DASH), Value("failed", colour="red")]
        elif t != data.base and geo[t] and geo[data.base]:
            j = judging.judge(geo[data.base], geo[t], data.study, higher_is_better=False)
            ci = j.ci
            text = _ratio_text(ci.ratio if ci else None, ci.low if ci else None, ci.high if ci else None)
            line += [Value(text, sort=ci.ratio if ci else None), Value(j.verdict, colour=fmt.verdict_colour(j.verdict))]
        else:
            line += [Value(fmt.DASH), Value(fmt.DASH)]
        lines.append(line)
    return ExtraTable(
        "analytics-summary",
        f"{data.title}: all queries, per target",
        ["target", "queries run", "sum of seconds", "geometric mean (s)", "geomean / base (95% CI)", "verdict"],
        lines,
        f"Per repetition, the sum and the geometric mean of one run of each query; a query that failed or timed out "
        f"counts as {PENALTY:g} x the worst time any target took for it ({PENALTY:g} x query_timeout when none ran "
        "it), as ClickBench counts it. The verdict is on the geometric mean over the repetitions: below 1 is faster.",
        section=SECTION,
    )


def tables(data: ReportData, suite: Analytics) -> list[ExtraTable]:
    rows = [r for r in data.rows if r.step in suite.step_names()]
    if not rows:
        return []
    out: list[ExtraTable] = []
    load = next((r for r in rows if r.step == LOAD), None)
    if load is not None:
        out.append(_phases(data, load))
    queries = [r for r in rows if r.step != LOAD]
    if queries:
        out += [_queries(data, queries), _summary(data, queries, suite)]
    return out
