"""The steps a suite can run, their report groups, and the named step sets."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# Report groups, in the order the seeds print them.
GROUPS = {
    "load": "load",
    "point": "point queries",
    "range-noagg": "range queries without aggregation",
    "range-agg": "range queries with aggregation",
    "write": "writes",
}

LOAD_STEP = "load"


@dataclass(frozen=True)
class StepSpec:
    name: str
    workload: str
    group: str
    # Read-heavy steps use the read duration, write-heavy ones the write duration.
    duration: Literal["read", "write"]


STEPS: dict[str, StepSpec] = {
    s.name: s
    for s in [
        StepSpec("point-query", "point-query", "point", "read"),
    ]
}

STEP_NAMES = tuple(STEPS)

SETS: dict[str, list[str]] = {
    "quick": ["point-query"],
}

SUITE_NAMES = tuple(SETS)


def expand_steps(steps: list[str] | str) -> list[str]:
    return list(SETS[steps]) if isinstance(steps, str) else list(steps)


def group_of(step: str) -> str:
    return "load" if step == LOAD_STEP else STEPS[step].group
