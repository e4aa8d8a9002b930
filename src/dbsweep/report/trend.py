"""The trend over a series study's targets (`study.series`): per step and figure, each target's value and the
change points (`verdicts.series`), as lines every text format prints after the answer, and as JSON."""

from __future__ import annotations

from typing import Any

from dbsweep.report import fmt
from dbsweep.verdicts.changepoints import ChangePoint
from dbsweep.verdicts.series import Series

UNITS = {"instructions": "instructions per event", "QPS": "QPS", "cpu/o": "cpu/o"}


def series_name(s: Series) -> str:
    clients = f" at {s.clients} client{'s' if s.clients != 1 else ''}" if s.clients is not None else ""
    return f"{s.step}{clients}, {UNITS[s.figure]}"


def _point(p: ChangePoint, confirmed: bool) -> str:
    c = p.comparison
    size = f" {c.ratio - 1:+.2%}" if c.ratio is not None else ""
    interval = f" (interval {c.low:.3f}-{c.high:.3f})" if c.low is not None and c.high is not None else ""
    what = "change point" if confirmed else "weak candidate (its neighbours' verdict does not decide it)"
    test = f"; p = {p.p_value:.3f}" if p.p_value is not None else ""
    return f"{what} between {p.before} and {p.after}: {c.verdict}{size}{interval}{test}"


def lines(series: list[Series]) -> list[tuple[int, str]]:
    """(depth, text) lines: per series its values in order, then its change points and weak candidates."""
    if not series:
        return []
    out: list[tuple[int, str]] = [(0, f"Over the series ({' → '.join(series[0].labels)}):")]
    for s in series:
        values = " → ".join(f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}" for v in s.values)
        out.append((1, f"{series_name(s)}: {values}"))
        for p in s.confirmed:
            out.append((2, _point(p, True)))
            out += [(3, f"why: {fmt.function_change(c)}") for c in s.why.get(p.index, ())]
        out += [(2, _point(p, False)) for p in s.weak]
        if not s.points:
            out.append((2, "no change point"))
    return out


def to_json(series: list[Series]) -> list[dict[str, Any]]:
    def point(p: ChangePoint) -> dict[str, Any]:
        c = p.comparison
        return {
            "index": p.index,
            "before": p.before,
            "after": p.after,
            "p_value": p.p_value,
            "verdict": c.verdict,
            "ratio": c.ratio,
            "low": c.low,
            "high": c.high,
            "confirmed": p.confirmed,
        }

    return [
        {
            "step": s.step,
            "clients": s.clients,
            "figure": s.figure,
            "targets": list(s.labels),
            "values": list(s.values),
            "lows": list(s.lows),
            "highs": list(s.highs),
            "change_points": [point(p) for p in s.points],
            "why": {str(i): [fmt.function_change(c) for c in changes] for i, changes in s.why.items()},
        }
        for s in series
    ]
