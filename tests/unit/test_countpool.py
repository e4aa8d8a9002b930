"""The pool that takes instruction counts several at once: who waits for whom, one count per slot at a time,
results back in the caller's thread, and a stop that leaves no child behind. The counts here are stand-ins that
sleep; a real pass under valgrind is in e2e/test_instructions.py."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from dbsweep import placement, procs
from dbsweep.measure import countpool
from dbsweep.measure.countpool import Slot, Task

SLOTS = [Slot(0, frozenset({1})), Slot(1, frozenset({0}))]


class Recorder:
    """A stand-in count: sleeps, records what it was given, and checks that no slot runs two counts at once."""

    def __init__(self, amounts: dict[str, int | None], fail: set[str] | None = None) -> None:
        self.amounts = amounts  # label -> the amount its counts find (None: they fail without one)
        self.fail = fail or set()
        self.lock = threading.Lock()
        self.busy: set[int] = set()
        self.most = 0
        self.calls: list[tuple[str, countpool.Key, int, int | None]] = []
        self.done: list[tuple[str, countpool.Key, str | None, bool]] = []

    def count(self, task: Task, slot: Slot, amounts: countpool.Amounts, report: countpool.Report) -> None:
        with self.lock:
            assert slot.index not in self.busy, "two counts on one slot"
            self.busy.add(slot.index)
            self.most = max(self.most, len(self.busy))
        try:
            for key in task.keys:
                # A session asks for each amount as it reaches its step; a single count was given it.
                amount = amounts.get(key, wait=task.session and not task.sets_amount)
                with self.lock:
                    self.calls.append((task.label, key, slot.index, amount))
                time.sleep(0.05)
                if task.label in self.fail:
                    raise RuntimeError(f"{task.label} broke")
                found = self.amounts[task.label]
                if found is None:
                    report(task, key, {}, "the probe completed no event")
                else:
                    report(task, key, {"amount": amount or found + key[1]}, None)
        finally:
            with self.lock:
                self.busy.discard(slot.index)

    def finished(self, task: Task, key: countpool.Key, data: dict[str, Any], error: str | None) -> None:
        self.done.append((task.label, key, error, threading.current_thread() is threading.main_thread()))


def tasks(label: str, base: bool, n: int = 3) -> list[Task]:
    return [Task(label, (("step", i),), ((f"step{i}",),), base) for i in range(n)]


def session(label: str, base: bool, n: int = 3) -> Task:
    keys = tuple(("read", i) for i in range(n))
    return Task(label, keys, tuple((f"read{i}",) for i in range(n)), base, session=True)


def pool(known: dict[countpool.Key, int], *groups: list[Task]) -> tuple[list[Task], countpool.Amounts]:
    all_tasks = [t for g in groups for t in g]
    return all_tasks, countpool.Amounts(known, [k for t in all_tasks if t.sets_amount for k in t.keys])


def test_the_base_finds_each_amount_and_the_others_count_the_same() -> None:
    r = Recorder({"base": 100, "b": 999, "c": 999})
    all_tasks, amounts = pool({}, tasks("base", True), tasks("b", False), tasks("c", False))
    countpool.run_all(all_tasks, SLOTS, r.count, amounts, r.finished)
    assert amounts.known() == {("step", 0): 100, ("step", 1): 101, ("step", 2): 102}
    for label, key, _slot, amount in r.calls:
        assert amount == (None if label == "base" else 100 + key[1]), (label, key, amount)
    assert r.most == 2  # both slots worked at once
    assert len(r.done) == 9 and all(main for *_, main in r.done) and not any(e for _, _, e, _ in r.done)


def test_a_session_follows_the_bases_session_step_by_step() -> None:
    r = Recorder({"base": 100, "b": 999})
    all_tasks, amounts = pool({}, [session("base", True, 4)], [session("b", False, 4)])
    countpool.run_all(all_tasks, SLOTS, r.count, amounts, r.finished)
    assert r.most == 2  # b's session ran beside the base's, not after it
    got = {(label, key): amount for label, key, _, amount in r.calls}
    assert all(got[("b", ("read", i))] == 100 + i for i in range(4))
    # Each step came back on its own, in the caller's thread, in the session's order per target.
    assert [key for label, key, _, _ in r.done if label == "b"] == [("read", i) for i in range(4)]
    assert all(main for *_, main in r.done)


def test_one_slot_counts_in_order() -> None:
    r = Recorder({"base": 10, "b": 999})
    all_tasks, amounts = pool({}, tasks("base", True), tasks("b", False))
    countpool.run_all(all_tasks, SLOTS[:1], r.count, amounts, r.finished)
    assert [(label, key) for label, key, *_ in r.calls] == [(t.label, t.keys[0]) for t in all_tasks]
    assert r.most == 1


def test_without_the_bases_amount_a_target_finds_its_own() -> None:
    r = Recorder({"base": None, "b": 7})
    # An earlier run counted step 2.
    all_tasks, amounts = pool({("step", 2): 55}, tasks("base", True, 2), tasks("b", False))
    countpool.run_all(all_tasks, SLOTS, r.count, amounts, r.finished)
    got = {(label, key): amount for label, key, _, amount in r.calls}
    assert got[("b", ("step", 0))] is None and got[("b", ("step", 1))] is None  # the base failed: found its own
    assert got[("b", ("step", 2))] == 55
    assert [e for label, _, e, _ in r.done if label == "base"] == ["the probe completed no event"] * 2


def test_a_base_that_raises_leaves_no_session_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(procs, "stop_all", lambda: None)
    r = Recorder({"base": 1, "b": 1}, fail={"base"})
    all_tasks, amounts = pool({}, [session("base", True)], [session("b", False)])
    with pytest.raises(RuntimeError, match="base broke"):
        countpool.run_all(all_tasks, SLOTS, r.count, amounts, r.finished)
    assert not r.busy  # b's session did not hang waiting for an amount the base never found


def test_an_error_drops_what_has_not_started_and_stops_every_child(monkeypatch: pytest.MonkeyPatch) -> None:
    stops: list[float] = []
    monkeypatch.setattr(procs, "stop_all", lambda: stops.append(time.monotonic()))
    r = Recorder({"base": 1, "b": 1}, fail={"base"})
    all_tasks, amounts = pool({}, tasks("base", True, 10), tasks("b", False, 10))
    with pytest.raises(RuntimeError, match="base broke"):
        countpool.run_all(all_tasks, SLOTS, r.count, amounts, r.finished)
    assert stops and len(r.calls) < 20  # the children were stopped; the counts not started never ran
    assert not r.busy  # every worker had returned when the error went on


def test_a_cpu_each() -> None:
    assert placement.one_cpu_each(2, {0, 1, 2}) == [frozenset({2}), frozenset({1})]
    assert placement.one_cpu_each(4, {0, 1}) == [frozenset({1}), frozenset({0})]
    assert placement.one_cpu_each(0, {3}) == [frozenset({3})]
