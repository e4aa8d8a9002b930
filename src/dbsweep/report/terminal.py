"""The terminal report: QPS per target and step, rQPS against the base with its interval and verdict,
coloured; the suite's own tables; the group summaries; the hardware cost per operation."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from dbsweep.report import answer, fmt, instr, noise, trend
from dbsweep.report.data import PER_OP_ORDER, VERDICT_METRIC, Comparison, GroupStats, ReportData
from dbsweep.report.tables import ExtraTable
from dbsweep.say import line, styled
from dbsweep.verdicts import stats
from dbsweep.verdicts.instructions import InstrVerdict

STYLE = {"red": "red", "green": "green", "grey": "grey62"}
VERDICT_STYLE = {"faster": "green", "slower": "red", "same": "grey62", "unsure": "yellow"}
# Beyond this many targets besides the base the intervals no longer fit beside the ratios.
MAX_CI_TARGETS = 3


def _num(v: float | None) -> str:
    return fmt.num(v)


def _coloured(r: float | None, colour: str | None = None) -> Text:
    if r is None:
        return Text("-")
    return styled(f"{r:.2f}", STYLE[colour or stats.colour(r)])


def _verdict(v: str | None) -> Text:
    return styled(v, VERDICT_STYLE[v]) if v else Text("-")


def _verdict_spread(c: Comparison, spread: noise.Spread | None) -> Text:
    """The coloured verdict and, beside it, the step's A-A spread (or the noise one repetition was judged by)."""
    if not c.verdict:
        return Text("-")
    return line(_verdict(c.verdict), fmt.verdict_spread(c, spread).removeprefix(c.verdict))


def render(data: ReportData, console: Console) -> None:
    _render_answer(data, console)
    _render_trend(data, console)
    if data.main_table:
        _render_main(data, console)
    for extra in data.extra_tables:
        if extra.shown_in("terminal"):
            render_extra(extra, console)
    _render_groups(data, console)
    _render_per_op(data, console)
    _render_instr(data, console)
    _render_profiles(data, console)
    _render_noise(data, console)
    for note in data.notes:
        console.print(line(styled("note:", "yellow"), f" {note}"))


def _render_trend(data: ReportData, console: Console) -> None:
    """A series study's trend per step and figure, and where it changed."""
    for depth, text in trend.lines(data.trend):
        console.print(styled(text, "bold") if depth == 0 else "  " * depth + text)
    if data.trend:
        console.print()


def _render_main(data: ReportData, console: Console) -> None:
    others = data.others
    # With many targets the names no longer fit as headings: number them, as the seeds' tables (and the markdown
    # report) do, the base apart.
    numbered = len(others) > 2
    heading = {t: (f"col-{i}" if numbered else t) for i, t in enumerate(others, 1)}
    heading[data.base] = "base" if numbered else data.base
    with_ci = len(others) <= MAX_CI_TARGETS
    # Targets that do not fit the terminal's width beside each other go to a table after it, each with the steps
    # and the base again: squeezed, the columns lose their figures.
    unbounded = console.options.update_width(100_000)  # measured as wide as it would like to be
    parts: list[list[str]] = []
    for t in others:
        wide = (
            console.measure(_main_table(data, [*parts[-1], t], heading, with_ci, ""), options=unbounded)
            if parts
            else None
        )
        if wide is not None and wide.maximum <= console.width:
            parts[-1].append(t)
        else:
            parts.append([t])
    title = f"{data.title}: QPS and QPS relative to the base ({data.base}), {data.runs}"
    for i, part in enumerate(parts or [[]], 1):
        shown = ", ".join(heading[t] for t in part)
        console.print(_main_table(data, part, heading, with_ci, f"{title} ({shown})" if len(parts) > 1 else title))
        if i < len(parts):
            console.print()
    if numbered:
        console.print("  ".join(f"{heading[t]} = {t}" for t in data.ordered))
    console.print(
        line(
            "rQPS = median QPS of the target / median QPS of the base; ",
            styled("red", "red"),
            " <= 0.95, ",
            styled("green", "green"),
            f" >= 1.05. Verdicts: the {data.confidence:.0%} interval of the ratio excludes 1 and the change is at "
            f"least {data.min_effect:.0%} (",
            styled("faster", "green"),
            ", ",
            styled("slower", "red"),
            "); ",
            styled("same", "grey62"),
            ": no change that large; ",
            styled("unsure", "yellow"),
            ": more repetitions needed.",
        )
    )
    if others and (legend := noise.spread_legend(data.rows)):
        console.print(legend)


