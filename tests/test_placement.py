"""CPU placement: the plan for each choice, pinning real processes, and a run that records it."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from dbsweep import placement, procs

from .conftest import DBSWEEP, dbsweep, write_study


def test_plans() -> None:
    assert placement.plan("none", {0, 1}) == placement.Cpus("none", None, None)
    assert placement.plan("same", {0, 1}) == placement.Cpus("same", frozenset({1}), frozenset({1}))
    assert placement.plan("split", {0, 1, 2, 3}) == placement.Cpus("split", frozenset({0, 1, 2}), frozenset({3}))
    with pytest.raises(ValueError, match="needs two CPUs"):
        placement.plan("split", {0})


def test_spawned_child_and_a_whole_tree_are_pinned() -> None:
    cpu = max(os.sched_getaffinity(0))
    # A parent that forks a child, both sleeping: pin_tree must reach both.
    code = "import os, time\nif os.fork() == 0:\n    time.sleep(30)\nelse:\n    time.sleep(30)\n"
    with procs.cleanup_on_exit():
        tree = procs.spawn([sys.executable, "-c", code])
        pinned_child = procs.spawn([sys.executable, "-c", "import time; time.sleep(30)"], cpus=frozenset({cpu}))
        try:
            deadline = time.monotonic() + 10
            root = psutil.Process(tree.pid)
            while not root.children() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert placement.pin_tree(tree.pid, frozenset({cpu})) == 2
            assert root.cpu_affinity() == [cpu]
            assert [c.cpu_affinity() for c in root.children()] == [[cpu]]
            assert psutil.Process(pinned_child.pid).cpu_affinity() == [cpu]
        finally:
            procs.terminate(tree)
            procs.terminate(pinned_child)


def test_run_records_the_placement(tmp: Path) -> None:
    study = write_study(tmp)
    study.write_text(study.read_text() + '\n[measure]\nplacement = "same"\n')
    r = dbsweep("run", study)
    assert "4 cells done, 0 failed" in r.stdout
    db = sqlite3.connect(tmp / "ws" / "results.db")
    provs = [json.loads(d) for (d,) in db.execute("SELECT data FROM provenance")]
    assert provs and all(p["cpu_placement"]["placement"] == "same" for p in provs)
    cpu = max(os.sched_getaffinity(0))
    assert all(p["cpu_placement"]["server_cpus"] == [cpu] == p["cpu_placement"]["client_cpus"] for p in provs)


def test_bad_placement_is_a_study_error(tmp: Path) -> None:
    study = write_study(tmp)
    study.write_text(study.read_text() + '\n[measure]\nplacement = "numa"\n')
    r = subprocess.run([*DBSWEEP, "validate", str(study)], capture_output=True, text=True)
    assert r.returncode != 0
    assert "measure.placement: 'numa' is not allowed" in r.stdout + r.stderr
