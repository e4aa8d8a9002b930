"""A study run through Slurm: one job per round of one server class, each with a node to itself, merged into
the study's store as it finishes.

The submitting side (`run`): checks that every class has nodes (and that they are the size the class says),
works out which rounds of which class have no results yet, adopts the jobs of an earlier `run` still queued,
submits the rest, then watches the queue and merges each finished job's store into the study's store
(`results.merge`: once, atomically). A job that ends without finishing its round (cancelled, failed, its node
lost) is said with its Slurm state and the end of its log; its round stays pending for the next `run`. Ctrl-C
cancels the jobs this study submitted, by the ids Slurm gave them.

The job side (`run_job`, as `dbsweep job FILE` on the node): the round's targets in the study's interleaved
order, into a workspace of the job's own (its store, its data directories) beside the shared source and build
caches; the profiles, which are per target, go with round 1. The instruction counts, which count work and not
time, are a job of their own (`round` 0) without `--exclusive`: it may share a node with other work. A requeued
job (its node failed) starts its round again in a fresh attempt directory. When the round is done the job writes
`complete.json` last: only a job with it is merged.

Each class's results are a study of their own in the store (`TITLE.CLASS`), so a ratio never compares a base on
one kind of machine with a target on another.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from dbsweep import plan, procs
from dbsweep.errors import DbsweepError
from dbsweep.hosts import slurm
from dbsweep.results import jobs as job_records
from dbsweep.results import merge as merging
from dbsweep.results.store import Store, now
from dbsweep.runner import Runner, open_run
from dbsweep.study import ServerClass, Study, load_study
from dbsweep.workspace import writing

JOB_SCRIPT = (
    "#!/bin/sh\n"
    "# Written by dbsweep: runs its arguments, dbsweep's command for one round of a study, on the node Slurm gave.\n"
    'exec "$@"\n'
)
COMPLETE = "complete.json"
LOG_LINES = 15
# A node's memory may be a little under its class's round figure (the kernel's and firmware's share).
MEMORY_SLACK = 0.85
# The "round" of a class's job of instruction counts.
COUNTS = 0


@dataclass(frozen=True)
class Outcome:
    merged: int  # jobs merged
    failed: int  # jobs that ended without their round
    cells: int  # cells merged


def check_cluster(study: Study) -> None:
    """Refuses, before any job is submitted, a class without nodes or with nodes of another size."""
    found = slurm.nodes()
    if not found:
        raise slurm.SlurmError("Slurm reports no nodes (sinfo --Node lists none).")
    partitions = {p for n in found for p in n.partitions}
    features = {f for n in found for f in n.features}
    for i, c in enumerate(study.hosts.classes):
        where = f"{study.path}: hosts.classes[{i}] ({c.name})"
        if c.partition and c.partition not in partitions:
            raise slurm.SlurmError(
                f"{where}: Slurm has no partition {c.partition!r}; it has {', '.join(sorted(partitions))} (sinfo)."
            )
        if c.constraint:
            wanted = [f for f in c.constraint.replace("|", "&").split("&") if f]
            missing = [f for f in wanted if f not in features]
            if missing:
                have = ", ".join(sorted(features)) or "none"
                raise slurm.SlurmError(
                    f"{where}: no node has the feature {missing[0]!r}; the nodes have: {have} "
                    "(sinfo --Node -o '%N %f')."
                )
        nodes = slurm.members(found, c.partition, c.constraint)
        if not nodes:
            raise slurm.SlurmError(f"{where}: no node is in partition {c.partition!r} with {c.constraint!r} (sinfo).")
        for n in nodes:
            problem = _misfit(c, n)
            if problem:
                raise slurm.SlurmError(
                    f"{where}: node {n.name} {problem}, not the class's {c.profile} "
                    f"(scontrol show node {n.name}); fix the class's profile or its nodes."
                )


def _misfit(c: ServerClass, n: slurm.Node) -> str | None:
    if c.cores is not None and n.cpus < c.cores:
        return f"has {n.cpus} CPUs"
    if c.memory_gb is not None and n.memory_mb < c.memory_gb * 1024 * MEMORY_SLACK:
        return f"has {n.memory_mb / 1024:.0f} GB of memory"
    return None


def pending_rounds(study: Study, store: Store, run_id: int, rerun_failed: bool) -> list[int]:
    """The rounds of a class's study with a cell still to run."""
    status = store.statuses(run_id)
    rounds: set[int] = set()
    for key in plan.cells(study):
        st = status.get(key)
        if st is None or (st[0] == "failed" and rerun_failed):
            rounds.add(key.repetition)
    return sorted(rounds)


def counts_pending(study: Study, store: Store, run_id: int, rerun_failed: bool) -> bool:
    """Whether a class's study has an instruction count still to take."""
    if not study.measure.instructions:
        return False
    have = store.instruction_counts(run_id)
    if rerun_failed:
        have = {k: v for k, v in have.items() if not v.get("error")}
    steps = study.counted_steps()
    return any((t.label, st) not in have for t in study.targets for st in steps)


