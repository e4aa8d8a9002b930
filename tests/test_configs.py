"""Config diffs: includes, parse errors, and settings a version lacks."""

from __future__ import annotations

from pathlib import Path

import pytest

from dbsweep import configs
from dbsweep.engines import postgres
from dbsweep.errors import DbsweepError

from .conftest import dbsweep, write_study


@pytest.fixture
def confdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "postgres"
    d.mkdir()
    monkeypatch.setenv("DBSWEEP_CONFIGS", str(tmp_path))
    return d


def test_include_is_inlined_and_later_settings_win(confdir: Path) -> None:
    (confdir / "base.conf").write_text("# base\nshared_buffers=8GB\njit = off  # no JIT\n")
    (confdir / "small.conf").write_text("include 'base.conf'\nshared_buffers = '1GB'\n")
    d = configs.load("postgres", "small")
    assert [(s.name, s.value) for s in d.settings] == [
        ("shared_buffers", "8GB"),
        ("jit", "off"),
        ("shared_buffers", "1GB"),
    ]
    assert "# ---- from base.conf ----" in d.text and "include" not in d.text.replace("# ---- from", "")
    assert d.settings[1].origin == "base.conf:3"


def test_include_loop_and_missing_include_are_errors(confdir: Path) -> None:
    (confdir / "a.conf").write_text("include 'b.conf'\n")
    (confdir / "b.conf").write_text("include 'a.conf'\n")
    with pytest.raises(DbsweepError, match=r"include loop: a.conf -> b.conf -> a.conf"):
        configs.load("postgres", "a")
    (confdir / "c.conf").write_text("include 'nope.conf'\n")
    with pytest.raises(DbsweepError, match=r"c.conf:1: includes 'nope.conf', which does not exist"):
        configs.load("postgres", "c")
    (confdir / "d.conf").write_text("shared_buffers\n")
    with pytest.raises(DbsweepError, match=r"d.conf:1: cannot read 'shared_buffers' as `name = value`"):
        configs.load("postgres", "d")


def test_every_shipped_config_parses() -> None:
    names = configs.available("postgres")
    assert {"cx10a_c2r24", "cx10b_c2r24", "cx10c_c2r24", "cx10d_c2r24", "cx10a_avbcef_c2r24"} <= set(names)
    for n in names:
        d = configs.load("postgres", n)
        assert d.settings, n
        assert d.text.startswith("#"), f"{n} must start with a comment saying what it changes and why"


def test_setting_the_version_lacks() -> None:
    install = postgres.system_install("system:15")
    supported = install.settings()
    assert "shared_buffers" in supported and "io_method" not in supported
    d = configs.load("postgres", "cx10c_c2r24")
    with pytest.raises(DbsweepError) as e:
        configs.fit_to_version(d, supported, install.short_version, set())
    msg = str(e.value)
    assert (
        f"config cx10c_c2r24 sets io_method (cx10c_c2r24.conf:4) (and io_workers), which Postgres "
        f"{install.short_version} does not have" in msg
    )
    assert "optional_settings" in msg
    text, skipped = configs.fit_to_version(d, supported, "15.18", {"io_method", "io_workers"})
    assert skipped == ["io_method", "io_workers"]
    assert "# not in Postgres 15.18, skipped: io_method=worker" in text


def test_study_with_unsupported_setting_fails_then_runs_when_optional(tmp: Path) -> None:
    study = write_study(tmp, config_b="cx10b_c2r24")
    # Refused before any work, as bad input: the installed binary is there to ask.
    r = dbsweep("run", study, check=False)
    assert r.returncode == 2
    assert "targets[1].config: config cx10b_c2r24 sets io_method" in r.stderr and "does not have" in r.stderr
    assert not (tmp / "ws" / "results.db").exists()
    text = study.read_text().replace("repeats = 1", 'repeats = 1\noptional_settings = ["io_method"]')
    study.write_text(text)
    r = dbsweep("run", study, "--fresh")
    assert "skipped settings Postgres 15" in r.stderr and "io_method" in r.stderr
    assert "0 failed" in r.stdout
