"""A table a suite adds to the reports (the Insert Benchmark's throughput, background-rate, worst-time and
histogram tables): built once from the report model by the suite, shown alike by every format."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Value:
    """A table cell: its text, a colour (red, green, grey or none), a sort value, an inline CSS style
    (the HTML page's shaded histogram cells) and a tooltip."""

    text: str
    colour: str = ""
    sort: float | None = None
    css: str = ""
    tip: str = ""


@dataclass
class ExtraTable:
    key: str  # an identifier: the HTML table's id
    title: str
    header: list[str]
    rows: list[list[Value]]
    note: str = ""  # a line under the table, plain text
    labels: int = 1  # how many leading columns are labels (left-aligned, not sorted as numbers)
    section: str = ""  # the heading of the section the table belongs to ("Insert Benchmark")
    # The formats that show it; a long table (the histograms) may be left out of the terminal.
    formats: frozenset[str] = field(default_factory=lambda: frozenset({"terminal", "markdown", "html"}))
    # Row indices after which the terminal draws a rule (the end of a target's rows).
    rules: frozenset[int] = frozenset()

    def shown_in(self, fmt: str) -> bool:
        return fmt in self.formats