def _what(rep: int) -> str:
    return "instruction counts" if rep == COUNTS else f"round {rep}"


def _study_hash(study: Study) -> str:
    return hashlib.sha256(study.path.read_bytes()).hexdigest()


class Submission:
    """One `run` of a study through Slurm."""

    def __init__(self, study: Study, store: Store, say: Callable[[str], None], *, rerun_failed: bool) -> None:
        self.study = study
        self.store = store
        self.say = say
        self.rerun_failed = rerun_failed
        self.root = study.workspace_dir / "jobs"
        self.watching: dict[str, job_records.Job] = {}  # Slurm job id -> its record

    def run(self, runs: dict[str, int]) -> Outcome:
        """`runs`: each part's title (`TITLE.CLASS[.SETUP]`) -> the run id of its study in the store."""
        check_cluster(self.study)
        self.root.mkdir(parents=True, exist_ok=True)
        script = self.root / "job.sh"
        if not script.is_file() or script.read_text() != JOB_SCRIPT:
            script.write_text(JOB_SCRIPT)
            script.chmod(0o755)
        for part in self.study.parts():
            assert part.part_class is not None  # a study through Slurm has classes (validated)
            self._plan_part(part, self.study.server_class(part.part_class), runs[part.title], script)
        if not self.watching:
            return Outcome(0, 0, 0)
        try:
            return self._watch()
        except BaseException:
            self._cancel_live()
            raise

    def _plan_part(self, sub: Study, c: ServerClass, run_id: int, script: Path) -> None:
        if c.profile:
            configs = ", ".join(sorted({t.config for t in sub.targets}))
            tables = sub.bench.data_bytes() / 2**30
            self.say(
                f"{sub.title}: sized for {c.profile}: clients {sub.suite.clients}, configs {configs}, "
                f"tables ≈ {tables:.2f} GB"
            )
        earlier = {j.repetition: j for j in job_records.of_study(self.store, sub.title) if j.run_id == run_id}
        live = slurm.queued([j.job_id for j in earlier.values() if j.state == "submitted"])
        todo = pending_rounds(sub, self.store, run_id, self.rerun_failed)
        if counts_pending(sub, self.store, run_id, self.rerun_failed):
            todo.append(COUNTS)
        for rep in todo:
            old = earlier.get(rep)
            if old is not None and old.state == "submitted":
                state = live.get(old.job_id, ("", ""))[0]
                if state in slurm.LIVE or self._complete(Path(old.dir)) is not None:
                    was = state.lower() or "done"
                    self.say(f"{sub.title} {_what(rep)}: job {old.job_id} of an earlier run is {was}; waiting")
                    self.watching[old.job_id] = old
                    continue
                self._ended(old, state or slurm.final_state(old.job_id))
            self._submit(c, sub, run_id, rep, script)

    def _submit(self, c: ServerClass, sub: Study, run_id: int, rep: int, script: Path) -> None:
        which, nonce = "counts" if rep == COUNTS else f"r{rep}", secrets.token_hex(4)
        token = f"{sub.title}-{which}-{nonce}"
        jobdir = self.root / sub.title / f"{which}-{nonce}"
        jobdir.mkdir(parents=True)
        spec = {
            "study": str(self.study.path),
            "study_sha256": _study_hash(self.study),
            "workspace": str(self.study.workspace_dir),
            "class": c.name,
            "setup": sub.part_setup,
            "round": rep,
            "token": token,
        }
        (jobdir / "job.json").write_text(json.dumps(spec, indent=1) + "\n")
        job_id = slurm.submit(
            script,
            [sys.executable, "-m", "dbsweep", "job", str(jobdir / "job.json")],
            name=f"dbsweep-{sub.title}-{which}",
            output=jobdir / "slurm-%j.out",
            workdir=jobdir,
            partition=c.partition,
            constraint=c.constraint,
            # Counts do not need a quiet machine: the CPUs they take, beside whatever else the node runs.
            exclusive=rep != COUNTS,
            cpus=(sub.measure.instruction_jobs or 1) if rep == COUNTS else None,
        )
        record = job_records.Job(
            token, sub.title, run_id, c.name, rep, job_id, str(jobdir), "submitted", now(), None, None
        )
        job_records.add(self.store, record)
        self.watching[job_id] = record
        self.say(f"{sub.title} {_what(rep)}: submitted as job {job_id}")

    def _watch(self) -> Outcome:
        merged = failed = cells = 0
        seen: dict[str, str] = {}
        while self.watching:
            queue = slurm.queued(self.watching)
            for job_id, record in list(self.watching.items()):
                state, where = queue.get(job_id, ("", ""))
                if state in slurm.LIVE:
                    if seen.get(job_id) != state:
                        seen[job_id] = state
                        on = f" on {where}" if state == "RUNNING" else f" ({where})" if where else ""
                        self.say(f"{record.study} {_what(record.repetition)}: job {job_id} {state.lower()}{on}")
                    continue
                del self.watching[job_id]
                done = self._complete(Path(record.dir))
                if done is None:
                    self._ended(record, state or slurm.final_state(job_id))
                    failed += 1
                    continue
                n = self._merge(record, done)
                merged += 1
                cells += n
            if self.watching:
                time.sleep(self.study.hosts.poll_seconds)
        return Outcome(merged, failed, cells)

    @staticmethod
    def _complete(jobdir: Path) -> Path | None:
        """The finished attempt's workspace of a job, or None when no attempt finished its round."""
        finished = sorted(jobdir.glob(f"attempt-*/{COMPLETE}"), key=lambda p: int(p.parent.name.split("-")[1]))
        return finished[-1].parent if finished else None

    def _merge(self, record: job_records.Job, attempt: Path) -> int:
        got = merging.merge(self.store, attempt / "ws" / "results.db", record.run_id, f"{record.token}/{attempt.name}")
        job_records.ended(self.store, record.token, "merged", f"{got.cells} cells from {attempt.name}")
        what = "already merged" if got.again else f"{got.cells} cells merged"
        self.say(f"{record.study} {_what(record.repetition)}: job {record.job_id} done, {what}")
        return got.cells

    def _ended(self, record: job_records.Job, state: str) -> None:
        tail = _log_tail(Path(record.dir), record.job_id)
        note = f"Slurm state {state}; its round stays pending"
        job_records.ended(self.store, record.token, "failed", f"{note}\n{tail}".strip())
        self.say(
            f"{record.study} {_what(record.repetition)}: job {record.job_id} ended {state} without finishing its "
            f"round, which stays pending (run again to submit it). "
            f"Its log, {Path(record.dir)}/slurm-{record.job_id}.out:" + (f"\n{tail}" if tail else " (empty)")
        )

    def _cancel_live(self) -> None:
        ids = list(self.watching)
        if not ids:
            return
        with contextlib.suppress(slurm.SlurmError):
            slurm.cancel(ids)
        for job_id in ids:
            job_records.ended(self.store, self.watching[job_id].token, "cancelled", "cancelled by dbsweep (Ctrl-C)")
        self.say(f"cancelled the study's jobs: {', '.join(ids)}; their rounds stay pending")


