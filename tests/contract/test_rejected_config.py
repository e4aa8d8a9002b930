"""A setting the server refuses: the start fails with the server log's line that names the parameter and the
value, and in a run only that target's cells fail, with those lines; the other target goes on. An embedded
engine has no server log: its own account of the refusal (SQLite: the pragma, the config's file and line, and
what the library read back) takes the log line's place."""

from __future__ import annotations

from pathlib import Path

import pytest

from dbsweep import paths
from dbsweep.engines.base import Engine
from dbsweep.errors import ServerError

from ..conftest import dbsweep, processes_under, running_instance, write_study
from .engines import Support

pytestmark = pytest.mark.server


def test_the_server_log_names_the_refused_setting(engine_name: str, support: Support, tmp: Path) -> None:
    config, words = support.out_of_range
    with pytest.raises(ServerError) as e, running_instance(engine_name, tmp / "home", config):
        pass
    for line in words:
        assert line in str(e.value), str(e.value)
    assert not processes_under(tmp / "home")


def test_bad_setting_fails_the_target_with_the_server_log(
    engine_name: str, engine: Engine, support: Support, tmp: Path
) -> None:
    a, _ = support.configs
    config, words = support.bad_value
    configs = tmp / "configs" / engine_name
    configs.mkdir(parents=True)
    shipped = paths.configs_root() / engine_name / f"{a}{engine.config_suffix}"
    (configs / shipped.name).write_text(shipped.read_text())
    (configs / f"broken{engine.config_suffix}").write_text(config)
    study = write_study(tmp, engine=engine_name, config_a=a, config_b="broken")
    env = {"DBSWEEP_CONFIGS": str(tmp / "configs")}
    r = dbsweep("run", study, check=False, env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    out = r.stdout + r.stderr
    for line in words:
        assert line in out, out
    assert "2 cells done, 2 failed" in out
    st = dbsweep("status", study, env=env)
    assert "done 2, failed 2, pending 0" in st.stdout
