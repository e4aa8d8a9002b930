"""The 24 tables derived from TPC-DS with their keys, and 22 queries over them. The generator makes data only,
so the queries were written here, from the specification's four query classes, each file saying its class
and its question: reporting (q01-q06), ad hoc (q07-q12), iterative (q13-q17) and data mining (q18-q22).
They use only what Postgres, MariaDB and SQLite all run (no ROLLUP, no FULL JOIN, no `||`, no standard
deviation; ratios are taken over decimals). Results made with these are "derived from TPC-DS": they are not
TPC-DS results."""

from __future__ import annotations

import re

from dbsweep.suites.analytics.sqltext import TYPED, Sql, in_dialect, key_statements, statements, text, without_comments

# The sales and returns facts are keyed by their item and ticket or order; inventory by its date, item and
# warehouse; every dimension by its surrogate key, its first column.
FACT_KEYS: dict[str, tuple[str, ...]] = {
    "store_sales": ("ss_item_sk", "ss_ticket_number"),
    "store_returns": ("sr_item_sk", "sr_ticket_number"),
    "catalog_sales": ("cs_item_sk", "cs_order_number"),
    "catalog_returns": ("cr_item_sk", "cr_order_number"),
    "web_sales": ("ws_item_sk", "ws_order_number"),
    "web_returns": ("wr_item_sk", "wr_order_number"),
    "inventory": ("inv_date_sk", "inv_item_sk", "inv_warehouse_sk"),
}
QUERIES = tuple(f"q{n:02d}" for n in range(1, 23))
_TABLE = re.compile(r"CREATE TABLE (\w+) \(\s*(\w+)")


def schema(sql: Sql = TYPED) -> list[str]:
    """The CREATE TABLE statements (the same for every engine)."""
    return statements(text("tpcds", "schema.sql"))


def tables() -> list[str]:
    """The tables in the order the schema creates them."""
    return [m[1] for m in _TABLE.finditer(text("tpcds", "schema.sql"))]


def primary_keys(sql: Sql = TYPED) -> list[str]:
    """The statements that add the primary keys; where a key cannot be added to a table, a unique index."""
    first = {m[1]: (m[2],) for m in _TABLE.finditer(text("tpcds", "schema.sql"))}
    return key_statements({t: FACT_KEYS.get(t, first[t]) for t in tables()}, sql)


def query(name: str, sql: Sql = TYPED) -> str:
    """Query `name` (q01 ... q22) in the SQL `sql` describes."""
    if name not in QUERIES:
        raise ValueError(f"no query {name!r}; have q01 to q22")
    return in_dialect(without_comments(text("tpcds", f"{name}.sql")), sql)


def query_class(name: str) -> str:
    """The class of query `name`, as its file says: reporting, ad hoc, iterative or data mining."""
    first = text("tpcds", f"{name}.sql").splitlines()[0]
    return first.removeprefix("-- ").split(":", 1)[0].lower()
