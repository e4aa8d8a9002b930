"""One self-contained HTML page: tables, charts and provenance, readable offline.

plotly.js is embedded in the page (no CDN), the page is a jinja2 template kept in this module, and the
little interactivity it has (sortable tables, choosing the step and repetition of a chart) is a few
lines of plain JavaScript. The charts are built from the same `ReportData` as every other format.
"""

from __future__ import annotations

import base64
import html
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from typing import Any

import jinja2
import plotly.graph_objects as go
import plotly.io as pio
import plotly.offline
from plotly.subplots import make_subplots

from dbsweep import __version__
from dbsweep.report import answer, flames, fmt, instr, noise, trend
from dbsweep.report.data import (
    VERDICT_METRIC,
    Comparison,
    Entry,
    RateSample,
    ReportData,
    Row,
    Sample,
    config_change,
)
from dbsweep.report.tables import ExtraTable
from dbsweep.verdicts import stats

# A line of one point per second is averaged down to at most this many points: a long step with many
# targets and repetitions would otherwise make a page of tens of megabytes that draws slowly.
MAX_POINTS = 900
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22")
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
PLOT_CONFIG = {"displaylogo": False, "responsive": True}
# An empty template: plotly's default one would be repeated, ~10 kB, in every chart.
TEMPLATE = go.layout.Template(layout={"font": {"family": "system-ui, sans-serif", "size": 12}})


@dataclass
class Td:
    """A table cell: its text, a CSS class (colour), a sort value and a tooltip."""

    text: str
    cls: str = ""
    sort: float | None = None
    title: str = ""
    style: str = ""


@dataclass
class Table:
    """A table of groups of rows; the second heading row names the columns that sort."""

    id: str
    top: list[tuple[str, int]]  # (text, colspan) of the first heading row; empty for one row
    heads: list[str]
    groups: list[tuple[str, list[list[Td]]]] = field(default_factory=list)
    note: str = ""


def _sort_value(v: float | None) -> float | None:
    return v if v is not None and math.isfinite(v) else None


def _ratio_td(r: float | None, colour: str | None = None, title: str = "") -> Td:
    return Td(fmt.ratio(r), "c-" + (colour or stats.colour(r)) if r is not None else "", _sort_value(r), title)


def _verdict_td(c: Comparison) -> Td:
    return Td(fmt.verdict(c), f"v-{c.verdict}" if c.verdict else "", title=f"method: {c.method}")


def _verdict_spread_td(c: Comparison, spread: noise.Spread | None) -> Td:
    """A QPS verdict with the step's A-A spread beside it; the tooltip says where the spread came from."""
    title = f"method: {c.method}" + (f"; ± {spread.detail}" if spread is not None else "")
    return Td(fmt.verdict_spread(c, spread), f"v-{c.verdict}" if c.verdict else "", title=title)


def _row_label(row: Row) -> list[Td]:
    return [Td(row.name), Td(str(row.clients), sort=row.clients)]


def _grouped_rows(
    data: ReportData, cells: Callable[[Row], list[Td]], rows: list[Row] | None = None
) -> list[tuple[str, list[list[Td]]]]:
    out: list[tuple[str, list[list[Td]]]] = []
    chosen = data.rows if rows is None else rows
    for (group, clients), members in itertools.groupby(chosen, key=lambda r: (r.group, r.clients)):
        out.append((fmt.group_title(group, clients, data), [[*_row_label(r), *cells(r)] for r in members]))
    return out


def _relative_table(data: ReportData) -> Table:
    top = [("", 2), *[(t, 3) for t in data.others], ("", 1)]
    heads = ["step", "clients"]
    for _t in data.others:
        heads += ["rQPS", f"{data.confidence:.0%} CI", "verdict"]
    heads.append("reps")

    def cells(r: Row) -> list[Td]:
        out: list[Td] = []
        for t in data.others:
            c = r.cmp[t]
            out += [_ratio_td(r.rel[t]), Td(fmt.ci(c), sort=_sort_value(c.low)), _verdict_spread_td(c, r.spread)]
        reps = sorted({len(c.values) for c in r.cells.values()})
        out.append(Td("/".join(map(str, reps)), sort=min(reps)))
        return out

    return Table("rel", top, heads, _grouped_rows(data, cells), noise.spread_legend(data.rows))


