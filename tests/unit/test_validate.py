"""`dbsweep validate` and `run` refuse bad input before any work, naming the file, the field and the problem."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..conftest import write_study
from .conftest import cli, refused


def test_a_good_study_prints_what_it_would_run_and_for_how_long(tmp: Path) -> None:
    r = cli("validate", write_study(tmp, clients=[1, 2], repeats=2))
    assert r.returncode == 0, r.stderr
    assert "ok " in r.stdout and "12 cells" in r.stdout
    assert "estimated wall time" in r.stdout and "largest data directory" in r.stdout
    assert not (tmp / "ws").exists()


def test_rows_beyond_the_load_clients_range_say_the_largest_allowed(tmp: Path) -> None:
    err = refused(write_study(tmp, rows=3_000_000_000))
    assert "t.toml: suite.rows: " in err and "the largest allowed value is 2147483647" in err


def test_clients_above_max_connections_are_refused_by_run_too(tmp: Path) -> None:
    study = write_study(tmp, clients=[1, 150])
    for verb in ("validate", "run"):
        err = refused(study, verb)
        assert "targets[0].config: target 'a': config cx10a_c2r24 allows 100 connections" in err
        assert "needs 151" in err


def test_a_step_listed_twice_names_both(tmp: Path) -> None:
    err = refused(write_study(tmp, steps='["point-query", "update-index", "point-query_range=100"]'))
    assert "suite.steps[2]: 'point-query_range=100' is the same step as suite.steps[0]" in err


@pytest.mark.parametrize(
    ("source", "words"),
    [
        ("dir:/nonexistent/pg", "source directory /nonexistent/pg does not exist"),
        ("tarball:/nonexistent/pg.tar.gz", "/nonexistent/pg.tar.gz"),
        ("git:/nonexistent/repo@REL_15", "/nonexistent/repo"),
        ("system:9", "Postgres 9 from Debian's packages is not installed"),
    ],
)
def test_sources_that_cannot_exist(tmp: Path, source: str, words: str) -> None:
    study = write_study(tmp)
    study.write_text(
        study.read_text().replace(
            'source = "system"\nconfig = "cx10a_sb1g', f'source = "{source}"\nconfig = "cx10a_sb1g', 1
        )
    )
    err = refused(study)
    assert "targets[1].source: " in err and words in err, err


def test_a_config_name_is_never_a_path(tmp: Path) -> None:
    err = refused(write_study(tmp, config_b="../../etc/passwd"))
    assert "targets[1].config: '../../etc/passwd' is not a config name" in err and "not a path" in err


def test_target_names_that_would_share_a_data_directory_are_refused(tmp: Path) -> None:
    study = write_study(tmp)
    text = study.read_text().replace('name = "a"', 'name = "x/y"').replace('name = "b"', 'name = "x_y"')
    study.write_text(text.replace('base = "a"', 'base = "x/y"'))
    err = refused(study)
    assert "targets[1]: targets 'x/y' (targets[0]) and 'x_y' would share the data directory 'x_y'" in err


def test_a_setting_the_installed_binary_lacks_is_refused_by_run_before_any_work(tmp: Path) -> None:
    # io_method appeared in Postgres 18; the installed 15 does not know it.
    err = refused(write_study(tmp, config_b="cx10b_c2r24"), "run")
    assert "targets[1].config: config cx10b_c2r24 sets io_method" in err and "does not have" in err
