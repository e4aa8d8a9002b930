"""dbsweep calibrate refuses what it cannot run before any work."""

from __future__ import annotations

from pathlib import Path

from ..conftest import write_study
from .conftest import cli


def test_calibrate_rejects_an_unknown_step(tmp_path: Path) -> None:
    study = write_study(tmp_path)
    r = cli("calibrate", study, "--steps", "point-qurey")
    assert r.returncode != 0
    assert "--steps: 'point-qurey' is not a sysbench step" in r.stdout + r.stderr
    assert not (tmp_path / "ws").exists()


def test_calibrate_rejects_an_unknown_target_and_placement(tmp_path: Path) -> None:
    study = write_study(tmp_path)
    r = cli("calibrate", study, "--target", "zz")
    assert r.returncode == 1 and "no target 'zz'" in r.stderr and "have: a, b" in r.stderr
    r = cli("calibrate", study, "--placement", "numa")
    assert r.returncode == 1 and "--placement: 'numa' is not one of" in r.stderr
    assert not (tmp_path / "ws").exists()
