"""CPU placement in a real run: the server and the client pinned as asked, and the choice recorded."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from ..conftest import dbsweep, write_study

pytestmark = pytest.mark.server


def test_run_records_the_placement(tmp: Path) -> None:
    study = write_study(tmp)
    study.write_text(study.read_text() + '\n[measure]\nplacement = "same"\n')
    r = dbsweep("run", study)
    assert "4 cells done, 0 failed" in r.stdout
    db = sqlite3.connect(tmp / "ws" / "results.db")
    provs = [json.loads(d) for (d,) in db.execute("SELECT data FROM provenance")]
    assert provs and all(p["cpu_placement"]["placement"] == "same" for p in provs)
    cpu = max(os.sched_getaffinity(0))
    assert all(p["cpu_placement"]["server_cpus"] == [cpu] == p["cpu_placement"]["client_cpus"] for p in provs)
