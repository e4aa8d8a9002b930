"""The 24 tables derived from TPC-DS, and their keys; the queries are still to come (the generator makes
data only, so they will be written from the specification's query classes). Results made with these are
"derived from TPC-DS": they are not TPC-DS results."""

from __future__ import annotations

import re

from dbsweep.suites.analytics.sqltext import TYPED, Sql, key_statements, statements, text

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
