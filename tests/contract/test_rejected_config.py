"""A setting the server refuses: the start fails with the server log's line that names the parameter and the
value; a run refuses a value the engine can check before any work, in the engine's words; and a value only a
start can refuse fails that target's cells in a run, with the server log's lines; the other target goes on.
An embedded engine has no server log: its own account of the refusal (SQLite: the pragma, the config's file
and line, and what the library read back) takes the log line's place."""

from __future__ import annotations

from pathlib import Path

import pytest

from dbsweep.engines.base import Engine
from dbsweep.errors import ServerError

from ..conftest import dbsweep, own_configs, processes_under, running_instance, write_study
from .engines import Support

pytestmark = pytest.mark.server


def test_the_server_log_names_the_refused_setting(engine_name: str, support: Support, tmp: Path) -> None:
    config, words = support.out_of_range
    with pytest.raises(ServerError) as e, running_instance(engine_name, tmp / "home", config):
        pass
    for line in words:
        assert line in str(e.value), str(e.value)
    assert not processes_under(tmp / "home")


def _broken_study(engine_name: str, support: Support, tmp: Path, config: str) -> Path:
    """A study whose target b runs `config` (as configs/ENGINE/broken), target a a shipped config."""
    a, _ = support.configs
    own_configs(tmp, engine_name, a, broken=config)
    return write_study(tmp, engine=engine_name, config_a=a, config_b="broken")


def test_a_bad_value_is_refused_before_any_work_in_the_engines_words(
    engine_name: str, support: Support, tmp: Path
) -> None:
    config, words = support.bad_value
    study = _broken_study(engine_name, support, tmp, config)
    r = dbsweep("run", study, check=False, env={"DBSWEEP_CONFIGS": str(tmp / "configs")})
    assert r.returncode == 2, r.stdout + r.stderr
    said = " ".join(r.stderr.split())
    for line in words:
        assert line in said, said
    assert "targets[1].config" in said and "broken" in said
    assert not (tmp / "ws" / "results.db").exists()


def test_a_value_only_the_start_refuses_fails_the_target_with_the_server_log(
    engine_name: str, engine: Engine, support: Support, tmp: Path
) -> None:
    if support.start_refused is None:
        pytest.skip(f"no value is known here that {engine.title} takes until its start reads it")
    config, words = support.start_refused
    study = _broken_study(engine_name, support, tmp, config)
    env = {"DBSWEEP_CONFIGS": str(tmp / "configs")}
    r = dbsweep("run", study, check=False, env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    out = r.stdout + r.stderr
    for line in words:
        assert line in out, out
    assert "2 cells done, 2 failed" in out
    st = dbsweep("status", study, env=env)
    assert "done 2, failed 2, pending 0" in st.stdout
