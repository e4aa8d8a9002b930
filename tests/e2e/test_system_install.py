"""Debian's prebuilt Postgres as the engine finds it (`source = "system"`), and the unit tests' stand-in for it
(unit/installed.py) held against it: the same setting names, the same version line, pg_config's keys."""

from __future__ import annotations

import subprocess

import pytest

from dbsweep import configs
from dbsweep.engines.postgres import install as postgres_install
from dbsweep.engines.registry import engine_named
from dbsweep.errors import DbsweepError

from ..unit import installed

pytestmark = [
    pytest.mark.server,
    pytest.mark.skipif("15" not in postgres_install.system_majors(), reason="needs Debian's Postgres 15"),
]


def test_the_stand_in_knows_the_settings_the_installed_15_knows() -> None:
    engine = engine_named("postgres")
    real = engine.known_settings(engine.system_install("system:15"))
    stand_in = set(installed.SETTINGS.read_text().split())
    assert stand_in == real, f"refresh {installed.SETTINGS.name}: {sorted(stand_in ^ real)}"


def test_the_stand_in_answers_as_the_installed_15_does() -> None:
    real = engine_named("postgres").system_install("system:15")
    stand_in = postgres_install.Install(real.bindir, installed.VERSION, "system:15")
    assert real.short_version.split(".")[0] == stand_in.short_version.split(".")[0] == installed.MAJOR
    assert real.version.startswith("postgres (PostgreSQL) 15.") and "(Debian " in real.version
    assert real.provenance["source_identity"].startswith("postgresql-15 15.")
    out = subprocess.run([real.bindir / "pg_config"], capture_output=True, text=True, check=True).stdout
    keys = {line.partition(" = ")[0] for line in out.splitlines()}
    assert set(installed.PG_CONFIG) <= keys
    assert "-O2" in real.provenance["cflags"] and "--enable-debug" in real.provenance["configure"]


def test_the_installed_15_lacks_a_setting_of_18() -> None:
    engine = engine_named("postgres")
    install = engine.system_install("system:15")
    assert "io_method" not in engine.known_settings(install)
    with pytest.raises(DbsweepError, match=rf"sets io_method .* which Postgres {install.short_version} does not have"):
        engine.fit_config(configs.load("postgres", "cx10c_c2r24"), install, set())


def test_a_major_that_is_not_installed_is_named() -> None:
    with pytest.raises(DbsweepError, match=r"source 'system:9': Postgres 9 is not installed; have: .*15"):
        engine_named("postgres").system_install("system:9")
