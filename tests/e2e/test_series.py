"""A series study for real: four targets of Debian's SQLite in a row, the last two with a page cache of 8 pages
(every point query reads its pages from the file again), counted with valgrind: the change point is between the
second and the third, and its `why` lines name the reads. Two targets a side: each side has a pair of neighbours
that must not make a change point, and a regime of more than one value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..conftest import dbsweep

pytestmark = pytest.mark.server

STUDY = """\
name = "ser"
engine = "sqlite"
base = "r1"
workspace = "{ws}"
series = true

[suite]
name = "sysbench"
steps = ["point-query"]
tables = 1
rows = 2000
clients = [1]

[measure]
instructions = true
instruction_seconds = 1
instruction_pairs = 1
"""


def test_a_series_finds_where_a_cost_came_in(tmp: Path) -> None:
    configs = tmp / "configs" / "sqlite"
    configs.mkdir(parents=True)
    (configs / "roomy.conf").write_text("journal_mode = WAL\ncache_size = -65536\n")
    (configs / "tiny.conf").write_text("journal_mode = WAL\ncache_size = 8\n")
    text = STUDY.format(ws=tmp / "ws")
    for i, config in enumerate(["roomy"] * 2 + ["tiny"] * 2, 1):
        text += f'\n[[targets]]\nname = "{config[0]}{i}"\nsource = "system"\nconfig = "{config}"\n'
    study = tmp / "ser.toml"
    study.write_text(text)
    env = {"DBSWEEP_CONFIGS": str(tmp / "configs")}
    dbsweep("run", study, "--counts-only", env=env, timeout=900)
    report = json.loads(dbsweep("report", study, "--format", "json", env=env).stdout)
    (point,) = [s for s in report["series"] if s["step"] == "point-query_range=100"]
    assert point["figure"] == "instructions" and point["targets"] == ["r1", "r2", "t3", "t4"]
    cps = point["change_points"]
    assert len(cps) == 1, (point["values"], cps)  # values and candidates: what split, if the noise did
    (cp,) = cps
    assert (cp["before"], cp["after"], cp["verdict"], cp["confirmed"]) == ("r2", "t3", "slower", True)
    assert cp["ratio"] > 1.02
    before, after = point["values"][:2], point["values"][2:]
    assert max(before) / min(before) < 1.002 and max(after) / min(after) < 1.002  # one regime each side
    assert max(before) < min(after)
    why = " ".join(point["why"][str(cp["index"])])
    assert "pread" in why or "sqlite3WalFindFrame" in why, why  # the pages read again from the file
    text = dbsweep("report", study, env=env).stdout
    assert "Over the series (r1 → r2 → t3 → t4):" in text
    assert "change point between r2 and t3: slower" in text
