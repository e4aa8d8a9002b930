"""Targets given as a range (`ranges`): a list of versions, a git range every N commits, a directory of tarballs,
each expanded into targets before the study is validated."""

from __future__ import annotations

from pathlib import Path

import pytest

from dbsweep.errors import StudyError
from dbsweep.study import load_study

from ..bisectrepo import git

HEAD = """\
engine = "sqlite"
base = "{base}"
workspace = "{ws}"
series = true

[suite]
steps = ["point-query"]
"""


def _repo(d: Path, n: int) -> list[str]:
    d.mkdir()
    git(d, 0, "init", "--quiet", "--initial-branch=main")
    shas = []
    for i in range(n):
        (d / "f.txt").write_text(f"{i}\n")
        git(d, i, "add", "f.txt")
        git(d, i, "commit", "--quiet", "-m", f"c{i}")
        shas.append(git(d, i, "rev-parse", "HEAD"))
    return shas


def _study(tmp_path: Path, targets: str, base: str) -> Path:
    path = tmp_path / "s.toml"
    path.write_text(HEAD.format(base=base, ws=tmp_path / "ws") + targets)
    return path


def test_a_git_range_every_n_commits_keeps_both_ends(tmp_path: Path) -> None:
    shas = _repo(tmp_path / "repo", 8)
    targets = (
        f'[[targets]]\nname = "c"\nsource = "git:{tmp_path / "repo"}@{shas[0][:8]}..main"\nevery = 3\n'
        'config = "wal_normal"\n'
    )
    study = load_study(_study(tmp_path, targets, "c"))
    picked = [shas[i] for i in (0, 3, 6, 7)]  # every third from the start, and the end always
    assert [t.label for t in study.targets] == [f"c-{s[:12]}" for s in picked]
    assert [t.source for t in study.targets] == [f"git:{tmp_path / 'repo'}@{s}" for s in picked]
    assert study.base == f"c-{shas[0][:12]}" and all(t.config == "wal_normal" for t in study.targets)


def test_a_list_of_versions_and_a_directory_of_tarballs(tmp_path: Path) -> None:
    study = load_study(
        _study(tmp_path, '[[targets]]\nversions = ["3.34.1", "3.40.1", "3.46.1"]\nconfig = "wal_normal"\n', "3.34.1")
    )
    assert [(t.label, t.source) for t in study.targets] == [(v, v) for v in ("3.34.1", "3.40.1", "3.46.1")]
    d = tmp_path / "tarballs"
    d.mkdir()
    for v in ("3.9.2", "3.10.0", "3.40.1"):
        (d / f"sqlite-{v}.tar.gz").write_bytes(b"")
    (d / "README").write_text("not a tarball\n")
    study = load_study(_study(tmp_path, f'[[targets]]\nname = "up"\ntarballs = "{d}"\nconfig = "wal_normal"\n', "up"))
    assert [t.label for t in study.targets] == ["up-sqlite-3.9.2", "up-sqlite-3.10.0", "up-sqlite-3.40.1"]
    assert study.targets[0].source == f"tarball:{d / 'sqlite-3.9.2.tar.gz'}" and study.base == "up-sqlite-3.9.2"


@pytest.mark.parametrize(
    ("target", "words"),
    [
        ('versions = ["3.34.1"]\nsource = "3.40.1"', "versions and source exclude each other"),
        ('versions = "3.34.1"', "versions: a list of versions"),
        ('source = "3.40.1"\nevery = 2', "every: only a git range"),
        ('source = "git:{repo}@main..nosuch"', "its end: 'nosuch' is not a tag"),
        ('source = "git:{repo}@nosuch..main"', "the range start: 'nosuch' is not a tag"),
        ('source = "git:{repo}@main..main"', "name the same commit"),
        ('source = "git:{repo}@main..{first}"\nevery = 1', "is not an ancestor"),
        ('source = "git:{repo}@{first}..main"\nevery = 0', "every: a whole number of commits"),
        ('tarballs = "{repo}/nosuch"', "is not a directory"),
    ],
)
def test_a_bad_range_names_the_file_and_the_field(tmp_path: Path, target: str, words: str) -> None:
    shas = _repo(tmp_path / "repo", 3)
    text = "[[targets]]\n" + target.format(repo=tmp_path / "repo", first=shas[0]) + '\nconfig = "wal_normal"\n'
    with pytest.raises(StudyError) as e:
        load_study(_study(tmp_path, text, "x"))
    assert "s.toml: targets[0]: " in str(e.value) and words in str(e.value), str(e.value)
