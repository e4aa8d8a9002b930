"""The workload a profile-guided build is trained on, the same for every engine that runs the sysbench
suite through the load client: part of the build's cache key and of its provenance."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Training:
    """The workload a PGO build is trained on; part of the cache key and the provenance."""

    name: str = "sysbench-short"
    tables: int = 1
    rows: int = 100_000
    steps: tuple[str, ...] = ("point-query",)
    clients: int = 1
    seconds: int = 20

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "steps": ["prepare", *self.steps],
            "tables": self.tables,
            "rows": self.rows,
            "clients": self.clients,
            "seconds": self.seconds,
        }


DEFAULT_TRAINING = Training()


def training_commands(t: Training) -> list[tuple[str, list[str]]]:
    """The load client's command lines for the training workload, in order: (name of its log, arguments).
    (Not part of the cache key: `Training.describe()` is.)"""
    sizes = ["--tables", str(t.tables), "--rows", str(t.rows)]
    run = ["--clients", str(t.clients), "--seconds", str(t.seconds), "--warmup", "0"]
    return [
        ("prepare", ["sysbench", "prepare", *sizes]),
        *((step, ["sysbench", step, *sizes, *run]) for step in t.steps),
    ]
