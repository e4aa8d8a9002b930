"""What the analytic data sets share: an engine's SQL facts (`Sql`), statements read from a packaged file, and
the primary keys added after a load."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources


@dataclass(frozen=True)
class Sql:
    """What the tables and queries need to know of an engine's SQL."""

    typed_dates: bool = True  # a DATE type: `date 'YYYY-MM-DD'` literals and `extract(year from ...)`
    adds_primary_key: bool = True  # ALTER TABLE ... ADD PRIMARY KEY (else a unique index stands in)


TYPED = Sql()


def text(data_set: str, name: str) -> str:
    """A packaged SQL file of a data set (`tpch/q01.sql`)."""
    return (resources.files("dbsweep.suites.analytics") / data_set / name).read_text("utf-8")


def without_comments(sql: str) -> str:
    return "\n".join(line for line in sql.splitlines() if not line.lstrip().startswith("--")).strip()


def statements(sql: str) -> list[str]:
    """The statements of a file, split on `;` (the files hold no `;` in a literal)."""
    return [s.strip() for s in without_comments(sql).split(";") if s.strip()]


def key_statements(keys: Mapping[str, tuple[str, ...]], sql: Sql) -> list[str]:
    """The statements that add the primary keys; where a key cannot be added to a table, a unique index."""
    if not sql.adds_primary_key:
        return [f"CREATE UNIQUE INDEX {t}_pk ON {t} ({', '.join(cols)})" for t, cols in keys.items()]
    return [f"ALTER TABLE {t} ADD PRIMARY KEY ({', '.join(cols)})" for t, cols in keys.items()]


_DATE = re.compile(r"\bdate\s+'(\d{4}-\d{2}-\d{2})'", re.IGNORECASE)
_YEAR = re.compile(r"\bextract\s*\(\s*year\s+from\s+(\w+)\s*\)", re.IGNORECASE)


def in_dialect(query: str, sql: Sql) -> str:
    """A query written for typed dates, in the SQL `sql` describes: where dates are text, the literals lose the
    `date` keyword and the year is read with `strftime`."""
    if sql.typed_dates:
        return query
    return _YEAR.sub(r"cast(strftime('%Y', \1) as integer)", _DATE.sub(r"'\1'", query))
