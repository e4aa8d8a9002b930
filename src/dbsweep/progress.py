"""How a long run shows itself: progress bars on a terminal, one line per cell in a log.

Bars and messages go to stderr, so stdout carries only results (tables, reports). When stderr is
not a terminal (a log file, CI, nohup) the bars stay silent and every finished cell prints one
line with its result and the time left, so a long run can be followed with `tail -f`.
"""

from __future__ import annotations

import time

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from dbsweep.say import column, line, styled


def bars(console: Console) -> Progress:
    """A progress display: what, bar, n of m and unit, elapsed, time left."""
    return Progress(
        column("{task.description}", "bold"),
        BarColumn(),
        MofNCompleteColumn(),
        column("{task.fields[unit]}"),
        TimeElapsedColumn(),
        column("left"),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )


def duration(seconds: float) -> str:
    """'2 h 05 min', '7 min 30 s', '45 s'."""
    s = round(seconds)
    if s >= 3600:
        return f"{s // 3600} h {s % 3600 // 60:02d} min"
    if s >= 60:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s} s"


class CellLog:
    """Counts finished cells against their expected seconds and, in a log, prints one line per cell.

    The time left scales the expected seconds of the cells still to run by how long the finished
    ones took against theirs, so a slow machine or a long load corrects the estimate as it goes.
    """

    def __init__(self, console: Console, expected: list[float]) -> None:
        self.console = console
        self.total = len(expected)
        self.expected_left = sum(expected)
        self.expected_done = 0.0
        self.done = 0
        self.t0 = time.monotonic()

    @property
    def active(self) -> bool:
        return not self.console.is_terminal

    def left(self) -> float | None:
        elapsed = time.monotonic() - self.t0
        if self.expected_done <= 0 or elapsed <= 0:
            return None
        return self.expected_left * elapsed / self.expected_done

    def finished(self, cell: str, expected: float, outcome: str, ok: bool) -> None:
        self.done += 1
        self.expected_done += expected
        self.expected_left = max(0.0, self.expected_left - expected)
        if not self.active:
            return
        left = self.left()
        when = f"{duration(left)} left" if left is not None and self.done < self.total else "last cell"
        colour = "green" if ok else "red"
        self.console.print(
            line(f"[{self.done}/{self.total}] {cell}: ", styled(outcome, colour), f" · {when}"), soft_wrap=True
        )
