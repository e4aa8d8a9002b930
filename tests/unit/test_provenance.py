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


def test_build_changes_name_what_made_another_binary() -> None:
    built = {"build_key": "a" * 64, "version": "15.18", "compiler_version": "gcc 12.2.0", "recipe": {"pgo": False}}
    assert provenance.build_changes(built, dict(built)) == []
    # Another compiler release: the key and the fact both differ; the fact is named.
    newer = {**built, "build_key": "b" * 64, "compiler_version": "gcc 12.3.0"}
    assert provenance.build_changes(built, newer) == ["compiler_version gcc 12.2.0 → gcc 12.3.0"]
    # A record's entry inside a record, as stored (lists) against as made (tuples): only real differences count.
    trained = {**built, "build_key": "c" * 64, "recipe": {"pgo": True, "cflags": ("-O2",)}}
    stored = {**built, "recipe": {"cflags": ["-O2"], "pgo": False}}
    assert provenance.build_changes(stored, trained) == ["recipe.pgo False → True"]
    # A prebuilt package has no key: an upgrade shows in its package's version.
    package = {"source_identity": "postgresql-15 15.18-0+deb12u1", "version": "15.18"}
    upgraded = {"source_identity": "postgresql-15 15.19-0+deb12u1", "version": "15.19"}
    assert provenance.build_changes(package, upgraded) == [
        "source_identity postgresql-15 15.18-0+deb12u1 → postgresql-15 15.19-0+deb12u1",
        "version 15.18 → 15.19",
    ]
    assert provenance.build_changes(package, dict(package)) == []
