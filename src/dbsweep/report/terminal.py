"""The terminal report: QPS per target and step, and rQPS against the base, coloured."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from dbsweep import stats
from dbsweep.ibench import SLA_SHARE
from dbsweep.report.data import Cell, ReportData
from dbsweep.suites import GROUPS, STEPS

STYLE = {"red": "red", "green": "green", "grey": "grey62"}


def _num(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:,.0f}" if v >= 100 else f"{v:,.2f}"


def render(data: ReportData, console: Console) -> None:
    if data.study.suite.name == "ibench":
        render_ibench(data, console)
        return
    others = [t for t in data.targets if t != data.base]
    table = Table(
        title=f"{data.study.title}: QPS and QPS relative to the base ({data.base}), run {data.run_id}",
        title_justify="left",
    )
    # With many targets the names no longer fit as headings: number them, as the seeds' tables do.
    numbered = len(others) > 2
    heading = {t: (f"col-{i}" if numbered else t) for i, t in enumerate([data.base, *others], 1)}
    table.add_column("step", no_wrap=True)
    table.add_column("clients", justify="right", min_width=7)
    table.add_column(f"{heading[data.base]}\nQPS", justify="right", overflow="fold", min_width=7)
    for t in others:
        # Long target names wrap rather than being cut: they are what the reader compares.
        table.add_column(f"{heading[t]}\nQPS", justify="right", no_wrap=True)
        table.add_column(f"{heading[t]}\nrQPS", justify="right", no_wrap=True)
    table.add_column("reps", justify="right", min_width=4)
    group = None
    for row in data.rows:
        if row.group != group:
            group = row.group
            table.add_row(f"[bold]{GROUPS[group]}[/bold]", end_section=False)
        name = row.step + {"rows": " (rows/s)", "Krows": " (Krows/s)"}.get(row.ops_name, "")
        cells = [name, str(row.clients)]
        for t in [data.base, *others]:
            c = row.cells[t]
            txt = _num(c.median)
            if c.failed and not c.values:
                txt = "[red]failed[/red]"
            cells.append(txt)
            if t != data.base:
                r = row.rel[t]
                cells.append(f"[{STYLE[stats.colour(r)]}]{r:.2f}[/]" if r is not None else "-")
        reps = sorted({len(c.values) for c in row.cells.values()})
        cells.append("/".join(str(n) for n in reps))
        table.add_row(*cells)
    console.print(table)
    if numbered:
        console.print("  ".join(f"{heading[t]} = {t}" for t in [data.base, *others]), highlight=False)
    console.print(
        "rQPS = median QPS of the target / median QPS of the base; "
        "[red]red[/red] <= 0.95, [green]green[/green] >= 1.05."
    )


def _median_of(cell: Cell, key: str) -> float | None:
    vals = [float(s[key]) for s in cell.summaries if s.get(key) is not None]
    return stats.median(vals) if vals else None


def _sla_failed(cell: Cell) -> bool:
    """A read-write step fails its SLA when any repetition missed the background insert rate."""
    return any(s.get("sla_ok") is False for s in cell.summaries)


def _column_styles(values: dict[str, float | None], failed: dict[str, bool]) -> dict[str, str]:
    """The method's per-column colours of the absolute table: red near the column's minimum (unless the
    column is tight), green near the maximum of the rows that met their SLA; SLA failures grey."""
    present = [v for v in values.values() if v is not None]
    passing = [v for t, v in values.items() if v is not None and not failed[t]]
    if not present:
        return {}
    lo, hi = min(present), max(passing or present)
    gap = hi - lo
    out: dict[str, str] = {}
    for t, v in values.items():
        if v is None:
            continue
        if v <= lo + 0.25 * gap and lo < 0.8 * hi:
            out[t] = "red"
        elif failed[t]:
            out[t] = "grey62"
        elif v >= hi - 0.25 * gap and gap > 0:
            out[t] = "green"
    return out


def render_ibench(data: ReportData, console: Console) -> None:
    """The Insert Benchmark's three summary tables (methodology 4.1): throughput, throughput relative to
    the base, and the background insert rate of the read-write steps with SLA failures marked."""
    rows = [r for r in data.rows if r.step in STEPS]
    names = [data.base, *[t for t in data.targets if t != data.base]]
    absolute = Table(title=f"{data.study.title}: throughput per step, run {data.run_id}", title_justify="left")
    relative = Table(title=f"throughput relative to the base ({data.base})", title_justify="left")
    for table in (absolute, relative):
        table.add_column("target", no_wrap=True)
        for r in rows:
            table.add_column(r.step, justify="right")
    styles = {
        r.step: _column_styles({t: r.cells[t].median for t in names}, {t: _sla_failed(r.cells[t]) for t in names})
        for r in rows
    }
    for t in names:
        abs_cells, rel_cells = [t], [t]
        for r in rows:
            c = r.cells[t]
            txt = "[red]failed[/red]" if c.failed and not c.values else _num(c.median)
            style = styles[r.step].get(t)
            abs_cells.append(f"[{style}]{txt}[/]" if style and c.values else txt)
            rel = r.rel[t]
            rel_cells.append(f"[{STYLE[stats.colour(rel)]}]{rel:.2f}[/]" if rel is not None else "-")
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
    if not rw:
        return
    background = Table(title="background insert rate of the read-write steps (rows/s)", title_justify="left")
    background.add_column("target", no_wrap=True)
    for r in rw:
        background.add_column(r.step, justify="right")
    for t in names:
        out = [t]
        for r in rw:
            c = r.cells[t]
            achieved = _median_of(c, "achieved_rate")
            txt = _num(achieved)
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
