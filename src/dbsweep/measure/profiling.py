"""A sampled CPU profile of the server while one client runs a step: where its time goes, as flame graphs.

An opt-in pass after the timed cells, like the instruction pass (`measure.profile`): the server starts from the
same pristine copy of the loaded tables (no valgrind), its cache is warmed, and `perf record` samples every
process of the server (the postmaster, its background processes and the backends it forks) while one client
runs the step for `seconds`; `perf stat` counts beside it, so hardware counters per operation come with the
profile where the host has them (recorded as unavailable where not). The samples are folded into stacks at
once and kept as text; the report draws them.

Stacks need frame pointers or DWARF unwinding: a build with -fno-omit-frame-pointer (Debian's) is sampled with
frame pointers, any other with DWARF (larger files, the same shape).
"""

from __future__ import annotations

import dataclasses
import functools
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dbsweep import loadclient
from dbsweep.engines.base import Engine, EngineError, Install
from dbsweep.errors import DbsweepError, StepError
from dbsweep.measure import instructions, profile

FREQUENCY = 499  # samples per second and CPU: not a multiple of common timer rates
DWARF_STACK = "dwarf,16384"
# Trying the host's perf costs about 1.5 s; it does not change within a run, so once per process is enough.
_support = functools.cache(profile.detect)


@dataclass(frozen=True)
class StepProfile:
    """One target's profile of one step: folded stacks (stack -> samples) and what else perf counted."""

    step: str
    command: list[str]
    seconds: float  # measured by the load client
    events: int
    samples: int
    folded: dict[str, int]
    event: str
    frequency: int
    call_graph: str
    # perf stat's counts over the run, per event of the step; None where the host cannot count the event.
    per_event: dict[str, float | None]
    perf_version: str
    wall_s: float
    reused_data: bool

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["folded"] = profile.format_folded(self.folded)
        return d


def call_graph_for(engine: Engine, install: Install) -> str:
    """Frame pointers when the build keeps them, else DWARF unwinding."""
    return "fp" if "-fno-omit-frame-pointer" in engine.compile_flags(install) else DWARF_STACK


def profile_step(
    engine: Engine,
    install: Install,
    config_text: str,
    home: Path,
    *,
    step: str,
    load: list[list[str]],
    command: list[str],
    tables: list[str],
    say: Callable[[str], None] | None = None,
) -> StepProfile:
    """Samples the server while the load client runs `command` (one client, timed) from the pristine copy in
    `home` (made by `load` unless an earlier pass left it). Every process started here is stopped on return,
    on error and on Ctrl-C."""
    say = say or (lambda _msg: None)
    t0 = time.monotonic()
    support = _support()
    if not support.can_sample:
        raise DbsweepError(f"no profile: {support.reason}")
    if engine.kind != "server":
        raise DbsweepError(f"no profile: {engine.title} runs inside its client, which the pass does not sample")
    home = home.resolve()
    instance = instructions.quiet_instance(engine, install, config_text, home)
    out_dir = home / "perf"
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir(parents=True)
    graph = call_graph_for(engine, install)
    try:
        reused = instructions.pristine(instance, install, load, home, say)
        instructions.restore_pristine(instance, home)
        instance.wrapper = None
        instance.start()
        try:
            instance.prewarm(tables)
        except EngineError as e:
            raise StepError(f"warming the cache failed: {e}") from e
        assert instance.pid is not None
        # The server's lasting processes (the warm-up's connection may still be exiting: perf refuses a pid that
        # is gone); the backends the client's connection forks are followed from the postmaster.
        pids = sorted(instance.roles()) or profile.with_children(instance.pid)
        say(f"{step}: sampling {len(pids)} server processes ({graph})")
        with (
            profile.Counter(pids, out_dir=out_dir) as counter,
            profile.Recorder(pids, out_dir, frequency=FREQUENCY, call_graph=graph) as rec,
        ):
            out = loadclient.run(command, loadclient.connection_to(instance), out_dir / "client.log")
        s = out.result.flat()
        if s.get("error_count"):
            raise StepError(f"dbsweep-load {' '.join(command[:2])} had {s['error_count']} errors while sampled")
    finally:
        instance.stop()
    folded = profile.fold(rec.data)
    if not folded:
        raise StepError(f"perf recorded no samples of the server during {step} ({rec.messages.strip()[-200:]})")
    events = int(s["events"]) + int(s.get("warmup_events", 0))
    per_event = {k: (float(v) / events if v is not None and events else None) for k, v in counter.counts.items()}
    rec.data.unlink(missing_ok=True)  # the folded stacks are the record; perf.data can be tens of megabytes
    return StepProfile(
        step=step,
        command=command,
        seconds=float(s.get("seconds") or 0),
        events=events,
        samples=profile.total_samples(folded),
        folded=folded,
        event=rec.event,
        frequency=FREQUENCY,
        call_graph=graph,
        per_event=per_event,
        perf_version=support.version or "",
        wall_s=time.monotonic() - t0,
        reused_data=reused,
    )
