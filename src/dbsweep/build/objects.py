"""A build's objects, counted as its compile steps print them, and how many it will have compiled.

The total is an estimate until the last compile ends: first what the build system's own output states
(CMake's Makefiles print `[ 42%]` before each line, ninja `[123/456]`), once that says enough; else the
estimate it started with (`cache`: the objects the newest build of the same major version in the cache
compiled, else the recipe's count from the source tree, else its constant). A PGO build compiles twice;
the second compile is expected to make as many objects as the first did.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

# CMake's Makefiles: "[ 42%] Building C object ...", "[ 43%] Built target ...".
_PERCENT = re.compile(rb"^\[\s*(\d{1,3})%\]")
# ninja: "[123/456] Building C object ...".
_RATIO = re.compile(rb"^\[(\d+)/(\d+)\]")
# A stated fraction below this says too little about the total (1 % of a CMake build is a dozen objects).
_STATED_ENOUGH = 0.1


@dataclass(frozen=True)
class Status:
    """Where a build is, for its progress bar and its lines in a log."""

    fraction: float  # of the whole build, 0..1
    stage: str  # "configure", "compile", "install", "PGO phase 1: compile", "cached", ...
    objects: int  # compiled so far, by every compile of the build
    objects_total: int  # the build will have compiled when it ends (an estimate until then)
    compiling: bool  # in a compile step: the time that the objects left will take
    seconds_expected: float | None = None  # what the newest like build in the cache took (before an object is)


StatusFn = Callable[[Status], None]


class Objects:
    """Counts objects across a build's compiles (`start` begins each) and estimates their total."""

    def __init__(self, pattern: re.Pattern[bytes], expected: int, compiles: int = 1) -> None:
        self.pattern = pattern  # a line of a compile step's output that is one object
        self.expected = max(1, expected)  # one compile's objects, before its output says better
        self.compiles = compiles  # a PGO build: 2; BOLT on a copy of a build: 0
        self.started = 0  # compiles started
        self.done = 0  # objects of every compile so far
        self.before = 0  # objects of the compiles before this one
        self.stated: float | None = None  # this compile's fraction as its output states it

    @property
    def this(self) -> int:
        """Objects of the current (or last) compile."""
        return self.done - self.before

    def start(self) -> None:
        """A compile begins; one after the first is expected to make as many objects as the last did (`end`)."""
        self.started += 1
        self.before = self.done
        self.stated = None

    def line(self, line: bytes) -> bool:
        """Reads one line of a compile step's output; True when it changed the count or the stated fraction."""
        changed = False
        m = _PERCENT.match(line)
        r = _RATIO.match(line) if m is None else None
        if m is not None:
            changed |= self._state(int(m.group(1)) / 100)
        elif r is not None and int(r.group(2)) > 0:
            changed |= self._state(int(r.group(1)) / int(r.group(2)))
        if self.pattern.search(line):
            self.done += 1
            changed = True
        return changed

    def end(self) -> None:
        """The current compile is over: its count is no longer an estimate."""
        if self.this:  # a compile that showed no objects keeps the estimate
            self.expected = self.this
        self.stated = None

    def made(self, count: int) -> None:
        """Objects a step made without printing a line for each (a compile dbsweep runs itself)."""
        self.done += count

    def _state(self, fraction: float) -> bool:
        fraction = min(max(fraction, 0.0), 1.0)
        if self.stated is not None and fraction <= self.stated:
            return False  # parallel jobs print their percentages out of order: keep the highest
        self.stated = fraction
        return True

    @property
    def per_compile(self) -> int:
        """The objects the current compile will have made."""
        if self.stated is not None and self.stated >= _STATED_ENOUGH and self.this:
            return max(self.this, round(self.this / self.stated))
        return max(self.expected, self.this)

    @property
    def total(self) -> int:
        """Objects of the whole build: the compiles done, this one's estimate, and those still to come."""
        if not self.started:
            return self.expected * self.compiles
        return self.before + self.per_compile * (1 + max(0, self.compiles - self.started))

    @property
    def fraction(self) -> float:
        """How far the current compile is, 0..1."""
        if self.stated is not None and self.stated >= _STATED_ENOUGH:
            return self.stated
        return min(1.0, self.this / self.per_compile)
