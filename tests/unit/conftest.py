"""Unit tests run without a server, root or an installed engine, by construction: every test sees the stand-in
for Debian's Postgres (`installed.py`) instead of /usr/lib/postgresql, no instance may initialise or start, and
the command lines they run (`cli`, `cli_process`) get the same stand-in."""

from __future__ import annotations

import io
import logging
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from dbsweep import say
from dbsweep.engines.base import Instance

from ..conftest import ROOT
from . import installed


@pytest.fixture(scope="session")
def system_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return installed.make(tmp_path_factory.mktemp("system") / "postgresql")


def _no_server(self: Instance, *args: object, **kwargs: object) -> None:
    raise AssertionError("a unit test tried to initialise or start a server: it belongs in contract/ or e2e/")


def _instance_classes(cls: type[Instance] = Instance) -> Iterator[type[Instance]]:
    for sub in cls.__subclasses__():
        # A stand-in a test defines (`standin.py`) keeps its data in files and starts no process.
        if not sub.__module__.startswith("tests."):
            yield sub
        yield from _instance_classes(sub)


@pytest.fixture(autouse=True)
def _no_engine_installed(system_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    installed.put_in_place(system_root, monkeypatch.setattr)
    from dbsweep.engines.registry import engine_named, names

    for name in names():
        engine_named(name)  # every engine's package imported, so every Instance class is known
    for cls in _instance_classes():
        for method in ("init", "start"):
            if method in vars(cls):
                monkeypatch.setattr(cls, method, _no_server)


@dataclass(frozen=True)
class Ran:
    """What a command line gave: its exit status, stdout and stderr."""

    returncode: int
    stdout: str
    stderr: str


def cli(*args: str | Path, env: dict[str, str] | None = None) -> Ran:
    """`dbsweep ARGS` in this process, as `main` runs it for a user (exit status, stdout, stderr), with the
    stand-in install in place: a command line in a process of its own costs a second of imports, and unit tests
    run dozens. `test_study.py` runs one in a process of its own (`cli_process`)."""
    from dbsweep import cli as command_line

    out, err = io.StringIO(), io.StringIO()
    logger = logging.getLogger("dbsweep")
    handlers = list(logger.handlers)
    with pytest.MonkeyPatch.context() as mp:
        for k, v in (env or {}).items():
            mp.setenv(k, v)
        mp.setenv("COLUMNS", "200")
        mp.setattr(command_line, "console", say.console(file=out, width=200, color_system=None))
        mp.setattr(command_line, "err", say.console(file=err, width=200, color_system=None, stderr=True))
        mp.setattr(sys, "argv", ["dbsweep", *map(str, args)])
        try:
            command_line.main()
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
        finally:
            logger.handlers[:] = handlers
    r = Ran(code, out.getvalue(), err.getvalue())
    assert "Traceback" not in r.stderr, r.stderr
    return r


def cli_process(system_root: Path, *args: str | Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`dbsweep ARGS` in a process of its own, as a user runs it, with the stand-in install in place."""
    r = subprocess.run(
        [sys.executable, "-c", installed.LAUNCH, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env={**installed.environment(system_root), "COLUMNS": "200", "NO_COLOR": "1"},
        check=False,
    )
    assert "Traceback" not in r.stderr, r.stderr
    return r


def refused(study: Path, verb: str = "validate") -> str:
    """The stderr of a command that refused `study` as bad input (status 2) before any work."""
    r = cli(verb, study)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert not (study.parent / "ws").exists(), "bad input must not create the workspace"
    return r.stderr