def _spread(c: Entry) -> str:
    if not c.values:
        return fmt.DASH
    return f"{fmt.num(min(c.values))} – {fmt.num(max(c.values))}"


def _absolute_table(data: ReportData) -> Table:
    top = [("", 2), *[(t, 5) for t in data.ordered]]
    heads = ["step", "clients"]
    for _t in data.ordered:
        heads += ["QPS", "TPS", "CV", "min – max", "reps"]

    def cells(r: Row) -> list[Td]:
        out: list[Td] = []
        for t in data.ordered:
            c = r.cells[t]
            failed = f"{c.failed} failed" if c.failed else ""
            out += [
                Td(
                    fmt.num(c.median) if c.values or not c.failed else "failed",
                    "c-red" if failed and not c.values else "",
                    _sort_value(c.median),
                    failed,
                ),
                Td(fmt.num(c.tps_median), sort=_sort_value(c.tps_median)),
                Td(fmt.pct(c.cv), sort=_sort_value(c.cv)),
                Td(_spread(c)),
                Td(str(len(c.values)) + (f" (+{c.failed} failed)" if c.failed else ""), sort=len(c.values)),
            ]
        return out

    return Table(
        "abs",
        top,
        heads,
        _grouped_rows(data, cells),
        "QPS and TPS: medians over the repetitions "
        "(rows/s for load steps); CV: coefficient of variation of QPS over the repetitions.",
    )


def _latency_table(data: ReportData) -> Table:
    keys = ("p50", "p95", "p99", "max")
    top = [("", 2), *[(t, 4) for t in data.ordered]]
    heads = ["step", "clients", *[k for _t in data.ordered for k in keys]]
    rows = [r for r in data.rows if any(r.cells[t].latency_median("p50") is not None for t in data.ordered)]

    def cells(r: Row) -> list[Td]:
        return [Td(fmt.ms(v := r.cells[t].latency_median(k)), sort=_sort_value(v)) for t in data.ordered for k in keys]

    return Table(
        "lat",
        top,
        heads,
        _grouped_rows(data, cells, rows),
        "Response time of the step's operation in ms (median over the repetitions of each repetition's percentile).",
    )


def _group_table(data: ReportData) -> Table:
    heads = ["group", "target", "n", "min", "max", "mean", "median", "stddev", "geomean", *stats.VERDICTS]
    groups: list[tuple[str, list[list[Td]]]] = []
    for (group, clients), members in itertools.groupby(data.groups, key=lambda g: (g.group, g.clients)):
        rows = []
        for g in members:
            s = g.summary
            rows.append(
                [
                    Td(fmt.group_title(group, clients, data)),
                    Td(g.target),
                    Td(str(s.n), sort=s.n),
                    *[_ratio_td(v) for v in (s.min, s.max, s.mean, s.median)],
                    Td(fmt.ratio(s.stddev) if s.stddev is None else f"{s.stddev:.3f}", sort=_sort_value(s.stddev)),
                    _ratio_td(g.geomean),
                    *[Td(str(g.verdicts[v]) if g.verdicts[v] else "", f"v-{v}", g.verdicts[v]) for v in stats.VERDICTS],
                ]
            )
        groups.append(("", rows))  # the first column names the group
    return Table("groups", [], heads, groups)


