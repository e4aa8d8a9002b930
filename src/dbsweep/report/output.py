"""Writing a report in the chosen format to the terminal, standard output or a file."""

from __future__ import annotations

import io
import re
import sys
from enum import StrEnum
from pathlib import Path

from rich.console import Console

from dbsweep import say
from dbsweep.errors import DbsweepError
from dbsweep.report import terminal
from dbsweep.report.data import ReportData


class Format(StrEnum):
    terminal = "terminal"
    html = "html"
    markdown = "markdown"
    csv = "csv"
    json = "json"


def parse_format(value: str) -> Format:
    try:
        return Format(value.lower())
    except ValueError:
        raise DbsweepError(f"--format: {value!r} is not one of {', '.join(f.value for f in Format)}") from None


def default_html_path(data: ReportData) -> Path:
    """An HTML page goes to a file even without --out: nobody wants 5 MB of it on the terminal."""
    name = re.sub(r"[^A-Za-z0-9._+-]", "_", f"{data.title}-{data.runs}".replace(" ", "-"))
    return Path(f"{name}.html")


def text(data: ReportData, fmt: Format, width: int = 160) -> str:
    """The report as text; the terminal format without colours."""
    if fmt == Format.terminal:
        buf = io.StringIO()
        terminal.render(data, say.console(file=buf, width=width, color_system=None, soft_wrap=False))
        return buf.getvalue()
    # Imported when used: plotly alone takes most of a second to import.
    if fmt == Format.html:
        from dbsweep.report import html

        return html.render(data)
    if fmt == Format.markdown:
        from dbsweep.report import markdown

        return markdown.render(data)
    from dbsweep.report import csv_json

    return csv_json.to_csv(data) if fmt == Format.csv else csv_json.to_json(data)


def emit(data: ReportData, fmt: Format, out: Path | None, console: Console) -> Path | None:
    """Prints the report, or writes it to `out`; returns the file written, if any."""
    if out is None and fmt == Format.terminal:
        terminal.render(data, console)
        return None
    if out is None and fmt == Format.html:
        out = default_html_path(data)
    check_out(out, fmt)
    return deliver(text(data, fmt), out)


def check_out(out: Path | None, fmt: Format) -> None:
    """Refuses an --out that cannot be written: a directory, or a file in a directory that does not exist."""
    if out is not None and out.is_dir():
        raise DbsweepError(f"--out: {out} is a directory; give a file name, e.g. {out / f'report.{fmt.value}'}")
    if out is not None and not out.parent.is_dir():
        raise DbsweepError(f"--out: the directory {out.parent} does not exist; make it first, or give another file.")


def deliver(body: str, out: Path | None) -> Path | None:
    """Writes `body` to `out`, or to standard output without one; returns the file written, if any."""
    if out is None:
        sys.stdout.write(body)
        sys.stdout.flush()
        return None
    out.write_text(body, encoding="utf-8")
    return out
