"""What a result records of the host it ran on, and where the runner's groups run (the local executor)."""

from __future__ import annotations

import os
from pathlib import Path

from dbsweep import provenance
from dbsweep.hosts import GroupJob, Local
from dbsweep.results.model import CellKey


def test_host_facts(tmp_path: Path) -> None:
    facts = provenance.host_facts(tmp_path / "ws-not-made-yet")
    assert facts["cpus_logical"] == os.cpu_count() and facts["memory_bytes"] > 0
    assert facts["cpu_model"] and facts["kernel"] and facts["python"].startswith("3.")
    fs = facts["workspace_fs"]
    assert fs["mountpoint"] and Path(tmp_path).resolve().is_relative_to(fs["mountpoint"])


def test_the_local_executor_runs_every_group_here_in_the_plans_order() -> None:
    jobs = [GroupJob(t, rep, (CellKey(t, "load", 1, rep),)) for rep, order in ((1, "ab"), (2, "ba")) for t in order]
    done: list[tuple[str, int]] = []
    Local().run(jobs, lambda job: done.append((job.target, job.repetition)))
    assert done == [("a", 1), ("b", 1), ("b", 2), ("a", 2)]