def _per_op_tables(data: ReportData) -> list[tuple[str, Table]]:
    out = []
    for m in data.per_op_metrics:
        with_verdict = m == VERDICT_METRIC
        top = [("", 2), (data.base, 1), *[(t, 4 if with_verdict else 2) for t in data.others]]
        heads = ["step", "clients", m]
        for _t in data.others:
            heads += [m, "ratio"] + ([f"{data.confidence:.0%} CI", "verdict"] if with_verdict else [])

        def cells(r: Row, m: str = m, with_verdict: bool = with_verdict) -> list[Td]:
            base = r.cells[data.base].per_op_median(m)
            row = [Td(fmt.metric(m, base), sort=_sort_value(base))]
            for t in data.others:
                v, ratio = r.cells[t].per_op_median(m), r.cost_ratio[t].get(m)
                row += [Td(fmt.metric(m, v), sort=_sort_value(v)), _ratio_td(ratio, fmt.cost_colour(ratio))]
                if with_verdict:
                    c = r.cost_cmp[t]
                    row += [Td(fmt.ci(c), sort=_sort_value(c.low)), _verdict_td(c)]
            return row

        out.append((m, Table("op-" + m.replace("/", "_"), top, heads, _grouped_rows(data, cells))))
    return out


# ---- the suite's own tables -------------------------------------------------------------------


_VERDICT_CLS = {"faster": "green", "slower": "red", "same": "grey", "unsure": "yellow"}


def _answer_table(data: ReportData) -> Table | None:
    """Per target and figure, how many steps each verdict: the first table of the page."""
    if data.answer is None or not data.answer.targets:
        return None
    heads = ["target", "figure", *stats.VERDICTS, "no verdict"]
    rows: list[list[Td]] = []
    for a in data.answer.targets:
        for i, tally in enumerate(a.tallies):
            rows.append(
                [
                    Td(a.target if i == 0 else "", "l"),
                    Td(tally.figure, "l"),
                    *[Td(str(n) if (n := tally.verdicts[v]) else "", f"v-{v}", n) for v in stats.VERDICTS],
                    Td(str(tally.without) if tally.without else "", sort=tally.without),
                ]
            )
    return Table("answer-tally", [], heads, [("", rows)])


def _instr_table(data: ReportData) -> Table:
    """Instructions per event per step and target, with each verdict, its floor and what it can mean."""
    heads = ["step", "target", "instr/event", "of", "change", "verdict", "floor", "other count", "user", "QPS at most"]
    rows: list[list[Td]] = []
    for ir in data.instr_rows:
        for t in data.ordered:
            j = ir.judged.get(t)
            v = ir.figure(t)
            err = ir.error(t)
            rows.append(
                [
                    Td(ir.step, "l", title=f"an event: {ir.event}"),
                    Td(t, "l"),
                    Td("not counted", "red", title=err) if err else Td(fmt.instructions(v), sort=v),
                    Td(instr.BASIS_TAG[ir.basis], "l"),
                    Td(fmt.signed_pct(j.ratio) if j else "", sort=j.ratio if j else None),
                    Td((j.verdict or "-") + fmt.fg_differs(j), _VERDICT_CLS.get(j.verdict or "", "")) if j else Td(""),
                    Td(fmt.floor(j) if j else "", sort=j.floor if j else None),
                    Td(fmt.other_count(ir, t), sort=ir.other(t)[1]),
                    Td(fmt.pct(ir.user_share.get(t)) if j else "", sort=ir.user_share.get(t)),
                    Td(fmt.pct(ir.throughput_bound(t), 2) if j else "", sort=ir.throughput_bound(t)),
                ]
            )
    return Table("instr", [], heads, [("", rows)])


def _why_tables(data: ReportData) -> list[tuple[str, Table]]:
    """Per step and target with a verdict: the functions whose instructions per event changed most (sortable)."""
    out: list[tuple[str, Table]] = []
    heads = ["function", "file:line", "base", "target", "change", "change %", "share of the change", "inclusive change"]
    for ir in data.instr_rows:
        for t, j in ir.judged.items():
            changes = ir.why.get(t) or []
            if not changes or j.verdict is None:
                continue
            rows = [
                [
                    Td(c.function, "l"),
                    Td(fmt.function_place(c), "l"),
                    Td(fmt.function_cost(c, "base"), sort=c.base_self),
                    Td(fmt.function_cost(c, "target"), sort=c.target_self),
                    Td(fmt.function_delta(c), "red" if c.delta_self > 0 else "green", sort=c.delta_self),
                    Td(fmt.pct(c.rel_self), sort=c.rel_self),
                    Td(fmt.pct(c.share_of_change), sort=c.share_of_change),
                    Td(f"{d:+,.0f}" if (d := c.delta_inclusive) is not None else "-", sort=c.delta_inclusive),
                ]
                for c in changes
            ]
            title = f"{ir.step}: {t} against {data.base} ({j.verdict} {fmt.signed_pct(j.ratio)})"
            out.append((title, Table(f"why-{len(out)}", [], heads, [("", rows)])))
    return out


