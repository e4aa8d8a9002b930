"""Number and label formatting shared by the report formats, so every format shows the same text."""

from __future__ import annotations

import math

from dbsweep.measure.functions import FunctionChange, source_path
from dbsweep.report.data import Comparison, ReportData
from dbsweep.report.instr import InstrRow
from dbsweep.report.noise import Spread
from dbsweep.verdicts import stats
from dbsweep.verdicts.instructions import InstrVerdict

DASH = "-"


def num(v: float | None) -> str:
    """Throughput: thousands separated above 100, two decimals below."""
    if v is None or not math.isfinite(v):
        return DASH
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.2f}"


def plain(v: float | None) -> str:
    """Throughput without separators, for the seeds' plain-text tables."""
    if v is None or not math.isfinite(v):
        return DASH
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.2f}"


def ratio(v: float | None) -> str:
    return DASH if v is None or not math.isfinite(v) else f"{v:.2f}"


def cost(v: float | None) -> str:
    """A per-operation cost: three significant digits (values range from 1e-4 to 1e4)."""
    if v is None or not math.isfinite(v):
        return DASH
    if v == 0:
        return "0"
    return f"{v:.3g}" if abs(v) >= 1e-3 else f"{v:.1e}"


def instructions(v: float | None) -> str:
    """Instructions per event: whole, with separators (a change of 0.2 % must be visible), below 100 three digits."""
    if v is None or not math.isfinite(v):
        return DASH
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


def metric(m: str, v: float | None) -> str:
    """A value of a per-operation metric: the instruction count as a count, the others as costs."""
    from dbsweep.report.data import INSTR_METRIC

    return instructions(v) if m == INSTR_METRIC else cost(v)


def pct(v: float | None, digits: int = 1) -> str:
    return DASH if v is None or not math.isfinite(v) else f"{v * 100:.{digits}f}%"


def _bound(v: float) -> str:
    # Intervals from two repetitions can be enormous; keep them short rather than precise.
    if v >= 100:
        return f"{v:.0f}"
    return f"{v:.2f}"


def ci(c: Comparison) -> str:
    """The interval as `low-high`, or `-` when there is none."""
    if c.low is None or c.high is None:
        return DASH
    return f"{_bound(c.low)}-{_bound(c.high)}"


def verdict(c: Comparison) -> str:
    return c.verdict or DASH


def spread(s: Spread | None) -> str:
    """The A-A spread with its source's tag, `±6.1% cal`; "" when there is none."""
    return "" if s is None else f"±{pct(s.cv)} {s.tag}"


def verdict_spread(c: Comparison, s: Spread | None) -> str:
    """A QPS verdict with the step's A-A spread beside it: `slower (±6.1% cal)`; one reached from one repetition
    says so, with the noise it used and how many times that noise the change was: `slower (1 rep: 14.2x
    ±14.8% per-second)`."""
    if c.verdict and c.rule == "one repetition" and c.noise is not None:
        k = f"{c.multiple:.1f}x " if c.multiple is not None else ""
        return f"{c.verdict} (1 rep: {k}±{pct(c.noise.bound)} {c.noise.tag})"
    return f"{c.verdict} ({spread(s)})" if c.verdict and s is not None else verdict(c)


def verdict_colour(verdict: str | None) -> str:
    """A verdict's colour in the suites' and the matrix's tables: faster green, slower red, the others none."""
    return {"faster": "green", "slower": "red"}.get(verdict or "", "")


def cost_colour(r: float | None) -> str:
    """Colour of a per-operation cost ratio: more cost is worse, so it is coloured as 1/ratio."""
    return stats.colour(1 / r if r else None)


def group_title(group: str, clients: int, data: ReportData) -> str:
    title = data.group_titles.get(group, group)
    if len(data.client_counts) > 1 and group != "load":
        title += f", {clients} client{'s' if clients != 1 else ''}"
    return title


def short_step(step: str) -> str:
    """The seeds' edited tables drop the default range suffix."""
    return step.removesuffix("_range=100")


def legend(data: ReportData) -> dict[str, str]:
    """Column headings: `col-N` for the other targets, as in the seeds; the base is `base`."""
    out = {data.base: "base"}
    out.update({t: f"col-{i}" for i, t in enumerate(data.others, 1)})
    return out


def ms(us: float | None) -> str:
    """A response time given in µs, shown in ms."""
    if us is None or not math.isfinite(us):
        return DASH
    v = us / 1000
    return f"{v:,.0f}" if v >= 100 else f"{v:.3g}"


