"""CPU placement: the assignment for each choice, pinning real processes, and a bad choice refused."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import psutil
import pytest

from dbsweep import placement, procs

from ..conftest import write_study
from .conftest import cli


def test_assignments() -> None:
    assert placement.assign("none", {0, 1}) == placement.Cpus("none", None, None)
    assert placement.assign("same", {0, 1}) == placement.Cpus("same", frozenset({1}), frozenset({1}))
    assert placement.assign("split", {0, 1, 2, 3}) == placement.Cpus("split", frozenset({0, 1, 2}), frozenset({3}))
    with pytest.raises(ValueError, match="needs two CPUs"):
        placement.assign("split", {0})


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


def test_every_thread_of_a_threaded_server_is_pinned() -> None:
    """A threaded server (MariaDB) runs its background work in threads that exist before the pinning: a mask
    set on the process alone would leave them where they were."""
    cpu = max(os.sched_getaffinity(0))
    code = "import threading, time\nfor _ in range(3): threading.Thread(target=time.sleep, args=(30,)).start()\n"
    with procs.cleanup_on_exit():
        server = procs.spawn([sys.executable, "-c", code])
        try:
            proc = psutil.Process(server.pid)
            deadline = time.monotonic() + 10
            while proc.num_threads() < 4 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert placement.pin_tree(server.pid, frozenset({cpu})) == 1
            threads = [t.id for t in proc.threads()]
            assert len(threads) == 4 and all(os.sched_getaffinity(t) == {cpu} for t in threads)
        finally:
            procs.terminate(server)


def test_bad_placement_is_a_study_error(tmp_path: Path) -> None:
    study = write_study(tmp_path)
    study.write_text(study.read_text() + '\n[measure]\nplacement = "numa"\n')
    r = cli("validate", study)
    assert r.returncode == 2
    assert "measure.placement: 'numa' is not allowed" in r.stdout + r.stderr


def test_a_child_started_in_lockstep_gets_the_fixed_priority() -> None:
    cpu = placement.one_cpu_each(1)[0]
    proc = procs.spawn(["sleep", "30"], cpus=placement.Lockstep(cpu))
    plain = procs.spawn(["sleep", "30"], cpus=cpu)
    try:
        granted = placement.in_lockstep(proc.pid)
        assert not placement.in_lockstep(plain.pid)  # only a Lockstep asks for it
        again = placement.lockstep_tree(plain.pid)
        assert again == placement.in_lockstep(plain.pid)  # says whether the system granted it
    finally:
        procs.terminate(proc)
        procs.terminate(plain)
    if os.geteuid() == 0:
        assert granted and again  # root may; elsewhere a refusal is recorded as "normal" scheduling
    assert not placement.in_lockstep(proc.pid) and not placement.lockstep_tree(proc.pid)  # gone
