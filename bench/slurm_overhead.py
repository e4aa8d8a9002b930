"""What running a study through Slurm costs on top of its cells, on a private cluster of this machine
(tests/slurm.py): per job, from submission to the job's start (Slurm's dispatch) and from there to its first
cell (dbsweep's start on the node: the study, the install, the canary, the server); per merge, the time to copy
one job's store into the study's.

    .venv/bin/python bench/slurm_overhead.py [--rounds 4]

Prints one line per job and the medians. SQLite's prebuilt library and two targets of one step: the cells are
short, so what is measured is mostly the overhead.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.slurm import missing, study_text, temporary_cluster  # noqa: E402

from dbsweep.results import merge  # noqa: E402
from dbsweep.results.store import Store  # noqa: E402
from dbsweep.runner import open_run  # noqa: E402
from dbsweep.study import load_study  # noqa: E402


def _t(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=4)
    args = ap.parse_args()
    lacking = missing()
    if lacking:
        sys.exit(lacking)
    with temporary_cluster() as cluster:
        top = cluster.root.parent
        ws = top / "ws"
        study_path = top / "o.toml"
        one = '[[hosts.classes]]\nname = "small"\npartition = "small"\n'
        study_path.write_text(study_text(ws, one, name="o", repeats=args.rounds, poll_seconds=0.2))
        t0 = time.monotonic()
        subprocess.run(
            [str(ROOT / ".venv/bin/dbsweep"), "run", str(study_path)],
            env={**os.environ, **cluster.env},
            check=True,
            capture_output=True,
        )
        wall = time.monotonic() - t0
        db = sqlite3.connect(ws / "results.db")
        jobs = db.execute("SELECT job_id, dir, submitted_at, ended_at FROM batch_jobs ORDER BY job_id").fetchall()
        db.close()
        dispatch, startup, merged, cells = [], [], [], []
        sub = load_study(study_path).of_class("small")
        free_at = 0.0  # when the node was free for the next job (the previous job's end)
        for job_id, where, submitted, _ended in jobs:
            attempt = Path(where) / "attempt-0"
            done = json.loads((attempt / "complete.json").read_text())
            jdb = sqlite3.connect(attempt / "ws" / "results.db")
            first, last = jdb.execute("SELECT min(started_at), max(finished_at) FROM cells").fetchone()
            jdb.close()
            # From the moment the job could run (submitted, and the one node free) to dbsweep's start in it.
            dispatch.append(_t(done["started_at"]) - max(_t(submitted), free_at))
            free_at = _t(done["finished_at"])
            startup.append(_t(first) - _t(done["started_at"]))
            cells.append(_t(last) - _t(first))
            # The merge alone, into a fresh store of the same study.
            fresh = top / f"merge-{job_id}.db"
            store = Store(fresh)
            try:
                run_id = open_run(sub, store, fresh=False)
                m0 = time.perf_counter()
                got = merge.merge(store, attempt / "ws" / "results.db", run_id, f"bench-{job_id}")
                merged.append(time.perf_counter() - m0)
            finally:
                store.close()
            print(
                f"job {job_id}: runnable -> dbsweep started in it {dispatch[-1]:.2f} s, -> first cell "
                f"{startup[-1]:.2f} s, cells {cells[-1]:.2f} s, merge of {got.cells} cells "
                f"{merged[-1] * 1000:.0f} ms"
            )
        per_job = (wall - sum(cells)) / len(jobs)
        print(
            f"{len(jobs)} jobs in {wall:.1f} s, {per_job:.2f} s per job besides its cells. Medians: runnable -> "
            f"dbsweep started {statistics.median(dispatch):.2f} s, -> first cell {statistics.median(startup):.2f} "
            f"s, merge {statistics.median(merged) * 1000:.0f} ms"
        )


if __name__ == "__main__":
    main()
