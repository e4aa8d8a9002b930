"""Config diffs: includes, parse errors, the connection limit, and settings a version lacks (fitted by the
engine against what its binary knows)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dbsweep import configs
from dbsweep.engines.registry import engine_named
from dbsweep.errors import DbsweepError


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


def test_a_config_is_named_never_a_path(confdir: Path) -> None:
    (confdir / "ok.conf").write_text("jit = off\n")
    with pytest.raises(DbsweepError, match=r"'\.\./ok' is not a config name"):
        configs.load("postgres", "../ok")
    with pytest.raises(DbsweepError, match=r"no config 'nope' in .*; have: ok"):
        configs.load("postgres", "nope")


def test_every_shipped_config_parses() -> None:
    names = configs.available("postgres")
    assert {"cx10a_c2r24", "cx10b_c2r24", "cx10c_c2r24", "cx10d_c2r24", "cx10a_avbcef_c2r24"} <= set(names)
    for n in names:
        d = configs.load("postgres", n)
        assert d.settings, n
        assert d.text.startswith("#"), f"{n} must start with a comment saying what it changes and why"


def test_the_connection_limit_comes_from_the_config(confdir: Path) -> None:
    engine = engine_named("postgres")
    (confdir / "wide.conf").write_text("max_connections = '200'  # a comment\nmax_connections = 0x12C\n")
    (confdir / "plain.conf").write_text("jit = off\n")
    (confdir / "odd.conf").write_text("max_connections = lots\n")
    assert engine.connection_limit(configs.load("postgres", "wide")) == (300, "wide.conf:2")  # the last one wins
    assert engine.connection_limit(configs.load("postgres", "plain")) == (100, "Postgres's default")
    with pytest.raises(DbsweepError, match=r"sets max_connections = 'lots' \(odd.conf:1\), which is not an integer"):
        engine.connection_limit(configs.load("postgres", "odd"))


def test_setting_the_version_lacks() -> None:
    engine = engine_named("postgres")
    install = engine.system_install("system:15")
    supported = engine.known_settings(install)
    assert "shared_buffers" in supported and "io_method" not in supported
    d = configs.load("postgres", "cx10c_c2r24")
    with pytest.raises(DbsweepError) as e:
        engine.fit_config(d, install, set())
    msg = str(e.value)
    assert (
        f"config cx10c_c2r24 sets io_method (cx10c_c2r24.conf:4) (and io_workers), which Postgres "
        f"{install.short_version} does not have" in msg
    )
    assert "optional_settings" in msg
    text, skipped = engine.fit_config(d, install, {"io_method", "io_workers"})
    assert skipped == ["io_method", "io_workers"]
    assert f"# not in Postgres {install.short_version}, skipped: io_method=worker" in text
    # A config the version has every setting of is applied as written.
    same = configs.load("postgres", "cx10a_c2r24")
    assert engine.fit_config(same, install, set()) == (same.text, [])
