"""The canary: a fixed CPU workload in a child process, its result, its failure said plainly, and its record
stored with the run and read back."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from dbsweep.measure import canary
from dbsweep.results.store import Store

SMALL = 20_000  # enough to time, quick in a test


def test_the_child_does_the_work_and_times_it() -> None:
    run = canary.run(SMALL)
    assert run.iterations == SMALL
    assert run.seconds > 0 and run.cpu_seconds >= 0 and run.rate > 0
    # The loop is deterministic: the child's result is the one computed here, so the work was done.
    assert run.checksum == canary.spin(SMALL)
    assert canary.spin(SMALL) != canary.spin(SMALL + 1)


def test_pinned_to_one_cpu() -> None:
    cpu = min(os.sched_getaffinity(0))
    run = canary.run(SMALL, cpus=frozenset({cpu}))
    assert run.checksum == canary.spin(SMALL)


def test_a_child_that_fails_is_a_canary_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "executable", "/bin/false")
    with pytest.raises(canary.CanaryError, match="exited with status 1"):
        canary.run(SMALL)


def test_its_record_is_stored_and_read_back(tmp_path: Path) -> None:
    s = Store(tmp_path / "r.db")
    run_id = s.new_run(s.study_id("x", "x.toml"), "k", "toml")
    for rep in (1, 2):
        r = canary.run(SMALL)
        s.write_canary(run_id, rep, r.iterations, r.seconds, r.cpu_seconds)
    got = s.canaries(run_id)
    assert [c.repetition for c in got] == [1, 2]
    assert all(c.iterations == SMALL and c.seconds > 0 and c.rate > 0 for c in got)
    assert s.canaries(run_id + 1) == []
    s.close()
