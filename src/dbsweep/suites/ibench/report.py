"""The Insert Benchmark's own report tables (methodology §4.1): throughput, throughput relative to the
base, the background insert rate of the read-write steps with SLA failures marked, the worst response
time per operation, and per step the response times in the method's buckets."""

from __future__ import annotations

import math
from typing import Any

from dbsweep.report import fmt
from dbsweep.report.data import Entry, Rep, ReportData, cell_max_us, decode_histogram, latency_of
from dbsweep.report.tables import ExtraTable, Value
from dbsweep.suites.ibench import SLA_SHARE, Ibench
from dbsweep.verdicts import stats

SECTION = "Insert Benchmark"
OPS = ("insert", "delete", "query")  # as Ibench.operations
# The method's response-time buckets: name and inclusive upper bound in µs.
BUCKETS: tuple[tuple[str, float], ...] = (
    ("le_256us", 256),
    ("le_1ms", 1_000),
    ("le_4ms", 4_000),
    ("le_16ms", 16_000),
    ("le_64ms", 64_000),
    ("le_256ms", 256_000),
    ("le_1s", 1_000_000),
    ("le_4s", 4_000_000),
    ("le_16s", 16_000_000),
    ("gt_16s", math.inf),
)


def sla_failed(cell: Entry) -> bool:
    """A read-write step fails its SLA when any repetition missed the background insert rate."""
    return any(s.get("sla_ok") is False for s in cell.summaries)


# ---- response times ------------------------------------------------------------------------------------


def _bucket_index(us: float) -> int:
    return next(i for i, (_, bound) in enumerate(BUCKETS) if us <= bound)


def rep_buckets(rep: Rep, op: str) -> list[int] | None:
    """Response-time counts of one repetition in the method's buckets: from the summary when the
    client reported them, else from the stored HDR histogram; None when neither is there."""
    given = latency_of(rep, op).get("buckets")
    if isinstance(given, dict) and given:
        return [int(given.get(name, 0) or 0) for name, _ in BUCKETS]
    encoded = rep.histograms.get(op) or latency_of(rep, op).get("hdr")
    h = decode_histogram(encoded) if isinstance(encoded, str) and encoded else None
    if h is None:
        return None
    counts = [0] * len(BUCKETS)
    for item in h.get_recorded_iterator():
        # The lowest value the HDR bucket stands for: a recorded 4000 µs stays within le_4ms.
        counts[_bucket_index(h.get_lowest_equivalent_value(item.value_iterated_to))] += (
            item.count_added_in_this_iter_step
        )
    return counts


def cell_buckets(cell: Entry, op: str) -> list[int] | None:
    """The method's bucket counts summed over the repetitions that have them."""
    per_rep = [b for r in cell.reps if (b := rep_buckets(r, op)) is not None]
    return [sum(col) for col in zip(*per_rep, strict=True)] if per_rep else None


# ---- the tables ----------------------------------------------------------------------------------------


def _sort(v: float | None) -> float | None:
    return v if v is not None and math.isfinite(v) else None


def tables(data: ReportData, suite: Ibench) -> list[ExtraTable]:
    rows = [r for r in data.rows if r.step in suite.step_names()]
    if not rows:
        return []
    steps = [r.step for r in rows]
    names = data.ordered
    out = [_throughput(data, rows, steps, names), _relative(data, rows, steps, names)]
    rw = [r for r in rows if suite.is_read_write(r.step)]
    if rw:
        out.append(_background(rw, names))
    worst = _worst(rows, steps, names)
    if worst is not None:
        out.append(worst)
    out.extend(_histograms(rows, names))
    return out


def _throughput(data: ReportData, rows: list[Any], steps: list[str], names: list[str]) -> ExtraTable:
    styles = {
        r.step: fmt.column_styles({t: r.cells[t].median for t in names}, {t: sla_failed(r.cells[t]) for t in names})
        for r in rows
    }
    lines = []
    for t in names:
        line = [Value(t)]
        for r in rows:
            c = r.cells[t]
            if c.failed and not c.values:
                line.append(Value("failed", "red"))
            else:
                line.append(Value(fmt.num(c.median), styles[r.step].get(t, "") if c.values else "", _sort(c.median)))
        lines.append(line)
    return ExtraTable(
        "ib-abs",
        f"{data.title}: throughput per step, {data.runs}",
        ["target", *steps],
        lines,
        "Inserted rows/s for l.i0, l.i1, l.i2; indexed rows/s for l.x; queries/s for the read-write steps. "
        "Per column: red near the lowest, green near the highest that met its SLA, grey = missed the SLA "
        "(ignore the value).",
        section=SECTION,
    )


