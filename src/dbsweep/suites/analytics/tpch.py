"""The tables and the 22 queries derived from TPC-H, in the SQL an engine speaks (`Sql`: its facts, not its name).

The queries are the specification's, each with the substitution parameters of its query validation (so every
run asks the same question), written in SQL that an engine with a DATE type runs as it is: date arithmetic is
done beforehand (`date '1998-09-02'` for 1998-12-01 less 90 days), the view of Q15 is a WITH clause (its
approved variant), and substrings use `substr`. An engine that keeps dates as text (no DATE type, no
`extract`) gets the literals without the `date` keyword and the year read with `strftime`. Q11's fraction is
0.0001 / scale factor, filled in when the query is asked for. Results made with these are "derived from
TPC-H": they are not TPC-H results.
"""

from __future__ import annotations

from dbsweep.suites.analytics.sqltext import (
    TYPED,
    Sql,
    in_dialect,
    key_statements,
    statements,
    text,
    without_comments,
)

QUERIES = tuple(f"q{n:02d}" for n in range(1, 23))
TABLES = ("region", "nation", "part", "supplier", "partsupp", "customer", "orders", "lineitem")
# The primary keys (specification 1.4.2), added after the load: the load's phases are timed apart.
KEYS: dict[str, tuple[str, ...]] = {
    "region": ("r_regionkey",),
    "nation": ("n_nationkey",),
    "part": ("p_partkey",),
    "supplier": ("s_suppkey",),
    "partsupp": ("ps_partkey", "ps_suppkey"),
    "customer": ("c_custkey",),
    "orders": ("o_orderkey",),
    "lineitem": ("l_orderkey", "l_linenumber"),
}


def schema(sql: Sql = TYPED) -> list[str]:
    """The CREATE TABLE statements (the same for every engine)."""
    return statements(text("tpch", "schema.sql"))


def primary_keys(sql: Sql = TYPED) -> list[str]:
    """The statements that add the primary keys; where a key cannot be added to a table, a unique index."""
    return key_statements(KEYS, sql)


def query(name: str, scale: float, sql: Sql = TYPED) -> str:
    """Query `name` (q01 ... q22) for scale factor `scale`, in the SQL `sql` describes."""
    if name not in QUERIES:
        raise ValueError(f"no query {name!r}; have q01 to q22")
    if scale <= 0:
        raise ValueError(f"a scale factor is positive, not {scale}")
    body = without_comments(text("tpch", f"{name}.sql")).replace("{fraction}", f"{0.0001 / scale:.10f}")
    return in_dialect(body, sql)
