"""dbsweep-load ibench against every engine: the load steps, the read-write steps' rate limit and queries, an
unsustainable rate, failed statements, and a step before its tables."""

from __future__ import annotations

import datetime
import itertools
import string
import uuid
from pathlib import Path
from typing import Any

import pytest
from hdrh.histogram import HdrHistogram

from dbsweep import loadclient
from dbsweep.engines.base import Instance
from dbsweep.errors import StepError
from dbsweep.loadclient import StepOutput, connection_to
from dbsweep.results.model import StepResult
from dbsweep.suites.ibench import SEQUENCE_CACHE

from .engines import Support

pytestmark = pytest.mark.server

ROWS = 3000  # per client in l.i0
BASE64 = set(string.ascii_letters + string.digits + "+/")

SECOND_FIELDS = {
    "type", "t", "phase", "ops", "errors", "max_us", "i_sec", "t_sec",
    "i_ips", "t_ips", "i_dps", "t_dps", "i_qps", "t_qps", "max_i_us", "max_d_us", "max_q_us",
    "t_ins", "t_del", "t_query", "retry_i", "retry_d", "retry_q", "err_i", "err_d", "err_q",
}  # fmt: skip
# The Insert Benchmark's own fields of a step's summary envelope (`detail`); the common ones are the StepResult's.
DETAIL_FIELDS = {
    "clients", "tables", "only1t", "seed", "deletes", "serial", "rows_per_client", "rows_per_commit",
    "rate_per_client", "target_rate", "insert_seconds", "index_seconds", "inserted_rows",
    "deleted_rows", "indexed_rows", "queries", "query_rows", "queries_by_kind", "ips", "dps", "qps",
    "achieved_rate", "sla_ok", "rate_percentiles", "latency", "maxop_s", "errors_by_op", "rows_after", "sql",
    "lock_waits", "lock_wait_s",
}  # fmt: skip
COMMON_FIELDS = set(StepResult.model_fields) - {"detail"}
BUCKETS = ["le_256us", "le_1ms", "le_4ms", "le_16ms", "le_64ms", "le_256ms", "le_1s", "le_4s", "le_16s", "gt_16s"]


def ibench(support: Support, server: Instance, home: Path, *args: str) -> StepOutput:
    out = loadclient.run(["ibench", *args], connection_to(server), home / f"{args[0]}-{uuid.uuid4().hex[:6]}.log")
    assert out.result.suite == "ibench" and out.result.step == args[0]
    fields = DETAIL_FIELDS | support.engine_detail
    assert set(out.result.detail) == fields, set(out.result.detail) ^ fields
    assert out.result.ended_early is None  # every connection lasted the whole step
    for line in out.seconds:
        assert set(line) == SECOND_FIELDS, line
    return out


def summary(support: Support, out: StepOutput) -> dict[str, Any]:
    """The step's fields beside the common ones (the flat summary the store keeps)."""
    s = out.result.flat()
    assert set(s) == COMMON_FIELDS | DETAIL_FIELDS | support.engine_detail
    return s


@pytest.fixture(scope="module")
def loaded(server: Instance, support: Support, home: Path) -> Instance:
    """Two indexed tables for the read-write steps."""
    ibench(support, server, home, "l.i0", "--clients", "2", "--rows", str(ROWS))
    ibench(support, server, home, "l.x", "--clients", "2")
    return server


def check_op(op: dict[str, Any], statements: int) -> None:
    """An operation's statement count agrees across its HDR histogram and its buckets."""
    assert op["statements"] == statements and op["errors"] == 0
    assert HdrHistogram.decode(op["hdr"]).get_total_count() == statements
    assert list(op["buckets"]) == BUCKETS and sum(op["buckets"].values()) == statements
    if statements:
        assert 0 < op["p50_us"] <= op["p99_us"] <= op["max_us"]


def counts(support: Support, server: Instance) -> dict[str, int]:
    return {t: support.query(server, f"SELECT count(*) FROM {t}")[0][0] for t in ("pi1", "pi2")}


