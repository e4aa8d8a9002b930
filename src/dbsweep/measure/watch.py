"""What the samplers and the server saw during one step: the measured window, hardware cost per
operation, per-second host samples, sizes and the server's statistics afterwards."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dbsweep.engines.base import EngineError, Instance
from dbsweep.measure import Interval, Sampler, dir_size, per_op


@dataclass
class StepRun:
    """A finished step: the client's summary and per-second lines, and what was measured around it."""

    summary: dict[str, Any]
    lines: list[dict[str, Any]]
    measures: dict[str, Any] | None = None
    per_op: dict[str, float | None] | None = None
    host_samples: list[dict[str, Any]] | None = None
    server_stats: dict[str, Any] | None = None
    histograms: dict[str, str] = field(default_factory=dict)


def _interval(i: Interval, origin: float) -> dict[str, Any]:
    return {
        "t": round(i.t1 - origin, 3),
        "seconds": round(i.seconds, 4),
        "host": dataclasses.asdict(i.host),
        "device": dataclasses.asdict(i.device) if i.device is not None else None,
        "server": dataclasses.asdict(i.server),
        "client": dataclasses.asdict(i.client) if i.client is not None else None,
    }


class StepWatch:
    """Marks the measured part of a step on the samplers' clock: from the end of the client's warm-up
    (or its start) to its summary, taken while the client still runs so none of its CPU is lost."""

    def __init__(self, sampler: Sampler, tick: Callable[[dict[str, Any]], None]) -> None:
        self.sampler = sampler
        self.tick = tick
        self.started: float | None = None
        self.warm_end: float | None = None
        self.ended: float | None = None

    def on_start(self, pid: int) -> None:
        self.started = time.monotonic()
        self.sampler.attach_client(pid)

    def on_line(self, line: dict[str, Any]) -> None:
        if line.get("phase") == "warmup":
            self.warm_end = time.monotonic()
        self.tick(line)

    def on_summary(self) -> None:
        self.ended = time.monotonic()
        # The client is about to exit: sample it now, or its last second of CPU would be lost.
        self.sampler.sample_now()

    def finish(self, run: StepRun, instance: Instance) -> None:
        """Fills in the measures; a sampler problem is recorded, never fails the step."""
        s = run.summary
        t0 = self.warm_end or self.started
        t1 = self.ended or time.monotonic()
        if t0 is not None and t1 > t0:
            m = self.sampler.window(t0, t1)
            measures = m.as_dict() | {"server_cpu_s": m.server_cpu_s, "client_cpu_s": m.client_cpu_s}
            # The window is the samplers' and a little longer or shorter than the client's measured
            # seconds, so operations in it come from the step's rate (the method's normalisation).
            rate = float(s.get("rate") or 0.0)
            run.per_op = per_op(m, rate * m.elapsed_s)
            origin = self.started or t0
            run.host_samples = [_interval(i, origin) for i in self.sampler.samples()]
        else:
            measures = {"note": "no measured window"}
        if self.sampler.errors:
            measures["sampler_errors"] = self.sampler.errors[:5]
        try:
            measures["db_bytes"] = instance.data_bytes()
            run.server_stats = instance.statistics()
        except EngineError as e:
            measures["server_stats_error"] = str(e)
        measures["datadir_bytes"] = dir_size(instance.datadir)
        run.measures = measures
        # The Insert Benchmark's response times per operation kind (the main one is the step's histogram).
        for kind, lat in (s.get("latency") or {}).items():
            if isinstance(lat, dict) and isinstance(lat.get("hdr"), str) and lat.get("statements"):
                run.histograms[kind] = lat["hdr"]
