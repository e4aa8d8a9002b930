"""A study's parts side by side (report/sides.py): rQPS, and instruction verdicts where the parts were counted,
each against its own part's base."""

from __future__ import annotations

from types import SimpleNamespace
from typing import cast

from dbsweep.report import sides
from dbsweep.report.data import ReportData
from dbsweep.report.instr import InstrRow
from dbsweep.study import Study
from dbsweep.verdicts.instructions import InstrVerdict


def _part(title: str, judged: dict[str, InstrVerdict] | None) -> ReportData:
    rows = [] if judged is None else [InstrRow(step="point-query", counts={}, judged=judged)]
    study = cast(Study, SimpleNamespace(title=title))
    return ReportData(study=study, run_id=1, targets=["a", "b"], base="a", rows=[], instr_rows=rows)


def _judged(ratio: float, verdict: str) -> dict[str, InstrVerdict]:
    return {"b": InstrVerdict(ratio=ratio, verdict=verdict, floor=0.005, floor_source="default")}  # type: ignore[arg-type]


def test_each_parts_instruction_verdict_sits_beside_the_others() -> None:
    small = _part("t.small", _judged(0.9, "faster"))
    large = _part("t.large", _judged(1.02, "slower"))
    made = sides.instr_table([small, large])
    assert made is not None
    assert made.header == ["target", "step", "small", "large"]
    ((target, step, left, right),) = made.rows
    assert (target.text, step.text) == ("b", "point-query")
    assert left.text.startswith("faster -10.0") and left.colour == "green", left
    assert right.text.startswith("slower +2.0"), right
    # These parts have counts and no timed rows: the instruction table alone.
    assert [t.key for t in sides.tables([small, large])] == ["sides_instr"]


def test_no_instruction_table_unless_two_parts_were_counted() -> None:
    assert sides.instr_table([_part("t.small", _judged(0.9, "faster")), _part("t.large", None)]) is None
    assert sides.instr_table([_part("t.small", _judged(0.9, "faster"))]) is None
