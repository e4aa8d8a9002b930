"""One instruction count as the verdicts and the reports read it back from the store: a typed record, so the
figure a verdict judges, the figure the tables show beside it, `dbsweep why` and every report format read the
same fields by the same names.

`measure.instructions.InstructionCount` is what the counter produces and `Store.write_instructions` keeps (as
JSON, with a few columns of its own); `Count.from_stored` reads that back. Stored counts outlive the code that
wrote them, so it takes any dict: a key it does not know is ignored (a newer counter's), a key a count lacks
gets its default (an older counter's), and a value of the wrong type is read as missing rather than failing a
whole report.

Every figure is per *event*, and what an event is depends on the step: one row for a sized step (the load),
otherwise one event of the load client (a transaction of `statements_per_event` statements, or a single
statement): `event_words` says it once, the reports print it beside the step.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from dbsweep.measure import functions

Basis = Literal["foreground", "all processes"]
FOREGROUND = "foreground"  # measure.instructions.FOREGROUND: the processes (threads) that served the client


def _float(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        return None
    return float(v)


def _int(v: Any) -> int | None:
    return int(v) if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) else None


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None


@dataclass(frozen=True)
class Count:
    """One target's instruction count of one step, per event (every process, and the foreground's share)."""

    target: str
    step: str
    per_event: float | None = None  # every process counted (the server's, or an embedded engine's client)
    spread: float | None = None  # (max - min) / median of the pairs' per-event figures
    foreground_per_event: float | None = None  # the processes (threads) that served the client
    foreground_spread: float | None = None
    foreground_share: float | None = None  # foreground / every process, from the median pair
    per_query: float | None = None  # per_event / statements_per_event: kept for the JSON, never judged
    statements_per_event: int | None = None
    unit: Literal["events", "rows"] = "events"
    amount: int | None = None  # the short runs' events or rows
    counted: str = "server"  # "server", or "client" for an engine that runs inside the load client
    by_role: Mapping[str, float] = field(default_factory=dict)
    function_rows: tuple[Mapping[str, Any], ...] = ()  # functions.to_rows of the median pair
    held: tuple[str, ...] = ()  # settings the pass added so a run's work does not depend on its timing
    tool: str | None = None
    method: str | None = None  # how the counter measured (a newer counter says; older ones do not)
    error: str | None = None  # why there is no count
    # Each pair's instructions per event: (every process, the foreground's or None), as the count stored them.
    pair_figures: tuple[tuple[float, float | None], ...] = ()
    # Functions a BOLT build folded into one (identical code folding): valgrind names each set's code by one name.
    folded: tuple[tuple[str, ...], ...] = ()

    @classmethod
    def from_stored(cls, target: str, step: str, d: Mapping[str, Any]) -> Count:
        """The record of a stored count (`Store.instruction_counts`' dict); unknown keys are ignored, missing or
        ill-typed ones default."""
        by_role = d.get("by_role")
        rows = d.get("functions")
        held = d.get("held")
        share = _float(d.get("foreground_share"))
        per_event, fg = _float(d.get("per_event")), _float(d.get("foreground_per_event"))
        if share is None and per_event and fg is not None:
            share = fg / per_event  # an older count stored the roles but not the share
        return cls(
            target=target,
            step=step,
            per_event=per_event,
            spread=_float(d.get("spread")),
            foreground_per_event=fg,
            foreground_spread=_float(d.get("foreground_spread")),
            foreground_share=share,
            per_query=_float(d.get("per_query")),
            statements_per_event=_int(d.get("statements_per_event")),
            unit="rows" if d.get("unit") == "rows" else "events",
            amount=_int(d.get("amount")),
            counted=_str(d.get("counted")) or "server",
            by_role={str(k): f for k, v in by_role.items() if (f := _float(v)) is not None}
            if isinstance(by_role, Mapping)
            else {},
            function_rows=tuple(r for r in rows if isinstance(r, Mapping)) if isinstance(rows, list) else (),
            held=tuple(str(h) for h in held) if isinstance(held, list) else (),
            tool=_str(d.get("tool")),
            method=_str(d.get("method")),
            error=_str(d.get("error")),
            pair_figures=_pair_figures(d.get("pairs")),
            folded=_folded(d.get("build")),
        )

    @property
    def ok(self) -> bool:
        """A count there is to judge: no error and a positive figure."""
        return self.error is None and self.per_event is not None and self.per_event > 0

    @property
    def has_foreground(self) -> bool:
        return self.ok and self.foreground_per_event is not None and self.foreground_per_event > 0

    def figure(self, basis: Basis) -> float | None:
        """Instructions per event on `basis`: the foreground's, or every process's."""
        if not self.ok:
            return None
        return self.foreground_per_event if basis == "foreground" else self.per_event

    def spread_of(self, basis: Basis) -> float:
        """The spread of the pairs of the figure on `basis` (0 when not stored)."""
        v = self.foreground_spread if basis == "foreground" else self.spread
        return v or 0.0

    def samples(self, basis: Basis) -> list[float]:
        """Each pair's instructions per event on `basis` (a series' samples of the count), else its one figure
        (a count stored before its pairs carried the foreground's)."""
        if not self.ok:
            return []
        picked = [fg if basis == "foreground" else total for total, fg in self.pair_figures]
        found = [v for v in picked if v is not None]
        figure = self.figure(basis)
        return found or ([figure] if figure is not None else [])

    def profile(self) -> functions.Profile:
        """Instructions per event by function (empty when none were kept, or when the rows are not readable)."""
        if not self.function_rows:
            return {}
        try:
            return functions.from_rows(self.function_rows)
        except ValueError:  # a damaged record costs its own diff, not the report
            return {}


def _pair_figures(pairs: object) -> tuple[tuple[float, float | None], ...]:
    """(every process, foreground) per event of each stored pair, as the counter recorded them."""
    return tuple(
        (total, _float(p.get("foreground_per_event")))
        for p in (pairs if isinstance(pairs, list) else [])
        if isinstance(p, Mapping) and (total := _float(p.get("per_event"))) is not None
    )


def event_words(count: Count | None, ops_name: str = "") -> str:
    """What one event of the step is, in a few words: `one row`, `one transaction of 16 statements`,
    `one statement`."""
    if count is not None and count.unit == "rows":
        return "one row"
    n = count.statements_per_event if count is not None else None
    if n is not None and n > 1:
        return f"one transaction of {n} statements"
    return "one operation" if ops_name == "ops" else "one statement"


def _folded(build: object) -> tuple[tuple[str, ...], ...]:
    """The function sets a count's BOLT build folded into one (its build record's bolt.folded), if any."""
    bolt = build.get("bolt") if isinstance(build, Mapping) else None
    sets = bolt.get("folded") if isinstance(bolt, Mapping) else None
    if not isinstance(sets, list):
        return ()
    return tuple(tuple(str(n) for n in g) for g in sets if isinstance(g, list) and len(g) > 1)
