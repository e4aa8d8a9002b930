"""dbsweep-load against a real Postgres: the load step, point-query, and its errors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hdrh.histogram import HdrHistogram

from dbsweep import loadclient
from dbsweep.engines import postgres
from dbsweep.errors import StepError
from dbsweep.loadclient import connection_to as connect_to

from .conftest import system_server


@pytest.fixture
def server(tmp: Path) -> Iterator[postgres.Server]:
    with system_server(tmp / "srv", "shared_buffers=128MB\n") as s:
        yield s


def test_prepare_loads_sysbench_tables(server: postgres.Server, tmp: Path) -> None:
    out = loadclient.run(["prepare", "--tables", "2", "--rows", "3000"], connect_to(server), tmp / "p.log")
    assert out.summary["rows"] == 6000 and out.summary["rows_per_sec"] > 0
    with server.connect() as c:
        for t in (1, 2):
            n, lo, hi, kmin, kmax = c.execute(
                f"SELECT count(*), min(id), max(id), min(k), max(k) FROM sbtest{t}"
            ).fetchone()
            assert (n, lo, hi) == (3000, 1, 3000)
            assert kmin >= 1 and kmax <= 3000
            cval, pad = c.execute(f"SELECT c, pad FROM sbtest{t} WHERE id = 17").fetchone()
            assert len(cval) == 120 and len(cval.rstrip()) == 119 and cval.count("-") == 9
            assert len(pad.rstrip()) == 59 and pad.count("-") == 4
            idx = {r[0] for r in c.execute("SELECT indexname FROM pg_indexes WHERE tablename = %s", (f"sbtest{t}",))}
            assert idx == {f"sbtest{t}_pkey", f"k_{t}"}


def test_point_query_counts_and_histogram(server: postgres.Server, tmp: Path) -> None:
    loadclient.run(["prepare", "--rows", "5000"], connect_to(server), tmp / "p.log")
    cmd = ["run", "point-query", "--rows", "5000", "--clients", "2", "--seconds", "2", "--warmup", "1"]
    out = loadclient.run(cmd, connect_to(server), tmp / "r.log")
    s = out.summary
    assert s["events"] > 100 and s["queries"] == s["events"] and s["rows_returned"] == s["events"]
    assert s["error_count"] == 0 and s["errors"] == {}
    assert s["warmup_events"] > 0
    assert abs(s["qps"] - s["queries"] / s["seconds"]) < 1e-6 * s["qps"]
    assert 1.9 < s["seconds"] < 3.0
    # One line per second, warm-up first; the measured lines add up to about the events.
    phases = [line["phase"] for line in out.seconds]
    assert phases[0] == "warmup" and phases.count("measure") >= 2
    h = HdrHistogram.decode(s["histogram"])
    assert h.get_total_count() == s["events"]
    assert h.get_value_at_percentile(50) == pytest.approx(s["latency_us"]["p50"], rel=0.01)
    assert s["client_cpu_user_s"] + s["client_cpu_sys_s"] > 0


def test_missing_tables_fail_before_running(server: postgres.Server, tmp: Path) -> None:
    loadclient.run(["prepare", "--rows", "100"], connect_to(server), tmp / "p.log")
    with pytest.raises(StepError, match=r"needs tables sbtest1..sbtest3 but only 1 of them exist"):
        loadclient.run(
            ["run", "point-query", "--tables", "3", "--rows", "100", "--seconds", "1"],
            connect_to(server),
            tmp / "r.log",
        )
    with pytest.raises(StepError, match="tables, rows, clients and seconds must all be positive"):
        loadclient.run(["run", "point-query", "--rows", "0", "--seconds", "1"], connect_to(server), tmp / "r.log")
    with pytest.raises(StepError, match="unknown workload 'nope'; have: point-query"):
        loadclient.run(["run", "nope"], connect_to(server), tmp / "r.log")


def test_wrong_password_is_a_clear_error(server: postgres.Server, tmp: Path) -> None:
    bad = connect_to(server)
    bad.password = "wrong"
    with pytest.raises(StepError, match="password authentication failed"):
        loadclient.run(["prepare", "--rows", "10"], bad, tmp / "p.log")


def test_unix_socket_carries_whole_events(tmp: Path) -> None:
    """Over the server's Unix socket (where the client waits with poll before each read), read-only
    events of 16 statements and replies of up to 100 rows arrive whole, and no TCP is used."""
    with system_server(tmp / "srv", "shared_buffers=128MB\nlog_connections=on\n") as server:
        before = len(server.log.read_text(errors="replace"))
        via = connect_to(server, via_socket=True)
        loadclient.run(["prepare", "--rows", "5000"], via, tmp / "p.log")
        cmd = ["run", "read-only", "--rows", "5000", "--clients", "2", "--seconds", "2", "--warmup", "0"]
        s = loadclient.run(cmd, via, tmp / "r.log").summary
        log = server.log.read_text(errors="replace")[before:]
    assert s["error_count"] == 0 and s["events"] > 20
    assert s["queries"] == 16 * s["events"]
    # 10 point selects, then 100 + 1 + 100 + 100 rows from the ranges (shorter at the table's end).
    assert 200 * s["events"] < s["rows_returned"] <= 311 * s["events"]
    assert log.count("connection received: host=[local]") >= 4  # prepare's and the run's connections
    assert "connection received: host=127.0.0.1" not in log
