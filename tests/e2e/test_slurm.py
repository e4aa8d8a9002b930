"""A study run through Slurm (hosts.scheduler = "slurm") on a private cluster of this machine (tests/slurm.py):
a job per round and server class, merged into the study's store once; a job cancelled mid-round leaves its round
pending and a later run completes it; bad classes are refused before any job is submitted."""

from __future__ import annotations

import json
import re
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dbsweep.results import merge
from dbsweep.results.store import Store

from ..conftest import dbsweep, running, wait_for
from ..slurm import Cluster, missing, study_text, temporary_cluster

pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    lacking = missing()
    if lacking:
        pytest.fail(lacking)
    with temporary_cluster() as c:
        yield c


def _study(tmp: Path, *, classes: str, repeats: int = 2, read_seconds: int = 1, rows: int = 2000) -> Path:
    path = tmp / "t.toml"
    path.write_text(study_text(tmp / "ws", classes, repeats=repeats, read_seconds=read_seconds, rows=rows))
    return path


TWO_CLASSES = """
[[hosts.classes]]
name = "small"
partition = "small"
profile = "c1r1"

[[hosts.classes]]
name = "large"
partition = "large"
constraint = "fast"
"""


def _cells(ws: Path) -> list[tuple[str, str, str, int, str, str]]:
    """(study, target, step, repetition, status, provenance) of every stored cell."""
    db = sqlite3.connect(ws / "results.db")
    rows = db.execute(
        "SELECT s.name, t.name, c.step, c.repetition, c.status, COALESCE(p.data, '{}') FROM cells c "
        "JOIN targets t ON t.id = c.target_id JOIN runs r ON r.id = c.run_id JOIN studies s ON s.id = r.study_id "
        "LEFT JOIN provenance p ON p.id = c.provenance_id ORDER BY c.id"
    ).fetchall()
    db.close()
    return [(str(a), str(b), str(c), int(d), str(e), str(f)) for a, b, c, d, e, f in rows]


def test_two_classes_two_rounds_merge_once_with_their_node_class_and_job(cluster: Cluster, tmp: Path) -> None:
    study = _study(tmp, classes=TWO_CLASSES)
    run = dbsweep("run", study, env=cluster.env, timeout=600)
    assert "4 jobs merged (16 cells)" in run.stdout, run.stdout + run.stderr
    assert "t.small: QPS" in run.stdout and "t.large: QPS" in run.stdout  # a report per class
    # Then the classes side by side: b's rQPS per step on each class, each against its own base.
    sides = run.stdout.split("rQPS by part (small, large)", 1)[1]
    assert re.search(r"b\s+│\s+point-query_range=100\s+│\s+1\s+│\s+\d+\.\d+ \w+\s+│\s+\d+\.\d+ \w+", sides), sides
    cells = _cells(tmp / "ws")
    keys = [(s, t, st, r) for s, t, st, r, _, _ in cells]
    assert len(cells) == 16 and len(set(keys)) == 16 and all(c[4] == "done" for c in cells), cells
    assert {c[0] for c in cells} == {"t.small", "t.large"}
    jobs_of: dict[tuple[str, int], set[str]] = {}
    for name, _, _, rep, _, prov in cells:
        batch = json.loads(prov)["host"]["batch"]
        assert batch["node"] == cluster.node and batch["class"] == name.split(".")[1] and batch["round"] == rep
        assert batch["partition"] == name.split(".")[1]
        jobs_of.setdefault((name, rep), set()).add(batch["job_id"])
    assert all(len(ids) == 1 for ids in jobs_of.values()) and len({i for s in jobs_of.values() for i in s}) == 4

    status = dbsweep("status", study, env=cluster.env).stdout
    assert status.count("merged") >= 4 and "pending 0" in status

    # A job merged again adds nothing: by its token, and, under a new token, no done cell twice.
    jobdirs = sorted((tmp / "ws" / "jobs" / "t.small").glob("r1-*"))
    assert len(jobdirs) == 1
    job_db = jobdirs[0] / "attempt-0" / "ws" / "results.db"
    store = Store(tmp / "ws" / "results.db")
    try:
        run_id = store.latest_run("t.small")
        assert run_id is not None
        (token,) = store.db.execute("SELECT token FROM merges WHERE source = ?", (str(job_db),)).fetchone()
        assert merge.merge(store, job_db, run_id[0], token).again
        twice = merge.merge(store, job_db, run_id[0], "another token")
        assert not twice.again and twice.cells == 0 and twice.skipped == 4
    finally:
        store.close()
    assert len(_cells(tmp / "ws")) == 16

    again = dbsweep("run", study, env=cluster.env)
    assert "Nothing to submit" in again.stdout
    checked = dbsweep("validate", study, env=cluster.env).stdout
    assert "2 parts, as Slurm jobs, a round each: t.small 8 cells, t.large 8 cells" in checked, checked
    # A report per class; to a file, the class is named.
    both = dbsweep("report", study, env=cluster.env).stdout
    assert both.index("t.small: QPS") < both.index("t.large: QPS")
    refused = dbsweep("report", study, "--format", "json", env=cluster.env, check=False)
    assert refused.returncode != 0 and "name the one to report with --class" in refused.stderr
    data = json.loads(dbsweep("report", study, "--class", "large", "--format", "json", env=cluster.env).stdout)
    assert data["study"] == "t.large" and {r["target"] for r in data["rows"]} == {"a", "b"}
    # compare reads one part: the one --class names, or it asks for it.
    pair = ("--targets", "a", "b", "--format", "json")
    refused = dbsweep("compare", study, *pair, env=cluster.env, check=False)
    assert refused.returncode != 0 and "name one with --class" in refused.stderr, refused.stderr
    small = json.loads(dbsweep("compare", study, *pair, "--class", "small", env=cluster.env).stdout)
    assert small["study"].startswith("t.small") and {r["target"] for r in small["rows"]} == {"a", "b"}, small["study"]


