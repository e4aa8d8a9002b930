"""The numbers every report format shows, gathered once from the store."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dbsweep import stats
from dbsweep.store import Store
from dbsweep.study import Study
from dbsweep.suites import GROUPS, group_of


@dataclass
class Cell:
    """One target at one step: its repetitions and their summary."""

    values: list[float] = field(default_factory=list)
    failed: int = 0
    # The step's full summary of each done repetition, in the order of `values`.
    summaries: list[dict[str, Any]] = field(default_factory=list)

    @property
    def median(self) -> float | None:
        return stats.median(self.values) if self.values else None


@dataclass
class Row:
    step: str
    clients: int
    group: str
    ops_name: str
    cells: dict[str, Cell]
    rel: dict[str, float | None]


@dataclass
class ReportData:
    study: Study
    run_id: int
    targets: list[str]
    base: str
    rows: list[Row]


def gather(study: Study, store: Store, run_id: int) -> ReportData:
    from dbsweep.runner import clients_of

    steps = (["load"] if study.suite.name == "sysbench" else []) + study.steps()
    targets = [t.label for t in study.targets]
    cells: dict[tuple[str, int, str], Cell] = {}
    ops_names: dict[str, str] = {}
    summaries = store.summaries(run_id)
    for r in store.results(run_id):
        cell = cells.setdefault((r["step"], r["clients"], r["target"]), Cell())
        cell.values.append(float(r["qps"]))
        cell.summaries.append(summaries.get(r["cell_id"], {}))
        ops_names[r["step"]] = r["ops_name"]
    for key, (st, _err) in store.statuses(run_id).items():
        if st == "failed":
            cells.setdefault((key.step, key.clients, key.target), Cell()).failed += 1
    group_order = list(GROUPS)
    rows: list[Row] = []
    for step in sorted(steps, key=lambda s: (group_order.index(group_of(s)), steps.index(s))):
        for clients in [1] if step == "load" else clients_of(study, step):
            row_cells = {t: cells.get((step, clients, t), Cell()) for t in targets}
            base = row_cells[study.base].median
            rel = {
                t: (stats.relative(c.median, base) if c.median is not None and base is not None else None)
                for t, c in row_cells.items()
            }
            rows.append(Row(step, clients, group_of(step), ops_names.get(step, "queries"), row_cells, rel))
    return ReportData(study, run_id, targets, study.base, rows)
