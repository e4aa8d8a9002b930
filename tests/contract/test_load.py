"""dbsweep-load against every engine: the sysbench load step, a timed step's counts and histogram, the summary
envelope every step ends with, the errors a step names, and the private Unix socket."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hdrh.histogram import HdrHistogram

from dbsweep import loadclient, paths
from dbsweep.engines.base import Engine, Instance
from dbsweep.errors import StepError
from dbsweep.loadclient import connection_to
from dbsweep.results.model import StepResult

from ..conftest import running_instance
from .engines import Support

pytestmark = pytest.mark.server

# The fields every summary line carries, whatever the suite; the step's own are in `detail`.
ENVELOPE = {
    "type", "suite", "step", "ops_name", "operations", "events", "seconds", "rate", "tps", "latency_us", "histogram",
    "errors", "error_count", "error_samples", "client_cpu_user_s", "client_cpu_sys_s", "client_max_rss_kb",
    "ended_early", "detail",
}  # fmt: skip
# Every step's detail, whatever the suite: the statements that waited for a lock and how long they waited
# (0 on a server, whose clients do not wait in the client); beside them, the engine's own (Support.engine_detail).
LOCK_WAITS = {"lock_waits", "lock_wait_s"}
SYSBENCH_PREPARE = {
    "workload", "tables", "rows", "primary_key", "insert_seconds", "index_seconds", "rows_per_sec", *LOCK_WAITS,
}  # fmt: skip
SYSBENCH_STEP = {
    "workload", "group", "clients", "tables", "rows", "prepared", "seed", "range", "zipf_exp", "statements_per_event",
    "explicit_trx", "warmup_seconds", "queries", "rows_returned", "rows_affected", "qps", "warmup_events",
    "client_cpu_us_per_query", *LOCK_WAITS,
}  # fmt: skip


@pytest.fixture
def server(engine_name: str, support: Support, tmp: Path) -> Iterator[Instance]:
    with running_instance(engine_name, tmp / "srv", support.small_config) as s:
        yield s


def test_prepare_loads_sysbench_tables(server: Instance, support: Support, tmp: Path) -> None:
    out = loadclient.run(
        ["sysbench", "prepare", "--tables", "2", "--rows", "3000"], connection_to(server), tmp / "p.log"
    )
    r = out.result
    assert (r.suite, r.step, r.ops_name, r.operations) == ("sysbench", "prepare", "rows", 6000)
    assert r.rate > 0 and r.detail["rows_per_sec"] > 0
    s = r.flat()
    assert s["rows"] == 6000 and s["tables"] == 2 and s["rows_per_sec"] > 0  # the old flat summary's fields
    for t in (1, 2):
        ((n, lo, hi, kmin, kmax),) = support.query(
            server, f"SELECT count(*), min(id), max(id), min(k), max(k) FROM sbtest{t}"
        )
        assert (n, lo, hi) == (3000, 1, 3000)
        assert kmin >= 1 and kmax <= 3000
        ((cval, pad),) = support.query(server, f"SELECT c, pad FROM sbtest{t} WHERE id = 17")
        assert len(cval) == (120 if support.char_padded else 119)  # char(120), or the text as the client wrote it
        assert len(cval.rstrip()) == 119 and cval.count("-") == 9
        assert len(pad.rstrip()) == 59 and pad.count("-") == 4
        idx = support.indexes(server, f"sbtest{t}")
        assert idx == {support.primary_key(f"sbtest{t}"): ("id",), f"k_{t}": ("k",)}


def test_point_query_counts_and_histogram(server: Instance, tmp: Path) -> None:
    loadclient.run(["sysbench", "prepare", "--rows", "5000"], connection_to(server), tmp / "p.log")
    cmd = ["sysbench", "point-query", "--rows", "5000", "--clients", "2", "--seconds", "2", "--warmup", "1"]
    out = loadclient.run(cmd, connection_to(server), tmp / "r.log")
    r, d = out.result, out.result.detail
    assert (r.suite, r.step, r.ops_name) == ("sysbench", "point-query", "queries")
    assert r.events > 100 and d["queries"] == r.events == r.operations and d["rows_returned"] == r.events
    assert r.error_count == 0 and r.errors == {}
    assert d["warmup_events"] > 0
    assert abs(d["qps"] - d["queries"] / r.seconds) < 1e-6 * d["qps"] and r.rate == pytest.approx(d["qps"])
    assert 1.9 < r.seconds < 3.0
    # One line per second, warm-up first; the measured lines add up to about the events.
    phases = [line["phase"] for line in out.seconds]
    assert phases[0] == "warmup" and phases.count("measure") >= 2
    assert r.histogram is not None
    h = HdrHistogram.decode(r.histogram)
    assert h.get_total_count() == r.events
    assert h.get_value_at_percentile(50) == pytest.approx(r.latency_us.p50, rel=0.01)
    assert r.client_cpu_user_s + r.client_cpu_sys_s > 0


def _envelope(args: list[str], server: Instance) -> dict[str, Any]:
    """The last line dbsweep-load writes for a step, as it writes it."""
    access = connection_to(server)
    r = subprocess.run(
        [paths.load_binary(), *args, *access.args],
        capture_output=True,
        text=True,
        env={**os.environ, **access.env},
        timeout=120,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    line = json.loads(r.stdout.splitlines()[-1])
    assert line["type"] == "summary"
    return dict(line)


def test_every_summary_is_one_envelope(server: Instance, support: Support) -> None:
    prepare = _envelope(["sysbench", "prepare", "--rows", "2000"], server)
    step = _envelope(["sysbench", "point-query", "--rows", "2000", "--seconds", "1", "--warmup", "0"], server)
    ibench = _envelope(["ibench", "l.i0", "--clients", "1", "--rows", "500"], server)
    for line, suite, name in (
        (prepare, "sysbench", "prepare"),
        (step, "sysbench", "point-query"),
        (ibench, "ibench", "l.i0"),
    ):
        assert set(line) == ENVELOPE, set(line) ^ ENVELOPE
        assert (line["suite"], line["step"]) == (suite, name)
        assert StepResult.from_envelope(line).flat()["step"] == name
    assert set(prepare["detail"]) == SYSBENCH_PREPARE | support.engine_detail
    assert set(step["detail"]) == SYSBENCH_STEP | support.engine_detail
    assert LOCK_WAITS | support.engine_detail <= set(ibench["detail"])
    for line in (prepare, step, ibench):
        assert line["detail"]["lock_waits"] >= 0 and line["detail"]["lock_wait_s"] >= 0
        if "engine_library" in support.engine_detail:  # the library the client opened says what it is
            lib = line["detail"]["engine_library"]
            assert set(lib) == {"path", "version", "source_id"}
            assert server.server_version().startswith(lib["version"]), (lib, server.server_version())
    # The step's own fields never hide a common one.
    for line in (prepare, step, ibench):
        assert not set(line["detail"]) & ENVELOPE, set(line["detail"]) & ENVELOPE


def test_missing_tables_and_bad_options_fail_before_running(server: Instance, tmp: Path) -> None:
    loadclient.run(["sysbench", "prepare", "--rows", "100"], connection_to(server), tmp / "p.log")
    with pytest.raises(StepError, match=r"needs tables sbtest1..sbtest3 but only 1 of them exist"):
        loadclient.run(
            ["sysbench", "point-query", "--tables", "3", "--rows", "100", "--seconds", "1"],
            connection_to(server),
            tmp / "r.log",
        )
    with pytest.raises(StepError, match="tables, rows, clients, seconds and events must all be positive"):
        loadclient.run(
            ["sysbench", "point-query", "--rows", "0", "--seconds", "1"], connection_to(server), tmp / "r.log"
        )
    with pytest.raises(StepError, match="unknown step 'nope'; the steps are prepare, point-query, "):
        loadclient.run(["sysbench", "nope"], connection_to(server), tmp / "r.log")


def test_wrong_password_is_a_clear_error(engine_name: str, server: Instance, support: Support, tmp: Path) -> None:
    bad = support.wrong_password(connection_to(server))
    if bad is None:
        pytest.skip(f"{engine_name} is embedded: it has no credentials; the client opens the file as its own user")
    with pytest.raises(StepError, match=support.auth_failure):
        loadclient.run(["sysbench", "prepare", "--rows", "10"], bad, tmp / "p.log")


def test_unix_socket_carries_whole_events(engine_name: str, engine: Engine, support: Support, tmp: Path) -> None:
    """Over the server's Unix socket (where the client waits with poll before each read), read-only
    events of 16 statements and replies of up to 100 rows arrive whole, and no TCP is used."""
    if engine.kind != "server":
        pytest.skip(f"{engine_name} is embedded: the library runs in the client, no socket, TCP or connection log")
    with running_instance(engine_name, tmp / "srv", support.small_config + support.log_connections) as server:
        before = len(server.log.read_text(errors="replace"))
        via = connection_to(server, via_socket=True)
        loadclient.run(["sysbench", "prepare", "--rows", "5000"], via, tmp / "p.log")
        cmd = ["sysbench", "read-only", "--rows", "5000", "--clients", "2", "--seconds", "2", "--warmup", "0"]
        r = loadclient.run(cmd, via, tmp / "r.log").result
        log = server.log.read_text(errors="replace")[before:]
    assert r.error_count == 0 and r.events > 20
    assert r.detail["queries"] == 16 * r.events
    # 10 point selects, then 100 + 1 + 100 + 100 rows from the ranges (shorter at the table's end).
    assert 200 * r.events < r.detail["rows_returned"] <= 311 * r.events
    assert log.count(support.local_connection) >= 4  # prepare's and the run's connections
    assert support.tcp_connection not in log
