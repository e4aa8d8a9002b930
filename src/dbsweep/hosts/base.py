"""The executor interface: the runner hands it groups of cells; it decides where and when they run."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from dbsweep.results.model import CellKey


@dataclass(frozen=True)
class GroupJob:
    """One (target, repetition) group: the cells to run on one data directory, in order."""

    target: str
    repetition: int
    cells: tuple[CellKey, ...]


class Executor(ABC):
    @abstractmethod
    def run(self, jobs: Iterable[GroupJob], work: Callable[[GroupJob], None]) -> None:
        """Runs `work` for every job. A local executor calls it in this process, in order (the order is the
        plan's: A B / B A rounds); a remote one would ship the job and gather its stored cells."""
