"""The terminal report: QPS per target and step, rQPS against the base with its interval and verdict,
coloured; the group summaries; the hardware cost per operation; the Insert Benchmark's tables."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from dbsweep import stats
from dbsweep.ibench import SLA_SHARE
from dbsweep.report import fmt
from dbsweep.report.data import IBENCH_OPS, PER_OP_ORDER, VERDICT_METRIC, Cell, ReportData, Row, cell_max_us
from dbsweep.suites import GROUPS, STEPS

STYLE = {"red": "red", "green": "green", "grey": "grey62"}
VERDICT_STYLE = {"faster": "green", "slower": "red", "same": "grey62", "unsure": "yellow"}
# Beyond this many targets besides the base the intervals no longer fit beside the ratios.
MAX_CI_TARGETS = 3


def _num(v: float | None) -> str:
    return fmt.num(v)


def _coloured(r: float | None, colour: str | None = None) -> str:
    if r is None:
        return "-"
    return f"[{STYLE[colour or stats.colour(r)]}]{r:.2f}[/]"


def _verdict(v: str | None) -> str:
    return f"[{VERDICT_STYLE[v]}]{v}[/]" if v else "-"


def render(data: ReportData, console: Console) -> None:
    if data.suite == "ibench":
        render_ibench(data, console)
    else:
        _render_main(data, console)
    _render_groups(data, console)
    _render_per_op(data, console)
    for note in data.notes:
        console.print(f"[yellow]note:[/yellow] {note}", highlight=False)


def _render_main(data: ReportData, console: Console) -> None:
    others = data.others
    table = Table(
        title=f"{data.title}: QPS and QPS relative to the base ({data.base}), {data.runs}",
        title_justify="left",
    )
    # With many targets the names no longer fit as headings: number them, as the seeds' tables do.
    numbered = len(others) > 2
    heading = {t: (f"col-{i}" if numbered else t) for i, t in enumerate(data.ordered, 1)}
    with_ci = len(others) <= MAX_CI_TARGETS
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
    table.add_column("reps", justify="right", min_width=4)
    group = None
    for row in data.rows:
        if row.group != group:
            group = row.group
            table.add_row(f"[bold]{GROUPS[group]}[/bold]", end_section=False)
        name = row.step + {"rows": " (rows/s)", "Krows": " (Krows/s)"}.get(row.ops_name, "")
        cells = [name, str(row.clients)]
        for t in data.ordered:
            c = row.cells[t]
            cells.append("[red]failed[/red]" if c.failed and not c.values else _num(c.median))
            if t != data.base:
                cmp = row.cmp[t]
                cells.append(_coloured(row.rel[t]))
                if with_ci:
                    cells.append(fmt.ci(cmp))
                cells.append(_verdict(cmp.verdict))
        reps = sorted({len(c.values) for c in row.cells.values()})
        cells.append("/".join(str(n) for n in reps))
        table.add_row(*cells)
    console.print(table)
    if numbered:
        console.print("  ".join(f"{heading[t]} = {t}" for t in data.ordered), highlight=False)
    console.print(
        "rQPS = median QPS of the target / median QPS of the base; "
        "[red]red[/red] <= 0.95, [green]green[/green] >= 1.05. "
        f"Verdicts: the {data.confidence:.0%} interval of the ratio excludes 1 and the change is at least "
        f"{data.min_effect:.0%} ([green]faster[/green], [red]slower[/red]); [grey62]same[/grey62]: no change that "
        "large; [yellow]unsure[/yellow]: more repetitions needed."
    )


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
                ", ".join(f"{n} {_verdict(v)}" for v, n in g.verdicts.items() if n),
                end_section=i == len(members) - 1,
            )
    console.print(table)


def _render_per_op(data: ReportData, console: Console) -> None:
    # The method's metrics only; the others are in the HTML, CSV and JSON reports.
    metrics = [m for m in data.per_op_metrics if m in PER_OP_ORDER]
    if not metrics:
        console.print("[dim]No per-operation measurements (cpu/o, cs/o, ...) in this run.[/dim]")
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
                v = fmt.cost(c.per_op_median(m))
                if t != data.base and (r := row.cost_ratio[t].get(m)) is not None:
                    v += f" ({_coloured(r, fmt.cost_colour(r))})"
                vals.append(v)
            verdict = _verdict(row.cost_cmp[t].verdict) if t != data.base else ""
            last = i == len(data.ordered) - 1
            table.add_row(
                row.step if i == 0 else "", str(row.clients) if i == 0 else "", t, *vals, verdict, end_section=last
            )
    console.print(table)
    console.print(
        "cpu/o: server CPU µs per operation; cs/o: context switches; r/o, rKB/o, wKB/o: device reads and KB "
        "read and written; client_cpu/o: the load client's CPU µs. The verdict on cpu/o: faster = less CPU."
    )


def _median_of(cell: Cell, key: str) -> float | None:
    return cell.summary_median(key)


def _sla_failed(cell: Cell) -> bool:
    """A read-write step fails its SLA when any repetition missed the background insert rate."""
    return cell.sla_failed


def render_ibench(data: ReportData, console: Console) -> None:
    """The Insert Benchmark's three summary tables (methodology 4.1): throughput, throughput relative to
    the base, and the background insert rate of the read-write steps with SLA failures marked; then the
    worst response times."""
    rows = [r for r in data.rows if r.step in STEPS]
    names = data.ordered
    absolute = Table(title=f"{data.title}: throughput per step, {data.runs}", title_justify="left")
    relative = Table(title=f"throughput relative to the base ({data.base})", title_justify="left")
    for table in (absolute, relative):
        table.add_column("target", no_wrap=True)
        for r in rows:
            table.add_column(r.step, justify="right")
    styles = {
        r.step: fmt.column_styles({t: r.cells[t].median for t in names}, {t: _sla_failed(r.cells[t]) for t in names})
        for r in rows
    }
    for t in names:
        abs_cells, rel_cells = [t], [t]
        for r in rows:
            c = r.cells[t]
            txt = "[red]failed[/red]" if c.failed and not c.values else _num(c.median)
            style = STYLE.get(styles[r.step].get(t, ""))
            abs_cells.append(f"[{style}]{txt}[/]" if style and c.values else txt)
            rel = r.rel[t]
            cmp = r.cmp.get(t)
            mark = f" {_verdict(cmp.verdict)}" if cmp is not None and cmp.verdict not in (None, "same") else ""
            rel_cells.append((_coloured(rel) if rel is not None else "-") + mark)
        absolute.add_row(*abs_cells)
        relative.add_row(*rel_cells)
    console.print(absolute)
    console.print(
        "inserted rows/s for l.i0, l.i1, l.i2; indexed rows/s for l.x; queries/s for the read-write steps. "
        "Per column: [red]red[/red] near the lowest, [green]green[/green] near the highest that met its SLA, "
        "[grey62]grey[/grey62] = missed the SLA (ignore the value)."
    )
    console.print(relative)
    rw = [r for r in rows if STEPS[r.step].rate]
    if rw:
        background = Table(title="background insert rate of the read-write steps (rows/s)", title_justify="left")
        background.add_column("target", no_wrap=True)
        for r in rw:
            background.add_column(r.step, justify="right")
        for t in names:
            out = [t]
            for r in rw:
                c = r.cells[t]
                txt = _num(_median_of(c, "achieved_rate"))
                out.append(f"[red]{txt} SLA[/red]" if _sla_failed(c) else txt)
            background.add_row(*out)
        target_row = ["target"]
        for r in rw:
            target = next((_median_of(r.cells[t], "target_rate") for t in names if r.cells[t].summaries), None)
            target_row.append(f"[grey62]{_num(target)}[/grey62]")
        background.add_row(*target_row, end_section=True)
        console.print(background)
        console.print(
            f"A step misses its SLA ([red]SLA[/red]) when the achieved background insert rate is below "
            f"{SLA_SHARE:.0%} of the target (clients x the step's rate per client)."
        )
    _render_ibench_max(data, rows, console)


def _render_ibench_max(data: ReportData, rows: list[Row], console: Console) -> None:
    found = {
        (t, op) for r in rows for t in data.ordered for op in IBENCH_OPS if cell_max_us(r.cells[t], op) is not None
    }
    if not found:
        return
    table = Table(title="worst response time per operation (ms, over all repetitions)", title_justify="left")
    table.add_column("target", no_wrap=True)
    table.add_column("operation", no_wrap=True)
    for r in rows:
        table.add_column(r.step, justify="right")
    for t in data.ordered:
        ops = [op for op in IBENCH_OPS if (t, op) in found]
        for i, op in enumerate(ops):
            table.add_row(
                t if i == 0 else "",
                op,
                *[fmt.ms(cell_max_us(r.cells[t], op)) for r in rows],
                end_section=i == len(ops) - 1,
            )
    console.print(table)
