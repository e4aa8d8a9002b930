"""Whether a step's measurement is whole: the checks that make a cell `done` rather than `failed`.

They hold for every suite and every engine. A step is whole when the server that served it is
the one that started it and did not restart on the way (the engine says so), the load client
kept every connection to the end, the measured time is what was asked, the work that was
asked for was done, no second sat at zero operations without an operation in flight to
explain it, errors stayed under the threshold, and the step read or wrote something of what it
is named for (a read that found no key measured an empty database). The first check that fails
names itself and its evidence in one sentence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# A step whose failed events exceed this share of all events is marked failed.
MAX_ERROR_RATE = 0.01
# The measured seconds may fall short of those asked by this share (plus a little for rounding)...
SHORT_TOLERANCE = 0.02
SHORT_SLACK_S = 0.5
# ... and run over by this much: the last events finish after the time is up, and a slow one may be slow.
LONG_TOLERANCE = 0.25
LONG_SLACK_S = 10.0
# A run of k seconds with no completed operation is explained by an operation in flight through it:
# the next second's slowest operation took at least this share of k seconds (ticks are not exact).
IN_FLIGHT_SHARE = 0.9


@dataclass(frozen=True)
class Nonzero:
    """A figure of the step's summary that is zero only when the step did nothing of what it is named for."""

    # The summary field: a count, or a pair [count, of] (db_bench's `found`: keys found of reads made).
    field: str
    # What zero means, e.g. "no read found a key".
    none: str
    # Why that happens, e.g. "the database holds none of the keys the step reads".
    why: str


@dataclass(frozen=True)
class Expectation:
    """What a whole measurement of one step looks like, as the suite defines the step."""

    # The measured seconds asked for; None for a step that runs until its work is done.
    seconds: float | None = None
    # A short step (the insert steps of the Insert Benchmark) may take longer than asked, never shorter.
    may_run_long: bool = False
    # Operations complete every second while the step runs (not so for a load that ends in an index build).
    steady: bool = True
    # (summary field, value): the work the step was asked to do, e.g. ("rows", 200000).
    work: tuple[str, int] | None = None
    max_error_rate: float = MAX_ERROR_RATE
    # Figures that must not be zero (a field the summary lacks, as from an older client, is not judged).
    nonzero: tuple[Nonzero, ...] = ()


def check(expect: Expectation, summary: dict[str, Any], lines: Sequence[dict[str, Any]]) -> str | None:
    """The first way the client's view of the step shows it is not whole, in one sentence; None if whole.

    The server's own view (same process, no crash restart) is the engine's and is checked before this.
    """
    for problem in (
        _ended_early(summary),
        _work(expect, summary),
        _seconds(expect, summary),
        _errors(expect, summary),
        _zero_seconds(expect, lines),
        # Last: a step that failed or stalled says so better than by what it did not find.
        _nothing_done(expect, summary),
    ):
        if problem is not None:
            return problem
    return None


def _ended_early(summary: dict[str, Any]) -> str | None:
    early = summary.get("ended_early")
    if not early:
        return None
    n = int(early.get("connections_lost", 1))
    return (
        f"the load client lost {n} connection{'s' if n != 1 else ''} {float(early.get('at_s', 0)):.1f} s into "
        f"the step ({early.get('reason', 'no reason given')})"
    )


def _work(expect: Expectation, summary: dict[str, Any]) -> str | None:
    if expect.work is None:
        return None
    field, wanted = expect.work
    got = summary.get(field)
    if got is None or int(got) != wanted:
        did = "none" if got is None else f"{int(got):,}"
        return f"the step was asked for {wanted:,} {field.replace('_', ' ')} and did {did}"
    return None


def _seconds(expect: Expectation, summary: dict[str, Any]) -> str | None:
    if expect.seconds is None:
        return None
    asked = expect.seconds
    got = float(summary.get("seconds") or 0.0)
    low = asked * (1 - SHORT_TOLERANCE) - SHORT_SLACK_S
    high = asked * (1 + LONG_TOLERANCE) + LONG_SLACK_S
    if got < low:
        return f"the step measured {got:.1f} s of the {asked:g} s asked (it ended early)"
    if got > high and not expect.may_run_long:
        return f"the step measured {got:.1f} s where {asked:g} s were asked (more than {high:.0f} s)"
    return None


def _zero_seconds(expect: Expectation, lines: Sequence[dict[str, Any]]) -> str | None:
    """A run of seconds with no completed operation, not explained by a slow operation ending after it."""
    if not expect.steady:
        return None
    measured = [ln for ln in lines if ln.get("phase", "measure") == "measure"]

    def idle(line: dict[str, Any]) -> bool:
        # An event that failed still ended: a second of errors is not a stall (the error rate judges it).
        return int(line.get("ops", 0)) == 0 and int(line.get("errors", 0)) == 0

    i = 0
    while i < len(measured):
        if not idle(measured[i]):
            i += 1
            continue
        j = i
        while j < len(measured) and idle(measured[j]):
            j += 1
        first, last, k = measured[i].get("t"), measured[j - 1].get("t"), j - i
        when = f"second {first}" if k == 1 else f"seconds {first}-{last}"
        if j == len(measured):
            # After a step's asked-for work is done (checked above) it may still count rows: no operations then.
            if expect.work is None:
                return f"no operation completed in {when} of the step, up to its end"
            break
        slowest_us = int(measured[j].get("max_us", 0))
        if slowest_us < IN_FLIGHT_SHARE * k * 1e6:
            return (
                f"no operation completed in {when} of the step, and the slowest one to end after "
                f"took {slowest_us / 1e6:.2f} s, so none was in flight that long"
            )
        i = j
    return None


def _errors(expect: Expectation, summary: dict[str, Any]) -> str | None:
    errors = int(summary.get("error_count", 0) or 0)
    attempts = int(summary.get("events") or 0) + errors
    if errors and errors / attempts > expect.max_error_rate:
        first = "; ".join(summary.get("error_samples", [])[:3])
        return (
            f"{errors} of {attempts} events failed ({errors / attempts:.0%}, more than {expect.max_error_rate:.0%}); "
            f"first errors: {first}"
        )
    return None


def _nothing_done(expect: Expectation, summary: dict[str, Any]) -> str | None:
    for need in expect.nonzero:
        got = summary.get(need.field)
        if got is None:
            continue
        if isinstance(got, (list, tuple)):
            if len(got) != 2 or int(got[0]) != 0:
                continue
            evidence = f"{int(got[0]):,} of {int(got[1]):,} {need.field.replace('_', ' ')}"
        else:
            if int(got) != 0:
                continue
            n, what = int(summary.get("operations") or 0), summary.get("ops_name") or "operations"
            evidence = f"{need.field.replace('_', ' ')} 0 in {n:,} {what}"
        return f"{need.none} ({evidence}): {need.why}"
    return None
