"""Which engines there are: a study's `engine` picks one."""

from __future__ import annotations

from functools import cache

from dbsweep.engines.base import Engine


@cache
def engines() -> dict[str, Engine]:
    # Imported here: each engine imports its driver, which only a run that uses it should pay for.
    from dbsweep.engines.mariadb import Mariadb
    from dbsweep.engines.postgres import Postgres
    from dbsweep.engines.rocksdb import Rocksdb
    from dbsweep.engines.sqlite import Sqlite

    # Adding an engine: a package under engines/ with an Engine subclass, and one entry here and in names().
    return {e.name: e for e in (Postgres(), Sqlite(), Mariadb(), Rocksdb())}


def names() -> tuple[str, ...]:
    return ("postgres", "sqlite", "mariadb", "rocksdb")


def engine_named(name: str) -> Engine:
    try:
        return engines()[name]
    except KeyError:
        raise KeyError(f"unknown engine {name!r}; have: {', '.join(names())}") from None
