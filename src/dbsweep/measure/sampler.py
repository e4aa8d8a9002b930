"""`Sampler`: host, device, server-tree and client counters, sampled on a fixed schedule during a step.

A background thread takes sample k at t0 + k x interval on the monotonic clock
(no drift: a late sample does not delay the next; slots missed entirely are
skipped). Extra samples are taken at `start()`, `attach_client()` and `stop()`,
and by `window()` when its end is later than the last sample, so totals cover
the exact span asked for. Every sample keeps cumulative counters; intervals and
windows are differences of two samples, so a window's totals are exactly the sum
of its intervals.
"""

from __future__ import annotations

import bisect
import itertools
import math
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from .device import BlockDevice, DeviceDelta, DiskSnapshot, device_delta, find_device, no_device_reason, snapshot_device
from .host import HostDelta, HostSnapshot, host_delta, host_ncpu, snapshot_host
from .server import ProcessTree, TreeDelta, TreeSnapshot, tree_delta
from .step import StepMeasures


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Cumulative counters at monotonic time `t` (device None: no device; client None: not attached yet)."""

    t: float
    host: HostSnapshot
    device: DiskSnapshot | None
    server: TreeSnapshot
    client: TreeSnapshot | None
    cost_s: float  # CPU seconds spent taking this sample
    reason: str  # start, tick, attach, window or stop


@dataclass(frozen=True, slots=True)
class Interval:
    """One per-interval record: what happened between two consecutive samples."""

    t0: float
    t1: float
    host: HostDelta
    device: DeviceDelta | None
    server: TreeDelta
    client: TreeDelta | None

    @property
    def seconds(self) -> float:
        return self.t1 - self.t0


class Sampler:
    """Watches the server's process tree, the host and the data directory's device while a step runs.

    With no server (`server_pid` None: an embedded engine, whose code runs inside the load client), the
    client is what does the engine's work, so the server's figures are the client's: `cpu/o` is then the
    client process's CPU per operation."""

    def __init__(self, server_pid: int | None, data_dir: Path, interval: float = 1.0) -> None:
        if interval <= 0:
            raise ValueError(f"interval must be positive, not {interval}")
        self.server_pid = server_pid
        self.data_dir = data_dir
        self.interval = interval
        self.device: BlockDevice | None = find_device(data_dir)
        self.device_note = "" if self.device else no_device_reason(data_dir)
        self.ncpu = host_ncpu()
        self.errors: list[str] = []  # failures of background samples; sampling goes on
        self._server = ProcessTree(server_pid) if server_pid is not None else None
        self._client: ProcessTree | None = None
        self._snaps: list[Snapshot] = []
        self._lock = threading.Lock()  # one sample at a time, appended in time order
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = 0.0
        self._stopped = False

    # -- lifecycle -------------------------------------------------------------

    def start(self) -> Sampler:
        if self._thread is not None or self._stopped:
            raise RuntimeError("a Sampler is started once")
        self._t0 = self.sample_now("start").t
        self._thread = threading.Thread(target=self._run, name=f"sampler-{self.server_pid or 'client'}", daemon=True)
        self._thread.start()
        return self

    def attach_client(self, pid: int) -> None:
        """Watches the load client from now on (it exists only once spawned, after start()).

        The client is one process (all its threads; children it reaps count in its
        CPU). Its counters freeze at the last sample before it exits, so take the
        window's end while it still runs: the part of its last interval after that
        sample is otherwise lost (the load client reports its own CPU as well).
        """
        client = ProcessTree(pid, descendants=False)
        with self._lock:
            self._client = client
        self.sample_now("attach")

    def stop(self) -> None:
        """Stops the thread and takes the closing sample; later calls do nothing."""
        if self._stopped:
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._snaps:
            self.sample_now("stop")
        self._stopped = True

    @property
    def running(self) -> bool:
        return self._thread is not None and not self._stopped

    def __enter__(self) -> Sampler:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _run(self) -> None:
        k = 1
        while not self._stop.wait(max(0.0, self._t0 + k * self.interval - time.monotonic())):
            try:
                self.sample_now("tick")
            except Exception as e:  # one bad read must not end the step's sampling
                self.errors.append(f"{type(e).__name__}: {e}")
            # The next slot on the original grid that is still ahead: no drift, no burst after a stall.
            k = max(k + 1, math.floor((time.monotonic() - self._t0) / self.interval) + 1)

    # -- sampling --------------------------------------------------------------

    def sample_now(self, reason: str = "manual") -> Snapshot:
        with self._lock:
            cpu0 = time.thread_time()
            t = time.monotonic()
            host = snapshot_host()
            device = snapshot_device(self.device) if self.device else None
            client = self._client.snapshot() if self._client else None
            server = self._server.snapshot() if self._server else (client or _nothing(t))
            snap = Snapshot(t, host, device, server, client, time.thread_time() - cpu0, reason)
            self._snaps.append(snap)
            return snap

    def snapshots(self) -> list[Snapshot]:
        with self._lock:
            return list(self._snaps)

    def cost_per_sample(self) -> float:
        """Mean CPU seconds one sample costs (the sampler's own overhead)."""
        snaps = self.snapshots()
        return sum(s.cost_s for s in snaps) / len(snaps) if snaps else 0.0

    def samples(self) -> list[Interval]:
        """Per-interval records, one per pair of consecutive samples."""
        snaps = self.snapshots()
        return [_interval(a, b, self._server is None) for a, b in itertools.pairwise(snaps)]

    # -- windows ---------------------------------------------------------------

    def window(self, t0: float, t1: float) -> StepMeasures:
        """Totals and means from the last sample at or before `t0` to the first at or after `t1`.

        The window may be a little wider than asked, by less than one interval on
        each side; `start`, `end` and `elapsed_s` say exactly what it covers.
        """
        if t1 <= t0:
            raise ValueError(f"window end {t1} is not after its start {t0}")
        snaps = self.snapshots()
        if not snaps:
            raise RuntimeError("no samples yet: start() the sampler first")
        if snaps[-1].t < t1 and self.running:
            if t1 > time.monotonic():
                raise ValueError("the window ends in the future")
            self.sample_now("window")
            snaps = self.snapshots()
        times = [s.t for s in snaps]
        i = max(0, bisect.bisect_right(times, t0) - 1)
        j = min(len(snaps) - 1, bisect.bisect_left(times, t1))
        if j <= i:
            raise ValueError(
                f"no two samples bracket [{t0:.3f}, {t1:.3f}] (samples span {times[0]:.3f}-{times[-1]:.3f})"
            )
        return self._measures(snaps[i : j + 1])

    def _measures(self, span: list[Snapshot]) -> StepMeasures:
        a, b = span[0], span[-1]
        h = host_delta(a.host, b.host)
        d = device_delta(a.device, b.device) if a.device and b.device else None
        # A client attached inside the window is measured from its attach sample on.
        first_client = next((x.client for x in span if x.client is not None), None)
        c = tree_delta(first_client, b.client) if first_client and b.client else None
        if self._server is None:  # embedded: the client is the server
            s = c or _still(b.t)
            span = [x for x in span if x.client is not None] or span
        else:
            s = tree_delta(a.server, b.server)
        ends = span[1:]
        return StepMeasures(
            start=a.t,
            end=b.t,
            elapsed_s=b.t - a.t,
            intervals=len(ends),
            ncpu=self.ncpu,
            host_cpu_pct=h.cpu_pct,
            host_us_pct=h.us_pct,
            host_sy_pct=h.sy_pct,
            host_wa_pct=h.wa_pct,
            host_st_pct=h.st_pct,
            host_cs=h.cs,
            host_cs_per_s=h.cs_per_s,
            host_intr=h.intr,
            host_intr_per_s=h.intr_per_s,
            host_procs_running=sum(x.host.procs_running for x in ends) / len(ends),
            host_procs_blocked=sum(x.host.procs_blocked for x in ends) / len(ends),
            device=self.device.name if self.device else None,
            device_note=self.device_note if self.device is None else self.device.describe(),
            dev_reads=d.reads if d else None,
            dev_read_kb=d.read_kb if d else None,
            dev_writes=d.writes if d else None,
            dev_write_kb=d.write_kb if d else None,
            dev_r_s=d.r_s if d else None,
            dev_rkb_s=d.rkb_s if d else None,
            dev_w_s=d.w_s if d else None,
            dev_wkb_s=d.wkb_s if d else None,
            dev_r_await_ms=d.r_await if d else None,
            dev_w_await_ms=d.w_await if d else None,
            dev_await_ms=d.await_ms if d else None,
            dev_rareq_kb=d.rareq_sz if d else None,
            dev_wareq_kb=d.wareq_sz if d else None,
            dev_util_pct=d.util_pct if d else None,
            dev_discards=d.discards if d else None,
            dev_discard_kb=d.discard_kb if d else None,
            server_user_s=s.user_s,
            server_sys_s=s.sys_s,
            server_cs_vol=s.cs_vol,
            server_cs_invol=s.cs_invol,
            server_read_bytes=s.read_bytes,
            server_write_bytes=s.write_bytes,
            server_rss_peak_bytes=max(x.server.rss_bytes for x in span),
            server_rss_max_proc_bytes=max(x.server.rss_max_bytes for x in span),
            server_procs_max=max(x.server.procs for x in span),
            client_user_s=c.user_s if c else None,
            client_sys_s=c.sys_s if c else None,
            client_cs_vol=c.cs_vol if c else None,
            client_cs_invol=c.cs_invol if c else None,
        )


def _interval(a: Snapshot, b: Snapshot, embedded: bool) -> Interval:
    client = tree_delta(a.client, b.client) if a.client and b.client else None
    return Interval(
        t0=a.t,
        t1=b.t,
        host=host_delta(a.host, b.host),
        device=device_delta(a.device, b.device) if a.device and b.device else None,
        # Embedded: the client is the server, and nothing ran before it attached.
        server=(client or _still(b.t)) if embedded else tree_delta(a.server, b.server),
        client=client,
    )


def _nothing(t: float) -> TreeSnapshot:
    """The counters of no process (an embedded engine's server before its client starts)."""
    return TreeSnapshot(t, False, 0, 0, 0, 0, 0, 0, 0, 0, 0)


def _still(t: float) -> TreeDelta:
    return tree_delta(_nothing(t), _nothing(t))
