"""The answer at the top of every report: per target against the base, how many steps each figure decided
(instructions per event, QPS, cpu/o) and which way, the largest changes with the headline of their `why` (the
function whose cost changed most), and what is still undecided with what would decide it.

Every format starts with it (terminal and markdown as lines, HTML as a section, JSON as `answer`, CSV as the
per-row columns `verdict_rule`, `noise_*` and `why_top`); `data.gather` builds it once from the same rows,
verdicts and counts the tables below it show, so the top of a report cannot say other than its tables.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from scipy import special

from dbsweep.measure.functions import FunctionChange
from dbsweep.verdicts import stats
from dbsweep.verdicts.judging import ONE_REPETITION_FACTOR

if TYPE_CHECKING:
    from dbsweep.report.data import Comparison, ReportData, Row
    from dbsweep.report.instr import InstrRow
    from dbsweep.verdicts.instructions import InstrVerdict

FIGURES = ("instructions", "QPS", "cpu/o")
TOP = 3  # the largest changes listed per target
MAX_ROUNDS = 100  # beyond this many rounds a change is not worth waiting for: the machine must be quieter


@dataclass(frozen=True)
class Tally:
    """One figure's verdicts over a target's steps (step x clients for QPS and cpu/o)."""

    figure: str
    verdicts: dict[stats.Verdict, int]
    judged: int  # with a verdict
    without: int  # no verdict: not counted, not measured on one side

    def text(self) -> str:
        """`2 slower, 1 same of 3` (and how many had no verdict); `not counted` (`not measured`) when none had."""
        if not self.judged:
            return "not counted" if self.figure == "instructions" else "not measured"
        shown = ", ".join(f"{n} {v}" for v, n in self.verdicts.items() if n) or "none"
        return f"{shown} of {self.judged}" + (f" ({self.without} without a verdict)" if self.without else "")


@dataclass(frozen=True)
class Change:
    """A step that changed: its decided figures and, where counted, the top of its per-function diff."""

    step: str
    instr: InstrVerdict | None
    qps: tuple[int, Comparison] | None  # (clients, comparison) of the row that changed most
    cpu: tuple[int, Comparison] | None
    why: FunctionChange | None
    size: float  # |ln ratio| of its largest decided change: the order of the list


NOT_RUN = "a measurement of both sides (its cells have not run yet: dbsweep run)"
# More steps than this, each waiting for its first timed cells (a run that counted only), read as one line.
NOT_RUN_LISTED = 3


@dataclass(frozen=True)
class Undecided:
    """A step no figure decided, and what would decide it."""

    step: str
    clients: int
    qps: Comparison
    decide: list[str]
    # The step's instruction verdict when its count decided the work (its QPS is still open): `faster -1.23%`.
    counted: str = ""


@dataclass
class TargetAnswer:
    target: str
    tallies: list[Tally] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)  # the largest, at most TOP
    undecided: list[Undecided] = field(default_factory=list)
    same: int = 0  # steps every figure judged the same


@dataclass
class Answer:
    base: str
    targets: list[TargetAnswer] = field(default_factory=list)


def _decided(v: str | None) -> bool:
    return v in ("faster", "slower")


def _size(ratio: float | None) -> float:
    return abs(math.log(ratio)) if ratio is not None and ratio > 0 else 0.0


def _counted(data: ReportData, row: Row) -> bool:
    """The rows the answer counts: the steps the summaries count, and the load (a setup step), not warm-ups."""
    suite = data.study.bench
    return row.in_summaries or row.step in suite.setup_steps()


def rounds_needed(cv: float, ratio: float, min_effect: float, have: int, confidence: float = 0.95) -> int | None:
    """The rounds, more than `have`, after which a ratio at this CV is likely decided; None beyond MAX_ROUNDS. A
    change of at least the minimum effect needs the rounds that detect it (80 % power, `min_detectable_effect`);
    a smaller one needs the interval narrow enough to say `same` (inside `stats.SAME_WITHIN` around it)."""
    effect = abs(ratio - 1)
    sigma = math.sqrt(math.log1p(cv * cv))
    room = math.log(stats.SAME_WITHIN[1]) - abs(math.log(ratio)) if ratio > 0 else 0.0
    for n in range(max(have + 1, 2), MAX_ROUNDS + 1):
        if effect >= min_effect:
            if stats.min_detectable_effect(cv, n, confidence) <= effect:
                return n
        elif float(special.stdtrit(n - 1, 0.5 + confidence / 2)) * math.sqrt(2.0 / n) * sigma <= room:
            return n  # the paired interval's half-width on logs, two noisy values per round
    return None


def what_decides(data: ReportData, row: Row, target: str, ir: InstrRow | None) -> list[str]:
    """What would decide an undecided step: more rounds (how many, at the measured noise), a quiet machine, an
    instruction count."""
    c = row.cmp[target]
    m = data.study.measure
    n = min(len(row.cells[data.base].reps), len(row.cells[target].reps))
    out: list[str] = []
    if n == 0:
        failed = any(row.cells[t].failed for t in (data.base, target))
        out.append("a measurement of both sides (a cell failed: dbsweep run --rerun-failed)" if failed else NOT_RUN)
    elif n < 2:
        needs = "a second round (repeats = 2, or dbsweep run --until-decided)"
        if c.rule == "one repetition" and c.multiple is not None and c.noise is not None:
            needs += (
                f"; from one repetition the change is {c.multiple:.1f}x the noise "
                f"(±{c.noise.bound:.1%} {c.noise.tag}), {ONE_REPETITION_FACTOR:.0f}x decides"
            )
        out.append(needs)
    else:
        spread = row.spread.cv if row.spread is not None else None
        if spread is None or c.ratio is None:
            out.append("more rounds (dbsweep run --until-decided)")
        elif (k := rounds_needed(spread, c.ratio, data.min_effect, n, data.confidence)) is None:
            out.append(f"a quieter machine: at its A-A spread (±{spread:.1%}) no number of rounds resolves this change")
        elif k <= m.max_repeats:
            out.append(f"about {k} rounds at its A-A spread ±{spread:.1%} (dbsweep run --until-decided)")
        else:
            out.append(
                f"about {k} rounds at its A-A spread ±{spread:.1%}, beyond measure.max_repeats = {m.max_repeats}: "
                "raise it, or a quieter machine"
            )
    steal = max((s for t in (data.base, target) if (s := row.cells[t].steal_pct) is not None), default=None)
    if steal is not None and steal > 1.0:
        out.append(f"a machine without steal (the step saw {steal:.1f}%)")
    countable = row.clients == 1 and row.step in data.study.counted_steps()
    if countable and ir is None:
        if not m.instructions:
            out.append("an instruction count (measure.instructions = true)")
        elif data.counts_read:  # counted, but not this step yet (a comparison of two runs reads no counts)
            out.append("its instruction count (dbsweep run --counts-only)")
    elif ir is not None and (err := ir.error(target) or ir.error(data.base)):
        out.append(f"an instruction count that works ({_in_brief(err)})")
    return out


def _in_brief(error: str) -> str:
    """A count's error in one line: its first, and the log it names (a failed build's error carries the log's last
    lines, which every undecided step of the target would otherwise repeat)."""
    first, *rest = error.strip().splitlines() or [""]
    log = next((ln.split(" build log ", 1)[1].rstrip(":") for ln in rest if " build log " in ln), None)
    return first.rstrip(".") + (f"; its log: {log}" if log else "")


def _best(rows: list[Row], target: str, which: str) -> tuple[int, Comparison] | None:
    """The decided comparison of the step's rows (one per client count) that changed most."""
    got = [(r.clients, r.cmp[target] if which == "qps" else r.cost_cmp[target]) for r in rows]
    decided = [(k, c) for k, c in got if _decided(c.verdict) and c.ratio is not None]
    return max(decided, key=lambda kc: _size(kc[1].ratio)) if decided else None


