"""An instance's life, as every engine lives it: init, start, probe, stop (idempotent), start again on the same
data directory, remove; nothing is left running at any point it should not be."""

from __future__ import annotations

import socket
from pathlib import Path

import psutil
import pytest

from dbsweep.engines.base import Engine
from dbsweep.engines.registry import engine_named, names

from ..conftest import processes_under, wait_no_processes
from .engines import SUPPORT, Support

pytestmark = pytest.mark.server


def test_every_registered_engine_has_its_test_support() -> None:
    clients = [n for n in names() if engine_named(n).kind != "tool"]
    assert clients and set(clients) <= set(SUPPORT), "add the engine's entry to tests/contract/engines.py"
    for name in clients:
        assert engine_named(name).name == name == SUPPORT[name].name


def test_init_start_probe_stop_remove(engine: Engine, support: Support, tmp: Path) -> None:
    install = support.install()
    instance = engine.instance(install, tmp / "home", "test", support.small_config, engine.server_user())
    assert not instance.initialized()
    instance.stop()  # never started: nothing to do, and no error
    instance.init()
    try:
        assert instance.initialized() and instance.datadir.is_dir()
        assert instance.pid is None  # initialised, not running
        instance.start()
        mark = instance.watermark()
        is_server = engine.kind == "server"
        if is_server:
            pid = instance.pid
            assert pid is not None and psutil.pid_exists(pid) and pid == mark.pid
        assert instance.server_version().startswith(install.short_version), (instance.server_version(), install)
        settings = {s["name"]: s for s in instance.settings()}
        assert support.small_setting in settings, settings
        if support.tmpdir_setting is not None:
            tmpdir = Path(str(settings[support.tmpdir_setting]["setting"]))
            assert tmpdir.is_relative_to(instance.home) and tmpdir.stat().st_mode & 0o077 == 0, tmpdir
        assert instance.statistics()
        size = instance.data_bytes()
        assert size is not None and (size > 0 if support.empty_database_on_disk else size == 0), size
        tcp, local = instance.access(), instance.access(via_socket=True)
        assert tcp.args
        if is_server:
            assert tcp.args != local.args
        else:  # one way in: the client opens the database file itself
            assert tcp == local
        assert not any(v in " ".join(tcp.args) for v in tcp.env.values()), "a secret on the command line"
        assert instance.disturbance_since(mark) is None

        instance.stop()
        assert instance.pid is None
        assert not wait_no_processes(instance.home, timeout=30), "stop left a process behind"
        instance.stop()  # idempotent
        assert not processes_under(instance.home)

        # The data directory outlives its server: a start on it answers again, with what it held.
        assert instance.initialized()
        instance.start()
        assert instance.server_version().startswith(install.short_version)
        assert (instance.data_bytes() or 0) > 0 or not support.empty_database_on_disk
    finally:
        instance.remove()
    assert not instance.home.exists()
    assert not wait_no_processes(tmp, timeout=30)
    instance.remove()  # removing twice is no error either


def test_init_again_starts_from_scratch(engine: Engine, support: Support, tmp: Path) -> None:
    instance = engine.instance(support.install(), tmp / "home", "test", support.small_config, engine.server_user())
    instance.init()
    try:
        instance.start()
        support.query(instance, "CREATE TABLE left_over (id integer)")
        instance.stop()
        instance.init()  # a fresh data directory: what the last one held is gone
        instance.start()
        with pytest.raises(Exception, match="left_over"):
            support.query(instance, "SELECT * FROM left_over")
    finally:
        instance.remove()


def test_a_port_taken_before_the_bind_is_given_up_for_another(
    engine: Engine, support: Support, tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process may bind the free port dbsweep found before the server does: the start tries another."""
    if engine.kind != "server":
        pytest.skip(f"{engine.name} is embedded: it listens on no port")
    from dbsweep.engines import servers

    taken = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    offered: list[int] = []
    real = servers.free_port

    def first_the_taken_one() -> int:
        offered.append(taken.getsockname()[1] if not offered else real())
        return offered[-1]

    monkeypatch.setattr(servers, "free_port", first_the_taken_one)
    instance = engine.instance(support.install(), tmp / "home", "test", support.small_config, engine.server_user())
    instance.init()
    try:
        instance.start()
        assert len(offered) == 2 and instance.server_version()
        assert instance.access().args != [] and str(offered[1]) in " ".join(instance.access().args)
    finally:
        taken.close()
        instance.remove()
    assert not wait_no_processes(instance.home, timeout=30)
