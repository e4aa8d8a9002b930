"""Runs dbsweep-load for one step and reads its JSON lines. The arguments come from the suite (what to run)
and the instance (how to reach it: `engines.base.Access`)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from dbsweep import paths, procs
from dbsweep.engines.base import Access, Instance
from dbsweep.errors import StepError
from dbsweep.results.model import StepResult


class Client(Protocol):
    """What runs a suite's command against an instance and reads its result: `run` below (dbsweep-load), or a
    suite's driver of the engine's own tool."""

    def __call__(
        self,
        command: Sequence[str],
        conn: Access,
        log: Path,
        on_second: Callable[[dict[str, Any]], None] | None = None,
        *,
        cpus: frozenset[int] | None = None,
    ) -> StepOutput: ...


def connection_to(instance: Instance, via_socket: bool = False) -> Access:
    """How the load client reaches a running instance: loopback TCP, or its private Unix socket."""
    return instance.access(via_socket)


@dataclass
class StepOutput:
    result: StepResult
    seconds: list[dict[str, Any]] = field(default_factory=list)


def version() -> str:
    r = subprocess.run([paths.load_binary(), "--version"], capture_output=True, text=True, check=False)
    return r.stdout.strip()


def run(
    command: Sequence[str],
    conn: Access,
    log: Path,
    on_second: Callable[[dict[str, Any]], None] | None = None,
    *,
    cpus: frozenset[int] | None = None,
    on_start: Callable[[int], None] | None = None,
    on_summary: Callable[[], None] | None = None,
) -> StepOutput:
    """Runs `dbsweep-load COMMAND ...`; returns its result (the summary envelope, parsed) and per-second
    lines. `on_start` gets the client's pid (for samplers), `cpus` pins it."""
    exe = paths.load_binary()
    env = {**os.environ, **conn.env}
    log.parent.mkdir(parents=True, exist_ok=True)
    seconds: list[dict[str, Any]] = []
    summary: dict[str, Any] | None = None
    error: str | None = None
    with log.open("w") as err:
        proc = procs.spawn(
            [*conn.wrapper, exe, *command, *conn.args],
            stdout=subprocess.PIPE,
            stderr=err,
            env=env,
            text=True,
            cpus=cpus,
        )
        try:
            if on_start is not None:
                on_start(proc.pid)
            assert proc.stdout is not None
            for line in proc.stdout:
                try:
                    msg = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if not isinstance(msg, dict):
                    continue  # not one of the client's lines
                kind = msg.get("type")
                if kind == "second":
                    seconds.append(msg)
                    if on_second is not None:
                        on_second(msg)
                elif kind == "summary":
                    summary = msg
                    if on_summary is not None:
                        on_summary()
                elif kind == "error":
                    error = str(msg.get("message"))
            proc.wait()
        finally:
            procs.terminate(proc)
    if proc.returncode is not None and proc.returncode < 0:
        how = procs.killed_by(proc.returncode)
        raise StepError(f"the load client (dbsweep-load {command[0]}) was killed by {how} before the step ended")
    if proc.returncode != 0 or summary is None:
        if error is None:
            tail = log.read_text(errors="replace").strip().splitlines()[-5:]
            error = "; ".join(tail) or f"exit code {proc.returncode}"
        raise StepError(f"dbsweep-load {command[0]} failed: {error}")
    return StepOutput(result=StepResult.from_envelope(summary), seconds=seconds)
