"""Slurm's commands, as dbsweep uses them: what the cluster has (`sinfo`), a job given a node to itself
(`sbatch --exclusive`), where the study's jobs are (`squeue`, then `scontrol show job` for one that left the
queue), and cancelling them (`scancel`).

dbsweep shells out to Slurm's own commands rather than binding its C API (pyslurm must match the cluster's Slurm
release) or taking submitit (it ships pickled Python functions to the node, which needs the same interpreter
there and hides the job's command line): the commands are the interface Slurm keeps stable, and each call is an
argument list, never a shell string. The commands find the cluster as the user's shell does (`SLURM_CONF`, or
the system's slurm.conf). A cluster without accounting has no `sacct`: a job that left the queue is asked of
the controller, which remembers it for `MinJobAge` seconds; after that its own marker files say how it ended.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from dbsweep.errors import DbsweepError

TIMEOUT = 60.0
# The states in which a job still holds or waits for a node.
LIVE = frozenset({"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "REQUEUED", "RESIZING", "SUSPENDED"})


class SlurmError(DbsweepError):
    """Slurm refused, or is not there; the message names the command that shows why."""


@dataclass(frozen=True)
class Node:
    name: str
    partitions: tuple[str, ...]
    cpus: int
    memory_mb: int
    features: tuple[str, ...]
    state: str


def _run(argv: Sequence[str], what: str) -> str:
    if shutil.which(argv[0]) is None:
        raise SlurmError(
            f"{argv[0]} is not installed: a study run through Slurm needs Slurm's commands on this machine "
            "(Debian: apt-get install slurm-client)."
        )
    try:
        r = subprocess.run(list(argv), capture_output=True, text=True, timeout=TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise SlurmError(f"{what}: `{' '.join(argv)}` did not answer in {TIMEOUT:.0f} s; is slurmctld up?") from None
    if r.returncode != 0:
        said = (r.stderr.strip() or r.stdout.strip()).splitlines()
        raise SlurmError(f"{what}: `{' '.join(argv)}` failed: {said[-1] if said else f'exit {r.returncode}'}")
    return r.stdout


def nodes() -> list[Node]:
    """Every node of the cluster with its partitions, CPUs, memory and features (`sinfo`)."""
    out = _run(["sinfo", "--noheader", "--Node", "--format=%N|%P|%c|%m|%f|%t"], "reaching Slurm")
    found: dict[str, Node] = {}
    for line in out.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 6:
            continue
        name, partition, cpus, mem, features, state = parts
        partition = partition.rstrip("*")  # the default partition's mark
        old = found.get(name)
        parts_of = (*old.partitions, partition) if old else (partition,)
        feats = tuple(f for f in features.split(",") if f and f != "(null)")
        found[name] = Node(name, parts_of, int(cpus or 0), int(re.sub(r"\D", "", mem) or 0), feats, state)
    return list(found.values())


def members(all_nodes: Iterable[Node], partition: str | None, constraint: str | None) -> list[Node]:
    """The nodes of a partition with a feature (either may be None). A constraint of several features joined
    by & needs all of them; one with | any of them."""

    def has(n: Node) -> bool:
        if constraint is None:
            return True
        if "|" in constraint:
            return any(f in n.features for f in constraint.split("|"))
        return all(f in n.features for f in constraint.split("&"))

    return [n for n in all_nodes if (partition is None or partition in n.partitions) and has(n)]


def submit(
    script: Path,
    argv: Sequence[str],
    *,
    name: str,
    output: Path,
    workdir: Path,
    partition: str | None,
    constraint: str | None,
    exclusive: bool = True,
    cpus: int | None = None,
) -> str:
    """Submits `script` with arguments `argv` (the script runs them); returns the job id."""
    opts = [
        "--parsable",
        f"--job-name={name}",
        f"--output={output}",
        f"--chdir={workdir}",
        "--nodes=1",
        "--requeue",  # a node that fails gives the round to another; the job starts its round again
    ]
    if exclusive:
        opts.append("--exclusive")
    if cpus:
        opts.append(f"--cpus-per-task={cpus}")
    if partition:
        opts.append(f"--partition={partition}")
    if constraint:
        opts.append(f"--constraint={constraint}")
    out = _run(["sbatch", *opts, str(script), *argv], f"submitting {name}")
    job = out.strip().split(";")[0]
    if not job.isdigit():
        raise SlurmError(f"submitting {name}: sbatch answered {out.strip()!r}, not a job id")
    return job


def queued(jobs: Iterable[str]) -> dict[str, tuple[str, str]]:
    """The jobs still in the queue: job id -> (state, reason or node)."""
    ids = sorted(set(jobs), key=int)
    if not ids:
        return {}
    try:
        out = _run(["squeue", "--noheader", "--states=all", f"--jobs={','.join(ids)}", "--format=%i|%T|%R"], "squeue")
    except SlurmError as e:
        if "Invalid job id" in str(e):  # none of them is known any more
            return {}
        raise
    found: dict[str, tuple[str, str]] = {}
    for line in out.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 3 and parts[0] in ids:
            found[parts[0]] = (parts[1], parts[2])
    return found


def final_state(job: str) -> str:
    """How a job that left the queue ended, as the controller remembers it ("COMPLETED", "CANCELLED", "FAILED",
    "NODE_FAIL", ...), or "unknown" once it forgot."""
    try:
        out = _run(["scontrol", "--oneliner", "show", "job", job], f"asking for job {job}")
    except SlurmError:
        return "unknown"
    m = re.search(r"\bJobState=(\S+)", out)
    return m.group(1) if m else "unknown"


def cancel(jobs: Iterable[str]) -> None:
    """Cancels the jobs (the study's own, by the ids their submission returned)."""
    ids = sorted(set(jobs), key=int)
    if ids:
        _run(["scancel", *ids], "cancelling the study's jobs")
