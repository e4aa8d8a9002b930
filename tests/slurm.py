"""A private Slurm cluster of this machine for the tests: a munge key and a slurm.conf generated into a temporary
directory, munged, slurmctld and slurmd as child processes (in the foreground, on free loopback ports), stopped at
the end. The one node is in two partitions, `small` and `large`, which serve as two server classes: Debian's
slurmd is built without --enable-multiple-slurmd, so one machine cannot appear as two nodes."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil

DAEMONS = ("munged", "slurmctld", "slurmd")


@dataclass(frozen=True)
class Cluster:
    conf: Path
    node: str
    root: Path

    @property
    def env(self) -> dict[str, str]:
        return {"SLURM_CONF": str(self.conf)}


def missing() -> str | None:
    """What this machine lacks to run a private cluster, or None."""
    for tool in ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sinfo"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (scripts/setup.sh installs slurmctld, slurmd, slurm-client and munge)"
    return None


def study_text(
    workspace: Path,
    classes: str,
    *,
    name: str = "t",
    repeats: int = 2,
    read_seconds: int = 1,
    rows: int = 2000,
    poll_seconds: float = 0.5,
) -> str:
    """A study of two targets of SQLite's prebuilt library (a: WAL normal, b: WAL full), one point-query step, run
    through Slurm on `classes` (their [[hosts.classes]] tables)."""
    return f"""name = "{name}"
engine = "sqlite"
base = "a"
repeats = {repeats}
workspace = "{workspace}"

[suite]
steps = ["point-query"]
tables = 1
rows = {rows}
clients = [1]
read_seconds = {read_seconds}
write_seconds = 1
warmup_seconds = 0
maintenance_seconds = 0

[hosts]
scheduler = "slurm"
poll_seconds = {poll_seconds}
{classes}

[[targets]]
name = "a"
config = "wal_normal"

[[targets]]
name = "b"
config = "wal_full"
"""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _conf(root: Path, node: str, cpus: int, memory_mb: int) -> str:
    return "\n".join(
        [
            "ClusterName=dbsweeptest",
            f"SlurmctldHost={node}(127.0.0.1)",
            f"SlurmctldPort={_free_port()}",
            f"SlurmdPort={_free_port()}",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={root}/run/munge.sock",
            "SlurmUser=root",
            "SlurmdUser=root",
            f"StateSaveLocation={root}/spool/ctld",
            f"SlurmdSpoolDir={root}/spool/d",
            f"SlurmctldPidFile={root}/run/slurmctld.pid",
            f"SlurmdPidFile={root}/run/slurmd.pid",
            f"SlurmctldLogFile={root}/log/slurmctld.log",
            f"SlurmdLogFile={root}/log/slurmd.log",
            "ProctrackType=proctrack/pgid",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "SchedulerType=sched/backfill",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core_Memory",
            "MpiDefault=none",
            "ReturnToService=2",
            "SlurmctldTimeout=30",
            "SlurmdTimeout=30",
            "InactiveLimit=0",
            "MinJobAge=600",
            "KillWait=5",
            "Waittime=0",
            f"NodeName={node} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory_mb} Features=fast State=UNKNOWN",
            f"PartitionName=small Nodes={node} Default=YES MaxTime=INFINITE State=UP",
            f"PartitionName=large Nodes={node} MaxTime=INFINITE State=UP",
            "",
        ]
    )


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in reversed(procs):
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)


@contextlib.contextmanager
def private_cluster(root: Path) -> Iterator[Cluster]:
    """A running private cluster under `root` (a new directory); everything it started is stopped at the end."""
    node = socket.gethostname().split(".")[0]
    for part in ("key", "spool/ctld", "spool/d", "log"):
        (root / part).mkdir(parents=True, mode=0o700)
    (root / "run").mkdir(mode=0o755)  # munged wants its socket's directory open to every user of the cluster
    root.chmod(0o755)
    subprocess.run(["mungekey", "--create", f"--keyfile={root}/key/munge.key"], check=True, capture_output=True)
    memory_mb = int(psutil.virtual_memory().total / 2**20 * 0.9)
    conf = root / "slurm.conf"
    conf.write_text(_conf(root, node, os.cpu_count() or 1, memory_mb))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    started: list[subprocess.Popen[bytes]] = []
    try:
        munge = [
            "munged",
            "--foreground",
            f"--socket={root}/run/munge.sock",
            f"--key-file={root}/key/munge.key",
            f"--log-file={root}/log/munged.log",
            f"--pid-file={root}/run/munged.pid",
            f"--seed-file={root}/key/seed",
        ]
        for argv in (munge, ["slurmctld", "-D", "-f", str(conf)], ["slurmd", "-D", "-f", str(conf)]):
            log = (root / "log" / f"{argv[0]}.out").open("wb")
            started.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env))
            if argv[0] == "munged":
                _wait_for(lambda: (root / "run" / "munge.sock").exists(), root, "munged", started)
        _wait_for(lambda: _idle(env), root, "slurmd (its node idle in sinfo)", started)
        yield Cluster(conf, node, root)
    finally:
        # The tests' jobs first (all of this cluster's are theirs), so no job outlives its slurmd.
        subprocess.run(["scancel", f"--user={os.getuid()}"], env=env, capture_output=True, check=False)
        deadline = time.monotonic() + 30
        while (
            time.monotonic() < deadline
            and subprocess.run(
                ["squeue", "--noheader"], env=env, capture_output=True, text=True, check=False
            ).stdout.strip()
        ):
            time.sleep(0.5)
        _stop(started)


@contextlib.contextmanager
def temporary_cluster() -> Iterator[Cluster]:
    """A private cluster in a new temporary directory, removed at the end; the cluster's `root.parent` is free
    for the caller's own files. Not under pytest's private temporary directories: munged wants every directory
    above its socket open to all."""
    top = Path(tempfile.mkdtemp(prefix="dbsweep-slurm-"))
    top.chmod(0o755)
    try:
        with private_cluster(top / "cluster") as c:
            yield c
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _idle(env: dict[str, str]) -> bool:
    r = subprocess.run(["sinfo", "--noheader", "--format=%t"], capture_output=True, text=True, env=env, check=False)
    return r.returncode == 0 and "idle" in r.stdout


def _wait_for(
    ready: Callable[[], bool], root: Path, what: str, started: list[subprocess.Popen[bytes]], timeout: float = 60
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and all(p.poll() is None for p in started):
        if ready():
            return
        time.sleep(0.2)
    logs = "\n".join(f"{p.name}:\n{p.read_text(errors='replace')[-1500:]}" for p in sorted((root / "log").glob("*")))
    raise AssertionError(f"the private cluster's {what} did not come up\n{logs}")