def _main_table(data: ReportData, others: list[str], heading: dict[str, str], with_ci: bool, title: str) -> Table:
    """The QPS table of the base and `others`."""
    table = Table(title=title or None, title_justify="left")
    table.add_column("step", no_wrap=True)
    table.add_column("clients", justify="right", min_width=7)
    table.add_column(f"{heading[data.base]}\nQPS", justify="right", overflow="fold", min_width=7)
    for t in others:
        # Long target names wrap rather than being cut: they are what the reader compares.
        table.add_column(f"{heading[t]}\nQPS", justify="right", no_wrap=True)
        table.add_column(f"{heading[t]}\nrQPS", justify="right", no_wrap=True)
        if with_ci:
            table.add_column(f"{heading[t]}\n{data.confidence:.0%} CI", justify="right", no_wrap=True)
        table.add_column(f"{heading[t]}\nverdict", no_wrap=True)
        if data.instr_rows:
            table.add_column(f"{heading[t]}\ninstr/event", no_wrap=True)
    table.add_column("reps", justify="right", min_width=4)
    group = None
    for row in data.rows:
        if row.group != group:
            group = row.group
            table.add_row(styled(data.group_titles.get(group, group), "bold"), end_section=False)
        name = row.name + {"rows": " (rows/s)", "Krows": " (Krows/s)"}.get(row.ops_name, "")
        cells: list[str | Text] = [name, str(row.clients)]
        for t in [data.base, *others]:
            c = row.cells[t]
            cells.append(styled("failed", "red") if c.failed and not c.values else _num(c.median))
            if t != data.base:
                cmp = row.cmp[t]
                cells.append(_coloured(row.rel[t]))
                if with_ci:
                    cells.append(fmt.ci(cmp))
                cells.append(_verdict_spread(cmp, row.spread))
                if data.instr_rows:
                    cells.append(_instr(row.instr.get(t)))
        reps = sorted({len(row.cells[t].values) for t in [data.base, *others]})
        cells.append("/".join(str(n) for n in reps))
        table.add_row(*cells)
    return table


def _instr(j: InstrVerdict | None) -> Text:
    if j is None or j.verdict is None:
        return Text("-")
    return styled(fmt.instr_verdict(j), VERDICT_STYLE[j.verdict])


def _render_answer(data: ReportData, console: Console) -> None:
    """The answer first: per target, the verdicts of each figure, the largest changes and why, what is undecided."""
    if data.answer is None or not data.answer.targets:
        return
    console.print(styled(f"The answer, {data.runs}: each target against the base ({data.base})", "bold"))
    for depth, text in answer.lines(data.answer, len(data.client_counts) > 1):
        console.print(styled(text, "bold") if depth == 0 else "  " * depth + text)
    console.print()


def _render_instr(data: ReportData, console: Console) -> None:
    """Instructions per event per step and target, the verdicts, and why: the functions that changed most."""
    if not data.instr_rows:
        return
    table = Table(
        title="Instructions per event (valgrind, one client): user-space work, not time",
        title_justify="left",
    )
    cols = ("step", "target", "instr/event", "of", "change", "verdict", "floor", "other count", "user", "QPS ≤")
    for col in cols:
        table.add_column(col, no_wrap=True, justify="left" if col in ("step", "target", "of", "verdict") else "right")
    for ir in data.instr_rows:
        for i, t in enumerate(data.ordered):
            j = ir.judged.get(t)
            value = styled("not counted", "red") if ir.error(t) else Text(fmt.instructions(ir.figure(t)))
            table.add_row(
                ir.step if i == 0 else "",
                t,
                value,
                instr.BASIS_TAG[ir.basis],
                fmt.signed_pct(j.ratio) if j else "",
                _verdict(j.verdict) if j else Text(""),
                fmt.floor(j) if j else "",
                fmt.other_count(ir, t),
                fmt.pct(ir.user_share.get(t)) if j else "",
                fmt.pct(ir.throughput_bound(t), 2) if j else "",
                end_section=i == len(data.ordered) - 1,
            )
    console.print(table)
    console.print(
        "instr/event: the figure the verdict judges, of the processes that served the client (fg) or of every "
        "process (all); change: that figure against the base's; floor: the smallest change the verdict reports and "
        "what set it; other count: the figure not judged; user: the user-space share of the server's CPU in the "
        "timed 1-client step; QPS ≤: the most that change can move QPS."
    )
    for ir in data.instr_rows:
        for t, j in ir.judged.items():
            lines = ir.why.get(t) or []
            if j.verdict in ("faster", "slower") and lines:
                console.print(
                    line(styled("why", "bold"), f" {ir.step}, {t} against {data.base} (instructions per event):")
                )
                for change in lines[: instr.WHY_TOP]:
                    console.print(f"  {fmt.function_change(change)}")