def _log_tail(jobdir: Path, job_id: str) -> str:
    log = jobdir / f"slurm-{job_id}.out"
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join("    " + ln for ln in lines[-LOG_LINES:])


# ---- the job, on its node --------------------------------------------------------------------------------------


def run_job(spec_file: Path, console: Console) -> dict[str, Any]:
    """Runs one round of one class into the job's own workspace; writes complete.json last."""
    started = now()
    spec = json.loads(spec_file.read_text())
    study = load_study(spec["study"])
    if _study_hash(study) != spec["study_sha256"]:
        raise DbsweepError(
            f"{spec['study']} changed since this job was submitted; the job does not run what was not submitted."
        )
    attempt = spec_file.parent / f"attempt-{int(os.environ.get('SLURM_RESTART_COUNT', '0') or 0)}"
    ws = attempt / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    main = Path(spec["workspace"])
    for part in ("sources", "builds"):  # the shared caches: one fetch and one build per cluster
        (main / part).mkdir(parents=True, exist_ok=True)
        link = ws / part
        if not link.is_symlink():
            link.symlink_to(main / part)
    sub = study.of_class(spec["class"], spec.get("setup")).model_copy(update={"workspace": str(ws)})
    where = {
        "batch": {
            "scheduler": "slurm",
            "job_id": os.environ.get("SLURM_JOB_ID"),
            "node": os.environ.get("SLURMD_NODENAME"),
            "partition": os.environ.get("SLURM_JOB_PARTITION"),
            "class": spec["class"],
            "setup": spec.get("setup"),
            "round": spec["round"],
            "attempt": attempt.name,
        }
    }
    with writing(ws):
        store = Store(ws / "results.db")
        try:
            run_id = open_run(sub, store, fresh=False)
            with procs.cleanup_on_exit():
                rep = int(spec["round"])
                if rep == COUNTS:
                    runner = Runner(sub, store, console, counts_only=True, where=where)
                else:  # the counts are the counts job's
                    runner = Runner(sub, store, console, rounds={rep}, count_steps=(), where=where)
                outcome = runner.run(run_id)
        finally:
            store.close()
    result = {
        "done": outcome.done,
        "failed": outcome.failed,
        **where["batch"],
        "started_at": started,
        "finished_at": now(),
    }
    tmp = attempt / f".{COMPLETE}.tmp"
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    tmp.rename(attempt / COMPLETE)
    return result