def for_target(data: ReportData, target: str) -> TargetAnswer:
    counted = [r for r in data.rows if _counted(data, r) and target in r.cmp]
    instr = {ir.step: ir for ir in data.instr_rows}
    steps = list(dict.fromkeys(r.step for r in counted))
    a = TargetAnswer(target)
    iv = [instr[s].judged.get(target) if s in instr else None for s in steps]  # one count per step
    a.tallies.append(_tally("instructions", [j.verdict if j else None for j in iv]))
    a.tallies.append(_tally("QPS", [r.cmp[target].verdict for r in counted]))
    a.tallies.append(_tally("cpu/o", [r.cost_cmp[target].verdict for r in counted]))
    changes: list[Change] = []
    for step in steps:
        rows = [r for r in counted if r.step == step]
        ir = instr.get(step)
        j = ir.judged.get(target) if ir is not None else None
        qps, cpu = _best(rows, target, "qps"), _best(rows, target, "cpu")
        sizes = [_size(j.ratio) if j is not None and _decided(j.verdict) else 0.0]
        sizes += [_size(x[1].ratio) for x in (qps, cpu) if x is not None]
        if (j is not None and _decided(j.verdict)) or qps is not None or cpu is not None:
            why = ir.headline(target) if ir is not None else None
            shown = qps
            if shown is None and rows[0].cmp[target].ratio is not None:  # beside a count's verdict, QPS as it stands
                shown = (rows[0].clients, rows[0].cmp[target])
            judged = j if j is not None and j.verdict else None
            changes.append(Change(rows[0].name, judged, shown, cpu, why, max(sizes)))
        elif (j is not None and j.verdict == "same") or all(r.cmp[target].verdict == "same" for r in rows):
            a.same += 1
        decided = ""  # the count decided the step's work, its QPS may still be open
        if j is not None and j.verdict is not None:
            decided = f"{j.verdict} {(j.ratio - 1) * 100:+.2f}%" if j.ratio is not None else j.verdict
        for r in rows:
            if r.cmp[target].verdict in (None, "unsure"):
                decide = what_decides(data, r, target, ir)
                a.undecided.append(Undecided(r.name, r.clients, r.cmp[target], decide, decided))
    changes.sort(key=lambda c: -c.size)
    a.changes = changes[:TOP]
    return a


