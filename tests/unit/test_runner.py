"""The runner's own logic, on the stand-in engine and suite (`standin.py`): the plan's order, failed cells and
their rerun, a resume after an interrupted run, `run --target` and added rounds. No server and no load client:
every step runs in this process, against the real results store."""

from __future__ import annotations

import io
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest

from dbsweep import plan, runner, say
from dbsweep.engines import registry as engines
from dbsweep.engines.base import Instance, Watermark
from dbsweep.errors import DbsweepError, StudyError
from dbsweep.results.model import CellKey
from dbsweep.results.store import Store
from dbsweep.runner import Outcome, Runner, _disturbance, open_run, store_path
from dbsweep.study import Study, load_study
from dbsweep.suites import registry as suites

from .standin import Cell, Script, Standin, StandinRecipe, StandinSuite, in_process, registered

STUDY = """\
name = "standin-study"
engine = "standin"
base = "a"
repeats = 2
workspace = "{workspace}"
[suite]
name = "standin"
[[targets]]
name = "a"
config = "plain"
[[targets]]
name = "b"
config = "plain"
"""


@pytest.fixture
def script() -> Iterator[Script]:
    with registered() as s:
        yield s


@pytest.fixture
def study(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: Script) -> Study:
    in_process(tmp_path, monkeypatch)
    path = tmp_path / "study.toml"
    path.write_text(STUDY.format(workspace=tmp_path / "ws"))
    return load_study(path)


def run(
    study: Study,
    *,
    repeats: int | None = None,
    targets: set[str] | None = None,
    rerun_failed: bool = False,
    only: set[str] | None = None,
) -> tuple[Outcome, dict[CellKey, tuple[str, str | None]]]:
    """One `dbsweep run` of the study's latest run, on a store opened for it: its outcome and every cell's status
    after it."""
    store = Store(store_path(study))
    try:
        run_id = open_run(study, store, fresh=False)
        console = say.console(file=io.StringIO(), width=200, color_system=None)
        runner = Runner(study, store, console, rerun_failed=rerun_failed, only=only)
        out = runner.run(run_id, repeats=repeats, targets=targets)
        return out, store.statuses(run_id)
    finally:
        store.close()


def stored(study: Study) -> dict[CellKey, tuple[str, str | None]]:
    """Every stored cell's status in the study's latest run."""
    store = Store(store_path(study))
    try:
        latest = store.latest_run(study.title)
        assert latest is not None
        return store.statuses(latest[0])
    finally:
        store.close()


def cells(keys: list[CellKey]) -> list[Cell]:
    return [Cell(k.target, k.step, k.repetition) for k in keys]


def test_cells_run_in_the_plans_order_rounds_alternating(study: Study, script: Script) -> None:
    out, statuses = run(study)
    assert script.seen == cells(plan.cells(study))
    rounds = [[c.target for c in script.seen if c.rep == rep and c.step == "load"] for rep in (1, 2)]
    assert rounds == [["a", "b"], ["b", "a"]]
    assert (out.done, out.failed) == (12, 0)
    assert set(statuses) == set(plan.cells(study)) and {s for s, _ in statuses.values()} == {"done"}
    store = Store(store_path(study))
    try:
        assert [c.repetition for c in store.canaries(out.run_id)] == [1, 2]  # one canary opens each round
    finally:
        store.close()


def test_a_failed_cell_is_kept_with_its_reason_and_run_again_only_when_asked(study: Study, script: Script) -> None:
    bad = Cell("b", "read", 1)
    script.fail[bad] = "the client lost its connection"
    out, statuses = run(study)
    key = CellKey("b", "read", 1, 1)
    assert statuses[key] == ("failed", "the client lost its connection")
    assert (out.done, out.failed) == (11, 1)
    # The others ran, the failed cell's own group on past it (a read that fails does not spoil the data).
    assert script.seen == cells(plan.cells(study))
    assert all(s == "done" for k, (s, _) in statuses.items() if k != key)

    script.seen.clear()
    out, _ = run(study)
    assert script.seen == [] and (out.done, out.failed, out.skipped_failed) == (0, 0, 1)

    del script.fail[bad]
    out, statuses = run(study, rerun_failed=True)
    # Only the failed cell, on the data directory its group kept (the load is not replayed).
    assert script.seen == [bad]
    assert (out.done, out.failed) == (1, 0) and statuses[key] == ("done", None)


