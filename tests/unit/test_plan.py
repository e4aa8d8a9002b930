"""The plan: every cell of a study in run order (A B, then B A), one (target, repetition) group, and the
report's rows in the suite's group order; the same for every suite."""

from __future__ import annotations

from pathlib import Path

from dbsweep import plan
from dbsweep.results.model import CellKey
from dbsweep.study import load_study

from ..conftest import write_study


def test_rounds_alternate_direction_and_each_target_sees_its_steps_in_order(tmp_path: Path) -> None:
    study = load_study(write_study(tmp_path, repeats=3, clients=[1, 2], steps='["point-query", "update-index"]'))
    cells = plan.cells(study)
    steps = [("load", 1), ("point-query_range=100", 1), ("point-query_range=100", 2)]
    steps += [("update-index_range=100", 1), ("update-index_range=100", 2)]
    expected = [
        CellKey(t, step, c, rep) for rep, order in ((1, "ab"), (2, "ba"), (3, "ab")) for t in order for step, c in steps
    ]
    assert cells == expected
    assert len(cells) == len(set(cells)) == 3 * 2 * 5
    assert plan.cells(study, repeats=5)[-5:] == [CellKey("b", s, c, 5) for s, c in steps]
    assert {k.target for k in plan.cells(study, targets={"b"})} == {"b"}
    assert plan.group(study, "b", 2) == [CellKey("b", s, c, 2) for s, c in steps]


def test_report_rows_follow_the_suites_groups(tmp_path: Path) -> None:
    steps = '["update-index", "point-query.pre", "range-covered-pk", "point-query", "read-only-count_range=1000"]'
    study = load_study(write_study(tmp_path, steps=steps, clients=[1, 4]))
    rows = plan.row_keys(study)
    assert [s for s, c in rows if c == 1] == [
        "load",
        "point-query.pre_range=100",
        "point-query_range=100",
        "range-covered-pk_range=100",
        "read-only-count_range=1000",
        "update-index_range=100",
    ]
    assert ("load", 4) not in rows and ("update-index_range=100", 4) in rows


def test_an_ibench_study_is_planned_like_any_other(tmp_path: Path) -> None:
    path = tmp_path / "ib.toml"
    path.write_text(
        f'engine = "postgres"\nbase = "a"\nrepeats = 2\nworkspace = "{tmp_path / "ws"}"\n'
        '[suite]\nname = "ibench"\nprofile = "quick"\nclients = [2]\n'
        '[[targets]]\nname = "a"\nconfig = "cx10a_c2r24"\n[[targets]]\nname = "b"\nconfig = "cx10a_sb1g_c2r24"\n'
    )
    study = load_study(path)
    cells = plan.cells(study)
    assert len(cells) == 2 * 2 * 10 and {k.clients for k in cells} == {2}
    assert [k.step for k in plan.group(study, "a", 1)] == study.steps()
    assert [k.target for k in cells[::10]] == ["a", "b", "b", "a"]
    assert [s for s, _ in plan.row_keys(study)] == study.steps()
