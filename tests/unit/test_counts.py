"""One instruction count, typed: the record the verdicts and every report read back from the store, from the
counts a real run stored (tests/unit/data/counts), from an older counter's (no foreground figures) and from a
newer one's (keys this code does not know)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dbsweep.results.counts import Count, event_words
from dbsweep.verdicts.instructions import bases, judge, run_verdicts, step_basis

from .handmade import real_run, real_store


def stored(target: str, step: str) -> dict[str, Any]:
    return next(c["data"] for c in real_run()["counts"] if (c["target"], c["step"]) == (target, step))


def test_a_stored_count_reads_back_as_one_record(tmp_path: Path) -> None:
    _, store = real_store(tmp_path)
    try:
        counts = store.counts(1)
    finally:
        store.close()
    raw = stored("rollback", "read-only_range=100")
    c = counts[("rollback", "read-only_range=100")]
    assert (c.target, c.step, c.per_event, c.per_query) == (
        "rollback",
        "read-only_range=100",
        raw["per_event"],
        raw["per_query"],
    )
    assert c.ok and c.has_foreground and c.unit == "events" and c.statements_per_event == 16
    assert c.foreground_per_event == raw["foreground_per_event"] and c.foreground_share == raw["foreground_share"]
    assert c.counted == "client" and c.tool == "callgrind" and c.error is None
    assert len(c.function_rows) == 40 and len(c.profile()) == 40
    assert c.figure("foreground") == raw["foreground_per_event"] and c.figure("all processes") == raw["per_event"]
    # What an event is, said once per step.
    assert event_words(c) == "one transaction of 16 statements"
    assert event_words(counts[("wal", "load")]) == "one row"
    assert event_words(counts[("wal", "point-query_range=100")]) == "one statement"


def test_an_older_count_without_foreground_figures_is_judged_on_every_process() -> None:
    keys = ("foreground_per_event", "foreground_spread", "foreground_share", "by_role")
    old = {
        t: {k: v for k, v in stored(t, "update-index_range=100").items() if k not in keys} for t in ("wal", "rollback")
    }
    b, t = (Count.from_stored(x, "update-index_range=100", old[x]) for x in ("wal", "rollback"))
    assert b.ok and not b.has_foreground and b.foreground_share is None and b.by_role == {}
    assert step_basis((b, t)) == "all processes"
    j = judge(b, t)
    assert j.basis == "all processes" and j.base_figure == old["wal"]["per_event"]
    assert j.ratio == pytest.approx(old["rollback"]["per_event"] / old["wal"]["per_event"])
    # Roles without the share (a count between the two): the share is worked out from them.
    mid = {k: v for k, v in stored("wal", "update-index_range=100").items() if k != "foreground_share"}
    got = Count.from_stored("wal", "update-index_range=100", mid)
    assert got.foreground_share == pytest.approx(mid["foreground_per_event"] / mid["per_event"])


def test_a_newer_count_s_keys_are_ignored_and_its_method_kept() -> None:
    raw = stored("wal", "insert_range=100")
    newer = {**raw, "method": "zero-dump", "background_per_event": 12.5, "phases": {"copy_s": 1.0}}
    assert Count.from_stored("wal", "insert_range=100", newer) == Count.from_stored(
        "wal", "insert_range=100", {**raw, "method": "zero-dump"}
    )
    assert Count.from_stored("wal", "insert_range=100", newer).method == "zero-dump"


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"per_event": None, "error": "valgrind cannot run it"}, "valgrind cannot run it"),
        ({"per_event": "a lot"}, None),  # ill-typed: missing, not a crash
        ({"per_event": 0.0}, None),
    ],
)
def test_a_count_without_a_usable_figure_has_no_verdict(change: dict[str, Any], why: str | None) -> None:
    c = Count.from_stored("rollback", "insert_range=100", {**stored("rollback", "insert_range=100"), **change})
    assert not c.ok and c.figure("all processes") is None and c.error == why
    j = judge(Count.from_stored("wal", "insert_range=100", stored("wal", "insert_range=100")), c)
    assert j.verdict is None and j.error is not None and not j.decided


def test_a_step_is_judged_on_one_figure_for_every_target() -> None:
    """Three targets of a step: two with a quiet background, one whose background did 20 % of the work. Every
    verdict of the step is on every process's count, so the base shows one figure whoever it is compared with."""
    raw = stored("wal", "update-index_range=100")
    fg = raw["foreground_per_event"]
    quiet = {**raw, "per_event": fg / 0.99, "foreground_share": 0.99}
    busy = {**raw, "per_event": fg * 1.01 / 0.8, "foreground_per_event": fg * 1.01, "foreground_share": 0.8}
    counts = {("a", "s"): quiet, ("b", "s"): quiet, ("c", "s"): busy}
    assert bases(counts) == {"s": "all processes"}
    v = run_verdicts(counts, "a")
    assert {j.basis for j in v.values()} == {"all processes"}
    assert v[("b", "s")].base_figure == v[("c", "s")].base_figure == pytest.approx(fg / 0.99)
    # Two quiet ones alone: the foreground's.
    assert run_verdicts({k: counts[k] for k in (("a", "s"), ("b", "s"))}, "a")[("b", "s")].basis == "foreground"