def _extra_table(extra: ExtraTable) -> Table:
    rows = [
        [
            Td(v.text, f"c-{v.colour}" if v.colour else "", None if i < extra.labels else v.sort, v.tip, v.css)
            for i, v in enumerate(line)
        ]
        for line in extra.rows
    ]
    return Table(extra.key, [], list(extra.header), [("", rows)], extra.note)


def _extras(data: ReportData) -> list[dict[str, Any]]:
    """The suite's tables by section: a long one (a histogram per step) folded under its title."""
    sections: dict[str, dict[str, Any]] = {}
    for t in data.extra_tables:
        if not t.shown_in("html"):
            continue
        section = t.section or data.suite
        top = section.split(":")[0]
        x = sections.setdefault(top, {"id": "x-" + top.lower().replace(" ", "-"), "title": top, "tables": []})
        folded = section != top
        if folded and x.get("sub") != section:  # the heading the folded tables sit under
            x["sub"] = section
            x["tables"].append((section.partition(":")[2].strip().capitalize(), None, True))
        x["tables"].append((t.title.removeprefix("response times of ") if folded else t.title, _extra_table(t), folded))
    return list(sections.values())


# ---- charts --------------------------------------------------------------------------------------


def _colour(data: ReportData, t: str) -> str:
    return PALETTE[data.targets.index(t) % len(PALETTE)]


def _x_labels(data: ReportData, rows: list[Row]) -> list[list[str]]:
    many = len(data.client_counts) > 1
    return [
        [data.group_titles.get(r.group, r.group).split(" (")[0] for r in rows],
        [r.label or fmt.short_step(r.step) + (f" c{r.clients}" if many and r.step != "load" else "") for r in rows],
    ]


def _layout(fig: go.Figure, title: str, height: int, **kw: Any) -> None:
    fig.update_layout(
        template=TEMPLATE,
        title={"text": title, "x": 0, "font": {"size": 14}},
        height=height,
        margin={"l": 60, "r": 20, "t": 80, "b": 40},
        legend={"orientation": "h", "y": -0.25},
        plot_bgcolor="#fff",
        **kw,
    )
    fig.update_xaxes(showline=True, linecolor="#999", gridcolor="#eee")
    fig.update_yaxes(showline=True, linecolor="#999", gridcolor="#eee", zeroline=False)


def _fig_trend(data: ReportData) -> go.Figure | None:
    """A series study's steps over its targets, each figure relative to the first target (rQPS, and instructions
    or cpu/o per operation as a ratio), the bars spanning each target's samples, change points as dashed lines."""
    series = [s for s in data.trend if s.values and s.values[0]]
    if not series:
        return None
    fig = go.Figure()
    cuts: set[int] = set()
    for s in series:
        first = s.values[0]
        rel = [v / first for v in s.values]
        name = trend.series_name(s)
        fig.add_scatter(
            x=list(s.labels),
            y=rel,
            mode="lines+markers",
            name=name,
            # Instructions and QPS at one client are shown; the rest are a click on the legend away.
            visible=True if s.figure == "instructions" or (s.figure == "QPS" and s.clients == 1) else "legendonly",
            error_y={
                "type": "data",
                "symmetric": False,
                "array": [h / first - r for h, r in zip(s.highs, rel, strict=True)] if s.highs else None,
                "arrayminus": [r - lo / first for lo, r in zip(s.lows, rel, strict=True)] if s.lows else None,
                "thickness": 1,
            },
            customdata=list(s.values),
            hovertemplate="%{x}<br>%{y:.4f} of the first<br>%{customdata:,.1f}<extra>" + html.escape(name) + "</extra>",
        )
        cuts.update(p.index for p in s.confirmed)
    for i in sorted(cuts):  # between target i-1 and i, on the category axis
        fig.add_vline(x=i - 0.5, line={"dash": "dash", "width": 1, "color": "#c0392b"})
    _layout(
        fig,
        "Over the series: each figure relative to the first target (bars: each target's samples; dashed: change "
        "points)",
        440,
        yaxis={"title": "relative to the first target"},
        xaxis={"type": "category"},
        showlegend=True,
    )
    return fig


