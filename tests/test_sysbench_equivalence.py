"""dbsweep-load against sysbench itself, on the workloads both have: the same table, the same ids, the
same statements, and the same rows per statement, as the server saw them (pg_stat_statements)."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from dbsweep import loadclient
from dbsweep.engines import postgres
from dbsweep.loadclient import connection_to

from .conftest import system_server

ROWS = 2000
SB_DB = "sb"

# (sysbench script and options, dbsweep-load workload and range)
PAIRS = {
    "point-query": (["oltp_point_select"], ("point-query", 100)),
    "read-only_range=100": (["oltp_read_only", "--range_size=100"], ("read-only", 100)),
    "update-nonindex": (["oltp_update_non_index"], ("update-nonindex", 100)),
}


@pytest.fixture(scope="module")
def server(_test_root: Path) -> Iterator[postgres.Server]:
    pgss = "shared_preload_libraries = 'pg_stat_statements'\npg_stat_statements.max = 1000\n"
    with system_server(_test_root / "sysbench-eq", pgss) as s:
        with s.connect() as c:
            c.execute("CREATE EXTENSION pg_stat_statements")
            c.execute(f"CREATE DATABASE {SB_DB}")
        yield s


def _sysbench(server: postgres.Server, script: list[str], action: str, seconds: int = 2) -> None:
    # sysbench takes the password only as an option; this is a throwaway test server on loopback.
    cmd = [
        "sysbench",
        *script,
        "--db-driver=pgsql",
        "--pgsql-host=127.0.0.1",
        f"--pgsql-port={server.port}",
        f"--pgsql-user={postgres.DB_USER}",
        f"--pgsql-password={server.password}",
        f"--pgsql-db={SB_DB}",
        "--tables=1",
        f"--table-size={ROWS}",
        "--threads=1",
        f"--time={seconds}",
        "--db-ps-mode=auto",
        # The method's ids are uniform (sysbench master's default); 1.0.20 defaults to "special".
        "--rand-type=uniform",
        action,
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def _load_both(server: postgres.Server, tmp: Path) -> None:
    with server.connect(SB_DB) as c:
        c.execute("DROP TABLE IF EXISTS sbtest1")
    _sysbench(server, ["oltp_point_select"], "prepare")
    loadclient.run(["prepare", "--tables", "1", "--rows", str(ROWS)], connection_to(server), tmp / "prepare.log")


def _columns(server: postgres.Server, db: str) -> list[tuple[object, ...]]:
    with server.connect(db) as c:
        return c.execute(
            "SELECT column_name, data_type, character_maximum_length, is_nullable, "
            "regexp_replace(coalesce(column_default, ''), '''[a-z0-9_]+_seq''', 'SEQ') "
            "FROM information_schema.columns WHERE table_name = 'sbtest1' ORDER BY ordinal_position"
        ).fetchall()


def _indexes(server: postgres.Server, db: str) -> list[str]:
    with server.connect(db) as c:
        defs = c.execute("SELECT indexdef FROM pg_indexes WHERE tablename = 'sbtest1'").fetchall()
    # Index names differ between the tools (k_1 vs sbtest1_k_idx); what they index must not.
    return sorted(re.sub(r"INDEX \S+ ON", "INDEX ON", d) for (d,) in defs)


def _facts(server: postgres.Server, db: str) -> tuple[object, ...]:
    with server.connect(db) as c:
        row = c.execute(
            "SELECT count(*), min(id), max(id), count(DISTINCT id), min(k), max(k), "
            r"bool_and(c ~ '^([0-9]{11}-){9}[0-9]{11} *$'), bool_and(pad ~ '^([0-9]{11}-){4}[0-9]{11} *$') "
            "FROM sbtest1"
        ).fetchone()
    assert row is not None
    return tuple(row)


def test_same_table_and_ids(server: postgres.Server, tmp: Path) -> None:
    _load_both(server, tmp)
    assert _columns(server, SB_DB) == _columns(server, postgres.DB_NAME)
    assert _indexes(server, SB_DB) == _indexes(server, postgres.DB_NAME)
    n, lo, hi, distinct, kmin, kmax, c_ok, pad_ok = _facts(server, postgres.DB_NAME)
    assert (n, lo, hi, distinct) == (ROWS, 1, ROWS, ROWS)
    assert (n, lo, hi, distinct) == _facts(server, SB_DB)[:4]
    assert isinstance(kmin, int) and isinstance(kmax, int) and 1 <= kmin <= kmax <= ROWS
    assert c_ok and pad_ok
    # And sysbench's own rows follow the same formats the test checks ours against.
    assert _facts(server, SB_DB)[6:] == (True, True)


def _statements(server: postgres.Server, db: str) -> dict[str, float]:
    """Statement shape -> rows per call, for what the server ran in `db` since the last reset."""
    with server.connect() as c:
        rows = c.execute(
            "SELECT query, calls, rows FROM pg_stat_statements "
            "WHERE dbid = (SELECT oid FROM pg_database WHERE datname = %s) AND calls > 0 "
            "AND query !~* 'pg_stat_statements|pg_catalog|pg_class|^(SET|SHOW|DEALLOCATE)'",
            (db,),
        ).fetchall()
    shapes: dict[str, tuple[int, int]] = {}
    for q, calls, nrows in rows:
        key = re.sub(r"\s+", " ", re.sub(r"\$\d+", "?", q)).strip()
        old = shapes.get(key, (0, 0))
        shapes[key] = (old[0] + calls, old[1] + nrows)
    return {k: r / calls for k, (calls, r) in shapes.items()}


@pytest.mark.parametrize("name", list(PAIRS))
def test_same_statements_and_rows(server: postgres.Server, tmp: Path, name: str) -> None:
    script, (workload, rng) = PAIRS[name]
    _load_both(server, tmp)
    with server.connect() as c:
        c.execute("SELECT pg_stat_statements_reset()")
    _sysbench(server, script, "run")
    cmd = ["run", workload, "--tables", "1", "--rows", str(ROWS), "--range", str(rng)]
    out = loadclient.run([*cmd, "--seconds", "2", "--warmup", "0"], connection_to(server), tmp / "run.log")
    assert out.summary["events"] > 0 and out.summary["error_count"] == 0
    ours, theirs = _statements(server, postgres.DB_NAME), _statements(server, SB_DB)
    assert set(ours) == set(theirs), (ours, theirs)
    for shape, per_call in theirs.items():
        # Ids are uniform over the same 1..ROWS in both tools: every point lookup finds its row, and a
        # range starting near the end of the table is cut short as often in one tool as in the other.
        assert ours[shape] == pytest.approx(per_call, rel=0.02), shape
