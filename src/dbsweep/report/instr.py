"""The instruction verdicts of a report: each step's instructions per operation (every process of the server,
under valgrind) against the base's, with the floor the verdict used, the foreground's share of the work, the
user-space share of the server's CPU during the timed step, and the functions whose cost changed most.

An instruction count measures user-space work, not time: a point query on this kind of machine spends most of
its server CPU in the kernel (network, wake-ups), which no instruction count sees. So beside each verdict the
report says what it can mean for throughput: a change of d in instructions moves the server's CPU per
operation by about d x the user-space share (at the same instructions per cycle), and QPS by no more than that.

`data.gather` fills these fields; the formats only show them.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dbsweep.measure import functions
from dbsweep.verdicts import calibrate
from dbsweep.verdicts.instructions import InstrVerdict, calibrated_aa, run_verdicts

if TYPE_CHECKING:
    from dbsweep.report.data import GroupStats, ReportData, Row
    from dbsweep.results.store import Store
    from dbsweep.study import Study

WHY_TOP = 8  # functions listed per step and target in the terminal and markdown (HTML and JSON: WHY_KEPT)
WHY_KEPT = 40


@dataclass
class InstrRow:
    """One step's counts: per target the stored count, and for every target but the base its verdict, the
    user-space share of the server's CPU in the timed step, and the functions that changed most."""

    step: str
    counts: dict[str, dict[str, Any]]
    judged: dict[str, InstrVerdict] = field(default_factory=dict)
    user_share: dict[str, float | None] = field(default_factory=dict)
    why: dict[str, list[functions.FunctionChange]] = field(default_factory=dict)

    def per_event(self, target: str) -> float | None:
        c = self.counts.get(target) or {}
        v = c.get("per_event")
        return float(v) if isinstance(v, int | float) and not c.get("error") else None

    def throughput_bound(self, target: str) -> float | None:
        """How much the instruction change can move QPS at most: |ratio - 1| x the base's user-space share."""
        j, share = self.judged.get(target), self.user_share.get(target)
        if j is None or j.ratio is None or share is None:
            return None
        return abs(j.ratio - 1) * share


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


def calibrated_floors(study: Study, store: Store) -> dict[str, float]:
    """step -> the A-A difference of instructions per event a `dbsweep calibrate` of the base measured."""
    for target in sorted(study.targets, key=lambda t: t.label != study.base):
        latest = store.latest_run(calibrate.study_name(study, target))
        if latest is None:
            continue
        a, b = calibrate.copy_labels(target)
        if aa := calibrated_aa(store.instruction_counts(latest[0]), a, b):
            return aa
    return {}


def why(base: Mapping[str, Any], target: Mapping[str, Any], top: int = WHY_KEPT) -> list[functions.FunctionChange]:
    """The functions whose instructions per event changed most from base to target (none without profiles)."""
    b, t = base.get("functions"), target.get("functions")
    if not b or not t:
        return []
    return functions.diff(functions.from_rows(b), functions.from_rows(t), top=top)


def group_verdicts(rows: Iterable[Row], g: GroupStats) -> list[InstrVerdict]:
    """The instruction verdicts of a group summary's steps: the rows its rQPS summary counts, where counted."""
    return [
        row.instr[g.target]
        for row in rows
        if row.in_summaries and row.group == g.group and row.clients == g.clients and g.target in row.instr
    ]


def attach(data: ReportData, study: Study, store: Store) -> None:
    """Fills `data.instr_rows`, each report row's instruction verdict (its 1-client row), the group summaries'
    instruction verdict counts, and a note saying what instruction counts measure."""
    counts = store.instruction_counts(data.run_id)
    if not counts:
        return
    aa = calibrated_floors(study, store)
    judged = run_verdicts(counts, data.base, aa)
    shares = user_shares(data, store)
    steps = list(dict.fromkeys(step for _t, step in counts))
    order = {r.step: i for i, r in enumerate(data.rows)}
    for step in sorted(steps, key=lambda s: order.get(s, len(order))):
        ir = InstrRow(step, {t: dict(c) for (t, s), c in counts.items() if s == step})
        base = ir.counts.get(data.base) or {}
        for t in data.others:
            if (j := judged.get((t, step))) is not None:
                ir.judged[t] = j
                ir.user_share[t] = shares.get((data.base, step))
                ir.why[t] = why(base, ir.counts.get(t) or {})
        data.instr_rows.append(ir)
    by_step = {r.step: r for r in data.instr_rows}
    fewest: dict[str, int] = {}  # each step's smallest client count: the row the single-client count belongs to
    for row in data.rows:
        fewest[row.step] = min(row.clients, fewest.get(row.step, row.clients))
    for row in data.rows:
        found = by_step.get(row.step)
        if found is not None and row.clients == fewest[row.step]:
            row.instr = dict(found.judged)
    for g in data.groups:
        got = group_verdicts(data.rows, g)
        verdicts = [j.verdict for j in got]
        g.instr_verdicts.update({v: verdicts.count(v) for v in set(verdicts) if v is not None})
        g.instr_ratios.extend(j.ratio for j in got if j.ratio is not None)
    data.notes.append(
        "instructions/o counts every process of the server (of the client, for an engine without one) under "
        "valgrind (one client; each run from the same "
        "freshly loaded tables): user-space work, not time. A change of d in it moves the server's CPU per "
        "operation by about d x the user-space share of that CPU (shown as 'user'), and QPS by no more than "
        "that. A verdict is on the foreground's count (floor marked 'fg') when the background processes did under "
        "5 % of the work (their clock-driven wake-ups vary with how long a run took), else on every process's; its "
        "floor is the larger of 0.2 %, three times the spread of the count's pairs and twice the A-A difference "
        "dbsweep calibrate measured."
    )
    held = sorted({h for c in counts.values() for h in c.get("held") or []})
    if held:
        data.notes.append(
            f"The counted server ran with {', '.join(held)} added to each target's config, so that a run's work "
            "does not depend on its timing; a difference between targets in those settings is not seen by "
            "instructions/o."
        )
