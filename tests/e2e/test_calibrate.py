"""dbsweep calibrate: one target against itself, interleaved, and what the verdict can see here."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from ..conftest import dbsweep, write_study

pytestmark = pytest.mark.server


def test_calibrate_runs_two_copies_and_reports_noise(tmp: Path) -> None:
    study = write_study(tmp, seconds=1, warmup=0)
    r = dbsweep("calibrate", study, "--steps", "point-query", "-n", "2", "--placement", "same")
    out = r.stdout
    assert "A-A calibration of a (2 rounds, placement same" in out
    row = next(ln for ln in out.splitlines() if ln.startswith("│ point-query_range=100"))
    # CV of QPS and of cpu/o, and the smallest detectable effects, are percentages.
    assert len(re.findall(r"\d+\.\d%", row)) == 4, row
    assert re.search(r"A-A false-positive rate: \d+\.\d% of 4 verdicts", out), out
    db = sqlite3.connect(tmp / "ws" / "results.db")
    names = {n for (n,) in db.execute("SELECT name FROM studies")}
    assert names == {"t-calibrate-a"}
    targets = {n for (n,) in db.execute("SELECT name FROM targets")}
    assert targets == {"a (A)", "a (B)"}
    (n,) = db.execute("SELECT count(*) FROM cells WHERE status = 'done'").fetchone()
    assert n == 2 * 2 * 2  # two copies x (load + point-query) x two rounds