def _fig_rqps(data: ReportData) -> go.Figure | None:
    rows = [r for r in data.rows if any(r.rel[t] is not None for t in data.others)]
    if not rows or not data.others:
        return None
    fig = go.Figure()
    ratios = [v for r in rows for t in data.others if (v := r.rel[t]) is not None]
    one = len(data.others) == 1
    for t in data.others:
        rel = [r.rel[t] for r in rows]
        cmp = [r.cmp[t] for r in rows]
        fig.add_bar(
            name=t,
            x=_x_labels(data, rows),
            y=rel,
            # One target: bars coloured as the tables (red, grey, green); several: one colour per target.
            marker_color=[{"red": "#e06666", "green": "#5cb85c", "grey": "#aaaaaa"}[stats.colour(v)] for v in rel]
            if one
            else _colour(data, t),
            error_y={
                "type": "data",
                "symmetric": False,
                "array": [
                    (c.high - v) if c.high is not None and v is not None else None
                    for c, v in zip(cmp, rel, strict=True)
                ],
                "arrayminus": [
                    (v - c.low) if c.low is not None and v is not None else None for c, v in zip(cmp, rel, strict=True)
                ],
                "color": "#444",
                "thickness": 1,
            },
            customdata=[[fmt.verdict(c), fmt.ci(c)] for c in cmp],
            hovertemplate="%{x}<br>rQPS %{y:.3f}<br>%{customdata[0]} (CI %{customdata[1]})<extra>"
            + html.escape(t)
            + "</extra>",
        )
    # Intervals from a few repetitions can be huge: fit the axis to the ratios, not to the intervals.
    lo, hi = min([*ratios, 0.9]), max([*ratios, 1.1])
    pad = 0.1 * (hi - lo)
    _layout(
        fig,
        "rQPS per microbenchmark, grouped (bars: median ratio; whiskers: confidence interval)",
        460,
        barmode="group",
        yaxis={"range": [max(0.0, lo - pad), hi + pad], "title": "rQPS"},
    )
    fig.add_hrect(y0=stats.SLOWER_AT, y1=stats.FASTER_AT, fillcolor="#888", opacity=0.12, line_width=0)
    fig.add_hline(y=1.0, line={"color": "#333", "width": 1})
    return fig