def _tally(figure: str, verdicts: list[stats.Verdict | None]) -> Tally:
    got = Counter(v for v in verdicts if v is not None)
    return Tally(figure, {v: got[v] for v in stats.VERDICTS}, sum(got.values()), sum(v is None for v in verdicts))


def build(data: ReportData) -> Answer:
    return Answer(data.base, [for_target(data, t) for t in data.others])


# ---- in words, for every format ---------------------------------------------------------------------------------


def qps_words(clients: int, c: Comparison, many_clients: bool) -> str:
    """`QPS slower 0.05x (one repetition: 14x the noise, ±14.8% per-second)`."""
    at = f" c{clients}" if many_clients else ""
    out = f"QPS{at} {c.verdict} {c.ratio:.2f}x" if c.ratio is not None else f"QPS{at} {c.verdict}"
    return out + f" ({how(c)})"


def how(c: Comparison) -> str:
    """How a QPS verdict was reached, in a few words."""
    if c.rule == "one repetition" and c.noise is not None:
        k = f"{c.multiple:.1f}x" if c.multiple is not None else "?"
        return f"one repetition: {k} the noise, ±{c.noise.bound:.1%} {c.noise.tag}"
    if c.low is not None and c.high is not None:
        from dbsweep.report import fmt  # here: fmt imports report.data, which imports this module

        return f"interval {fmt.ci(c)}"
    return "no interval"


def instr_words(j: InstrVerdict) -> str:
    """`instructions slower +2.13% (38,879 -> 39,707 per event, fg)`."""
    ratio = f"{(j.ratio - 1) * 100:+.2f}%" if j.ratio is not None else "-"
    figures = ""
    if j.base_figure is not None and j.target_figure is not None:
        tag = "fg" if j.basis == "foreground" else "all"
        figures = f" ({j.base_figure:,.0f} -> {j.target_figure:,.0f} per event, {tag})"
    return f"instructions {j.verdict} {ratio}{figures}"


def change_words(c: Change, many_clients: bool) -> str:
    parts = []
    if c.instr is not None:
        parts.append(instr_words(c.instr))
    if c.qps is not None:
        parts.append(qps_words(*c.qps, many_clients))
    if c.cpu is not None:
        k, cc = c.cpu
        at = f" c{k}" if many_clients else ""
        parts.append(f"cpu/o{at} {cc.verdict} {cc.ratio:.2f}x")
    return f"{c.step}: " + "; ".join(parts)


def undecided_words(u: Undecided, many_clients: bool) -> str:
    at = f" c{u.clients}" if many_clients else ""
    ratio = f" {u.qps.ratio:.2f}x" if u.qps.ratio is not None else ""
    counted = f"; its instruction count: {u.counted}" if u.counted else ""
    return f"{u.step}{at} (QPS {u.qps.verdict or 'not measured'}{ratio}{counted}): " + "; or ".join(u.decide)


def lines(answer: Answer, many_clients: bool) -> list[tuple[int, str]]:
    """The answer as (indent, text) lines: per target its tallies, its largest changes with their why, and what is
    undecided with what would decide it."""
    out: list[tuple[int, str]] = []
    for a in answer.targets:
        out.append((0, f"{a.target} against {answer.base}: " + "; ".join(f"{t.figure} {t.text()}" for t in a.tallies)))
        if a.changes:
            out.append((1, "largest changes:"))
            for c in a.changes:
                out.append((2, change_words(c, many_clients)))
                if c.why is not None:
                    from dbsweep.report import fmt  # here: fmt imports report.data, which imports this module

                    out.append((3, f"why: {fmt.function_change(c.why)}"))
        if not a.changes:
            out.append((1, "no change decided" + (f"; {a.same} steps the same" if a.same else "")))
        if a.undecided:
            out.append((1, "QPS undecided, and what would decide it:"))
            waiting = [u.qps.verdict is None and u.decide == [NOT_RUN] for u in a.undecided]
            folded = sum(waiting) > NOT_RUN_LISTED
            listed = [u for u, w in zip(a.undecided, waiting, strict=True) if not (w and folded)]
            out += [(2, undecided_words(u, many_clients)) for u in listed]
            if folded:
                out.append((2, f"{sum(waiting)} steps (QPS not measured): {NOT_RUN}"))
        else:
            out.append((1, "every QPS verdict is decided"))
    return out
