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


def test_the_copy_b_of_a_built_target_is_a_second_build(tmp_path: Path) -> None:
    """A-A across two builds: (B) of a target built from source is built again (its own key and tree); a
    prebuilt target, or --same-build, keeps one install."""
    from dbsweep.study import load_study
    from dbsweep.verdicts import calibrate

    s = load_study(write_study(tmp_path))
    built = s.target("a").model_copy(update={"source": "15.18"})
    a, b = calibrate.copies(s, built, None, 2, None).targets
    assert (a.build_copy, b.build_copy) == (0, 1) and a.source == b.source == "15.18"
    assert [t.build_copy for t in calibrate.copies(s, built, None, 2, None, separate_build=False).targets] == [0, 0]
    system = calibrate.copies(s, s.target("a"), None, 2, None).targets
    assert [t.build_copy for t in system] == [0, 0]


def test_build_copy_needs_a_built_source(tmp_path: Path) -> None:
    study = write_study(tmp_path)
    text = study.read_text().replace('config = "cx10a_c2r24"', 'config = "cx10a_c2r24"\nbuild_copy = 1', 1)
    study.write_text(text)
    r = cli("validate", study)
    assert r.returncode != 0
    assert "targets[0].build_copy" in r.stderr and "cannot be built again" in r.stderr, r.stderr
