"""The instruction verdicts of a report: each step's instructions per event (under valgrind) against the base's,
with the floor the verdict used, the figure it judged (the foreground's or every process's, one choice per step:
`verdicts.instructions.bases`), the user-space share of the server's CPU during the timed step, and the
functions whose cost changed most.

One figure per step and target: the one the verdict judges. The instruction table, the `instr/event` column of
the costs per operation, the verdict beside QPS, the answer at the top and `dbsweep why` all show it; the other
figure (every process's beside the foreground's, or the other way round) is shown labelled where it differs.

An instruction count measures user-space work, not time: a point query on this kind of machine spends most of
its server CPU in the kernel (network, wake-ups), which no instruction count sees. So beside each verdict the
report says what it can mean for throughput: a change of d in instructions moves the server's CPU per
operation by about d x the user-space share (at the same instructions per cycle), and QPS by no more than that.

`data.gather` fills these fields; the formats only show them.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dbsweep.measure import functions
from dbsweep.measure.instructions import FUNCTIONS_KEPT
from dbsweep.results.counts import Basis, Count, event_words
from dbsweep.verdicts.instructions import InstrVerdict, bases, calibrated_floors, run_verdicts

if TYPE_CHECKING:
    from dbsweep.report.data import GroupStats, ReportData, Row
    from dbsweep.results.store import Store
    from dbsweep.study import Study

WHY_TOP = 8  # functions listed per step and target in the terminal and markdown (HTML and JSON: WHY_KEPT)
WHY_KEPT = 40
BASIS_TAG: dict[Basis, str] = {"foreground": "fg", "all processes": "all"}


@dataclass
class InstrRow:
    """One step's counts: per target the stored count, the figure every target of the step is judged and shown on
    (`basis`), what one event of the step is, and for every target but the base its verdict, the user-space share
    of the server's CPU in the timed step, and the functions that changed most."""

    step: str
    counts: dict[str, Count]
    basis: Basis = "all processes"
    event: str = "one statement"
    judged: dict[str, InstrVerdict] = field(default_factory=dict)
    user_share: dict[str, float | None] = field(default_factory=dict)
    why: dict[str, list[functions.FunctionChange]] = field(default_factory=dict)

    def figure(self, target: str) -> float | None:
        """The target's instructions per event on the step's basis: the figure its verdict judges."""
        c = self.counts.get(target)
        return c.figure(self.basis) if c is not None else None

    def other(self, target: str) -> tuple[str, float | None]:
        """The figure not judged, labelled: every process's beside the foreground's, or the other way round."""
        c = self.counts.get(target)
        if self.basis == "foreground":
            return "all processes", c.figure("all processes") if c is not None else None
        return "foreground", c.figure("foreground") if c is not None and c.has_foreground else None

    def error(self, target: str) -> str | None:
        c = self.counts.get(target)
        return c.error if c is not None else None

    def throughput_bound(self, target: str) -> float | None:
        """How much the instruction change can move QPS at most: |ratio - 1| x the base's user-space share."""
        j, share = self.judged.get(target), self.user_share.get(target)
        if j is None or j.ratio is None or share is None:
            return None
        return abs(j.ratio - 1) * share

    def headline(self, target: str) -> functions.FunctionChange | None:
        """The top line of the target's per-function diff that names a function: the one whose cost changed most
        (code without symbols, valgrind's `???`, says nothing on its own; it stays in the full diff)."""
        got = self.why.get(target) or []
        return next((c for c in got if c.function != functions.NO_FILE), got[0] if got else None)


def user_shares(data: ReportData, store: Store) -> dict[tuple[str, str], float]:
    """(target, step) -> the median user share of the server's CPU over the step's 1-client repetitions."""
    measures = store.measures(data.run_id)
    out: dict[tuple[str, str], float] = {}
    for row in data.rows:
        if row.clients != 1:
            continue
        for t, cell in row.cells.items():
            shares = []
            for rep in cell.reps:
                m = measures.get(rep.cell_id) or {}
                user, sys = m.get("server_user_s"), m.get("server_sys_s")
                if isinstance(user, int | float) and isinstance(sys, int | float) and user + sys > 0:
                    shares.append(user / (user + sys))
            if shares:
                out[(t, row.step)] = statistics.median(shares)
    return out


def why(base: Count | None, target: Count | None, top: int = WHY_KEPT) -> list[functions.FunctionChange]:
    """The functions whose instructions per event changed most from base to target (none without profiles)."""
    if base is None or target is None:
        return []
    b, t = base.profile(), target.profile()
    if not b or not t:
        return []
    return functions.diff(b, t, top=top, kept=FUNCTIONS_KEPT, folded=(base.folded, target.folded))


