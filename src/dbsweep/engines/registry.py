"""Which engines there are: a study's `engine` picks one."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

from dbsweep.engines.base import Engine

# Engines a test registered for the length of a `with registered(...)` block; dbsweep's own are below.
_for_tests: dict[str, Engine] = {}


# dbsweep's own engines, in the order lists show them: the name a study gives, and the Engine subclass in its
# package. Adding an engine: a package under engines/ with an Engine subclass, and one entry here.
_OWN = {
    "postgres": "dbsweep.engines.postgres:Postgres",
    "sqlite": "dbsweep.engines.sqlite:Sqlite",
    "mariadb": "dbsweep.engines.mariadb:Mariadb",
    "mysql": "dbsweep.engines.mysql:Mysql",
    "rocksdb": "dbsweep.engines.rocksdb:Rocksdb",
}


@cache
def _own(name: str) -> Engine:
    # Imported when first named: each engine imports its driver, which only a run that uses it should pay for.
    module, _, cls = _OWN[name].partition(":")
    engine = getattr(importlib.import_module(module), cls)()
    assert isinstance(engine, Engine) and engine.name == name, _OWN[name]
    return engine


def names() -> tuple[str, ...]:
    return (*_OWN, *_for_tests)


def engine_named(name: str) -> Engine:
    if name in _for_tests:
        return _for_tests[name]
    if name not in _OWN:
        raise KeyError(f"unknown engine {name!r}; have: {', '.join(names())}")
    return _own(name)


@contextmanager
def registered(engine: Engine) -> Iterator[Engine]:
    """For tests only: `engine` is one of the engines inside the block (a study may name it, `engine_named` finds
    it), and is gone after it. dbsweep's own engines are listed in `_OWN`, never registered here."""
    if engine.name in names():
        raise ValueError(f"an engine named {engine.name!r} is already registered")
    _for_tests[engine.name] = engine
    try:
        yield engine
    finally:
        del _for_tests[engine.name]