def _queued(cluster: Cluster) -> list[tuple[str, str]]:
    r = subprocess.run(
        ["squeue", "--noheader", "--format=%i|%T"], capture_output=True, text=True, env=cluster.env, check=True
    )
    return [(ln.split("|")[0], ln.split("|")[1]) for ln in r.stdout.split()]


def test_a_job_cancelled_mid_round_leaves_its_round_pending_and_a_rerun_completes_it(
    cluster: Cluster, tmp: Path
) -> None:
    one = '[[hosts.classes]]\nname = "small"\npartition = "small"\n'
    study = _study(tmp, classes=one, repeats=1, read_seconds=4, rows=20000)
    with running(study, env=cluster.env) as proc:
        # Cancelled once its round has a finished cell (the load) in the job's own store.
        wait_for(lambda: any((tmp / "ws" / "jobs").glob("t.small/r1-*/attempt-0/ws/results.db")), timeout=120)
        job_db = next((tmp / "ws" / "jobs").glob("t.small/r1-*/attempt-0/ws/results.db"))

        def a_cell() -> bool:
            try:
                with sqlite3.connect(job_db) as db:
                    return bool(db.execute("SELECT count(*) FROM cells").fetchone()[0])
            except sqlite3.OperationalError:  # the store's file is there before its tables are
                return False

        wait_for(a_cell, timeout=120)
        busy = [j for j, st in _queued(cluster) if st == "RUNNING"]
        assert len(busy) == 1, _queued(cluster)
        subprocess.run(["scancel", busy[0]], env=cluster.env, check=True)
        out, _ = proc.communicate(timeout=180)
    assert proc.returncode == 1, out
    assert f"job {busy[0]} ended CANCELLED without finishing its round" in out, out
    assert _cells(tmp / "ws") == []  # nothing of the cancelled round was merged
    status = dbsweep("status", study, env=cluster.env).stdout
    assert "pending 4" in status and "failed" in status

    rerun = dbsweep("run", study, env=cluster.env, timeout=600)
    assert "1 jobs merged (4 cells)" in rerun.stdout, rerun.stdout + rerun.stderr
    assert sorted(c[1:5] for c in _cells(tmp / "ws")) == sorted(
        (t, st, 1, "done") for t in "ab" for st in ("load", "point-query_range=100")
    )


def test_ctrl_c_cancels_the_studys_jobs(cluster: Cluster, tmp: Path) -> None:
    one = '[[hosts.classes]]\nname = "small"\npartition = "small"\n'
    study = _study(tmp, classes=one, repeats=1, read_seconds=4, rows=20000)
    with running(study, env=cluster.env) as proc:
        wait_for(lambda: any(st == "RUNNING" for _, st in _queued(cluster)), timeout=120)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, out
    assert "cancelled the study's jobs" in out, out
    deadline = time.monotonic() + 60
    while _queued(cluster) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not [j for j, st in _queued(cluster) if st in ("RUNNING", "PENDING")], _queued(cluster)
    assert "cancelled" in dbsweep("status", study, env=cluster.env).stdout


