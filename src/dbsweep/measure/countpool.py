"""Instruction counts run several at once, each on a CPU and in a home of its own.

A count under valgrind runs one server and one client pinned to one CPU, in lockstep, and what it counts does
not depend on how busy the rest of the machine is; so N CPUs take N counts at a time. A task is one count, or
a session: the reads of one target counted in order on one server (`measure.session`). Every target counts the
same events of a step, which the base's count of that step finds: the base's tasks are handed out first, and
another target's count of a step waits for the base's (an earlier run may have stored it already); a session
waits step by step, so it follows the base's session one step behind.

Workers are threads: each spends its time waiting on a server and a client. Results come back to the caller's
thread as each step ends (a session hands back its steps one by one), and it alone writes them. On Ctrl-C (or
any error) in the caller's thread the counts not started are dropped, every child process is stopped until the
workers have returned, and the error goes on.
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
    keys: tuple[Key, ...]  # one count, or a session's, in the order it takes them
    steps: tuple[tuple[str, ...], ...]  # per key, the steps that take its count
    sets_amount: bool  # the base's: the others' counts of its keys wait for it
    session: bool = False


class Amounts:
    """The events each key is counted over: known from the store, or found by the base's count of it."""

    def __init__(self, known: dict[Key, int], base_keys: Sequence[Key]) -> None:
        self._known = dict(known)
        self._lock = threading.Lock()
        self._ready = {k: threading.Event() for k in base_keys if k not in known}

    def get(self, key: Key, *, wait: bool) -> int | None:
        """The key's amount; with `wait`, once the base's count of it ended (None if it found none)."""
        if wait and key in self._ready:
            self._ready[key].wait()
        with self._lock:
            return self._known.get(key)

    def found(self, key: Key, amount: int) -> None:
        with self._lock:
            self._known.setdefault(key, amount)

    def settled(self, key: Key) -> None:
        """The base's count of `key` ended (counted or failed): the others go on without waiting."""
        if key in self._ready:
            self._ready[key].set()

    def known(self) -> dict[Key, int]:
        with self._lock:
            return dict(self._known)


# report(task, key, the count's record, or why it failed): called by a count as each key ends.
Report = Callable[[Task, Key, dict[str, Any], "str | None"], None]
# count(task, slot, amounts, report): takes the task's counts, reporting each.
Count = Callable[[Task, Slot, Amounts, Report], None]


def run_all(
    tasks: Sequence[Task],
    slots: Sequence[Slot],
    count: Count,
    amounts: Amounts,
    done: Callable[[Task, Key, dict[str, Any], str | None], None],
) -> None:
    """Runs `tasks` (the base's first) on `slots`, one at a time per slot; `done` is called in this thread as
    each key ends."""
    if not slots:
        raise ValueError("no slot to count on")
    free: queue.Queue[Slot] = queue.Queue()
    for s in slots:
        free.put(s)
    results: queue.Queue[tuple[Task, Key, dict[str, Any], str | None]] = queue.Queue()

    def report(task: Task, key: Key, data: dict[str, Any], error: str | None) -> None:
        if task.sets_amount:
            if data.get("amount"):
                amounts.found(key, int(data["amount"]))
            amounts.settled(key)
        results.put((task, key, data, error))

    def work(task: Task) -> None:
        if not task.session and not task.sets_amount:
            for key in task.keys:
                amounts.get(key, wait=True)  # before taking a slot: handed out after the base's, so it ends
        slot = free.get()
        try:
            count(task, slot, amounts, report)
        finally:
            free.put(slot)
            if task.sets_amount:
                for key in task.keys:  # a count that raised leaves no one waiting
                    amounts.settled(key)

    pool = cf.ThreadPoolExecutor(max_workers=len(slots), thread_name_prefix="count")
    futures: list[cf.Future[None]] = []
    try:
        for t in tasks:  # in order: the pool's queue hands them out first come, first served
            futures.append(pool.submit(work, t))
        pending = set(futures)
        while pending or not results.empty():
            try:
                done(*results.get(timeout=0.2))
                continue
            except queue.Empty:
                pass
            finished = {f for f in pending if f.done()}
            for f in finished:
                f.result()  # a worker's error goes on here
            pending -= finished
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
