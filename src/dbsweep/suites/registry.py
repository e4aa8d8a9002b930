"""Which suites there are: a study's `[suite] name` picks one, and its settings model validates the table."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from dbsweep.suites.analytics import Analytics
from dbsweep.suites.base import Suite, SuiteSettings
from dbsweep.suites.dbbench import Dbbench
from dbsweep.suites.ibench import Ibench
from dbsweep.suites.pgbench import Pgbench
from dbsweep.suites.sysbench import Sysbench

# Adding a suite: a package under suites/ with a Suite subclass, and one line here.
SUITES: dict[str, type[Suite]] = {s.name: s for s in (Sysbench, Ibench, Dbbench, Analytics, Pgbench)}
DEFAULT = "sysbench"


def names() -> list[str]:
    return list(SUITES)


@contextmanager
def registered(suite: type[Suite]) -> Iterator[type[Suite]]:
    """For tests only: `suite` is one of the suites inside the block (a study's `[suite] name` may pick it, its
    settings model validates the table), and is gone after it. dbsweep's own suites are listed in SUITES above."""
    if suite.name in SUITES:
        raise ValueError(f"a suite named {suite.name!r} is already registered")
    SUITES[suite.name] = suite
    try:
        yield suite
    finally:
        del SUITES[suite.name]


def suite_class(name: str) -> type[Suite]:
    return SUITES[name]


def settings_models() -> tuple[type[SuiteSettings], ...]:
    return tuple(s.settings_model for s in SUITES.values())


def operations() -> tuple[str, ...]:
    """The operation kinds of every suite whose steps run several at once, in registration order."""
    out: list[str] = []
    for s in SUITES.values():
        out += [op for op in s.operations if op not in out]
    return tuple(out)


def summary_columns() -> tuple[str, ...]:
    """The summary fields every suite reports as columns of its own (medians over the repetitions)."""
    out: list[str] = []
    for s in SUITES.values():
        out += [c for c in s.summary_columns if c not in out]
    return tuple(out)


def owner_of(field: str) -> list[str]:
    """The suites whose settings have `field`."""
    return [n for n, s in SUITES.items() if field in s.settings_model.model_fields]


_cache: dict[int, tuple[Any, Suite]] = {}


def suite_for(settings: SuiteSettings) -> Suite:
    """The suite a study's `[suite]` table names, bound to those settings."""
    hit = _cache.get(id(settings))
    if hit is not None and hit[0] is settings:
        return hit[1]
    suite = SUITES[settings.name](settings)
    _cache[id(settings)] = (settings, suite)
    return suite


def legacy_dump(settings: SuiteSettings) -> dict[str, Any]:
    """The `[suite]` table as runs stored it before each suite had a settings model of its own: one model held
    every suite's fields, unset ones at their defaults. The measurement key of such a run is a hash of this."""
    legacy: dict[str, Any] = {
        "name": DEFAULT,
        "steps": None,
        "tables": 1,
        "rows": 100_000,
        "clients": [1],
        "read_seconds": 60,
        "write_seconds": 60,
        "warmup_seconds": 5,
        "prepared": True,
        "primary_key": True,
        "seed": 1,
        "connect": "tcp",
        "maintenance_seconds": None,
        "zipf_exp": 0.8,
        "profile": None,
        "load_rows": None,
        "write_rows": None,
        "rw_seconds": None,
        "only1t": False,
    }
    return legacy | settings.model_dump()
