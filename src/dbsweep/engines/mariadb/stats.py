"""The server's own statistics, snapshotted after every step and kept with the cell (the method's `SHOW GLOBAL
STATUS` and `SHOW ENGINE ... STATUS` after each step, as counters).

* `global_status`: every numeric `SHOW GLOBAL STATUS` counter; MyRocks's are among them (`Rocksdb_*`) when
  its plugin is loaded;
* `innodb_metrics`: the InnoDB counters that are enabled (INFORMATION_SCHEMA.INNODB_METRICS);
* `rocksdb_cfstats`: per column family, MyRocks's pending flushes and compactions and its memtables' sizes,
  when the plugin is loaded (`SHOW ENGINE ROCKSDB STATUS` is pages of text and is left out);
* `tables`: the benchmark database's tables as INFORMATION_SCHEMA.TABLES reports them (rows, sizes).

Counters are cumulative; a report diffs consecutive steps when it needs rates.
"""

from __future__ import annotations

from typing import Any

from pymysql.connections import Connection

_ROCKSDB_CFSTATS = "SELECT CF_NAME, STAT_TYPE, VALUE FROM INFORMATION_SCHEMA.ROCKSDB_CFSTATS"
_TABLES = (
    "SELECT TABLE_NAME, ENGINE, TABLE_ROWS, DATA_LENGTH, INDEX_LENGTH, DATA_FREE FROM INFORMATION_SCHEMA.TABLES "
    "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_TYPE = 'BASE TABLE' ORDER BY TABLE_NAME"
)


def number(value: Any) -> int | float | None:
    """A status value as a number; None for text (ON, a file name, a version)."""
    if isinstance(value, int | float):
        return value
    text = value.decode() if isinstance(value, bytes) else str(value)
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return None


def global_status(conn: Connection[Any]) -> dict[str, int | float]:
    """Every numeric global status counter, by name."""
    with conn.cursor() as cur:
        cur.execute("SHOW GLOBAL STATUS")
        rows = cur.fetchall()
    out: dict[str, int | float] = {}
    for name, value in rows:
        n = number(value)
        if n is not None:
            out[str(name)] = n
    return out


def has_rocksdb(conn: Connection[Any]) -> bool:
    with conn.cursor() as cur:
        cur.execute(
            "SELECT 1 FROM INFORMATION_SCHEMA.ENGINES WHERE ENGINE = 'ROCKSDB' AND SUPPORT IN ('YES', 'DEFAULT')"
        )
        return cur.fetchone() is not None


# Which of INNODB_METRICS's counters are on: MariaDB has a column ENABLED, MySQL a column STATUS.
MARIADB_METRICS = "ENABLED = 1"
MYSQL_METRICS = "STATUS = 'enabled'"


def snapshot(conn: Connection[Any], enabled_metrics: str = MARIADB_METRICS) -> dict[str, Any]:
    out: dict[str, Any] = {"global_status": global_status(conn)}
    with conn.cursor() as cur:
        # One of the two constants above, never text from elsewhere.
        cur.execute(f"SELECT NAME, COUNT FROM INFORMATION_SCHEMA.INNODB_METRICS WHERE {enabled_metrics} ORDER BY NAME")
        out["innodb_metrics"] = {str(name): int(count) for name, count in cur.fetchall()}
        if has_rocksdb(conn):
            cur.execute(_ROCKSDB_CFSTATS)
            cfstats: dict[str, dict[str, int | float | None]] = {}
            for cf, stat, value in cur.fetchall():
                cfstats.setdefault(str(cf), {})[str(stat)] = number(value)
            out["rocksdb_cfstats"] = cfstats
        cur.execute(_TABLES)
        cols = ["table", "engine", "rows", "data_bytes", "index_bytes", "free_bytes"]
        out["tables"] = [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]
    return out
