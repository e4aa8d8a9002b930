"""Markdown in the seeds' plain style, ready to paste into a post or an issue.

Each table is a fenced text block as the seeds print them: a legend of columns (`col-1 : target`), then
per group a heading line `col-1   col-2   --> point queries` and one line per step with the values
first and the step's name last.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from dbsweep.report import answer, fmt, instr, noise, trend
from dbsweep.report.data import VERDICT_METRIC, GroupStats, ReportData, Row, config_change
from dbsweep.report.tables import ExtraTable

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
    lines = {k: [(cells(r), r.name) for r in data.rows if (r.group, r.clients) == k] for k in keys}
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
    out += _answer(data)
    if data.trend:
        out += ["## Over the series", ""]
        out += ["  " * (depth - 1) + f"- {text}" for depth, text in trend.lines(data.trend) if depth] + [""]
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
                    f"verdict ± A-A spread, {data.confidence:.0%} CI of rQPS",
                    lambda r: [f"{fmt.verdict_spread(r.cmp[t], r.spread)} {fmt.ci(r.cmp[t])}" for t in others],
                ),
            ]
        )
        if legend := noise.spread_legend(data.rows):
            out += [legend, ""]
        if data.groups:
            out += ["## Summary statistics of rQPS per group", ""]
            out += _fence([*_legend(data), *_summaries(data, heads)])
            out += ["Per target, a row per group (seed 002's layout):", ""]
            out += _fence(_per_target(data))
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
    out += _instr(data)
    out += _profiles(data)
    out += _extras([e for e in data.extra_tables if e.shown_in("markdown")])
    out += _noise(data)
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


def _by_target(data: ReportData) -> Iterator[tuple[str, list[GroupStats]]]:
    """Per target and client count, in column order: its heading and its group summaries."""
    for t in data.others:
        for clients in dict.fromkeys(g.clients for g in data.groups if g.target == t):
            head = f"{t}, {clients} client{'s' if clients != 1 else ''}"
            yield head, [g for g in data.groups if g.target == t and g.clients == clients]


def _per_target(data: ReportData) -> list[str]:
    """One small table per target and client count: a row per group with min, max, avg and median rQPS."""
    out: list[str] = []
    width = max(len(g.group) for g in data.groups)
    for head, mine in _by_target(data):
        w = max(width, len(head))
        out.append(f"{head:<{w}}  " + "  ".join(f"{h:>6}" for h in ("min", "max", "avg", "median")))
        for g in mine:
            vals = (g.summary.min, g.summary.max, g.summary.mean, g.summary.median)
            out.append(f"{g.group:<{w}}  " + "  ".join(f"{fmt.ratio(v):>6}" for v in vals))
        out.append("")
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
            vals = [fmt.metric(m, r.cells[t].per_op_median(m)) for t in data.ordered]
            for t in data.others:
                ratio = fmt.ratio(r.cost_ratio[t].get(m))
                vals.append(f"{ratio} {r.cost_cmp[t].verdict or ''}".strip() if verdicts else ratio)
            return vals

        out += _fence(_grouped(data, heads, m, cells))
    return out


def _table(headings: Sequence[str], lines: Sequence[Sequence[str]], labels: int = 1) -> list[str]:
    """A plain aligned table, the label columns left, the others right-aligned."""
    widths = [max(len(h), *(len(ln[i]) for ln in lines)) for i, h in enumerate(headings)]

    def fmt_line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.ljust(w) if i < labels else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    return [fmt_line(headings), *[fmt_line(ln) for ln in lines]]


def _extras(tables: list[ExtraTable]) -> list[str]:
    """The suite's own tables, under their section's heading; each a title line, the fenced table, its note."""
    out: list[str] = []
    section = None
    for t in tables:
        if t.section != section:
            section = t.section
            if section:
                out += [f"## {section}", ""]
        out += [f"{t.title[:1].upper()}{t.title[1:]}." + (f" {t.note}" if t.note else ""), ""]
        out += _fence(_table(t.header, [[v.text for v in line] for line in t.rows], t.labels))
    return out


def _answer(data: ReportData) -> list[str]:
    """The answer first: per target, the verdicts of each figure, the largest changes and why, what is undecided."""
    if data.answer is None or not data.answer.targets:
        return []
    out = [f"## The answer: each target against the base (`{data.base}`)", ""]
    for depth, text in answer.lines(data.answer, len(data.client_counts) > 1):
        # Function and step names hold underscores and stars: code spans keep them as they are.
        out.append("  " * depth + "- " + (f"**{text}**" if depth == 0 else f"`{text}`" if depth >= 2 else text))
    return [*out, ""]


def _instr(data: ReportData) -> list[str]:
    """Instructions per event per step and target with their verdicts, then why: the functions that changed."""
    if not data.instr_rows:
        return []
    lines: list[list[str]] = []
    for ir in data.instr_rows:
        for t in data.ordered:
            j = ir.judged.get(t)
            lines.append(
                [
                    ir.step,
                    t,
                    "not counted" if ir.error(t) else fmt.instructions(ir.figure(t)),
                    instr.BASIS_TAG[ir.basis],
                    fmt.instr_verdict(j) if j else "",
                    fmt.floor(j) if j else "",
                    fmt.other_count(ir, t),
                    fmt.pct(ir.user_share.get(t)) if j else "",
                    fmt.pct(ir.throughput_bound(t), 2) if j else "",
                ]
            )
    head = ["step", "target", "instr/event", "of", "verdict", "floor", "other count", "user", "QPS at most"]
    out = ["## Instructions per event (valgrind): user-space work, not time", ""]
    out += [
        "instr/event is the figure the verdict judges: of the processes that served the client (`fg`) or of every "
        "process (`all`); `other count` is the one not judged.",
        "",
    ]
    out += [*_fence(_table(head, lines, labels=2)), ""]
    if grouped := _instr_groups(data):
        out += ["Per target, a row per group: instr/event relative to the base (below 1: less work).", ""]
        out += [*_fence(grouped), ""]
    for ir in data.instr_rows:
        for t, j in ir.judged.items():
            if j.verdict in ("faster", "slower") and ir.why.get(t):
                out += [f"Why, {ir.step}, `{t}` against `{data.base}` (instructions per event):", ""]
                out += [f"- `{fmt.function_change(c)}`" for c in ir.why[t][: instr.WHY_TOP]] + [""]
    return out


def _instr_groups(data: ReportData) -> list[str]:
    """The group summaries of instr/event, laid out as `_per_target`'s of rQPS, with the verdicts counted."""
    out: list[str] = []
    for head, groups in _by_target(data):
        mine = [(g, s) for g in groups if (s := g.instr_summary)]
        if not mine:
            continue
        w = max(len(head), *(len(g.group) for g, _ in mine))
        cols = ("n", "min", "max", "avg", "median")
        out.append(f"{head:<{w}}  " + "  ".join(f"{h:>6}" for h in cols) + "  faster/same/slower/unsure")
        for g, s in mine:
            vals = "  ".join(f"{v:>6.3f}" for v in (s.min, s.max, s.mean, s.median))
            tally = "/".join(str(g.instr_verdicts.get(v, 0)) for v in ("faster", "same", "slower", "unsure"))
            out.append(f"{g.group:<{w}}  {s.n:>6}  {vals}  {tally}")
        out.append("")
    return out


def _hot(hottest: list[tuple[str, float]]) -> str:
    return ", ".join(f"{f} {share:.0%}" for f, share in hottest)


def _profiles(data: ReportData) -> list[str]:
    """Per profiled step and target: samples and the hottest functions (the flame graphs are in the HTML)."""
    if not data.profiles:
        return []
    lines = [
        [
            sp.step,
            t,
            f"{d.get('samples') or 0:,}",
            ", ".join(f"{f} {s:.0%}" for f, s in sp.hottest(t)) or str(d.get("error")),
        ]
        for sp in data.profiles
        for t in data.ordered
        if (d := sp.stored.get(t)) is not None
    ]
    out = ["## Sampled profiles (perf)", "", "The flame graphs, and the differential ones, are in the HTML report.", ""]
    return [*out, *_fence(_table(["step", "target", "samples", "hottest functions"], lines, labels=2))]


def _noise(data: ReportData) -> list[str]:
    """The canary per round, as a table under its own heading."""
    table = noise.canary_table(data.canaries)
    return _extras([table]) if table is not None else []


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
