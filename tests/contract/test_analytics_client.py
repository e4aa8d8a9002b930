"""dbsweep-load analytics against every engine, at scale 0.01: the data sets derived from TPC-H and TPC-DS streamed
from the generator into the engine's bulk path, each load phase timed, then every one of their 44 queries run
once; a query past its timeout is recorded as timed out and its step fails the integrity check, saying so."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from dbsweep import loadclient
from dbsweep.engines.base import Instance
from dbsweep.loadclient import StepOutput, connection_to
from dbsweep.measure import integrity
from dbsweep.suites.analytics import LOAD, QUERIES, Analytics, AnalyticsSettings

pytestmark = pytest.mark.server

SCALE = 0.01
# The default run loads each data set on some engines and each engine with some data set (every query's form per
# engine is checked by the load client's own tests); DBSWEEP_SLOW_TESTS=1 runs every pair. MariaDB's TPC-DS load
# alone takes half a minute.
SLOW = os.environ.get("DBSWEEP_SLOW_TESTS") == "1"
DEFAULT_PAIRS = {("postgres", "tpcds"), ("mariadb", "tpch"), ("sqlite", "tpch"), ("sqlite", "tpcds")}
# Rows some TPC-H queries return at any scale: Q1's four flag/status groups, Q4's five priorities, Q12's two ship
# modes, Q3's and Q10's LIMIT.
TPCH_ROWS = {"q01": 4, "q04": 5, "q12": 2, "q03": 10, "q10": 20}
# Runs long on every engine: a billion rows of a join with no condition (1,000 rows each side, within MariaDB's
# limit on a recursion's iterations).
SLOW_QUERY = (
    "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 1000) SELECT count(*) FROM c a, c b, c d"
)


def run(server: Instance, home: Path, command: list[str]) -> StepOutput:
    return loadclient.run(command, connection_to(server), home / f"{command[1]}-{uuid.uuid4().hex[:6]}.log")


@pytest.mark.parametrize("data", ["tpch", "tpcds"])
def test_a_data_set_loads_in_timed_phases_and_every_query_runs(
    engine_name: str, server: Instance, home: Path, data: str
) -> None:
    if not SLOW and (engine_name, data) not in DEFAULT_PAIRS:
        pytest.skip(f"{data} on {engine_name}: DBSWEEP_SLOW_TESTS=1 (the default run loads each set and each engine)")
    suite = Analytics(AnalyticsSettings(data=data, scale=SCALE, query_repeats=1, warmup_runs=0))  # type: ignore[arg-type]
    load = run(server, home, suite.command(LOAD, 1)).result.flat()
    assert load["step"] == LOAD and load["ops_name"] == "rows" and load["ended_early"] is None
    tables = {t["table"]: int(t["rows"]) for t in load["tables"]}
    assert list(tables) == suite.tables() and all(n > 0 for n in tables.values()), tables
    assert load["operations"] == sum(tables.values())
    assert set(load["phases"]) == {"load_s", "keys_s", "analyze_s"} and all(v >= 0 for v in load["phases"].values())
    assert load["generator"]["version"].startswith("tpcgen-cli")
    assert integrity.check(suite.expectation(LOAD), load, []) is None
    rows: dict[str, int] = {}
    for q in QUERIES:
        s = run(server, home, suite.command(q, 1)).result.flat()
        assert s["failed"] is None and s["events"] == 1 and len(s["runs_s"]) == 1, (q, s.get("failed"))
        assert integrity.check(suite.expectation(q), s, []) is None, q
        rows[q] = int(s["rows"])
    if data == "tpch":
        assert {q: rows[q] for q in TPCH_ROWS} == TPCH_ROWS
    # Nearly every query finds something at this scale (TPC-DS q10 asks for more than 0.01 holds).
    assert sum(n > 0 for n in rows.values()) >= 20, rows


def test_a_query_past_its_timeout_is_recorded_as_timed_out(server: Instance, home: Path, tmp_path: Path) -> None:
    (tmp_path / "tpch").mkdir()
    (tmp_path / "tpch" / "q01.sql").write_text(f"-- a query that runs long\n{SLOW_QUERY}\n")
    command = ["analytics", "query", "--set", "tpch", "--dir", str(tmp_path), "--scale", "1", "--query", "q01"]
    s = run(server, home, [*command, "--repeats", "2", "--warmup-runs", "0", "--timeout-s", "1"]).result.flat()
    assert s["failed"] == "timeout after 1 s", {k: s.get(k) for k in ("failed", "errors", "events", "runs_s")}
    assert s["errors"] == {"timeout": 1} and s["events"] == 0
    suite = Analytics(AnalyticsSettings())
    why = integrity.check(suite.expectation("q01"), s, [])
    assert why is not None and "1 of 1 events failed" in why, why
