"""Instruction counts run several at once, each on a CPU and in a home of its own.

A count under valgrind runs one server and one client pinned to one CPU, and what it counts does not depend on
how busy the rest of the machine is; so N CPUs take N counts at a time. Every target counts the same events of a
step, which the base's count of that step finds: the base's counts are handed out first, and another target's
count of a step waits for the base's (an earlier run may have stored it already).

Workers are threads: each spends its time waiting on a server and a client. Results come back to the caller's
thread, which alone writes them. On Ctrl-C (or any error) in the caller's thread the counts not started are
dropped, every child process is stopped until the workers have returned, and the error goes on.
"""

from __future__ import annotations

import concurrent.futures as cf
import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from dbsweep import procs

Key = tuple[str, int]  # the work that steps share (a .pre step and its plain form): counted once per target
Result = tuple[dict[str, Any], str | None]


@dataclass(frozen=True)
class Slot:
    """Where one count at a time runs: its CPU, and the index of its homes (0: the target's own)."""

    index: int
    cpus: frozenset[int]


@dataclass(frozen=True)
class Task:
    label: str  # the target
    key: Key
    steps: tuple[str, ...]  # the steps that take this count
    sets_amount: bool  # the base's count: the others of its key wait for it


# count(task, slot, amount) -> (the count's record, or the reason it failed); amount None: the count finds it.
Count = Callable[[Task, Slot, int | None], Result]


def run_all(
    tasks: Sequence[Task],
    slots: Sequence[Slot],
    count: Count,
    amounts: dict[Key, int],
    done: Callable[[Task, dict[str, Any], str | None], None],
) -> None:
    """Runs `tasks` (the base's first) on `slots`, one at a time per slot; `done` is called in this thread as
    each ends. `amounts` holds the events already found per key and gains those found now."""
    if not slots:
        raise ValueError("no slot to count on")
    free: queue.Queue[Slot] = queue.Queue()
    for s in slots:
        free.put(s)
    found = {t.key: threading.Event() for t in tasks if t.sets_amount}
    lock = threading.Lock()

    def work(task: Task) -> Result:
        if not task.sets_amount and task.key in found:
            found[task.key].wait()  # handed out before this task, so it is running or done
        slot = free.get()
        try:
            with lock:
                amount = amounts.get(task.key)
            data, error = count(task, slot, amount)
            if data.get("amount"):
                with lock:
                    amounts.setdefault(task.key, int(data["amount"]))
            return data, error
        finally:
            free.put(slot)
            if task.sets_amount:
                found[task.key].set()

    pool = cf.ThreadPoolExecutor(max_workers=len(slots), thread_name_prefix="count")
    futures: dict[cf.Future[Result], Task] = {}
    try:
        for t in tasks:  # in order: the pool's queue hands them out first come, first served
            futures[pool.submit(work, t)] = t
        for f in cf.as_completed(futures):
            data, error = f.result()
            done(futures[f], data, error)
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        # A worker between two runs may start another server after a stop: stop until every worker returned.
        started = [f for f in futures if not f.cancelled()]  # a cancelled future never counts as done
        while True:
            procs.stop_all()
            _, running = cf.wait(started, timeout=1.0)
            if not running:
                break
        raise
    pool.shutdown(wait=True)