def test_instruction_counts_are_a_job_of_their_own_that_shares_the_node(cluster: Cluster, tmp: Path) -> None:
    one = '[[hosts.classes]]\nname = "small"\npartition = "small"\n'
    study = _study(tmp, classes=one, repeats=1)
    text = study.read_text()
    study.write_text(text + "\n[measure]\ninstructions = true\ninstruction_seconds = 1\ninstruction_pairs = 1\n")
    run = dbsweep("run", study, env=cluster.env, timeout=600)
    assert "2 jobs merged (4 cells)" in run.stdout, run.stdout + run.stderr
    assert re.search(r"t\.small instruction counts: submitted as job (\d+)", run.stderr), run.stderr
    counts_job = re.search(r"t\.small instruction counts: submitted as job (\d+)", run.stderr)
    round_job = re.search(r"t\.small round 1: submitted as job (\d+)", run.stderr)
    assert counts_job and round_job
    shown = {
        j: subprocess.run(
            ["scontrol", "--oneliner", "show", "job", j], capture_output=True, text=True, env=cluster.env, check=True
        ).stdout
        for j in (counts_job.group(1), round_job.group(1))
    }
    assert "OverSubscribe=NO" in shown[round_job.group(1)]  # the round had the node to itself
    assert "OverSubscribe=NO" not in shown[counts_job.group(1)]  # the counts did not ask for it
    db = sqlite3.connect(tmp / "ws" / "results.db")
    counted = db.execute("SELECT step, per_event FROM instructions").fetchall()
    db.close()
    assert sorted(s for s, _ in counted) == ["load", "load", "point-query_range=100", "point-query_range=100"]
    assert all(v and v > 0 for _, v in counted)
    round_db = next((tmp / "ws" / "jobs" / "t.small").glob("r1-*/attempt-0/ws/results.db"))
    with sqlite3.connect(round_db) as db:
        assert db.execute("SELECT count(*) FROM instructions").fetchone()[0] == 0  # the round counted nothing
    assert "counts" in dbsweep("status", study, env=cluster.env).stdout
    # why reads the one class's counts (the study has one part, so --class may be left out, or named).
    for named in ((), ("--class", "small")):
        why = dbsweep("why", study, "--target", "b", "--step", "load", *named, env=cluster.env)
        assert why.stdout.startswith("load (an event: one row): b runs"), why.stdout
    wrong = dbsweep("why", study, "--target", "b", "--step", "load", "--class", "large", env=cluster.env, check=False)
    assert wrong.returncode != 0 and "no server class 'large'" in wrong.stderr, wrong.stderr
    base = dbsweep("why", study, "--target", "a", "--step", "load", env=cluster.env, check=False)
    assert base.returncode != 0 and "is the base" in base.stderr and "Traceback" not in base.stderr, base.stderr


@pytest.mark.parametrize(
    ("classes", "says"),
    [
        ('[[hosts.classes]]\nname = "x"\npartition = "nosuch"\n', "Slurm has no partition 'nosuch'"),
        ('[[hosts.classes]]\nname = "x"\nconstraint = "nvme"\n', "no node has the feature 'nvme'"),
        ('[[hosts.classes]]\nname = "x"\npartition = "small"\nprofile = "c512r4096"\n', "scontrol show node"),
    ],
)
def test_a_class_the_cluster_does_not_have_is_refused_before_any_job(
    cluster: Cluster, tmp: Path, classes: str, says: str
) -> None:
    study = _study(tmp, classes=classes)
    r = dbsweep("run", study, env=cluster.env, check=False)
    assert r.returncode != 0 and says in r.stderr, r.stderr
    assert not (tmp / "ws" / "jobs").exists() or not any((tmp / "ws" / "jobs").rglob("job.json"))
    assert _queued(cluster) == []


def test_no_slurm_reachable_is_said(tmp: Path, cluster: Cluster) -> None:
    dead = tmp / "slurm.conf"
    text = cluster.conf.read_text()
    port = next(ln for ln in text.splitlines() if ln.startswith("SlurmctldPort="))
    dead.write_text(text.replace(port, "SlurmctldPort=1"))
    study = _study(tmp, classes='[[hosts.classes]]\nname = "x"\npartition = "small"\n')
    r = dbsweep("run", study, env={"SLURM_CONF": str(dead)}, check=False, timeout=180)
    assert r.returncode != 0 and "reaching Slurm" in r.stderr and "sinfo" in r.stderr, r.stderr


def test_a_config_no_node_could_start_is_refused_before_slurm_is_asked(tmp: Path) -> None:
    # No controller at all: the refusal must come before any Slurm command, from the study's own checks.
    study = _study(tmp, classes='[[hosts.classes]]\nname = "x"\npartition = "small"\n')
    study.write_text(study.read_text().replace('config = "wal_full"', 'config = "nosuch"'))
    r = dbsweep("run", study, env={"SLURM_CONF": str(tmp / "no-slurm.conf")}, check=False)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "targets[1].config" in r.stderr and "nosuch" in r.stderr, r.stderr
    assert "reaching Slurm" not in r.stderr
    assert not (tmp / "ws" / "jobs").exists()
