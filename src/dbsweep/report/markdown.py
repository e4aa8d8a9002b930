"""Markdown in the seeds' plain style, ready to paste into a post or an issue.

Each table is a fenced text block as the seeds print them: a legend of columns (`col-1 : target`), then
per group a heading line `col-1   col-2   --> point queries` and one line per step with the values
first and the step's name last.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from dbsweep.ibench import SLA_SHARE
from dbsweep.report import fmt
from dbsweep.report.data import (
    BUCKETS,
    IBENCH_OPS,
    VERDICT_METRIC,
    ReportData,
    Row,
    cell_buckets,
    cell_max_us,
    config_change,
)
from dbsweep.suites import STEPS

# The seeds' columns are 8 wide; wider values widen their column.
WIDTH = 8


def _widths(headings: Sequence[str], lines: Sequence[tuple[Sequence[str], str]]) -> list[int]:
    return [max(WIDTH, len(h) + 2, *(len(vals[i]) + 2 for vals, _ in lines)) for i, h in enumerate(headings)]


def _block(
    headings: Sequence[str],
    title: str,
    lines: Sequence[tuple[Sequence[str], str]],
    widths: Sequence[int] | None = None,
) -> list[str]:
    """One seed-style block: values left-aligned in columns, `--> title` after the headings."""
    w = widths or _widths(headings, lines)
    out = ["".join(h.ljust(n) for h, n in zip(headings, w, strict=True)) + "--> " + title]
    out += ["".join(v.ljust(n) for v, n in zip(vals, w, strict=True)) + name for vals, name in lines]
    return out


def _grouped(
    data: ReportData,
    headings: Sequence[str],
    title: str,
    cells: Callable[[Row], list[str]],
) -> list[str]:
    """Blocks per group (and client count, when there are several), aligned alike."""
    out: list[str] = []
    keys = list(dict.fromkeys((r.group, r.clients) for r in data.rows))
    lines = {k: [(cells(r), r.step) for r in data.rows if (r.group, r.clients) == k] for k in keys}
    widths = _widths(headings, [ln for block in lines.values() for ln in block])
    for group, clients in keys:
        heading = fmt.group_title(group, clients, data) + (f" ({title})" if title else "")
        out += [*_block(headings, heading, lines[(group, clients)], widths), ""]
    return out


def _fence(lines: list[str]) -> list[str]:
    while lines and not lines[-1]:
        lines.pop()
    return ["```text", *lines, "```", ""]


def _legend(data: ReportData) -> list[str]:
    cols = fmt.legend(data)
    return [f"Relative to: {data.base}", *[f"{cols[t]} : {t}" for t in data.others], ""]


def render(data: ReportData) -> str:
    cols = fmt.legend(data)
    others = data.others
    heads = [cols[t] for t in others]
    out = [
        f"# {data.title}: {data.runs}",
        "",
        f"{data.suite} suite; base `{data.base}`; targets: {', '.join(f'`{t}`' for t in data.targets)}. "
        f"rQPS = median QPS of a target / median QPS of the base. Verdicts: the {data.confidence:.0%} interval "
        f"of the ratio excludes 1 and the change is at least {data.min_effect:.0%} (faster, slower); same: no "
        "change that large; unsure: more repetitions needed.",
        "",
    ]
    out += [f"> note: {n}" for n in data.notes] + ([""] if data.notes else [])
    if others:
        out += ["## Relative QPS", ""]
        out += _fence([*_legend(data), *_grouped(data, heads, "", lambda r: [fmt.ratio(r.rel[t]) for t in others])])
        out += ["## Verdicts and confidence intervals", ""]
        out += _fence(
            [
                *_legend(data),
                *_grouped(
                    data,
                    heads,
                    f"verdict, {data.confidence:.0%} CI of rQPS",
                    lambda r: [f"{fmt.verdict(r.cmp[t])} {fmt.ci(r.cmp[t])}" for t in others],
                ),
            ]
        )
        if data.groups:
            out += ["## Summary statistics of rQPS per group", ""]
            out += _fence([*_legend(data), *_summaries(data, heads)])
    out += ["## Absolute throughput", ""]
    out += _fence(
        [
            "base : " + data.base,
            *[f"{cols[t]} : {t}" for t in others],
            "Median over the repetitions, then the coefficient of variation of the repetitions.",
            "",
            *_grouped(
                data,
                [cols[t] for t in data.ordered],
                "median QPS; rows/s for load",
                lambda r: [fmt.plain(r.cells[t].median) for t in data.ordered],
            ),
            *_grouped(
                data,
                [cols[t] for t in data.ordered],
                "CV of QPS over the repetitions",
                lambda r: [fmt.pct(r.cells[t].cv) for t in data.ordered],
            ),
        ]
    )
    out += _per_op(data)
    if data.suite == "ibench":
        out += _ibench(data)
    out += _provenance(data)
    return "\n".join(out).rstrip() + "\n"


def _summaries(data: ReportData, heads: list[str]) -> list[str]:
    blocks: list[tuple[str, list[tuple[Sequence[str], str]]]] = []
    for group, clients in dict.fromkeys((g.group, g.clients) for g in data.groups):
        by = {g.target: g for g in data.groups if (g.group, g.clients) == (group, clients)}
        lines: list[tuple[Sequence[str], str]] = []
        for stat in ("min", "max", "mean", "median", "stddev", "geomean"):
            vals = []
            for t in data.others:
                g = by.get(t)
                v = None if g is None else (g.geomean if stat == "geomean" else getattr(g.summary, stat))
                vals.append(fmt.DASH if v is None else f"{v:.3f}" if stat == "stddev" else fmt.ratio(v))
            lines.append((vals, stat))
        lines.append(([str(by[t].summary.n) if t in by else fmt.DASH for t in data.others], "n"))
        blocks.append(("summary: " + fmt.group_title(group, clients, data), lines))
    widths = _widths(heads, [ln for _, lines in blocks for ln in lines])
    out: list[str] = []
    for title, lines in blocks:
        out += [*_block(heads, title, lines, widths), ""]
    return out


def _per_op(data: ReportData) -> list[str]:
    if not data.per_op_metrics:
        return ["## Hardware cost per operation", "", "No per-operation measurements in this run.", ""]
    cols = fmt.legend(data)
    heads = [cols[t] for t in data.ordered] + [f"{cols[t]}/base" for t in data.others]
    out = [
        "## Hardware cost per operation",
        "",
        "Medians over the repetitions; `col-N/base` is the ratio to the base (lower is better). cpu/o: server CPU "
        "µs per operation; cs/o: context switches; r/o, rKB/o, wKB/o: device reads, KB read and written; "
        "client_cpu/o: the load client's CPU µs.",
        "",
    ]
    for m in data.per_op_metrics:
        verdicts = m == VERDICT_METRIC and data.others

        def cells(r: Row, m: str = m, verdicts: bool = bool(verdicts)) -> list[str]:
            vals = [fmt.cost(r.cells[t].per_op_median(m)) for t in data.ordered]
            for t in data.others:
                ratio = fmt.ratio(r.cost_ratio[t].get(m))
                vals.append(f"{ratio} {r.cost_cmp[t].verdict or ''}".strip() if verdicts else ratio)
            return vals

        out += _fence(_grouped(data, heads, m, cells))
    return out


def _table(headings: Sequence[str], lines: Sequence[Sequence[str]]) -> list[str]:
    """A plain aligned table, first column left, the others right-aligned."""
    widths = [max(len(h), *(len(ln[i]) for ln in lines)) for i, h in enumerate(headings)]

    def fmt_line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    return [fmt_line(headings), *[fmt_line(ln) for ln in lines]]


def _ibench(data: ReportData) -> list[str]:
    rows = [r for r in data.rows if r.step in STEPS]
    steps = [r.step for r in rows]
    out = ["## Insert Benchmark", ""]
    abs_lines = [[t, *[fmt.plain(r.cells[t].median) for r in rows]] for t in data.ordered]
    rel_lines = [[t, *[fmt.ratio(r.rel[t]) for r in rows]] for t in data.ordered]
    out += [
        "Throughput: inserted rows/s for l.i0, l.i1, l.i2; indexed rows/s for l.x; queries/s for the read-write steps.",
        "",
    ]
    out += _fence(_table(["target", *steps], abs_lines))
    out += [f"Throughput relative to the base ({data.base}).", ""]
    out += _fence(_table(["target", *steps], rel_lines))
    rw = [r for r in rows if STEPS[r.step].rate]
    if rw:
        lines = []
        for t in data.ordered:
            vals = []
            for r in rw:
                c = r.cells[t]
                v = fmt.plain(c.summary_median("achieved_rate"))
                vals.append(f"{v} SLA" if c.sla_failed else v)
            lines.append([t, *vals])
        target_rates = [
            fmt.plain(next((r.cells[t].summary_median("target_rate") for t in data.ordered if r.cells[t].reps), None))
            for r in rw
        ]
        lines.append(["target", *target_rates])
        out += [
            f"Background insert rate of the read-write steps (rows/s); `SLA`: below {SLA_SHARE:.0%} of the target.",
            "",
        ]
        out += _fence(_table(["target", *[r.step for r in rw]], lines))
    max_lines = [
        [t, op, *[fmt.ms(cell_max_us(r.cells[t], op)) for r in rows]]
        for t in data.ordered
        for op in IBENCH_OPS
        if any(cell_max_us(r.cells[t], op) is not None for r in rows)
    ]
    if max_lines:
        out += ["Worst response time per operation (ms, over all repetitions).", ""]
        out += _fence(_table(["target", "op", *steps], max_lines))
    for r in rows:
        hist = []
        for op in IBENCH_OPS:
            for t in data.ordered:
                counts = cell_buckets(r.cells[t], op)
                if not counts or not sum(counts):
                    continue
                total = sum(counts)
                hist.append([f"{t} {op}", *[_share(n, total) for n in counts], fmt.ms(cell_max_us(r.cells[t], op))])
        if hist:
            out += [f"Response times of {r.step}: % of statements per bucket, then the worst (ms).", ""]
            out += _fence(_table(["target op", *[name for name, _ in BUCKETS], "max"], hist))
    return out


def _share(n: int, total: int) -> str:
    """The method's histogram cells: blank for none, `nonzero` for a share that rounds to 0.000."""
    if n == 0:
        return ""
    share = 100 * n / total
    return "nonzero" if round(share, 3) == 0 else f"{share:.3f}"


def _provenance(data: ReportData) -> list[str]:
    if not data.provenance:
        return []
    out = ["## Provenance", ""]
    base = data.provenance.get(data.base)
    for t in data.ordered:
        p = data.provenance.get(t)
        if p is None:
            continue
        out += [f"### {t}", ""]
        out += [f"- {k}: `{v}`" for k, v in p.facts()]
        out.append("")
        change = config_change(base, p) if t != data.base else ""
        if change:
            out += ["Config change from the base:", "", "```diff", change, "```", ""]
        if p.config_diff:
            out += [f"Config diff `{p.config_name}`:", "", "```ini", p.config_diff.rstrip(), "```", ""]
    return out