def _fig_latency(data: ReportData) -> go.Figure | None:
    rows = [r for r in data.rows if any(r.cells[t].latency_median("p50") is not None for t in data.ordered)]
    if not rows:
        return None
    keys = ("p50", "p95", "p99", "max")
    fig = go.Figure()
    for k in keys:
        for t in data.ordered:
            vals = [r.cells[t].latency_median(k) for r in rows]
            fig.add_bar(
                name=t,
                x=_x_labels(data, rows),
                y=[v / 1000 if v is not None else None for v in vals],
                marker_color=_colour(data, t),
                visible=k == "p99",
                hovertemplate="%{x}<br>" + k + " %{y:.3f} ms<extra>" + html.escape(t) + "</extra>",
            )
    n = len(data.ordered)
    buttons = [
        {
            "label": k,
            "method": "update",
            "args": [{"visible": [i // n == j for i in range(n * len(keys))]}, {"yaxis.title.text": f"{k} (ms)"}],
        }
        for j, k in enumerate(keys)
    ]
    _layout(
        fig,
        "Response time per step (median over the repetitions; choose the percentile)",
        420,
        barmode="group",
        yaxis={"title": "p99 (ms)", "rangemode": "tozero"},
        updatemenus=[
            {
                "buttons": buttons,
                "active": 2,
                "x": 1,
                "xanchor": "right",
                "y": 1.02,
                "yanchor": "bottom",
                "direction": "right",
                "type": "buttons",
            }
        ],
    )
    return fig


def _downsample(x: list[float], y: list[float | None]) -> tuple[list[float], list[float | None]]:
    if len(x) <= MAX_POINTS:
        return x, y
    k = math.ceil(len(x) / MAX_POINTS)
    xs, ys = [], []
    for i in range(0, len(x), k):
        chunk = [v for v in y[i : i + k] if v is not None]
        xs.append(sum(x[i : i + k]) / len(x[i : i + k]))
        ys.append(sum(chunk) / len(chunk) if chunk else None)
    return xs, ys


@dataclass
class Chooser:
    """A chart whose traces belong to one (step, repetition): the page offers a choice of both."""

    id: str
    fig: go.Figure
    keys: list[tuple[str, str]]  # (value, label) of the step choice
    reps: list[int]


def _key(r: Row) -> str:
    return f"{r.step}|{r.clients}"


def _key_label(r: Row, data: ReportData) -> str:
    return r.label or r.step + (f", {r.clients} clients" if len(data.client_counts) > 1 and r.step != "load" else "")


def _fig_throughput(data: ReportData) -> Chooser | None:
    # A line needs two points: a load of a small table may report a single second.
    rows = [r for r in data.rows if any(len(rep.samples) > 1 for t in data.ordered for rep in r.cells[t].reps)]
    if not rows:
        return None
    fig = go.Figure()
    reps = sorted({rep.repetition for r in rows for t in data.ordered for rep in r.cells[t].reps})
    first = _key(rows[0])
    for r in rows:
        for t in data.ordered:
            for rep in r.cells[t].reps:
                pts: list[Sample] = rep.samples
                if not pts:
                    continue
                x, y = _downsample([float(s.t) for s in pts], [float(s.ops) for s in pts])
                fig.add_scatter(
                    x=x,
                    y=y,
                    mode="lines",
                    name=f"{t} r{rep.repetition}",
                    meta=[_key(r), rep.repetition],
                    line={"color": _colour(data, t), "dash": DASHES[(rep.repetition - 1) % len(DASHES)], "width": 1.5},
                    visible=_key(r) == first and rep.repetition == reps[0],
                    hovertemplate="t=%{x}s: %{y:,.0f} ops/s<extra>"
                    + html.escape(f"{t} r{rep.repetition}")
                    + "</extra>",
                )
    _layout(
        fig,
        "Throughput over time (operations per second, warm-up included)",
        400,
        xaxis={"title": "seconds since the step started"},
        yaxis={"title": "ops/s", "rangemode": "tozero"},
        showlegend=True,
    )
    return Chooser("tput", fig, [(_key(r), _key_label(r, data)) for r in rows], reps)


def _fig_rates(data: ReportData) -> Chooser | None:
    """Steps that run several operations at once (the Insert Benchmark's): each one's rate and worst time."""
    rows = [r for r in data.rows if any(rep.rates for t in data.ordered for rep in r.cells[t].reps)]
    if not rows:
        return None
    series = [
        ("ips", "inserts/s"),
        ("max_insert_us", "max insert response (ms)"),
        ("dps", "deletes/s"),
        ("max_delete_us", "max delete response (ms)"),
        ("qps", "queries/s"),
        ("max_query_us", "max query response (ms)"),
    ]
    fig = make_subplots(
        rows=3,
        cols=2,
        shared_xaxes=True,
        subplot_titles=[s[1] for s in series],
        vertical_spacing=0.08,
        horizontal_spacing=0.08,
    )
    reps = sorted({rep.repetition for r in rows for t in data.ordered for rep in r.cells[t].reps})
    first = _key(rows[0])
    for r in rows:
        for t in data.ordered:
            for rep in r.cells[t].reps:
                pts: list[RateSample] = rep.rates
                if not pts:
                    continue
                for i, (attr, _title) in enumerate(series):
                    raw = [getattr(s, attr) for s in pts]
                    y = [(v / 1000 if attr.startswith("max_") else v) if v is not None else None for v in raw]
                    x, y = _downsample([float(s.t) for s in pts], y)
                    fig.add_scatter(
                        x=x,
                        y=y,
                        mode="lines",
                        name=f"{t} r{rep.repetition}",
                        legendgroup=f"{t} r{rep.repetition}",
                        showlegend=i == 0,
                        meta=[_key(r), rep.repetition],
                        line={
                            "color": _colour(data, t),
                            "dash": DASHES[(rep.repetition - 1) % len(DASHES)],
                            "width": 1.2,
                        },
                        visible=_key(r) == first and rep.repetition == reps[0],
                        row=i // 2 + 1,
                        col=i % 2 + 1,
                    )
    _layout(fig, "Per-second rates of each operation and their worst response times", 720, showlegend=True)
    fig.update_layout(legend={"y": -0.08})
    return Chooser("ibts", fig, [(_key(r), _key_label(r, data)) for r in rows], reps)


def _plot(fig: go.Figure, div_id: str) -> str:
    return str(
        pio.to_html(
            fig,
            include_plotlyjs=False,
            full_html=False,
            div_id=div_id,
            config=PLOT_CONFIG,
            default_height=f"{fig.layout.height}px",
        )
    )


# ---- the page ------------------------------------------------------------------------------------


def _template() -> jinja2.Template:
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    return env.from_string((resources.files("dbsweep.report") / "templates" / "page.html.j2").read_text("utf-8"))


def render(data: ReportData) -> str:
    """The page for `data` (gathered with `series=True` for the charts over time)."""
    page = _template()
    targets = []
    for t in data.ordered:
        p = data.provenance.get(t)
        targets.append(
            {
                "name": t,
                "version": p.engine("server_version") if p else "",
                "variant": (p.data.get("target") or {}).get("variant", "") if p else "",
                "config": p.config_name if p else "",
                "identity": p.engine("source_identity") if p else "",
            }
        )
    base = data.provenance.get(data.base)
    provenance = [
        {
            "target": t,
            "facts": p.facts(),
            "change": config_change(base, p) if t != data.base else "",
            "diff": p.config_diff,
            "config": p.config_name,
        }
        for t in data.ordered
        if (p := data.provenance.get(t)) is not None
    ]
    rqps = _fig_rqps(data)
    trend_chart = _fig_trend(data)
    latency = _fig_latency(data)
    choosers = [c for c in (_fig_throughput(data), _fig_rates(data)) if c is not None]
    return page.render(
        data=data,
        answer_table=_answer_table(data),
        answer=answer.lines(data.answer, len(data.client_counts) > 1) if data.answer is not None else [],
        trend=trend.lines(data.trend),
        trend_chart=_plot(trend_chart, "chart-trend") if trend_chart else "",
        version=__version__,
        made=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        slower=stats.SLOWER_AT,
        faster=stats.FASTER_AT,
        plotlyjs=(plotly.offline.get_plotlyjs()),
        targets=targets,
        groups=_group_table(data) if data.groups else None,
        rqps=(_plot(rqps, "chart-rqps")) if rqps else "",
        relative=_relative_table(data),
        absolute=_absolute_table(data),
        latency=_latency_table(data),
        latency_chart=(_plot(latency, "chart-latency")) if latency else "",
        choosers=[{"id": c.id, "choices": c.keys, "reps": c.reps, "html": (_plot(c.fig, c.id))} for c in choosers],
        tput=any(c.id == "tput" for c in choosers),
        per_op=_per_op_tables(data),
        extras=_extras(data),
        provenance=provenance,
        canary=_extra_table(ct) if (ct := noise.canary_table(data.canaries)) is not None else None,
        instr=_instr_table(data) if data.instr_rows else None,
        why=_why_tables(data),
        # Each graph in a frame of its own, as an SVG document: inferno's script finds "the" svg of its page.
        flames=[
            {**f, "graphs": [(name, base64.b64encode(svg.encode()).decode()) for name, svg in f["graphs"]]}
            for f in flames.svgs(data)
        ],
    )