def column_styles(values: dict[str, float | None], failed: dict[str, bool]) -> dict[str, str]:
    """The method's per-column colours of the absolute table (methodology 4.1): "red" near the column's
    minimum (unless the column is tight), "green" near the maximum of the rows that met their SLA, "grey"
    for SLA failures."""
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
            out[t] = "grey"
        elif v >= hi - 0.25 * gap and gap > 0:
            out[t] = "green"
    return out


# ---- instruction verdicts --------------------------------------------------------------------------------------


def signed_pct(r: float | None, digits: int = 2) -> str:
    """A ratio as a signed change: 1.0213 -> `+2.13%`."""
    return DASH if r is None or not math.isfinite(r) else f"{(r - 1) * 100:+.{digits}f}%"


def instr_verdict(j: InstrVerdict | None) -> str:
    """`slower +2.13%` (the change in instructions per operation), or `-` without a count; a verdict on every
    process adds the foreground's when that one says otherwise: `faster -18.13% (fg slower +10.72%)`."""
    if j is None or j.verdict is None:
        return DASH
    return f"{j.verdict} {signed_pct(j.ratio)}{fg_differs(j)}"


def fg_differs(j: InstrVerdict) -> str:
    """` (fg slower +10.67%)` when the foreground's own verdict differs from one on every process, else ''."""
    fg = j.foreground
    if fg is None or fg.verdict is None or fg.verdict == j.verdict:
        return ""
    return f" (fg {fg.verdict} {signed_pct(fg.ratio)})"


def other_count(ir: InstrRow, target: str) -> str:
    """The count the verdict does not judge, labelled: `all 38,950` beside a foreground's figure, `fg 34,660
    (89.0%)` (with its share of the work) beside every process's; `-` without one."""
    label, v = ir.other(target)
    figure = ir.figure(target)
    if v is None or (figure and abs(v / figure - 1) < 1e-6):  # one process did all the work (an embedded engine)
        return DASH
    if label == "foreground":
        c = ir.counts.get(target)
        share = f" ({pct(c.foreground_share)})" if c is not None and c.foreground_share is not None else ""
        return f"fg {instructions(v)}{share}"
    return f"all {instructions(v)}"


def floor(j: InstrVerdict | None) -> str:
    """The floor a verdict used, with its source: `0.20% default`, `1.1% pairs`, `0.4% calibrate`; `fg` when
    the verdict is on the foreground's count (the background processes did next to nothing)."""
    if j is None or j.verdict is None:
        return DASH
    return f"{pct(j.floor, 2)} {j.floor_source}" + (" fg" if j.basis == "foreground" else "")


def function_place(c: FunctionChange) -> str:
    """`file:line` of a function within its source tree, or its file alone, or nothing without debug
    information."""
    if c.file in ("", "???"):
        return ""
    file = source_path(c.file)  # the workspace's path of a build differs by build and says nothing
    return f"{file}:{c.line}" if c.line is not None else file


def function_delta(c: FunctionChange) -> str:
    """A function's change of own cost per event, `+1,234`; a range, `+503…+554`, where one side's stored profile
    did not reach it (its cost there lies up to that profile's cut above its stored figure, a folded set's per member
    missing)."""
    if c.unlisted is None:
        return f"{c.delta_self:+,.0f}"
    low, high = c.delta_range
    return f"{low:+,.0f}…{high:+,.0f}"


def function_cost(c: FunctionChange, side: str) -> str:
    """A function's own cost per event on one side (`base`, `target`), or `≤ cut` where that side's stored profile
    did not reach it."""
    stored = c.base_self if side == "base" else c.target_self
    if c.unlisted is not None and c.unlisted[0] == side:
        # Not stored at all, or a folded set stored in part (its other members below the cut).
        return f"≤ {c.unlisted[1]:,.0f}" if not stored else f"{stored:,.0f}…{stored + c.unlisted[1]:,.0f}"
    return f"{stored:,.0f}"


def function_change(c: FunctionChange) -> str:
    """One line of a per-function diff: `+1,234 (+12.3%) heap_update  heapam.c:3012`; of a function below one
    side's stored profile, the range its change lies in: `+503…+554 (base ≤ 51) tts_heap_getsomeattrs`."""
    delta = function_delta(c)
    if c.unlisted is not None:
        side = c.unlisted[0]
        rel = f" ({side} {function_cost(c, side)})"
    else:
        rel = f" ({c.rel_self * 100:+.1f}%)" if c.rel_self is not None else " (new)" if c.target_self else " (gone)"
    place = function_place(c)
    return f"{delta}{rel} {c.function}" + (f"  {place}" if place else "")
