"""dbsweep-load against sysbench itself, on the workloads both have: the same table, the same ids, the same
statements, and the same rows per statement, as the server recorded them. Runs for every engine sysbench
has a driver for."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from dbsweep import loadclient
from dbsweep.engines.base import Instance
from dbsweep.loadclient import connection_to

from ..conftest import running_instance
from .engines import Support

pytestmark = pytest.mark.server

ROWS = 2000
SB_DB = "sb"

# (sysbench script and options, dbsweep-load workload and range, the events both tools run)
# A fixed number of events, not as many as a time allows: the rows per call of a range are a mean over its calls,
# and a slow machine's two seconds held too few of them for the 2 % the test allows. A range of 100 from a uniform
# start in 1..2000 is cut short one time in 20 (rows per call: mean about 97.5, SD about 13), so with 2,000 calls a
# side the 2 % is more than 4.5 standard errors of the difference. A point query or an update by id is one row.
PAIRS = {
    "point-query": (["oltp_point_select"], ("point-query", 100), 200),
    "read-only_range=100": (["oltp_read_only", "--range_size=100"], ("read-only", 100), 2000),
    "update-nonindex": (["oltp_update_non_index"], ("update-nonindex", 100), 200),
}
C_FORMAT = re.compile(r"^([0-9]{11}-){9}[0-9]{11} *$")
PAD_FORMAT = re.compile(r"^([0-9]{11}-){4}[0-9]{11} *$")


@pytest.fixture(scope="module")
def server(engine_name: str, support: Support, home: Path) -> Iterator[Instance]:
    if shutil.which("sysbench") is None:
        pytest.skip("sysbench is not installed")
    with running_instance(engine_name, home / "sysbench-eq", support.statements_config) as s:
        if support.sysbench_driver(s, SB_DB) is None:
            pytest.skip(f"sysbench has no driver for {engine_name}")
        support.start_capture(s)
        support.create_database(s, SB_DB)
        yield s


def _sysbench(server: Instance, support: Support, script: list[str], action: str, events: int = 0) -> None:
    driver = support.sysbench_driver(server, SB_DB)
    assert driver is not None
    cmd = [
        "sysbench",
        *script,
        *driver,
        "--tables=1",
        f"--table-size={ROWS}",
        "--threads=1",
        f"--events={events}",
        "--time=0",  # no limit but the events (prepare loads the table whatever these say)
        "--db-ps-mode=auto",
        # The method's ids are uniform (sysbench master's default); 1.0.20 defaults to "special".
        "--rand-type=uniform",
        action,
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def _load_both(server: Instance, support: Support, tmp: Path) -> None:
    support.query(server, "DROP TABLE IF EXISTS sbtest1", database=SB_DB)
    _sysbench(server, support, ["oltp_point_select"], "prepare")
    loadclient.run(
        ["sysbench", "prepare", "--tables", "1", "--rows", str(ROWS)], connection_to(server), tmp / "prepare.log"
    )


def _facts(server: Instance, support: Support, db: str | None) -> tuple[object, ...]:
    rows = support.query(server, "SELECT id, k, c, pad FROM sbtest1", database=db)
    ids = [r[0] for r in rows]
    ks = [r[1] for r in rows]
    return (
        len(rows),
        min(ids),
        max(ids),
        len(set(ids)),
        min(ks),
        max(ks),
        all(C_FORMAT.match(r[2]) for r in rows),
        all(PAD_FORMAT.match(r[3]) for r in rows),
    )


def test_same_table_and_ids(server: Instance, support: Support, tmp: Path) -> None:
    _load_both(server, support, tmp)
    assert support.columns(server, "sbtest1", SB_DB) == support.columns(server, "sbtest1")
    assert support.index_definitions(server, "sbtest1", SB_DB) == support.index_definitions(server, "sbtest1")
    n, lo, hi, distinct, kmin, kmax, c_ok, pad_ok = _facts(server, support, None)
    assert (n, lo, hi, distinct) == (ROWS, 1, ROWS, ROWS)
    assert (n, lo, hi, distinct) == _facts(server, support, SB_DB)[:4]
    assert isinstance(kmin, int) and isinstance(kmax, int) and 1 <= kmin <= kmax <= ROWS
    assert c_ok and pad_ok
    # And sysbench's own rows follow the same formats the test checks ours against.
    assert _facts(server, support, SB_DB)[6:] == (True, True)


def _statements(server: Instance, support: Support, db: str | None) -> dict[str, float]:
    """Statement shape -> rows per call, for what the server ran in `db` since the last reset."""
    shapes: dict[str, tuple[int, int]] = {}
    for q, calls, nrows in support.statements(server, db):
        if support.housekeeping(q):
            continue
        key = re.sub(r"\s+", " ", q).strip()
        old = shapes.get(key, (0, 0))
        shapes[key] = (old[0] + calls, old[1] + nrows)
    return {k: r / calls for k, (calls, r) in shapes.items()}


@pytest.mark.parametrize("name", list(PAIRS))
def test_same_statements_and_rows(server: Instance, support: Support, tmp: Path, name: str) -> None:
    script, (workload, rng), events = PAIRS[name]
    _load_both(server, support, tmp)
    support.reset_statements(server)
    _sysbench(server, support, script, "run", events)
    cmd = ["sysbench", workload, "--tables", "1", "--rows", str(ROWS), "--range", str(rng)]
    out = loadclient.run(
        [*cmd, "--events", str(events), "--seconds", "600", "--warmup", "0"], connection_to(server), tmp / "run.log"
    )
    assert out.result.events == events and out.result.error_count == 0
    ours, theirs = _statements(server, support, None), _statements(server, support, SB_DB)
    assert set(ours) == set(theirs), (ours, theirs)
    for shape, per_call in theirs.items():
        # Ids are uniform over the same 1..ROWS in both tools: every point lookup finds its row, and a
        # range starting near the end of the table is cut short as often in one tool as in the other.
        assert ours[shape] == pytest.approx(per_call, rel=0.02), shape
