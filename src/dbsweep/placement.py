"""Where the server and the load client may run: a recorded choice, because on a small VM it changes
the numbers a lot (pinning both to one CPU raised 1-client point-query QPS about 4x here, since a round
trip no longer waits for the other vCPU to wake up).

- none: the scheduler decides (the default, as in the seeds' runs);
- same: server and client share one CPU (the last one, which usually takes fewer interrupts);
- split: the client gets the last CPU and the server all the others.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import Literal

import psutil

Placement = Literal["none", "same", "split"]
PLACEMENTS: tuple[Placement, ...] = ("none", "same", "split")


@dataclass(frozen=True)
class Cpus:
    placement: Placement
    server: frozenset[int] | None
    client: frozenset[int] | None

    def describe(self) -> dict[str, object]:
        """For provenance: the choice and the CPUs it meant on this host."""
        return {
            "placement": self.placement,
            "server_cpus": sorted(self.server) if self.server is not None else None,
            "client_cpus": sorted(self.client) if self.client is not None else None,
            "host_cpus": sorted(os.sched_getaffinity(0)),
        }


def assign(placement: Placement, available: set[int] | None = None) -> Cpus:
    cpus = sorted(available if available is not None else os.sched_getaffinity(0))
    if placement == "none":
        return Cpus(placement, None, None)
    last = frozenset({cpus[-1]})
    if placement == "same":
        return Cpus(placement, last, last)
    if len(cpus) < 2:
        raise ValueError(f"placement 'split' needs two CPUs; this process may use only CPU {cpus[0]}")
    return Cpus(placement, frozenset(cpus[:-1]), last)


def one_cpu_each(n: int, available: set[int] | None = None) -> list[frozenset[int]]:
    """A CPU each for up to `n` things that run at once, the last CPU first (the one `same` takes); fewer when
    this process may use fewer CPUs."""
    cpus = sorted(available if available is not None else os.sched_getaffinity(0), reverse=True)
    return [frozenset({c}) for c in cpus[: max(1, n)]]


def pin_tree(pid: int, cpus: frozenset[int]) -> int:
    """Pins a process and its current descendants, every thread of each; backends forked later inherit the
    postmaster's mask, and threads started later their creator's.
    Returns how many processes were pinned."""
    pinned = 0
    root = psutil.Process(pid)
    for p in [root, *root.children(recursive=True)]:
        try:
            p.cpu_affinity(sorted(cpus))
            # A threaded server's threads each have their own mask: the call above set only the main thread's.
            for t in p.threads():
                with contextlib.suppress(ProcessLookupError):  # the thread ended meanwhile
                    os.sched_setaffinity(t.id, cpus)
            pinned += 1
        except psutil.NoSuchProcess:
            continue  # exited meanwhile
    return pinned


# The fixed (real-time) priority of a counted run's server and client. With both on one CPU at one fixed
# priority neither preempts the other: the server, having sent a reply, always runs on until it waits for the
# next statement, and the client runs only then. Under the normal scheduler a wake-up or a tick sometimes hands
# the CPU to the client first, the server then finds its next statement waiting and skips the wait: how often
# follows the machine's load, and moved a point query's count by 0.2 % between two runs of one build.
LOCKSTEP_PRIORITY = 1


class Lockstep(frozenset[int]):
    """CPUs to run on in lockstep: a child started on them (`procs.spawn`) also gets the fixed priority."""


def lockstep_tree(pid: int) -> bool:
    """Gives a process and its current descendants, every thread, the fixed priority (children forked later
    inherit it). False when the system refuses (no CAP_SYS_NICE, or a container without a real-time budget):
    the counts are then taken under the normal scheduler, and their spread shows what that costs."""
    try:
        root = psutil.Process(pid)
        tree = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return False
    for p in tree:
        try:
            for t in p.threads():
                with contextlib.suppress(ProcessLookupError):
                    os.sched_setscheduler(t.id, os.SCHED_FIFO, os.sched_param(LOCKSTEP_PRIORITY))
        except psutil.NoSuchProcess:
            continue
        except PermissionError:
            return False
    return True


def in_lockstep(pid: int) -> bool:
    """Whether a process runs at the lockstep's fixed priority (False once it is gone)."""
    try:
        return os.sched_getscheduler(pid) == os.SCHED_FIFO
    except OSError:
        return False
