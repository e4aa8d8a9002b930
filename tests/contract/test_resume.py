"""A run of every engine killed with SIGKILL in the middle of a step loses no finished cell, leaves no server or
client behind, and resumes doing only what is missing."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from ..conftest import (
    alive,
    children_of,
    dbsweep,
    done_cells,
    load_client_running,
    names,
    start_run,
    wait_for,
    wait_no_processes,
    write_study,
)
from .engines import Support

pytestmark = pytest.mark.server


def test_sigkill_mid_step_loses_nothing_and_resumes(engine_name: str, support: Support, tmp: Path) -> None:
    a, b = support.configs
    study = write_study(tmp, engine=engine_name, config_a=a, config_b=b, seconds=6, warmup=1)
    proc = start_run(study)
    try:
        # Let the load and the first point-query finish, then kill during the next step.
        wait_for(lambda: len(done_cells(tmp)) >= 2)
        wait_for(lambda: load_client_running(proc) or proc.poll() is not None)
        time.sleep(1.5)
        # On a loaded machine the client seen may be a short one between steps: wait for a step's client.
        wait_for(lambda: {"dbsweep-load", support.process_name} <= names(children_of(proc)), timeout=60)
        children = children_of(proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    before = done_cells(tmp)
    assert 2 <= len(before) < 4, before
    # The servers and the client die with dbsweep, even on SIGKILL.
    assert not wait_no_processes(tmp, timeout=60)
    wait_for(lambda: not alive(children), timeout=60)
    r = dbsweep("run", study)
    assert "0 failed" in r.stdout
    after = done_cells(tmp)
    assert after[: len(before)] == before, "finished cells were changed"
    keys = [(n, s, c, rep) for _, n, s, c, rep, st, _, _ in after if st == "done"]
    assert sorted(keys) == sorted(set(keys)), "a cell was done twice"
    assert len(keys) == 4