def test_a_failed_load_fails_the_rest_of_its_group_and_no_other(study: Study, script: Script) -> None:
    script.fail[Cell("a", "load", 2)] = "the disk is slow"
    out, statuses = run(study)
    assert statuses[CellKey("a", "load", 1, 2)] == ("failed", "the disk is slow")
    for step in ("read", "write"):
        assert statuses[CellKey("a", step, 1, 2)] == ("failed", "not run: a load c1 r2 failed")
    assert Cell("a", "read", 2) not in script.seen and Cell("b", "read", 2) in script.seen
    assert (out.done, out.failed) == (9, 3)


def test_an_interrupted_run_resumes_with_the_cells_that_have_no_result(study: Study, script: Script) -> None:
    order = cells(plan.cells(study))
    script.interrupt_at = 5  # b's read in round 1: after b's load, which stays done
    with pytest.raises(KeyboardInterrupt):
        run(study)
    finished = order[:4]
    assert script.seen == order[:5]
    assert stored(study) == {CellKey(c.target, c.step, 1, c.rep): ("done", None) for c in finished}

    script.interrupt_at = None
    script.seen.clear()
    out, statuses = run(study)
    # The rest, in the plan's order; no finished cell again, not even b's load for the read on its kept directory.
    assert script.seen == order[4:]
    assert not set(script.seen) & set(finished)
    assert (out.done, out.failed) == (8, 0)
    assert len(statuses) == 12 and {s for s, _ in statuses.values()} == {"done"}


def test_an_interrupted_load_starts_its_group_afresh(study: Study, script: Script) -> None:
    order = cells(plan.cells(study))
    script.interrupt_at = order.index(Cell("b", "load", 2)) + 1
    with pytest.raises(KeyboardInterrupt):
        run(study)
    script.interrupt_at = None
    script.seen.clear()
    out, _ = run(study)
    # Half a load is not built on: b's round 2 starts from its load again, on a fresh data directory.
    assert script.seen == order[order.index(Cell("b", "load", 2)) :]
    assert (out.done, out.failed) == (6, 0)  # the stand-in's load refuses a database that has its table


def test_only_one_targets_cells_run_with_run_target(study: Study, script: Script) -> None:
    out, statuses = run(study, only={"b"})
    assert script.seen == [c for c in cells(plan.cells(study)) if c.target == "b"]
    assert {k.target for k in statuses} == {"b"} and out.done == 6


def test_added_rounds_run_for_the_given_targets_only(study: Study, script: Script) -> None:
    run(study)
    script.seen.clear()
    out, statuses = run(study, repeats=3, targets={"b"})
    assert script.seen == [Cell("b", step, 3) for step in ("load", "read", "write")]
    assert {k.target for k in statuses if k.repetition == 3} == {"b"} and out.done == 3
    script.seen.clear()
    run(study, repeats=3, targets={"b"})
    assert script.seen == []


def test_the_stand_ins_are_known_inside_their_block_only(tmp_path: Path) -> None:
    path = tmp_path / "study.toml"
    path.write_text(STUDY.format(workspace=tmp_path / "ws"))
    before = (engines.names(), suites.names())
    with registered():
        assert "standin" in engines.names() and "standin" in suites.names()
        with pytest.raises(ValueError, match="already registered"), engines.registered(Standin()):
            pass
        with pytest.raises(ValueError, match="already registered"), suites.registered(StandinSuite):
            pass
    assert (engines.names(), suites.names()) == before and "standin" not in before[1]
    with pytest.raises(KeyError, match="unknown engine 'standin'"):
        engines.engine_named("standin")
    with pytest.raises(StudyError) as e:
        load_study(path)
    assert any("engine: 'standin' is not allowed; expected 'postgres', 'sqlite'" in p for p in e.value.problems)
    assert any("is not a suite; have: sysbench, ibench, dbbench" in p for p in e.value.problems)