def _relative(data: ReportData, rows: list[Any], steps: list[str], names: list[str]) -> ExtraTable:
    lines = []
    for t in names:
        line = [Value(t)]
        for r in rows:
            rel, cmp = r.rel[t], r.cmp.get(t)
            mark = f" {cmp.verdict}" if cmp is not None and cmp.verdict not in (None, "same") else ""
            colour = stats.colour(rel) if rel is not None else ""
            line.append(Value(fmt.ratio(rel) + mark, colour, _sort(rel)))
        lines.append(line)
    return ExtraTable(
        "ib-rel", f"throughput relative to the base ({data.base})", ["target", *steps], lines, section=SECTION
    )


def _background(rw: list[Any], names: list[str]) -> ExtraTable:
    lines = []
    for t in names:
        line = [Value(t)]
        for r in rw:
            c = r.cells[t]
            v = c.summary_median("achieved_rate")
            failed = sla_failed(c)
            line.append(Value(fmt.num(v) + (" SLA" if failed else ""), "red" if failed else "", _sort(v)))
        lines.append(line)
    targets = [
        next((v for t in names if (v := r.cells[t].summary_median("target_rate")) is not None), None) for r in rw
    ]
    lines.append([Value("target", "grey"), *[Value(fmt.num(v), "grey", _sort(v)) for v in targets]])
    return ExtraTable(
        "ib-bg",
        "background insert rate of the read-write steps (rows/s)",
        ["target", *[r.step for r in rw]],
        lines,
        f"A step misses its SLA (SLA) when the achieved background insert rate is below {SLA_SHARE:.0%} of the "
        "target (the last row: clients x the step's rate per client).",
        section=SECTION,
        rules=frozenset({len(lines) - 2}),
    )


def _worst(rows: list[Any], steps: list[str], names: list[str]) -> ExtraTable | None:
    lines: list[list[Value]] = []
    rules: set[int] = set()
    for t in names:
        ops = [op for op in OPS if any(cell_max_us(r.cells[t], op) is not None for r in rows)]
        for i, op in enumerate(ops):
            vals = [cell_max_us(r.cells[t], op) for r in rows]
            lines.append([Value(t if i == 0 else ""), Value(op), *[Value(fmt.ms(v), sort=_sort(v)) for v in vals]])
        if ops:
            rules.add(len(lines) - 1)
    if not lines:
        return None
    return ExtraTable(
        "ib-max",
        "worst response time per operation (ms, over all repetitions)",
        ["target", "operation", *steps],
        lines,
        labels=2,
        section=SECTION,
        rules=frozenset(rules),
    )


def _share(n: int, total: int) -> Value:
    """The method's histogram cells: blank for none, `nonzero` for a share that rounds to 0.000; shaded darker
    for a larger share, as the method's tables."""
    if n == 0:
        return Value("")
    share = 100 * n / total
    light = 100 - min(60.0, share * 0.6)
    return Value(
        "nonzero" if round(share, 3) == 0 else f"{share:.3f}", sort=share, css=f"background:hsl(0,0%,{light:.0f}%)"
    )


def _histograms(rows: list[Any], names: list[str]) -> list[ExtraTable]:
    out = []
    for r in rows:
        lines: list[list[Value]] = []
        maxima: list[float] = []
        for op in OPS:
            for t in names:
                counts = cell_buckets(r.cells[t], op)
                if not counts or not sum(counts):
                    continue
                mx = cell_max_us(r.cells[t], op)
                if mx is not None:
                    maxima.append(mx)
                shares = [_share(n, sum(counts)) for n in counts]
                lines.append([Value(t), Value(op), *shares, Value(fmt.ms(mx), sort=mx)])
        if not lines:
            continue
        # The max column: red in the top quarter of its range, green in the bottom one (no red when tight).
        lo, hi = (min(maxima), max(maxima)) if maxima else (0.0, 0.0)
        for line in lines:
            v = line[-1].sort
            if v is not None and hi > lo:
                if v >= hi - 0.25 * (hi - lo) and lo < 0.8 * hi:
                    line[-1].colour = "red"
                elif v <= lo + 0.25 * (hi - lo):
                    line[-1].colour = "green"
        out.append(
            ExtraTable(
                f"hist-{r.step}",
                f"response times of {r.step}",
                ["target", "op", *[name for name, _ in BUCKETS], "max ms"],
                lines,
                "% of statements per bucket, then the worst (ms).",
                labels=2,
                section=f"{SECTION}: response times",
                formats=frozenset({"markdown", "html"}),
            )
        )
    return out
