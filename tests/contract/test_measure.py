"""The samplers against every engine's real server: its process tree's CPU, switches and writes while it works,
and the sizes an instance reports against what its data directory holds. An embedded engine's work runs in
the load client, so there the samplers charge the client, and that is what they must see."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from dbsweep import loadclient
from dbsweep.engines.base import Engine
from dbsweep.loadclient import connection_to
from dbsweep.measure import Sampler, StepMeasures, dir_size

from ..conftest import running_instance
from .engines import Support

pytestmark = pytest.mark.server


def test_sizes_and_server_tree(engine_name: str, engine: Engine, support: Support, tmp: Path) -> None:
    if engine.kind != "server":
        pytest.skip(f"{engine_name} is embedded: no server processes; the samplers charge the client (next test)")
    with running_instance(engine_name, tmp / "srv", support.small_config) as server:
        pid = server.pid
        assert pid is not None
        with Sampler(pid, server.datadir, interval=0.2) as s:
            t0 = time.monotonic()
            support.query(server, "CREATE TABLE t (id integer, pad varchar(200))")
            for start in range(0, 50_000, 5_000):
                values = ", ".join(f"({i}, '{'x' * 100}')" for i in range(start, start + 5_000))
                support.query(server, f"INSERT INTO t VALUES {values}")
            support.checkpoint(server)
            size = server.data_bytes()
            t1 = time.monotonic()
            m = s.window(t0, t1)
        on_disk = dir_size(server.datadir)
    assert size is not None and size > 5_000_000  # 50000 rows of ~130 bytes, plus the catalog
    assert on_disk > size  # the data directory also holds the engine's logs and its own files
    assert m.server_procs_max >= support.min_processes  # the server, its background processes, a backend
    assert m.server_cpu_s > 0 and m.server_cs > 0
    assert m.server_write_bytes is not None and m.server_write_bytes > 5_000_000  # the table reached the disk


def test_sizes_and_the_client_of_an_embedded_engine(
    engine_name: str, engine: Engine, support: Support, tmp: Path
) -> None:
    if engine.kind != "embedded":
        pytest.skip(f"{engine_name} is a server: the test above watches its processes")
    with running_instance(engine_name, tmp / "db", support.small_config) as db:
        assert db.pid is None
        windows: list[StepMeasures] = []
        with Sampler(None, db.datadir, interval=0.2) as s:
            t0 = time.monotonic()
            loadclient.run(
                ["sysbench", "prepare", "--rows", "50000"],
                connection_to(db),
                tmp / "prepare.log",
                on_start=s.attach_client,
                # The client's counters, taken while it still runs (as the runner takes a step's).
                on_summary=lambda: windows.append(s.window(t0, time.monotonic())),
            )
        support.checkpoint(db)
        size = db.data_bytes()
        on_disk = dir_size(db.datadir)
    (m,) = windows
    assert size is not None and size > 5_000_000  # 50000 rows of ~190 bytes, and the index on k
    # Checkpointed, with no connection open: the directory holds the database file and nothing else.
    assert on_disk == size
    assert m.server_procs_max >= support.min_processes  # the load client, which runs the library
    assert m.server_cpu_s > 0 and m.server_cs > 0
    assert m.server_write_bytes is not None and m.server_write_bytes > 5_000_000  # the client wrote the table
