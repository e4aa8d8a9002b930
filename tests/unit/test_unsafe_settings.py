"""Configs cannot change who gets in or what runs: every engine refuses its unsafe settings (named as its server
reads them) with the config's file and line, why, and how a study allows them; a study that allows one by name
runs it, and its provenance and reports say so; an allowance that names nothing unsafe is an error."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from dbsweep import configs, provenance, say, unsafe
from dbsweep.configdiff import ConfigDiff
from dbsweep.engines.base import Install
from dbsweep.engines.registry import engine_named
from dbsweep.errors import DbsweepError, StudyError
from dbsweep.report import data, markdown, terminal
from dbsweep.results.model import CellKey, CellResult
from dbsweep.results.store import now
from dbsweep.study import Study, load_study

from ..conftest import ROOT, write_study
from .conftest import cli, refused
from .handmade import HAND, add_target, new_store, summary


def _diff(engine: str, text: str, name: str = "x") -> ConfigDiff:
    suffix = engine_named(engine).config_suffix
    lines = [(line, f"{name}{suffix}:{n}") for n, line in enumerate(text.splitlines(), 1)]
    return ConfigDiff(name, text, engine_named(engine).parse_config(lines))


def _refusal(engine: str, text: str, allowed: tuple[str, ...] = ()) -> str:
    with pytest.raises(DbsweepError) as e:
        engine_named(engine).refuse_unsafe(_diff(engine, text), allowed)
    return str(e.value)


def _unsafe(engine: str, text: str) -> list[str]:
    return [u.name for u in engine_named(engine).unsafe_in(_diff(engine, text).settings)]


# ---- every engine refuses, with the file, the line, the reason and the study's fix -----------------------------


@pytest.mark.parametrize(
    ("engine", "text", "expected"),
    [
        (
            "mariadb",
            "innodb_buffer_pool_size = 1G\ninit_file = /tmp/x.sql\n",
            "config x sets init_file (x.cnf:2), which runs the SQL of a file at every start, with every privilege: "
            "it may create accounts. A study that means it must say so at its top level: "
            'allow_unsafe_settings = ["init_file"].',
        ),
        (
            "postgres",
            "shared_buffers = 1GB\narchive_command = 'cp %p /tmp/%f'\n",
            "config x sets archive_command (x.conf:2), which runs a shell command for every WAL segment. "
            'A study that means it must say so at its top level: allow_unsafe_settings = ["archive_command"].',
        ),
        (
            "sqlite",
            "journal_mode = WAL\ntemp_store_directory = '/tmp'\n",
            "config x sets temp_store_directory (x.conf:2), which puts temporary files in a directory of its "
            "choosing, outside the workspace. A study that means it must say so at its top level: "
            'allow_unsafe_settings = ["temp_store_directory"].',
        ),
        (
            "rocksdb",
            "cache_size = 1024\nwal_dir = /tmp/wal\n",
            "config x sets wal_dir (x.conf:2), which writes the write-ahead log outside the instance's directory. "
            'A study that means it must say so at its top level: allow_unsafe_settings = ["wal_dir"].',
        ),
    ],
)
def test_each_engine_refuses_an_unsafe_setting_naming_file_line_and_reason(
    engine: str, text: str, expected: str
) -> None:
    assert _refusal(engine, text) == expected


def test_every_unsafe_line_is_named_and_every_one_must_be_allowed() -> None:
    text = "plugin_load_add = ha_connect.so\ninit-connect = 'SET x = 1'\ninit_file = /a.sql\n"
    msg = _refusal("mariadb", text)
    assert msg.startswith("config x sets plugin_load_add (x.cnf:1), which loads plugins")
    assert "(also unsafe: init_connect (x.cnf:2), init_file (x.cnf:3))" in msg
    assert msg.endswith('allow_unsafe_settings = ["plugin_load_add", "init_connect", "init_file"].')
    # Allowing some is not allowing all.
    assert 'allow_unsafe_settings = ["init_file"].' in _refusal("mariadb", text, ("plugin_load_add", "init_connect"))


def test_each_engine_names_its_unsafe_settings_with_a_reason() -> None:
    for name in ("postgres", "mariadb", "sqlite", "rocksdb"):
        listed = engine_named(name).unsafe_settings
        assert listed and all(reason and not reason.endswith(".") for reason in listed.values()), name
    assert {"init_file", "init_connect", "plugin_load", "plugin_load_add"} <= set(
        engine_named("mariadb").unsafe_settings
    )
    assert {"hba_file", "shared_preload_libraries", "archive_command", "restore_command"} <= set(
        engine_named("postgres").unsafe_settings
    )
    assert {"flagfile", "wal_dir", "backup_dir"} <= set(engine_named("rocksdb").unsafe_settings)


# ---- names as each server reads them ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    ["init_file = /a.sql", "init-file=/a.sql", "loose_init_file = /a.sql", "loose-init-file = /a.sql", "INIT-File=/a"],
)
def test_mariadb_reads_unsafe_names_as_the_server_does(line: str) -> None:
    assert _unsafe("mariadb", line) == ["init_file"]
    # An allowance is read the same way.
    engine_named("mariadb").refuse_unsafe(_diff("mariadb", line), ["loose-Init-File"])


@pytest.mark.parametrize(
    "line", ["skip-grant-tables", "skip_grant_tables", "loose-skip-grant-tables", "enable-skip-grant-tables"]
)
def test_mariadb_never_lets_a_config_skip_the_grant_tables(line: str) -> None:
    # Who may connect is dbsweep's (generated credentials): no study can allow it, so it is refused as read.
    with pytest.raises(DbsweepError, match=rf"x.cnf:1: {line} cannot be set in a config: every server has a generated"):
        _diff("mariadb", line)


def test_mariadb_unsafe_only_when_on_inside_or_not_myrocks() -> None:
    assert _unsafe("mariadb", "allow-suspicious-udfs") == ["allow_suspicious_udfs"]
    assert (
        _unsafe("mariadb", "skip-allow-suspicious-udfs\nallow_suspicious_udfs = OFF\ndisable-allow-suspicious-udfs")
        == []
    )
    # A log in the data directory (the server's working directory) is safe; elsewhere it is not.
    assert _unsafe("mariadb", "general_log_file = general.log\nlog-bin\nlog_bin = binlog\nskip-log-bin") == []
    assert _unsafe("mariadb", "general_log_file = /tmp/g.log\nslow-query-log-file = ../s.log\nlog_bin=~/b") == [
        "general_log_file",
        "slow_query_log_file",
        "log_bin",
    ]
    # The MyRocks plugin is what dbsweep loads itself for a config that uses it; any other plugin is code.
    assert _unsafe("mariadb", "plugin_load_add = ha_rocksdb.so\nplugin-load = rocksdb=ha_rocksdb") == []
    assert _unsafe("mariadb", "plugin_load_add = ha_connect.so\nplugin_load = ha_rocksdb.so;ha_spider") == [
        "plugin_load_add",
        "plugin_load",
    ]


def test_postgres_reads_names_in_any_case_and_keeps_logs_in_the_data_directory() -> None:
    msg = _refusal("postgres", "Shared_Preload_Libraries = 'pg_stat_statements'\n")
    assert msg.startswith("config x sets Shared_Preload_Libraries (x.conf:1), which loads shared libraries")
    assert msg.endswith('allow_unsafe_settings = ["shared_preload_libraries"].')
    engine_named("postgres").refuse_unsafe(
        _diff("postgres", "SHARED_preload_libraries = 'pg_stat_statements'\n"), ["SHARED_PRELOAD_LIBRARIES"]
    )
    assert _unsafe("postgres", "log_directory = 'log'\nlog_filename = 'pg-%a.log'\nexternal_pid_file = 'x.pid'") == []
    assert _unsafe("postgres", "log_directory = '/var/log'\nlog_filename = '../x.log'\nhba_file = 'pg_hba.conf'") == [
        "log_directory",
        "log_filename",
        "hba_file",
    ]


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("port = 5433", "dbsweep picks a free loopback port"),
        ("LISTEN_ADDRESSES = '*'", "servers listen on loopback only"),
        ("unix_socket_directories = '/tmp'", "private socket"),
        ("data_directory = '/var/lib/postgresql'", "the data directory is the instance's own"),
    ],
)
def test_postgres_never_lets_a_config_move_its_listening_or_data(line: str, why: str) -> None:
    with pytest.raises(DbsweepError, match=rf"x.conf:1: {line.split()[0]} cannot be set in a config: .*{why}"):
        _diff("postgres", line)


# ---- the fit at run time ------------------------------------------------------------------------------------------


def test_the_fit_refuses_what_the_study_does_not_allow() -> None:
    engine = engine_named("postgres")
    install = engine.system_install("system:15")
    diff = _diff("postgres", "shared_buffers = 1GB\nshared_preload_libraries = 'pg_stat_statements'\n")
    with pytest.raises(DbsweepError, match=r"shared_preload_libraries \(x.conf:2\), which loads shared libraries"):
        engine.fit_config(diff, install, set())
    assert engine.fit_config(diff, install, set(), ["Shared_Preload_Libraries"]) == (diff.text, [])
    # Allowing another setting allows not this one.
    with pytest.raises(DbsweepError, match="allow_unsafe_settings"):
        engine.fit_config(diff, install, set(), ["hba_file"])


# ---- the study ----------------------------------------------------------------------------------------------------


def _configs(tmp: Path, monkeypatch: pytest.MonkeyPatch, b_text: str) -> None:
    """Postgres configs: the base's as shipped, and b's own."""
    d = tmp / "configs" / "postgres"
    d.mkdir(parents=True)
    (d / "cx10a_c2r24.conf").write_text((ROOT / "configs" / "postgres" / "cx10a_c2r24.conf").read_text())
    (d / "b.conf").write_text(b_text)
    monkeypatch.setenv("DBSWEEP_CONFIGS", str(tmp / "configs"))


def _study_file(tmp: Path, allow: str = "") -> Path:
    path = write_study(tmp, config_b="b")
    if allow:
        path.write_text(path.read_text().replace("repeats =", f"allow_unsafe_settings = {allow}\nrepeats =", 1))
    return path


def test_validate_refuses_an_unsafe_setting_before_any_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _configs(tmp_path, monkeypatch, "shared_buffers = 1GB\nhba_file = '/etc/postgresql/pg_hba.conf'\n")
    err = refused(_study_file(tmp_path))
    assert "t.toml: targets[1].config: config b sets hba_file (b.conf:2), which replaces the rules of who may" in err
    assert 'allow_unsafe_settings = ["hba_file"]' in err
    assert refused(_study_file(tmp_path), "run") == err


def test_an_allowance_lets_the_study_load_and_validate_warns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _configs(tmp_path, monkeypatch, "shared_preload_libraries = 'pg_stat_statements'\n")
    path = _study_file(tmp_path, '["Shared_Preload_Libraries"]')
    study = load_study(path)
    assert study.allow_unsafe_settings == ["Shared_Preload_Libraries"]
    r = cli("validate", path)
    assert r.returncode == 0, r.stderr
    said = " ".join(r.stderr.split())
    assert (
        said.startswith("warning: ")
        and (
            "t.toml: targets[1].config: config b sets shared_preload_libraries (b.conf:1), which loads shared "
            "libraries into the server at start; the study allows it (allow_unsafe_settings)"
        )
        in said
    )


def test_an_allowance_that_names_nothing_unsafe_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _configs(tmp_path, monkeypatch, "shared_buffers = 1GB\n")
    with pytest.raises(StudyError) as e:
        load_study(_study_file(tmp_path, '["archive_command", "shared_buffers", "port"]'))
    problems = [p.split(": ", 1)[1] for p in e.value.problems]
    assert len(problems) == 2
    assert problems[0].startswith(
        "allow_unsafe_settings[1]: 'shared_buffers' is not a setting Postgres refuses as unsafe; those a study may "
        "allow: archive_cleanup_command, archive_command,"
    )
    assert problems[1].startswith("allow_unsafe_settings[2]: 'port' is not a setting Postgres refuses as unsafe")


# ---- provenance and reports ------------------------------------------------------------------------------------


class _Ran:
    """What provenance.record asks of a running instance."""

    def __init__(self, config_text: str) -> None:
        self.config_text = config_text

    def server_version(self) -> str:
        return "15.18"

    def settings(self) -> list[dict[str, Any]]:
        return []


def _record(study: Study, target: str, config_text: str) -> dict[str, Any]:
    return provenance.record(
        host={},
        load_client="dbsweep-load 0",
        study=study,
        target=study.target(target),
        install=Install(Path("/usr/lib/postgresql/15/bin"), "15.18", "system"),
        instance=_Ran(config_text),  # type: ignore[arg-type]
        server_user=None,
        placement={},
        reloaded=False,
    )


def test_the_provenance_names_what_was_allowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = "shared_buffers = 1GB\nshared_preload_libraries = 'pg_stat_statements'\n"
    _configs(tmp_path, monkeypatch, text)
    study = load_study(_study_file(tmp_path, '["shared_preload_libraries"]'))
    record = _record(study, "b", text)
    assert record["config"][unsafe.PROVENANCE_KEY] == {
        "shared_preload_libraries": "loads shared libraries into the server at start"
    }
    assert record["config"]["diff"] == text and record["engine"]["server_version"] == "15.18"
    assert unsafe.PROVENANCE_KEY not in _record(study, "a", "shared_buffers = 1GB\n")["config"]


def test_the_reports_say_which_unsafe_settings_a_target_ran_with(tmp_path: Path) -> None:
    toml = HAND.format(ws=tmp_path / "ws")
    path = tmp_path / "hand.toml"
    path.write_text(toml)
    store = new_store(path, toml)
    allowed = {"init_file": "runs the SQL of a file at every start, with every privilege: it may create accounts"}
    try:
        for t, config in (("a", "cx10a_c2r24"), ("b", "cx10a_sb1g_c2r24")):
            target_id = add_target(store, t, config)
            prov: dict[str, Any] = {"target": {"name": t}, "config": {"name": config, "diff": ""}}
            if t == "b":
                prov["config"][unsafe.PROVENANCE_KEY] = allowed
            store.write_cell(
                1,
                target_id,
                CellResult(
                    CellKey(t, "point-query_range=100", 1, 1),
                    "done",
                    now(),
                    now(),
                    summary=summary(1000.0),
                    provenance=prov,
                ),
            )
        report = data.gather(load_study(path), store, 1)
    finally:
        store.close()
    note = (
        "b: unsafe settings allowed by the study: init_file (runs the SQL of a file at every start, with every "
        "privilege: it may create accounts)."
    )
    assert note in report.notes and len([n for n in report.notes if "unsafe" in n]) == 1
    assert f"> note: {note}" in markdown.render(report)
    assert ("unsafe settings allowed", note.split("study: ", 1)[1].rstrip(".")) in report.provenance["b"].facts()
    buf = io.StringIO()
    terminal.render(report, say.console(file=buf, width=400))
    assert f"note: {note}" in buf.getvalue()


def test_shipped_configs_set_nothing_unsafe() -> None:
    for engine in ("postgres", "mariadb", "sqlite", "rocksdb"):
        for name in configs.available(engine):
            assert engine_named(engine).unsafe_in(configs.load(engine, name).settings) == [], (engine, name)