def group_verdicts(rows: Iterable[Row], g: GroupStats) -> list[InstrVerdict]:
    """The instruction verdicts of a group summary's steps: the rows its rQPS summary counts, where counted."""
    return [
        row.instr[g.target]
        for row in rows
        if row.in_summaries and row.group == g.group and row.clients == g.clients and g.target in row.instr
    ]


def attach(data: ReportData, study: Study, store: Store) -> None:
    """Fills `data.instr_rows`, each report row's instruction verdict (its 1-client row) and the judged figure
    among its costs per operation, the group summaries' instruction verdict counts, and a note saying what
    instruction counts measure."""
    from dbsweep.report.data import INSTR_METRIC, metric_names

    counts = store.counts(data.run_id)
    data.counts_read = True
    if not counts:
        return
    aa = calibrated_floors(study, store)
    judged = run_verdicts(counts, data.base, aa)
    basis = bases(counts)
    shares = user_shares(data, store)
    steps = list(dict.fromkeys(step for _t, step in counts))
    order = {r.step: i for i, r in enumerate(data.rows)}
    ops = {r.step: r.ops_name for r in data.rows}
    for step in sorted(steps, key=lambda s: order.get(s, len(order))):
        mine = {t: c for (t, s), c in counts.items() if s == step}
        some = next((c for c in mine.values() if c.ok), None)
        ir = InstrRow(step, mine, basis[step], event_words(some, ops.get(step, "")))
        base = ir.counts.get(data.base)
        for t in data.others:
            if (j := judged.get((t, step))) is not None:
                ir.judged[t] = j
                ir.user_share[t] = shares.get((data.base, step))
                ir.why[t] = why(base, ir.counts.get(t))
        data.instr_rows.append(ir)
    by_step = {r.step: r for r in data.instr_rows}
    fewest: dict[str, int] = {}  # each step's smallest client count: the row the single-client count belongs to
    for row in data.rows:
        fewest[row.step] = min(row.clients, fewest.get(row.step, row.clients))
    for row in data.rows:
        found = by_step.get(row.step)
        if found is None or row.clients != fewest[row.step]:
            continue
        row.instr = dict(found.judged)
        for t, cell in row.cells.items():
            figure = found.figure(t)
            for rep in cell.reps:  # the same count beside every repetition: the costs table takes their median
                rep.per_op[INSTR_METRIC] = figure
    if any(INSTR_METRIC in r.per_op for row in data.rows for c in row.cells.values() for r in c.reps):
        data.per_op_metrics = metric_names(data.rows)
        for row in data.rows:
            b = row.cells[data.base].per_op_median(INSTR_METRIC)
            for t in data.others:
                v = row.cells[t].per_op_median(INSTR_METRIC)
                row.cost_ratio[t][INSTR_METRIC] = v / b if v is not None and b else None
    for g in data.groups:
        got = group_verdicts(data.rows, g)
        verdicts = [j.verdict for j in got]
        g.instr_verdicts.update({v: verdicts.count(v) for v in set(verdicts) if v is not None})
        g.instr_ratios.extend(j.ratio for j in got if j.ratio is not None)
    data.notes.append(
        "instr/event is instructions per event of the step under valgrind (one client; each run from the same "
        "freshly loaded tables): user-space work, not time. It counts the processes that served the client "
        "('fg') when, in every target's count of the step, the background processes did under 5 % of the work "
        "(their clock-driven wake-ups vary with how long a run took), else every process of the server (of the "
        "client, for an engine without one; 'all'); the verdict judges that figure, and the other is shown "
        "beside it. A verdict's floor is the larger of 0.2 %, three times the spread of the count's pairs and "
        "twice the A-A difference dbsweep calibrate measured. A change of d in it moves the server's CPU per "
        "operation by about d x the user-space share of that CPU (shown as 'user'), and QPS by no more than that."
    )
    data.notes.append(
        "An event of a counted step: " + "; ".join(f"{ir.step}: {ir.event}" for ir in data.instr_rows) + "."
    )
    held = sorted({h for c in counts.values() for h in c.held})
    if held:
        data.notes.append(
            f"The counted server ran with {', '.join(held)} added to each target's config, so that a run's work "
            "does not depend on its timing; a difference between targets in those settings is not seen by "
            "instr/event."
        )