def _render_profiles(data: ReportData, console: Console) -> None:
    """Per profiled step and target: samples and the hottest functions (the flame graphs are in the HTML)."""
    if not data.profiles:
        return
    table = Table(title="Sampled profiles (perf): the functions with most samples of their own", title_justify="left")
    for col in ("step", "target", "samples", "hottest functions"):
        table.add_column(col, no_wrap=col != "hottest functions", justify="right" if col == "samples" else "left")
    for sp in data.profiles:
        for i, t in enumerate(data.ordered):
            d = sp.stored.get(t)
            if d is None:
                continue
            hot = ", ".join(f"{f} {share:.0%}" for f, share in sp.hottest(t))
            samples = f"{d['samples']:,}" if d.get("samples") else "-"
            table.add_row(sp.step if i == 0 else "", t, samples, hot or styled(d.get("error") or "-", "red"))
    console.print(table)
    console.print("The flame graphs, and the differential ones against the base, are in the HTML report.")


def _render_noise(data: ReportData, console: Console) -> None:
    """The canary's rate per round, in one line."""
    if canary := noise.canary_line(data.canaries):
        console.print(canary)


def _render_groups(data: ReportData, console: Console) -> None:
    if not data.groups:
        return
    table = Table(title="rQPS per group (warm-up and .pre steps left out)", title_justify="left")
    table.add_column("group", no_wrap=True)
    table.add_column("target", no_wrap=True)
    for col in ("n", "min", "max", "mean", "median", "stddev", "geomean"):
        table.add_column(col, justify="right")
    table.add_column("verdicts")
    keys = list(dict.fromkeys((g.group, g.clients) for g in data.groups))
    for group, clients in keys:
        members = [g for g in data.groups if (g.group, g.clients) == (group, clients)]
        for i, g in enumerate(members):
            s = g.summary
            table.add_row(
                fmt.group_title(group, clients, data) if i == 0 else "",
                g.target,
                str(s.n),
                *[_coloured(v) for v in (s.min, s.max, s.mean, s.median)],
                fmt.ratio(s.stddev),
                _coloured(g.geomean),
                line(_tally(g.verdicts), _instr_tally(g)),
                end_section=i == len(members) - 1,
            )
    console.print(table)


def _tally(verdicts: dict[stats.Verdict, int]) -> Text:
    """'3 faster, 1 same', each verdict in its colour."""
    return Text(", ").join(line(f"{n} ", _verdict(v)) for v, n in verdicts.items() if n)


def _instr_tally(g: GroupStats) -> Text:
    """The group's instruction verdicts and their ratios' median (below 1: less work than the base)."""
    if not g.instr_verdicts:
        return Text("")
    s = g.instr_summary
    return line("; instr/event: ", _tally(g.instr_verdicts), f" (median {s.median:.3f})" if s else "")


def _render_per_op(data: ReportData, console: Console) -> None:
    # The method's metrics only; the others are in the HTML, CSV and JSON reports.
    metrics = [m for m in data.per_op_metrics if m in PER_OP_ORDER]
    if not metrics:
        console.print(styled("No per-operation measurements (cpu/o, cs/o, ...) in this run.", "dim"))
        return
    table = Table(
        title="Hardware cost per operation: median, and (ratio to the base); lower is better",
        title_justify="left",
    )
    for col in ("step", "clients", "target"):
        table.add_column(col, no_wrap=True, justify="right" if col == "clients" else "left")
    for m in metrics:
        table.add_column(m, justify="right", no_wrap=True)
    table.add_column(f"{VERDICT_METRIC}\nverdict", no_wrap=True)
    for row in data.rows:
        for i, t in enumerate(data.ordered):
            c = row.cells[t]
            vals = []
            for m in metrics:
                v = Text(fmt.metric(m, c.per_op_median(m)))
                if t != data.base and (r := row.cost_ratio[t].get(m)) is not None:
                    v = line(v, " (", _coloured(r, fmt.cost_colour(r)), ")")
                vals.append(v)
            verdict = _verdict(row.cost_cmp[t].verdict) if t != data.base else Text("")
            last = i == len(data.ordered) - 1
            table.add_row(
                row.name if i == 0 else "", str(row.clients) if i == 0 else "", t, *vals, verdict, end_section=last
            )
    console.print(table)
    console.print(
        "cpu/o: server CPU µs per operation; cs/o: context switches; r/o, rKB/o, wKB/o: device reads and KB "
        "read and written; client_cpu/o: the load client's CPU µs. The verdict on cpu/o: faster = less CPU."
    )


def render_extra(extra: ExtraTable, console: Console) -> None:
    """A suite's table: label columns left, values right, coloured; its note under it."""
    table = Table(title=extra.title, title_justify="left")
    for i, head in enumerate(extra.header):
        if i < extra.labels:
            table.add_column(head, no_wrap=True)
        else:
            table.add_column(head, justify="right")
    for i, row in enumerate(extra.rows):
        cells = [styled(v.text, STYLE.get(v.colour) or "") for v in row]
        table.add_row(*cells, end_section=i in extra.rules)
    console.print(table)
    if extra.note:
        console.print(extra.note)
