"""The tables and the 22 queries derived from TPC-H, per SQL family.

The queries are the specification's, each with the substitution parameters of its query validation (so every
run asks the same question), written in SQL that Postgres and MariaDB run as they are: date arithmetic is done
beforehand (`date '1998-09-02'` for 1998-12-01 less 90 days), the view of Q15 is a WITH clause (its approved
variant), and substrings use `substr`. SQLite keeps dates as text and has no `extract`, so its form drops the
`date` keyword and reads the year with `strftime`. Q11's fraction is 0.0001 / scale factor, filled in when the
query is asked for. Results made with these are "derived from TPC-H": they are not TPC-H results.
"""

from __future__ import annotations

import re
from importlib import resources
from typing import Literal

Family = Literal["postgres", "mysql", "sqlite"]
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

_DATE = re.compile(r"\bdate\s+'(\d{4}-\d{2}-\d{2})'", re.IGNORECASE)
_YEAR = re.compile(r"\bextract\s*\(\s*year\s+from\s+(\w+)\s*\)", re.IGNORECASE)


def _text(name: str) -> str:
    return (resources.files("dbsweep.suites.analytics") / "tpch" / name).read_text("utf-8")


def _statements(text: str) -> list[str]:
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


def schema(family: Family) -> list[str]:
    """The CREATE TABLE statements (the same in every family)."""
    return _statements(_text("schema.sql"))


def keys(family: Family) -> list[str]:
    """The statements that add the primary keys: SQLite cannot add one to a table, so it gets a unique index."""
    if family == "sqlite":
        return [f"CREATE UNIQUE INDEX {t}_pk ON {t} ({', '.join(cols)})" for t, cols in KEYS.items()]
    return [f"ALTER TABLE {t} ADD PRIMARY KEY ({', '.join(cols)})" for t, cols in KEYS.items()]


def query(name: str, family: Family, scale: float) -> str:
    """Query `name` (q01 ... q22) in `family`'s SQL, for scale factor `scale`."""
    if name not in QUERIES:
        raise ValueError(f"no query {name!r}; have q01 to q22")
    if scale <= 0:
        raise ValueError(f"a scale factor is positive, not {scale}")
    lines = [line for line in _text(f"{name}.sql").splitlines() if not line.lstrip().startswith("--")]
    sql = "\n".join(lines).strip().replace("{fraction}", f"{0.0001 / scale:.10f}")
    if family == "sqlite":
        sql = _YEAR.sub(r"cast(strftime('%Y', \1) as integer)", _DATE.sub(r"'\1'", sql))
    return sql
