"""The server's account of a step: a watermark taken when it began, and `disturbance_since` naming, with its
evidence, a backend that was killed (the server crash-restarted every connection), a server that died, and a
server that is another process than the one that began; nothing when the server was left alone."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from dbsweep.engines.base import Engine, Instance

from ..conftest import running_instance, wait_for
from .engines import Support

pytestmark = pytest.mark.server


def _answers(support: Support, instance: Instance) -> bool:
    try:
        return support.query(instance, "SELECT 1") == [(1,)]
    except Exception:
        return False


def test_a_killed_backend_and_a_killed_server_are_named(
    engine_name: str, engine: Engine, support: Support, tmp: Path
) -> None:
    if engine.kind != "server":
        pytest.skip(f"{engine_name} has no server process to kill")
    with running_instance(engine_name, tmp / "home", support.small_config) as server:
        mark = server.watermark()
        assert server.pid == mark.pid and mark.log_offset > 0
        # Work that does not disturb the server is not a disturbance.
        assert support.query(server, "SELECT 1") == [(1,)]
        assert server.disturbance_since(mark) is None

        with support.session(server) as backend:
            assert backend != mark.pid
            os.kill(backend, signal.SIGKILL)
            wait_for(lambda: server.disturbance_since(mark) is not None, timeout=60)
        why = server.disturbance_since(mark)
        assert why is not None
        for words in support.crash_restart_words:
            assert words in why, why
        assert support.killed_backend in why
        # The same server came back from its crash restart: a new watermark holds nothing against it.
        wait_for(lambda: _answers(support, server), timeout=120)
        assert server.pid == mark.pid
        after = server.watermark()
        assert after.log_offset > mark.log_offset
        assert server.disturbance_since(after) is None

        # The server itself killed: it died, and the message says which process it was.
        os.kill(after.pid, signal.SIGKILL)
        wait_for(lambda: server.pid is None, timeout=60)
        died = server.disturbance_since(after)
        assert died is not None and f"PID {after.pid}" in died
        for words in support.died_words:
            assert words in died, died


def test_a_restarted_server_is_not_the_one_that_began(
    engine_name: str, engine: Engine, support: Support, tmp: Path
) -> None:
    if engine.kind != "server":
        pytest.skip(f"{engine_name} has no server process")
    with running_instance(engine_name, tmp / "home", support.small_config) as server:
        mark = server.watermark()
        server.stop()
        stopped = server.disturbance_since(mark)  # a server stopped under a step disturbed it too
        assert stopped is not None and f"PID {mark.pid}" in stopped
        server.start()
        assert server.pid != mark.pid
        why = server.disturbance_since(mark)
        assert why is not None and f"PID {mark.pid}" in why
