"""`StepMeasures`: what the samplers saw during the measured part of one step (the data model only)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True, kw_only=True)
class StepMeasures:
    """Totals and means over a window of samples.

    Host rates are time-weighted means over the window (total / elapsed), i.e.
    the mean of the per-second vmstat/iostat values when intervals are equal.
    Device fields are None when the data directory has no block device (see
    `device_note`); client fields are None when no client was attached.
    """

    start: float  # monotonic time of the sample that opens the window
    end: float  # ... and of the one that closes it
    elapsed_s: float
    intervals: int = 0
    ncpu: int
    # Host (vmstat): us = user+nice, sy = system+irq+softirq, as shares of all CPUs.
    host_cpu_pct: float  # us + sy
    host_us_pct: float = 0.0
    host_sy_pct: float = 0.0
    host_wa_pct: float = 0.0
    host_st_pct: float = 0.0
    host_cs: int = 0
    host_cs_per_s: float = 0.0
    host_intr: int = 0
    host_intr_per_s: float = 0.0
    host_procs_running: float = 0.0  # mean of the per-sample gauge
    host_procs_blocked: float = 0.0
    # Device (iostat -x) of the data directory.
    device: str | None = None  # the kernel's name, e.g. nvme0n1p2
    device_note: str = ""  # the device described (parent disk, dm name), or why there is none
    dev_reads: int | None = None
    dev_read_kb: float | None = None
    dev_writes: int | None = None
    dev_write_kb: float | None = None
    dev_r_s: float | None = None
    dev_rkb_s: float | None = None
    dev_w_s: float | None = None
    dev_wkb_s: float | None = None
    dev_r_await_ms: float | None = None
    dev_w_await_ms: float | None = None
    dev_await_ms: float | None = None
    dev_rareq_kb: float | None = None
    dev_wareq_kb: float | None = None
    dev_util_pct: float | None = None
    dev_discards: int | None = None
    dev_discard_kb: float | None = None
    # The server's process tree.
    server_user_s: float = 0.0
    server_sys_s: float = 0.0
    server_cs_vol: int = 0
    server_cs_invol: int = 0
    server_read_bytes: int | None = None
    server_write_bytes: int | None = None
    server_rss_peak_bytes: int = 0  # largest sum over the tree in any sample
    server_rss_max_proc_bytes: int = 0  # largest single process in any sample
    server_procs_max: int = 0
    # The load client (one process).
    client_user_s: float | None = None
    client_sys_s: float | None = None
    client_cs_vol: int | None = None
    client_cs_invol: int | None = None

    @property
    def server_cpu_s(self) -> float:
        return self.server_user_s + self.server_sys_s

    @property
    def server_cs(self) -> int:
        return self.server_cs_vol + self.server_cs_invol

    @property
    def client_cpu_s(self) -> float | None:
        if self.client_user_s is None or self.client_sys_s is None:
            return None
        return self.client_user_s + self.client_sys_s

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
