"""Which engines there are: a study's `engine` picks one."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

from dbsweep.engines.base import Engine

# Engines a test registered for the length of a `with registered(...)` block; dbsweep's own are below.
_for_tests: dict[str, Engine] = {}


@cache
def _own() -> dict[str, Engine]:
    # Imported here: each engine imports its driver, which only a run that uses it should pay for.
    from dbsweep.engines.mariadb import Mariadb
    from dbsweep.engines.postgres import Postgres
    from dbsweep.engines.rocksdb import Rocksdb
    from dbsweep.engines.sqlite import Sqlite

    # Adding an engine: a package under engines/ with an Engine subclass, and one entry here and in names().
    return {e.name: e for e in (Postgres(), Sqlite(), Mariadb(), Rocksdb())}


def engines() -> dict[str, Engine]:
    return _own() | _for_tests


def names() -> tuple[str, ...]:
    return ("postgres", "sqlite", "mariadb", "rocksdb", *_for_tests)


def engine_named(name: str) -> Engine:
    engine = _for_tests.get(name) or _own().get(name)
    if engine is None:
        raise KeyError(f"unknown engine {name!r}; have: {', '.join(names())}")
    return engine


@contextmanager
def registered(engine: Engine) -> Iterator[Engine]:
    """For tests only: `engine` is one of the engines inside the block (a study may name it, `engine_named` finds
    it), and is gone after it. dbsweep's own engines are listed in `_own` and `names`, never registered here."""
    if engine.name in names():
        raise ValueError(f"an engine named {engine.name!r} is already registered")
    _for_tests[engine.name] = engine
    try:
        yield engine
    finally:
        del _for_tests[engine.name]
