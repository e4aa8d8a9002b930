"""dbsweep-load ibench against Debian's Postgres: the load steps, the read-write steps' rate limit
and queries, an unsustainable rate, and option errors."""

from __future__ import annotations

import datetime
import json
import string
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hdrh.histogram import HdrHistogram

from dbsweep import loadclient, paths
from dbsweep.engines import postgres
from dbsweep.errors import StepError
from dbsweep.loadclient import StepOutput, connection_to

from .conftest import system_server

ROWS = 3000  # per client in l.i0
BASE64 = set(string.ascii_letters + string.digits + "+/")

SECOND_FIELDS = {
    "type", "t", "phase", "ops", "errors", "max_us", "i_sec", "t_sec",
    "i_ips", "t_ips", "i_dps", "t_dps", "i_qps", "t_qps", "max_i_us", "max_d_us", "max_q_us",
    "t_ins", "t_del", "t_query", "retry_i", "retry_d", "retry_q", "err_i", "err_d", "err_q",
}  # fmt: skip
SUMMARY_FIELDS = {
    "type", "step", "clients", "tables", "only1t", "seed", "deletes", "rows_per_client", "rows_per_commit",
    "rate_per_client", "target_rate", "seconds", "insert_seconds", "index_seconds", "inserted_rows",
    "deleted_rows", "indexed_rows", "queries", "query_rows", "queries_by_kind", "ips", "dps", "qps",
    "achieved_rate", "sla_ok", "rate_percentiles", "latency", "latency_us", "histogram", "maxop_s", "errors",
    "error_count", "error_samples", "errors_by_op", "client_cpu_user_s", "client_cpu_sys_s",
    "client_max_rss_kb", "rows_after", "sql", "ended_early",
}  # fmt: skip
BUCKETS = ["le_256us", "le_1ms", "le_4ms", "le_16ms", "le_64ms", "le_256ms", "le_1s", "le_4s", "le_16s", "gt_16s"]


@pytest.fixture(scope="module")
def home(_test_root: Path) -> Path:
    d = _test_root / f"ibench-{uuid.uuid4().hex[:8]}"
    d.mkdir(mode=0o755)
    return d


@pytest.fixture(scope="module")
def server(home: Path) -> Iterator[postgres.Server]:
    with system_server(home / "srv", "shared_buffers=128MB\n") as s:
        yield s


def ibench(server: postgres.Server, home: Path, *args: str) -> StepOutput:
    out = loadclient.run(["ibench", *args], connection_to(server), home / f"{args[0]}-{uuid.uuid4().hex[:6]}.log")
    assert set(out.summary) == SUMMARY_FIELDS
    assert out.summary["ended_early"] is None  # every connection lasted the whole step
    for line in out.seconds:
        assert set(line) == SECOND_FIELDS, line
    return out


@pytest.fixture(scope="module")
def loaded(server: postgres.Server, home: Path) -> postgres.Server:
    """Two indexed tables for the read-write steps."""
    ibench(server, home, "l.i0", "--clients", "2", "--rows", str(ROWS))
    ibench(server, home, "l.x", "--clients", "2")
    return server


def check_op(op: dict[str, Any], statements: int) -> None:
    """An operation's statement count agrees across its HDR histogram and its buckets."""
    assert op["statements"] == statements and op["errors"] == 0
    assert HdrHistogram.decode(op["hdr"]).get_total_count() == statements
    assert list(op["buckets"]) == BUCKETS and sum(op["buckets"].values()) == statements
    if statements:
        assert 0 < op["p50_us"] <= op["p99_us"] <= op["max_us"]


def counts(server: postgres.Server) -> dict[str, int]:
    with server.connect() as c:
        return {t: c.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("pi1", "pi2")}


