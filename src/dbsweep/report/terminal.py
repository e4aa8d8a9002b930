"""The terminal report: QPS per target and step, and rQPS against the base, coloured."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from dbsweep import stats
from dbsweep.report.data import ReportData
from dbsweep.suites import GROUPS

STYLE = {"red": "red", "green": "green", "grey": "grey62"}


def _num(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:,.0f}" if v >= 100 else f"{v:,.2f}"


def render(data: ReportData, console: Console) -> None:
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