def test_a_target_whose_build_changed_is_not_resumed_into_its_old_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: Script
) -> None:
    """b is built from a tree; once the recipe makes another binary of it, the rounds still to run would mix it
    with the results of the build before: the run refuses, naming the target and what changed."""
    from .test_probes import make_repo

    in_process(tmp_path, monkeypatch)
    repo = tmp_path / "repo"
    make_repo(repo, [100])
    path = tmp_path / "study.toml"
    text = STUDY.format(workspace=tmp_path / "ws").replace("repeats = 2", "repeats = 1")
    path.write_text(text + 'source = "git:' + str(repo) + '@main"\n')
    study = load_study(path)
    out, _ = run(study)
    assert out.done == 6
    script.seen.clear()
    run(study, repeats=2, targets={"b"})  # the same build: a round added and resumed as before
    assert [c.rep for c in script.seen] == [2, 2, 2]

    # The recipe now derives another option for the build (a newer dbsweep; a compiler release would do the same).
    monkeypatch.setattr(StandinRecipe, "options", lambda self, variant, version: ["--with-more"])
    script.seen.clear()
    refused = r"target 'b' is no longer the build its results in run 1 were measured with \(build key \w{12} → \w{12}"
    with pytest.raises(DbsweepError, match=refused):
        run(study, repeats=3)
    assert script.seen == []  # refused before any step
    assert len(stored(study)) == 9  # and nothing it had was lost
    # A run that measures only a: b is not built for it, yet its old figures would stand beside a's new ones as the
    # study's b. Its build is held by the key the recipe gives it now: the refused run above built it, so what
    # changed is named from its record; once that build is gone, by the key alone.
    built = (
        r"target 'b' is no longer the build .* \(build key \w{12} → (\w{12}): "
        r"the recipe's options, its training or its PGO profile differ\)"
    )
    with pytest.raises(DbsweepError, match=built) as refusal:
        run(study, repeats=3, targets={"a"})
    new = re.search(built, str(refusal.value))
    assert new is not None
    for d in (tmp_path / "ws" / "builds").glob(f"*-{new.group(1)}"):
        shutil.rmtree(d)
    unbuilt = (
        r"target 'b' is no longer the build .* \(build key \w{12} → \w{12}: its source, recipe, compiler or PGO profile"
    )
    with pytest.raises(DbsweepError, match=unbuilt):
        run(study, repeats=3, targets={"a"})
    assert script.seen == [] and len(stored(study)) == 9


class LateCrash:
    """An instance whose server writes its account of a crash only on the n-th look, as a postmaster logs a crashed
    backend once it has reaped it, after the client already saw its connection reset."""

    def __init__(self, on_look: int) -> None:
        self.on_look = on_look
        self.looks = 0

    def disturbance_since(self, mark: Watermark) -> str | None:
        self.looks += 1
        return "the server crash-restarted its backends" if self.looks >= self.on_look else None


def test_after_a_failed_step_the_servers_late_account_of_a_crash_is_awaited(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "SETTLE_S", 0.5)
    mark = Watermark(pid=1, started=0.0, log_offset=0)
    late = LateCrash(on_look=4)
    assert _disturbance(cast(Instance, late), mark, step_failed=True) == "the server crash-restarted its backends"
    assert late.looks == 4
    # A whole step is not held up: the server is asked once.
    quiet = LateCrash(on_look=4)
    assert _disturbance(cast(Instance, quiet), mark, step_failed=False) is None
    assert quiet.looks == 1
    # A failed step the server had no part in ends its wait with no account.
    never = LateCrash(on_look=10**6)
    assert _disturbance(cast(Instance, never), mark, step_failed=True) is None
    assert never.looks > 1


def test_a_count_taken_again_sets_no_amount() -> None:
    """Every target of a step counts the amount the first stored count found; a count taken otherwise (stale, of
    any target, counted now or not) or failed does not set it, so its step finds its amount afresh."""
    shares = {"point-query.pre": ("point-query", 0), "point-query": ("point-query", 0), "scan": ("scan", 0)}
    stored = {
        ("base", "point-query"): {"amount": 4000, "method": "restart"},  # stale: taken again
        ("other", "point-query.pre"): {"amount": 1000, "method": "session"},
        ("left-out", "scan"): {"amount": 30, "method": "restart"},  # stale, of a target not counted now
        ("other", "scan"): {"amount": 20, "error": "the server went away"},
        ("base", "load"): {"amount": 5},  # not a counted step
    }
    retaken = {("base", "point-query"), ("left-out", "scan")}
    assert runner.known_amounts(stored, shares, retaken) == {("point-query", 0): 1000}
    assert runner.known_amounts(stored, shares, ()) == {("point-query", 0): 4000, ("scan", 0): 30}
