"""Runs every group on this machine, one after another, in the plan's order: benchmarks never overlap."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from dbsweep.hosts.base import Executor, GroupJob


class Local(Executor):
    def run(self, jobs: Iterable[GroupJob], work: Callable[[GroupJob], None]) -> None:
        for job in jobs:
            work(job)
