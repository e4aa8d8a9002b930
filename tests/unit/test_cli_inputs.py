"""Inputs a new user gets wrong at the command line, each a plain error that changes nothing: an empty workspace,
a report into a directory that is not there, the same target twice, a run that does not exist, a build cache
that is not a directory, a source list that gave nothing; and a results store of 0 bytes, which every verb
reads as no results rather than one calling it damaged and another empty."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dbsweep.report import data
from dbsweep.results.store import Store

from .conftest import cli, refused
from .handmade import hand_made

STUDY = """\
engine = "postgres"
base = "a"
workspace = "{ws}"
[suite]
steps = ["point-query"]
[[targets]]
name = "a"
source = "system"
config = "cx10a_c2r24"
"""


@pytest.fixture
def hand(tmp_path: Path) -> Iterator[tuple[data.ReportData, Store]]:
    with hand_made(tmp_path) as made:
        yield made


def test_an_empty_workspace_is_refused_not_the_current_directory(tmp_path: Path) -> None:
    study = tmp_path / "s.toml"
    study.write_text(STUDY.format(ws=""))
    assert "workspace:" in refused(study)
    study.write_text(STUDY.format(ws="  "))
    assert "workspace:" in refused(study)


def test_a_report_into_a_missing_directory_is_refused_and_makes_none(
    hand: tuple[data.ReportData, Store], tmp_path: Path
) -> None:
    out = tmp_path / "nowhere" / "r.md"
    r = cli("report", tmp_path / "hand.toml", "--format", "markdown", "--out", out)
    assert r.returncode == 1, r.stderr
    assert f"the directory {out.parent} does not exist" in r.stderr
    assert not out.parent.exists()


def test_compare_of_a_target_with_itself_is_refused(hand: tuple[data.ReportData, Store], tmp_path: Path) -> None:
    r = cli("compare", tmp_path / "hand.toml", "--targets", "a", "a")
    assert r.returncode == 1
    assert "'a' twice" in r.stderr and not r.stdout.strip()


def test_why_of_a_run_that_does_not_exist_says_so(hand: tuple[data.ReportData, Store], tmp_path: Path) -> None:
    r = cli("why", tmp_path / "hand.toml", "--target", "b", "--step", "point-query_range=100", "--run", "99")
    assert r.returncode == 1
    assert "no run 99 of hand" in r.stderr


def test_builds_of_a_workspace_that_is_not_a_directory_is_refused(tmp_path: Path) -> None:
    r = cli("builds", "-w", tmp_path / "missing")
    assert r.returncode == 1 and "does not exist" in r.stderr and not r.stdout.strip()
    (tmp_path / "file").write_text("")
    r = cli("builds", "-w", tmp_path / "file")
    assert r.returncode == 1 and "is a file" in r.stderr and not r.stdout.strip()


def test_a_blank_store_is_no_results_for_every_reader(tmp_path: Path) -> None:
    study = tmp_path / "s.toml"
    study.write_text(STUDY.format(ws=tmp_path / "ws"))
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "results.db").write_bytes(b"")
    st = cli("status", study)
    assert st.returncode == 0, st.stderr
    assert "pending 2" in st.stdout and "damaged" not in st.stderr
    r = cli("report", study)
    assert r.returncode == 1
    assert "no results yet" in r.stderr and "is empty" in r.stderr and "damaged" not in r.stderr
    assert (tmp_path / "ws" / "results.db").stat().st_size == 0, "a reader wrote the store"


def test_sources_that_found_nothing_is_an_error_not_an_empty_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dbsweep.sources import debian

    # What a failed fetch of the package lists leaves: no list to read.
    monkeypatch.setattr(debian, "available", lambda *args, **kwargs: [])
    r = cli("sources", "rocksdb", "--workspace", tmp_path)
    assert r.returncode == 1
    assert "no version of RocksDB was found" in r.stderr and not r.stdout.strip()
