"""The samplers against every engine's real server: its process tree's CPU, switches and writes while it works,
and the sizes an instance reports against what its data directory holds."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from dbsweep.engines.base import Engine
from dbsweep.measure import Sampler, dir_size

from ..conftest import running_instance
from .engines import Support

pytestmark = pytest.mark.server


def test_sizes_and_server_tree(engine_name: str, engine: Engine, support: Support, tmp: Path) -> None:
    if engine.kind != "server":
        pytest.skip(f"{engine_name} has no server processes: the samplers charge the client")
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
