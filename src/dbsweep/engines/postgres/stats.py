"""The server's own statistics, snapshotted after every step and kept with the cell.

Views that a version lacks (pg_stat_io before 16, pg_stat_checkpointer before 17) are skipped, so one
list serves every version. Counters are cumulative; a report diffs consecutive steps when it needs rates.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.rows import dict_row

# view -> query; `{db}` views are restricted to the benchmark's database and tables.
VIEWS: dict[str, str] = {
    "pg_stat_database": "SELECT * FROM pg_stat_database WHERE datname = current_database()",
    "pg_stat_bgwriter": "SELECT * FROM pg_stat_bgwriter",
    "pg_stat_checkpointer": "SELECT * FROM pg_stat_checkpointer",
    "pg_stat_wal": "SELECT * FROM pg_stat_wal",
    "pg_stat_io": "SELECT * FROM pg_stat_io WHERE reads > 0 OR writes > 0 OR extends > 0 OR hits > 0",
    "pg_stat_user_tables": "SELECT * FROM pg_stat_user_tables",
    "pg_statio_user_tables": "SELECT * FROM pg_statio_user_tables",
    "pg_stat_user_indexes": "SELECT * FROM pg_stat_user_indexes",
    "sizes": "SELECT pg_database_size(current_database()) AS database_bytes, "
    "(SELECT coalesce(sum(pg_total_relation_size(relid)), 0) FROM pg_stat_user_tables) AS tables_bytes",
}


def snapshot(conn: psycopg.Connection[Any]) -> dict[str, list[dict[str, Any]]]:
    """Every view this server has, as lists of rows; values the JSON encoder can't take become strings."""
    out: dict[str, list[dict[str, Any]]] = {}
    present = {
        name
        for (name,) in conn.execute(
            "SELECT viewname FROM pg_views WHERE schemaname = 'pg_catalog' AND viewname = ANY(%s)", (list(VIEWS),)
        ).fetchall()
    }
    with conn.cursor(row_factory=dict_row) as cur:
        for view, query in VIEWS.items():
            if view != "sizes" and view not in present:
                continue
            rows = cur.execute(query.encode()).fetchall()  # constant text, never built from input
            out[view] = [{k: _plain(v) for k, v in row.items()} for row in rows]
    return out


def _plain(v: Any) -> Any:
    if v is None or isinstance(v, bool | int | float | str):
        return v
    return str(v)
