"""The cells of a study, in the order they run: pure, so run, status, validate, calibrate and report agree.

A cell is target x step x clients x repetition. Repetitions run in rounds; within a round the targets
alternate direction from one round to the next (A B, then B A), so slow drift of the machine lands on
every target alike. Each target sees the suite's cell steps (its recorded setup, then its steps) in order.
"""

from __future__ import annotations

from dbsweep.results.model import CellKey
from dbsweep.study import Study


def cells(study: Study, repeats: int | None = None, targets: set[str] | None = None) -> list[CellKey]:
    """Every cell of the study in run order: `repeats` rounds (the study's unless given), optionally only
    some targets."""
    suite = study.bench
    out: list[CellKey] = []
    for rep in range(1, (repeats or study.repeats) + 1):
        order = study.targets if rep % 2 == 1 else list(reversed(study.targets))
        for t in order:
            if targets is not None and t.label not in targets:
                continue
            for step in suite.cell_steps():
                for clients in suite.clients(step):
                    out.append(CellKey(t.label, step, clients, rep))
    return out


def group(study: Study, target: str, rep: int, repeats: int | None = None) -> list[CellKey]:
    """The cells of one (target, repetition) group, in order."""
    return [k for k in cells(study, repeats, {target}) if k.repetition == rep]


def row_keys(study: Study) -> list[tuple[str, int]]:
    """The report's rows: (step, clients) in the suite's group order, each group in run order."""
    suite = study.bench
    steps = suite.cell_steps()
    order = list(suite.report_groups())
    keys: list[tuple[str, int]] = []
    for step in sorted(steps, key=lambda s: (order.index(suite.group_of(s)), steps.index(s))):
        keys.extend((step, c) for c in suite.clients(step))
    return keys
