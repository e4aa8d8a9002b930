"""The engine a contract test runs against: every test that asks for `engine_name` (or anything built on it)
runs once per registered engine the load client drives (`dbsweep.engines.registry.names()`, a server or an
embedded library), with that engine's `Support`. An engine whose own tool is the client (RocksDB's db_bench)
sends no statements and opens no connections: what of the contract applies to it (its lifecycle, a refused
config, a disturbed step, a resume) is tested in its own e2e module."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from dbsweep.engines.base import Engine, Instance
from dbsweep.engines.registry import engine_named, names

from .. import sourcebuilds
from ..conftest import running_instance, wait_no_processes
from .engines import SUPPORT, Support


def _client_engines() -> list[str]:
    return [n for n in names() if engine_named(n).kind != "tool"]


@pytest.fixture(scope="session", params=_client_engines())
def engine_name(request: pytest.FixtureRequest) -> str:
    name = str(request.param)
    if name not in SUPPORT:
        pytest.fail(f"engine {name!r} has no entry in tests/contract/engines.py (SUPPORT): add one")
    if sourcebuilds.needs_source_build(name) and not sourcebuilds.SLOW:
        pytest.skip(f"{name} has no prebuilt package here; its contract tests build it: DBSWEEP_SLOW_TESTS=1")
    return name


@pytest.fixture(scope="session")
def support(engine_name: str) -> Support:
    return SUPPORT[engine_name]


@pytest.fixture(scope="session")
def engine(engine_name: str) -> Engine:
    return engine_named(engine_name)


@pytest.fixture(scope="module")
def home(_test_root: Path, engine_name: str) -> Iterator[Path]:
    """A directory for the module's long-lived instance; nothing may run in it after the module."""
    d = _test_root / f"{engine_name}-{uuid.uuid4().hex[:8]}"
    d.mkdir(mode=0o755)
    yield d
    left = wait_no_processes(d, timeout=30)
    assert not left, f"processes left behind: {[p.info['cmdline'] for p in left]}"


@pytest.fixture(scope="module")
def server(engine_name: str, support: Support, home: Path) -> Iterator[Instance]:
    """One running instance with the small config, for the module."""
    with running_instance(engine_name, home / "srv", support.small_config) as s:
        yield s