def test_load_steps(server: postgres.Server, home: Path) -> None:
    s = ibench(server, home, "l.i0", "--clients", "2", "--rows", str(ROWS)).summary
    assert (s["step"], s["inserted_rows"], s["deleted_rows"], s["error_count"]) == ("l.i0", 2 * ROWS, 0, 0)
    assert s["rows_after"] == {"pi1": ROWS, "pi2": ROWS} == counts(server)
    assert s["rows_per_commit"] == 100 and not s["deletes"]
    assert s["target_rate"] is None and s["sla_ok"] is None
    assert s["ips"] == pytest.approx(2 * ROWS / s["seconds"])
    check_op(s["latency"]["insert"], 2 * ROWS // 100)
    assert HdrHistogram.decode(s["histogram"]).get_total_count() == 2 * ROWS // 100
    assert s["sql"]["alter_sequence"] == "ALTER SEQUENCE pi1_transactionid_seq CACHE 1000"
    with server.connect() as c:
        idx = {r[0] for r in c.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'pi1'")}
        assert idx == {"pi1_pkey"}
        seq = "SELECT seqcache FROM pg_sequence WHERE seqrelid = 'pi1_transactionid_seq'::regclass"
        assert c.execute(seq).fetchone() == (1000,)
        types = dict(
            c.execute(
                "SELECT attname::text, format_type(atttypid, atttypmod) FROM pg_attribute "
                "WHERE attrelid = 'pi2'::regclass AND attnum > 0 AND NOT attisdropped"
            ).fetchall()
        )
        assert types == {
            "transactionid": "bigint",
            "dateandtime": "timestamp without time zone",
            "cashregisterid": "integer",
            "customerid": "integer",
            "productid": "integer",
            "price": "integer",
            "data": "character varying(4000)",
        }
        # Loaded in primary-key order by one session: ids 1..ROWS.
        assert c.execute("SELECT min(transactionid), max(transactionid) FROM pi1").fetchone() == (1, ROWS)
        now = datetime.datetime.now()
        rows = c.execute("SELECT dateandtime, cashregisterid, customerid, productid, price, data FROM pi2").fetchall()
        for when, cash, cust, prod, price, data in rows:
            assert abs((when - now).total_seconds()) < 300
            assert 0 <= cash < 1000 and 0 <= cust < 100_000 and 0 <= prod < 10_000 and 0 <= price <= 500
            plain = len(data) - len(data) * 3 // 8
            assert 10 <= len(data) <= 20 and data[:plain] == "a" * plain and set(data[plain:]) <= BASE64
        assert {len(r[5]) for r in rows} == set(range(10, 21))

    s = ibench(server, home, "l.x", "--clients", "2").summary
    assert (s["inserted_rows"], s["indexed_rows"], s["error_count"]) == (200, 2 * ROWS + 200, 0)
    assert s["index_seconds"] > 0 and s["ips"] == pytest.approx(s["indexed_rows"] / s["seconds"])
    assert len(s["sql"]["create_indexes"]) == 3
    with server.connect() as c:
        for t in ("pi1", "pi2"):
            defs = dict(c.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s", (t,)).fetchall())
            assert set(defs) == {f"{t}_pkey", f"{t}_marketsegment", f"{t}_registersegment", f"{t}_pdc"}
            assert defs[f"{t}_marketsegment"].endswith("(productid, customerid, price)")
            assert defs[f"{t}_registersegment"].endswith("(cashregisterid, customerid, price)")
            assert defs[f"{t}_pdc"].endswith("(price, dateandtime, customerid)")
    before = counts(server)
    assert before == s["rows_after"] == {"pi1": ROWS + 100, "pi2": ROWS + 100}

    # l.i1 and l.i2 delete as many rows as they insert: the tables keep their size.
    for step, rows, per_commit in (("l.i1", 2000, 50), ("l.i2", 500, 5)):
        s = ibench(server, home, step, "--clients", "2", "--rows", str(rows)).summary
        assert s["rows_per_commit"] == per_commit and s["deletes"]
        assert s["inserted_rows"] == s["deleted_rows"] == 2 * rows
        assert s["rows_after"] == before == counts(server), step
        check_op(s["latency"]["insert"], 2 * rows // per_commit)
        check_op(s["latency"]["delete"], 2 * rows // per_commit)
        assert s["error_count"] == 0 and s["errors"] == {}
        assert s["sql"]["delete"].startswith("DELETE FROM pi1 WHERE transactionid IN (SELECT transactionid FROM pi1")


@pytest.mark.parametrize("step", ["qr100", "qp100"])
def test_read_write_step_meets_a_sustainable_rate(loaded: postgres.Server, home: Path, step: str) -> None:
    before = counts(loaded)
    out = ibench(loaded, home, step, "--clients", "2", "--seconds", "3")
    s = out.summary
    assert (s["rows_per_client"], s["rows_per_commit"], s["rate_per_client"], s["target_rate"]) == (300, 50, 100, 200)
    assert s["inserted_rows"] == s["deleted_rows"] == 600 and s["error_count"] == 0
    assert s["achieved_rate"] == pytest.approx(200, rel=0.02)
    assert s["sla_ok"] is True
    assert 2.9 < s["seconds"] < 4.0
    assert counts(loaded) == before
    # Smooth pacing: no second carries more than its 200 rows plus one batch per client.
    assert out.seconds and all(line["i_ips"] * line["i_sec"] <= 300 for line in out.seconds)
    assert out.seconds[-1]["t_ins"] == 600 and out.seconds[-1]["t_query"] == s["queries"]
    assert s["queries"] > 30 and s["qps"] == pytest.approx(s["queries"] / s["seconds"])
    check_op(s["latency"]["query"], s["queries"])
    assert s["latency_us"]["max"] == s["latency"]["query"]["max_us"]
    kinds = s["queries_by_kind"]
    assert sum(k["queries"] for k in kinds.values()) == s["queries"]
    assert sum(k["rows"] for k in kinds.values()) == s["query_rows"]
    with loaded.connect() as c:
        if step == "qr100":
            assert set(kinds) == {"pdc", "marketsegment", "registersegment"}
            # Almost every range query finds its 10 rows (fewer only next to the top of the key range).
            for k in kinds.values():
                assert k["queries"] > 0 and 9.5 * k["queries"] <= k["rows"] <= 10 * k["queries"]
            # The client's SQL, run here: 10 rows, in the covering index's order, through that index.
            for sql, kind in zip(s["sql"]["range_queries"], ["pdc", "marketsegment", "registersegment"], strict=True):
                rows = c.execute(sql.replace("$1", "%s"), (100,)).fetchall()
                assert len(rows) == 10 and rows == sorted(rows)
                assert rows[0][0] >= 100
                plan = "\n".join(r[0] for r in c.execute("EXPLAIN " + sql.replace("$1", "100")))
                assert f"pi1_{kind}" in plan, plan
        else:
            assert set(kinds) == {"point"} and kinds["point"]["queries"] == s["queries"]
            # At most 10 rows each; ids fall in sequence-cache gaps too, so fewer is normal.
            assert 0 < kinds["point"]["rows"] <= 10 * s["queries"]
            ids = [r[0] for r in c.execute("SELECT transactionid FROM pi1 ORDER BY transactionid LIMIT 10")]
            sql = s["sql"]["point_query"]
            for i in range(10, 0, -1):
                sql = sql.replace(f"${i}", "%s")
            got = c.execute(sql, ids).fetchall()
            assert sorted(r[0] for r in got) == ids and all(len(r) == 3 for r in got)


def test_an_unsustainable_rate_misses_the_sla(loaded: postgres.Server, home: Path) -> None:
    # 20,000 rows at a target of 1,000,000 rows/s: the step takes far longer than 20 ms, but finishes.
    s = ibench(loaded, home, "qp100", "--clients", "1", "--rate", "1000000", "--rows", "20000").summary
    assert s["target_rate"] == 1_000_000 and s["sla_ok"] is False
    assert s["achieved_rate"] < 0.95 * 1_000_000
    # Pushed back, never dropped: every row was inserted and deleted.
    assert s["inserted_rows"] == s["deleted_rows"] == 20000 and s["error_count"] == 0
    assert s["queries"] > 0 and s["seconds"] < 30


def test_failed_statements_are_counted_by_sqlstate(loaded: postgres.Server, home: Path) -> None:
    # A constraint that almost every 50-row batch breaks: each failed INSERT is counted, not retried.
    with loaded.connect() as c:
        c.execute("ALTER TABLE pi1 ADD CONSTRAINT cheap CHECK (price < 450) NOT VALID")
    try:
        before = counts(loaded)
        s = ibench(loaded, home, "l.i1", "--clients", "2", "--rows", "500", "--no-delete").summary
    finally:
        with loaded.connect() as c:
            c.execute("ALTER TABLE pi1 DROP CONSTRAINT cheap")
    failed = s["errors"].get("sqlstate-23514", 0)
    assert failed > 0 and s["error_count"] == failed == s["errors_by_op"]["insert"]
    assert s["latency"]["insert"]["statements"] + failed == 2 * 500 // 50
    assert s["inserted_rows"] == 50 * s["latency"]["insert"]["statements"]
    assert s["rows_after"]["pi1"] == before["pi1"] + s["inserted_rows"] - 500
    assert "violates check constraint" in s["error_samples"][0]


def test_a_step_before_its_tables_is_a_clear_error(loaded: postgres.Server, home: Path) -> None:
    with pytest.raises(StepError, match=r"l.i1 needs tables pi1..pi5 but only 2 of them exist; run l.i0 with"):
        loadclient.run(["ibench", "l.i1", "--clients", "5", "--rows", "10"], connection_to(loaded), home / "e.log")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["bogus"], "unknown step 'bogus'; the steps are l.i0, l.x, l.i1, l.i2, qr100, qp100, qr500, qp500, qr1000"),
        (["l.i0", "--clients", "0", "--rows", "10"], "--clients must be at least 1"),
        (["l.i0", "--rows", "0"], "--rows must be at least 1 for l.i0"),
        (["l.i1"], "l.i1 needs --rows, the rows each client inserts"),
        (["qr100", "--rate", "0"], "--rate must be at least 1 row per second per client for qr100"),
        (["qp100", "--rows", "5", "--seconds", "5"], "give qp100 --seconds or --rows, not both"),
    ],
)
def test_bad_options_fail_before_connecting(args: list[str], message: str) -> None:
    # Port 1: nothing listens, so a connection attempt would fail differently.
    cmd = [str(paths.load_binary()), "ibench", *args, "--host", "127.0.0.1", "--port", "1"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
    assert r.returncode == 2
    assert message in r.stderr and "connect" not in r.stderr
    assert json.loads(r.stdout.splitlines()[-1])["type"] == "error"
