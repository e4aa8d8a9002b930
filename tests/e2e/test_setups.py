"""Setups (hosts.setups): a study run `cached` and `io-bound` on this machine, each a study of its own in the store
and reported on its own; in the io-bound one the server's memory, page cache included, is capped by a memory
cgroup, so its reads from the device per operation rise against the cached one's."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from dbsweep import memcap

from ..conftest import dbsweep, own_configs

pytestmark = pytest.mark.server

STUDY = """\
name = "s"
engine = "postgres"
base = "a"
workspace = "{ws}"

[suite]
steps = ["point-query"]
tables = 1
rows = 300000
clients = [1]
read_seconds = 2
write_seconds = 1
warmup_seconds = 1
maintenance_seconds = 10

[hosts]
setups = ["cached", "io-bound"]
io_bound_memory_mb = 64

[[targets]]
name = "a"
config = "small"
"""
# A buffer pool far below the cap (shared memory is charged to the cgroup and cannot be reclaimed), so the
# tables are read through the page cache, which the cap limits.
SMALL = "shared_buffers = 16MB\nmax_connections = 20\nhuge_pages = off\n"


def test_io_bound_reads_more_per_operation_than_cached(tmp: Path) -> None:
    why = memcap.check()
    if why is not None:
        pytest.fail(f"a memory cgroup cannot be made here: {why}")
    env = own_configs(tmp, "postgres", "cx10a_c2r24", small=SMALL)
    study = tmp / "s.toml"
    study.write_text(STUDY.format(ws=tmp / "ws"))
    run = dbsweep("run", study, env=env, timeout=900)
    assert "Setup cached (s.cached)" in run.stdout and "Setup io-bound (s.io-bound)" in run.stdout, run.stdout
    db = sqlite3.connect(tmp / "ws" / "results.db")
    rows = db.execute(
        "SELECT s.name, c.status, o.value, p.data FROM cells c JOIN runs r ON r.id = c.run_id "
        "JOIN studies s ON s.id = r.study_id JOIN per_op o ON o.cell_id = c.id AND o.metric = 'r/o' "
        "JOIN provenance p ON p.id = c.provenance_id WHERE c.step LIKE 'point-query%'"
    ).fetchall()
    db.close()
    got = {name: (status, value, json.loads(prov)) for name, status, value, prov in rows}
    assert set(got) == {"s.cached", "s.io-bound"} and all(v[0] == "done" for v in got.values()), got
    cached, capped = got["s.cached"][1], got["s.io-bound"][1]
    # Capped at 64 MB, a 300,000-row table (about 70 MB with its index) no longer fits: point queries read it.
    assert capped is not None and capped > 0.05 and capped > 5 * (cached or 0.0), (cached, capped)
    setup = got["s.io-bound"][2]["setup"]
    assert setup["name"] == "io-bound" and setup["limit_bytes"] == 64 * 2**20 and setup["cgroup"], setup
    assert got["s.cached"][2]["setup"] == {"name": "cached"}
    assert not Path(setup["cgroup"]).exists()  # removed with its server
    # Each setup is reported on its own; to a file, the setup is named.
    report = dbsweep("report", study, env=env).stdout
    assert report.index("s.cached: QPS") < report.index("s.io-bound: QPS")
    refused = dbsweep("report", study, "--format", "json", env=env, check=False)
    assert refused.returncode != 0 and "--setup" in refused.stderr
    one = json.loads(dbsweep("report", study, "--setup", "io-bound", "--format", "json", env=env).stdout)
    assert one["study"] == "s.io-bound"
