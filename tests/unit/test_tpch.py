"""The tables and queries derived from TPC-H: every query runs on data the generator made (SQLite, at scale
0.01, in memory), and its form for an engine whose dates are text differs only in the dates and years."""

from __future__ import annotations

import itertools
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from dbsweep.suites.analytics import tpcds, tpch
from dbsweep.suites.analytics.sqltext import Sql

SCALE = 0.01
# SQLite keeps dates as text and cannot add a primary key to a table.
TEXT_DATES = Sql(typed_dates=False, adds_primary_key=False)


def _generator() -> str:
    exe = shutil.which("tpcgen-cli") or str(Path(sys.executable).parent / "tpcgen-cli")
    if not Path(exe).is_file():
        pytest.fail("tpcgen-cli is not installed: it is a dependency of the project (uv sync)")
    return exe


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> sqlite3.Connection:
    out = tmp_path_factory.mktemp("tpch")
    subprocess.run([_generator(), "tpch", "-s", str(SCALE), f"--output-dir={out}"], check=True, capture_output=True)
    con = sqlite3.connect(":memory:")
    for stmt in tpch.schema(TEXT_DATES):
        con.execute(stmt)
    for table in tpch.TABLES:
        rows = [line.rstrip("\n").rstrip("|").split("|") for line in (out / f"{table}.tbl").open()]
        marks = ", ".join("?" * len(rows[0]))
        con.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
    for stmt in tpch.primary_keys(TEXT_DATES):
        con.execute(stmt)
    return con


def test_every_query_runs_and_the_first_has_its_four_groups(db: sqlite3.Connection) -> None:
    answers = {name: db.execute(tpch.query(name, SCALE, TEXT_DATES)).fetchall() for name in tpch.QUERIES}
    # Q1 groups by return flag and line status: A-F, N-F, N-O and R-F, in that order, at any scale.
    assert [(r[0], r[1]) for r in answers["q01"]] == [("A", "F"), ("N", "F"), ("N", "O"), ("R", "F")]
    assert sum(r[-1] for r in answers["q01"]) > 0.9 * db.execute("SELECT count(*) FROM lineitem").fetchone()[0]
    # Q13 counts every customer once; Q4's five priorities; Q12's two ship modes.
    assert sum(r[1] for r in answers["q13"]) == db.execute("SELECT count(*) FROM customer").fetchone()[0]
    assert [r[0] for r in answers["q04"]] == ["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"]
    assert [r[0] for r in answers["q12"]] == ["MAIL", "SHIP"]
    # The years the queries read from the text dates.
    assert {r[2] for r in answers["q07"]} <= {1995, 1996} and answers["q07"]
    assert len(answers["q03"]) == 10 and len(answers["q10"]) == 20


def test_text_dates_differ_only_in_dates_and_years() -> None:
    for name in tpch.QUERIES:
        typed, text = tpch.query(name, 1), tpch.query(name, 1, TEXT_DATES)
        assert "extract(" not in text and "date '" not in text, name
        assert (text == typed) == ("date '" not in typed and "extract(" not in typed), name
    assert "* 0.0001000000" in tpch.query("q11", 1)
    assert "* 0.0100000000" in tpch.query("q11", 0.01)
    assert "cast(strftime('%Y', o_orderdate) as integer)" in tpch.query("q09", 1, TEXT_DATES)
    assert tpch.primary_keys()[-1] == "ALTER TABLE lineitem ADD PRIMARY KEY (l_orderkey, l_linenumber)"
    assert tpch.primary_keys(TEXT_DATES)[-1] == "CREATE UNIQUE INDEX lineitem_pk ON lineitem (l_orderkey, l_linenumber)"
    with pytest.raises(ValueError, match="no query 'q23'"):
        tpch.query("q23", 1)


def test_the_tpcds_tables_take_what_the_generator_makes_and_every_query_runs(tmp_path: Path) -> None:
    """Every table derived from TPC-DS has the columns of the generator's rows (scale 0.01), and takes them with
    its keys: the sales are unique by item and ticket or order, the dimensions by their surrogate key. Then each
    of the 22 queries runs."""
    subprocess.run(
        [_generator(), "tpcds", "-s", str(SCALE), f"--output-dir={tmp_path}"], check=True, capture_output=True
    )
    con = sqlite3.connect(":memory:")
    for stmt in tpcds.schema(TEXT_DATES):
        con.execute(stmt)
    assert len(tpcds.tables()) == 24
    for table in tpcds.tables():
        columns = len(con.execute(f"SELECT * FROM {table}").description)
        with (tmp_path / f"{table}.dat").open(encoding="utf-8", errors="replace") as f:
            # Enough rows for every dimension (date_dim's 73,049 days among them), not the 135 MB of the facts.
            lines = list(itertools.islice(f, 80_000))
        rows = [[v or None for v in line.rstrip("\n").removesuffix("|").split("|")] for line in lines]
        assert rows and {len(r) for r in rows} == {columns}, table
        con.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * columns)})", rows)
    for stmt in tpcds.primary_keys(TEXT_DATES):
        con.execute(stmt)
    assert "CREATE UNIQUE INDEX store_sales_pk ON store_sales (ss_item_sk, ss_ticket_number)" in tpcds.primary_keys(
        TEXT_DATES
    )
    assert "ALTER TABLE date_dim ADD PRIMARY KEY (d_date_sk)" in tpcds.primary_keys()
    # The years the data covers: the queries' date ranges must fall in them.
    years = con.execute("SELECT min(d_year), max(d_year) FROM date_dim").fetchone()
    assert years[0] <= 1998 and years[1] >= 2003
    # Every query runs; those over the whole of a fact table find rows even in its first 80,000.
    answers = {name: con.execute(tpcds.query(name, TEXT_DATES)).fetchall() for name in tpcds.QUERIES}
    for name in ("q01", "q03", "q11", "q19", "q21", "q22"):
        assert answers[name], name
    assert (
        sum(r[1] for r in answers["q19"])
        == con.execute(
            "SELECT count(distinct ss_customer_sk) FROM store_sales WHERE ss_customer_sk IS NOT NULL"
        ).fetchone()[0]
    )
    classes = [tpcds.query_class(n) for n in tpcds.QUERIES]
    assert {c: classes.count(c) for c in set(classes)} == {
        "reporting": 6,
        "ad hoc": 6,
        "iterative": 5,
        "data mining": 5,
    }
    assert "date '" in tpcds.query("q08") and "date '" not in tpcds.query("q08", TEXT_DATES)