def test_load_steps(server: Instance, support: Support, home: Path) -> None:
    out = ibench(support, server, home, "l.i0", "--clients", "2", "--rows", str(ROWS))
    s = summary(support, out)
    assert out.result.ops_name == "rows" and out.result.operations == 2 * ROWS
    assert (s["step"], s["inserted_rows"], s["deleted_rows"], s["error_count"]) == ("l.i0", 2 * ROWS, 0, 0)
    assert s["rows_after"] == {"pi1": ROWS, "pi2": ROWS} == counts(support, server)
    assert s["rows_per_commit"] == 100 and not s["deletes"]
    assert s["target_rate"] is None and s["sla_ok"] is None
    assert s["ips"] == pytest.approx(2 * ROWS / s["seconds"])
    check_op(s["latency"]["insert"], 2 * ROWS // 100)
    assert HdrHistogram.decode(s["histogram"]).get_total_count() == 2 * ROWS // 100
    assert s["sql"]["alter_sequence"] == support.ibench_sql["alter_sequence"]
    assert support.indexes(server, "pi1") == {support.primary_key("pi1"): ("transactionid",)}
    # The ids one connection takes at once: the suite's sequence cache, or one by one without a cache.
    assert support.id_cache(server, "pi1") == (SEQUENCE_CACHE if support.has_id_cache else 1)
    assert support.column_types(server, "pi2") == support.ibench_types
    # Loaded in primary-key order by one session: ids 1..ROWS.
    assert support.query(server, "SELECT min(transactionid), max(transactionid) FROM pi1") == [(1, ROWS)]
    now = datetime.datetime.now()
    rows = support.query(server, "SELECT dateandtime, cashregisterid, customerid, productid, price, data FROM pi2")
    for when, cash, cust, prod, price, data in rows:
        assert abs((when - now).total_seconds()) < 300
        assert 0 <= cash < 1000 and 0 <= cust < 100_000 and 0 <= prod < 10_000 and 0 <= price <= 500
        plain = len(data) - len(data) * 3 // 8
        assert 10 <= len(data) <= 20 and data[:plain] == "a" * plain and set(data[plain:]) <= BASE64
    assert {len(r[5]) for r in rows} == set(range(10, 21))

    out = ibench(support, server, home, "l.x", "--clients", "2")
    s = summary(support, out)
    assert out.result.ops_name == "indexed rows"
    assert (s["inserted_rows"], s["indexed_rows"], s["error_count"]) == (200, 2 * ROWS + 200, 0)
    assert s["index_seconds"] > 0 and s["ips"] == pytest.approx(s["indexed_rows"] / s["seconds"])
    made = s["sql"]["create_indexes"]
    assert len(made) == len(support.ibench_index_sql)
    assert all(sql.startswith(start) for sql, start in zip(made, support.ibench_index_sql, strict=True)), made
    for t in ("pi1", "pi2"):
        assert support.indexes(server, t) == {
            support.primary_key(t): ("transactionid",),
            f"{t}_marketsegment": ("productid", "customerid", "price"),
            f"{t}_registersegment": ("cashregisterid", "customerid", "price"),
            f"{t}_pdc": ("price", "dateandtime", "customerid"),
        }
    before = counts(support, server)
    assert before == s["rows_after"] == {"pi1": ROWS + 100, "pi2": ROWS + 100}

    # l.i1 and l.i2 delete as many rows as they insert: the tables keep their size.
    for step, rows_n, per_commit in (("l.i1", 2000, 50), ("l.i2", 500, 5)):
        s = summary(support, ibench(support, server, home, step, "--clients", "2", "--rows", str(rows_n)))
        assert s["rows_per_commit"] == per_commit and s["deletes"]
        assert s["inserted_rows"] == s["deleted_rows"] == 2 * rows_n
        assert s["rows_after"] == before == counts(support, server), step
        check_op(s["latency"]["insert"], 2 * rows_n // per_commit)
        check_op(s["latency"]["delete"], 2 * rows_n // per_commit)
        assert s["error_count"] == 0 and s["errors"] == {}
        assert s["sql"]["delete"].startswith(support.ibench_sql["delete"])


@pytest.mark.parametrize("step", ["qr100", "qp100"])
def test_read_write_step_meets_a_sustainable_rate(loaded: Instance, support: Support, home: Path, step: str) -> None:
    before = counts(support, loaded)
    out = ibench(support, loaded, home, step, "--clients", "2", "--seconds", "3")
    s = summary(support, out)
    assert out.result.ops_name == "queries"
    assert (s["rows_per_client"], s["rows_per_commit"], s["rate_per_client"], s["target_rate"]) == (300, 50, 100, 200)
    assert s["inserted_rows"] == s["deleted_rows"] == 600 and s["error_count"] == 0
    # Paced: never ahead of the target. How near it comes depends on the machine's load (194/s beside two
    # valgrind counts, less beside a build), so the SLA's verdict is checked against the rate, not assumed.
    assert s["achieved_rate"] <= 200 * 1.02
    assert s["sla_ok"] is (s["achieved_rate"] >= 0.95 * 200)
    assert s["seconds"] > 2.9
    assert counts(support, loaded) == before
    # Smooth pacing: no second carries more than its 200 rows plus one batch per client.
    assert out.seconds and all(line["i_ips"] * line["i_sec"] <= 300 for line in out.seconds)
    assert out.seconds[-1]["t_ins"] == 600 and out.seconds[-1]["t_query"] == s["queries"]
    assert s["queries"] > 30 and s["qps"] == pytest.approx(s["queries"] / s["seconds"])
    check_op(s["latency"]["query"], s["queries"])
    assert s["latency_us"]["max"] == s["latency"]["query"]["max_us"]
    kinds = s["queries_by_kind"]
    assert sum(k["queries"] for k in kinds.values()) == s["queries"]
    assert sum(k["rows"] for k in kinds.values()) == s["query_rows"]
    if step == "qr100":
        assert set(kinds) == {"pdc", "marketsegment", "registersegment"}
        # Almost every range query finds its 10 rows (fewer only next to the top of the key range).
        for k in kinds.values():
            assert k["queries"] > 0 and 9.5 * k["queries"] <= k["rows"] <= 10 * k["queries"]
        # The client's SQL, run here: 10 rows, in the covering index's order, through that index.
        for sql, kind in zip(s["sql"]["range_queries"], ["pdc", "marketsegment", "registersegment"], strict=True):
            rows = support.client_sql(loaded, sql, (100,))
            assert len(rows) == 10 and rows == sorted(rows)
            assert rows[0][0] >= 100
            plan = support.plan(loaded, sql, (100,))
            assert f"pi1_{kind}" in plan, plan
    else:
        assert set(kinds) == {"point"} and kinds["point"]["queries"] == s["queries"]
        # At most 10 rows each; ids fall in sequence-cache gaps too, so fewer is normal.
        assert 0 < kinds["point"]["rows"] <= 10 * s["queries"]
        ids = [r[0] for r in support.query(loaded, "SELECT transactionid FROM pi1 ORDER BY transactionid LIMIT 10")]
        got = support.client_sql(loaded, s["sql"]["point_query"], ids)
        assert sorted(r[0] for r in got) == ids and all(len(r) == 3 for r in got)


def test_an_unsustainable_rate_misses_the_sla(loaded: Instance, support: Support, home: Path) -> None:
    # 20,000 rows at a target of 1,000,000 rows/s: the step takes far longer than 20 ms, but finishes.
    s = summary(
        support, ibench(support, loaded, home, "qp100", "--clients", "1", "--rate", "1000000", "--rows", "20000")
    )
    assert s["target_rate"] == 1_000_000 and s["sla_ok"] is False
    assert s["achieved_rate"] < 0.95 * 1_000_000
    # Pushed back, never dropped: every row was inserted and deleted.
    assert s["inserted_rows"] == s["deleted_rows"] == 20000 and s["error_count"] == 0
    assert s["queries"] > 0 and s["seconds"] < 30


def test_failed_statements_are_counted_by_kind(loaded: Instance, support: Support, home: Path) -> None:
    # A constraint that almost every 50-row batch breaks: each failed INSERT is counted, not retried.
    support.add_check(loaded, "pi1", "cheap", "price < 450")
    try:
        before = counts(support, loaded)
        s = summary(support, ibench(support, loaded, home, "l.i1", "--clients", "2", "--rows", "500", "--no-delete"))
    finally:
        support.drop_check(loaded, "pi1", "cheap")
    kind, words = support.check_violation
    failed = s["errors"].get(kind, 0)
    assert failed > 0 and s["error_count"] == failed == s["errors_by_op"]["insert"]
    assert s["latency"]["insert"]["statements"] + failed == 2 * 500 // 50
    assert s["inserted_rows"] == 50 * s["latency"]["insert"]["statements"]
    assert s["rows_after"]["pi1"] == before["pi1"] + s["inserted_rows"] - 500
    assert words in s["error_samples"][0]


def test_serial_deletes_run_after_their_inserts(loaded: Instance, support: Support, home: Path) -> None:
    """--serial (the instruction pass's l.i1 and l.i2): the inserter runs each batch's delete right after it, so
    no two statements of the client overlap and the order is fixed."""
    before = counts(support, loaded)
    top = support.query(loaded, "SELECT max(transactionid) FROM pi1")[0][0]
    s = summary(support, ibench(support, loaded, home, "l.i1", "--clients", "1", "--rows", "500", "--serial"))
    assert s["serial"] and s["deletes"]
    assert s["inserted_rows"] == s["deleted_rows"] == 500 and s["error_count"] == 0
    check_op(s["latency"]["delete"], 500 // 50)
    assert s["rows_after"]["pi1"] == before["pi1"] == counts(support, loaded)["pi1"]
    assert s["lock_waits"] == 0  # a delete beside an insert would wait for SQLite's write lock
    if support.name == "postgres":
        # Each insert, then its delete, each its own transaction: the inserts' transaction ids step by 2.
        new = f"SELECT DISTINCT xmin::text::bigint FROM pi1 WHERE transactionid > {top} ORDER BY 1"
        xids = support.query(loaded, new)
        steps = {b[0] - a[0] for a, b in itertools.pairwise(xids)}
        assert len(xids) == 10 and steps == {2}, xids
    with pytest.raises(StepError, match=r"--serial orders each insert and its delete, and l.i0 runs no deletes"):
        loadclient.run(["ibench", "l.i0", "--rows", "10", "--serial"], connection_to(loaded), home / "s.log")


def test_a_step_before_its_tables_is_a_clear_error(loaded: Instance, home: Path) -> None:
    with pytest.raises(StepError, match=r"l.i1 needs tables pi1..pi5 but only 2 of them exist: the l.i0 step"):
        loadclient.run(["ibench", "l.i1", "--clients", "5", "--rows", "10"], connection_to(loaded), home / "e.log")
