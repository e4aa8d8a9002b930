"""How a long run shows itself: progress bars on a terminal, one line per cell in a log.

Bars and messages go to stderr, so stdout carries only results (tables, reports). When stderr is
not a terminal (a log file, CI, nohup) the bars stay silent and every finished cell prints one
line with its result and the time left, so a long run can be followed with `tail -f`; a build
prints a line at least every 30 s with its objects compiled of the total and the time left.
"""

from __future__ import annotations

import collections
import contextlib
import threading
import time
from collections.abc import Callable, Iterator

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from dbsweep.build.objects import Status
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


class BuildLog:
    """A build's figures: what it is doing, the objects compiled of the total and the time left, for its progress
    bar's description and, in a log, for a line at least every `every` seconds (the build's output goes to its
    own log file, so a long build would otherwise say nothing for minutes).

    The time left is the objects still to compile at the pace of those compiled so far (the time spent in compile
    steps over the objects they made), from the first object on, or at the pace of the last `window` seconds of
    compiling when that is slower (objects ccache had came in hundreds a minute, and the rest will not); the
    configure, the install and a PGO training run are not in it. Before the first object it is what the newest
    like build in the cache took, less the time this one has taken so far; with no such build, not known.
    """

    window = 300.0  # seconds of compiling the recent pace is taken over

    def __init__(
        self, console: Console, what: str, clock: Callable[[], float] = time.monotonic, every: float = 30.0
    ) -> None:
        self.console = console
        self.what = what  # "15.18/def (postgres 15.18, variant def)"
        self.clock = clock
        self.every = every
        self.t0 = clock()
        self.printed = self.t0  # the last line (the first comes `every` seconds in)
        self.status: Status | None = None
        self.since = self.t0  # when `status` came
        self.compile_seconds = 0.0  # in compile steps, up to `since`
        self.marks: collections.deque[tuple[float, int]] = collections.deque()  # (compile seconds, objects) seen
        self.lock = threading.Lock()  # the build's thread updates, the ticker's prints

    @property
    def active(self) -> bool:
        return not self.console.is_terminal

    def update(self, status: Status) -> None:
        """What the build reports; in a log, prints a line when one is due."""
        with self.lock:
            now = self.clock()
            if self.status is not None and self.status.compiling:
                self.compile_seconds += now - self.since
            self.status, self.since = status, now
            if status.objects > 0:
                self.marks.append((self.compile_seconds, status.objects))
                # Keep one mark at least a window old: the recent pace is taken from it.
                while len(self.marks) > 2 and self.compile_seconds - self.marks[1][0] >= self.window:
                    self.marks.popleft()
        self.tick()

    def left(self, now: float) -> float | None:
        """Seconds until the last object is compiled, or None when nothing tells yet."""
        s = self.status
        if s is None:
            return None
        seconds = self.compile_seconds + (now - self.since if s.compiling else 0.0)
        if s.objects > 0 and seconds > 0:
            pace = seconds / s.objects
            if self.marks and seconds - self.marks[0][0] >= self.window and s.objects > self.marks[0][1]:
                pace = max(pace, (seconds - self.marks[0][0]) / (s.objects - self.marks[0][1]))
            return pace * max(0, s.objects_total - s.objects)
        if s.seconds_expected is not None and s.objects < s.objects_total and now - self.t0 < s.seconds_expected:
            return s.seconds_expected - (now - self.t0)
        return None  # no like build, or this one has taken longer already

    def figures(self, now: float | None = None) -> str:
        """For the progress bar (which shows the elapsed time itself): 'compile, 412/1209 objects · about 6 min
        05 s left'."""
        now = self.clock() if now is None else now
        doing, when = self._parts(now)
        return f"{doing} · {when}"

    def _parts(self, now: float) -> tuple[str, str]:
        s = self.status
        if s is None:
            return "waiting to start", "time left not known yet"
        if s.objects_total == 0 and not s.compiling:  # a BOLT build's own part: a copy rewritten, nothing compiled
            return s.stage, "nothing to compile"
        left = self.left(now)
        if left is None:
            when = "time left not known yet"
        elif s.objects < s.objects_total:
            when = f"about {duration(left)} left"
        elif s.compiling:  # every object counted on: the link, or objects past the estimate (which grows with them)
            when = "linking or past the estimate, time left not known"
        else:
            when = "nothing left to compile"
        return f"{s.stage}, {s.objects}/{s.objects_total} objects", when

    def tick(self) -> None:
        """In a log, prints a line when the last one is `every` seconds old."""
        if not self.active:
            return
        with self.lock:
            now = self.clock()
            if now - self.printed < self.every:
                return
            self.printed = now
            doing, when = self._parts(now)
            text = f"build {self.what}: {doing} · {duration(now - self.t0)} elapsed · {when}"
            self.console.print(line(text), soft_wrap=True)

    @contextlib.contextmanager
    def ticking(self) -> Iterator[BuildLog]:
        """In a log, a thread ticks while the build runs: a line comes on time even when the build prints nothing
        for a while (a long compile or link, the PGO training, a wait for another build to finish)."""
        if not self.active:
            yield self
            return
        stop = threading.Event()

        def tick_on_time() -> None:
            # Wakes when the next line is due, and at least every second in case the clock jumps.
            while not stop.wait(min(1.0, max(0.05, self.printed + self.every - self.clock()))):
                self.tick()

        ticker = threading.Thread(target=tick_on_time, name="build progress", daemon=True)
        ticker.start()
        try:
            yield self
        finally:
            stop.set()
            ticker.join()
