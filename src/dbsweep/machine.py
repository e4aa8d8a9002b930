"""What this machine can hold: its memory, how many more threads and processes it can start, its CPUs; and the
one check of a study's client counts against them (preflight's), each limit with where it comes from.

Read from /proc, /sys and the process's resource limits without changing anything; each reader takes its
paths as arguments so the unit tests can hand it their own files.
"""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dbsweep.engines.base import Engine
    from dbsweep.suites.base import Found, Suite

GIB = 1 << 30
MIB = 1 << 20
_PROC = Path("/proc")
_CGROUP = Path("/sys/fs/cgroup")
# A cgroup without a limit says "max" (v2) or a number near 2^63 (v1).
_NO_LIMIT = 1 << 60


@dataclass(frozen=True)
class Limit:
    """A bound of the machine and where it comes from, as a message names it ("MemTotal", "kernel.pid_max")."""

    value: int
    where: str


def shown_bytes(n: float) -> str:
    """Bytes in binary units, as the engines' own size suffixes count them (1G = 1 GiB)."""
    for unit, size in (("TiB", 1 << 40), ("GiB", GIB), ("MiB", MIB)):
        if n >= size:
            v = n / size
            return f"{v:.0f} {unit}" if v >= 100 else f"{v:.1f} {unit}"
    return f"{n / 1024:.0f} KiB"


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text().split()[0]
    except (OSError, IndexError):
        return None
    return int(text) if text.isdigit() else None


def _cgroup_files(name_v1: str, controller: str, name_v2: str, proc: Path, root: Path) -> list[Path]:
    """The files that may hold this process's cgroup limit (v1 and v2, its own cgroup and the root's)."""
    out: list[Path] = []
    try:
        lines = (proc / "self" / "cgroup").read_text().splitlines()
    except OSError:
        lines = []
    for line in lines:
        _, controllers, path = [*line.split(":", 2), "", ""][:3]
        rel = path.lstrip("/")
        if controllers == "":
            out.append(root / rel / name_v2)
            out.append(root / "unified" / rel / name_v2)
        elif controller in controllers.split(","):
            out.append(root / controller / rel / name_v1)
    out += [root / controller / name_v1, root / name_v2]
    return out


def _cgroup_limit(name_v1: str, controller: str, name_v2: str, proc: Path, root: Path) -> int | None:
    found = [v for p in _cgroup_files(name_v1, controller, name_v2, proc, root) if (v := _read_int(p)) is not None]
    found = [v for v in found if v < _NO_LIMIT]
    return min(found) if found else None


def memory(proc: Path = _PROC, cgroup: Path = _CGROUP) -> Limit:
    """The memory this machine gives dbsweep and what it runs: MemTotal, or its cgroup's limit when lower."""
    total = 0
    try:
        for line in (proc / "meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                total = int(line.split()[1]) * 1024
                break
    except (OSError, ValueError, IndexError):
        total = 0
    if total <= 0:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    limit = _cgroup_limit("memory.limit_in_bytes", "memory", "memory.max", proc, cgroup)
    if limit is not None and limit < total:
        return Limit(limit, "its cgroup's memory limit")
    return Limit(total, "MemTotal")


def tasks(proc: Path = _PROC, cgroup: Path = _CGROUP) -> Limit:
    """How many more threads and processes this machine lets start now: the lowest of kernel.pid_max,
    kernel.threads-max, the user's RLIMIT_NPROC (not enforced for root) and the cgroup's pids.max, less the
    threads and processes running (/proc/loadavg)."""
    limits: list[tuple[int, str]] = []
    for name in ("pid_max", "threads-max"):
        v = _read_int(proc / "sys" / "kernel" / name)
        if v is not None:
            limits.append((v, f"kernel.{name} {v:,}"))
    soft, _ = resource.getrlimit(resource.RLIMIT_NPROC)
    if soft != resource.RLIM_INFINITY and os.geteuid() != 0:
        limits.append((soft, f"RLIMIT_NPROC (ulimit -u) {soft:,}"))
    pids = _cgroup_limit("pids.max", "pids", "pids.max", proc, cgroup)
    if pids is not None:
        limits.append((pids, f"the cgroup's pids.max {pids:,}"))
    if not limits:
        return Limit(_NO_LIMIT, "no limit found")
    value, where = min(limits)
    running = 0
    try:
        running = int((proc / "loadavg").read_text().split()[3].split("/")[1])
    except (OSError, ValueError, IndexError):
        running = 0
    return Limit(max(0, value - running), f"{where} less the {running:,} running")


def cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except OSError:
        return os.cpu_count() or 1


def client_problems(engine: Engine, suite: Suite) -> list[Found]:
    """The study's largest client count against this machine: the threads and processes a step starts at once
    (a thread of the load client per connection and what the server starts for each, or a thread of the engine's
    own tool per client) must fit what the machine can start, and the engine's own cap (`Engine.client_cap`)."""
    clients = list(suite.settings.clients)
    if not clients:
        return []
    most = max(clients)
    field = f"suite.clients[{clients.index(most)}]"
    connections = max((c.need for c in suite.connections()), default=0)
    if connections:
        need = connections * (2 if engine.connection_task else 1)
        each = f" and {engine.connection_task}" if engine.connection_task else ""
        how = f"{connections:,} connections at once, a thread of the load client{each} each"
    else:
        need = most
        how = "a thread each"
    free = tasks()
    cap = engine.client_cap()
    if need > free.value:
        largest = max(1, free.value * most // need)
        if cap is not None:
            largest = min(largest, cap[0])
        return [
            (
                field,
                f"{most:,} clients need about {need:,} threads and processes ({how}), more than this machine can "
                f"start now ({free.value:,}: {free.where}); use at most {largest:,} clients",
            )
        ]
    if cap is not None and most > cap[0]:
        return [(field, f"{most:,} clients are more than {engine.title} runs well on this machine: {cap[1]}")]
    return []
