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
