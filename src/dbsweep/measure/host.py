"""Host-wide counters: the `vmstat 1` view, read from the kernel's own counters.

A `HostSnapshot` holds cumulative counters (CPU jiffies, context switches,
interrupts, pages in/out) plus the gauges vmstat prints (procs running/blocked,
free/buffer/cache memory). `host_delta(a, b)` turns two snapshots into rates and
percentages the way vmstat does: `us` = user + nice, `sy` = system + irq +
softirq, each a share of all CPU jiffies that passed on the host.

/proc/stat is read directly rather than through psutil: one read gives the CPU
times, context switches, interrupts and procs_running/procs_blocked together
(psutil needs two reads and has no procs_running/blocked).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from ._proc import read_proc

CLK_TCK = os.sysconf("SC_CLK_TCK")

_CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest", "guest_nice")
_VMSTAT_KEYS = (b"pgpgin", b"pgpgout", b"pswpin", b"pswpout")
_MEMINFO_KEYS = (b"MemFree:", b"Buffers:", b"Cached:", b"SwapTotal:", b"SwapFree:")


@dataclass(frozen=True, slots=True)
class HostSnapshot:
    """Cumulative host counters at monotonic time `t`; CPU fields are jiffies (1/CLK_TCK s) summed over all CPUs."""

    t: float
    user: int
    nice: int
    system: int
    idle: int
    iowait: int
    irq: int
    softirq: int
    steal: int
    ctxt: int
    intr: int
    forks: int
    pgpgin_kb: int  # vmstat `bi` source: KB read from block devices
    pgpgout_kb: int  # vmstat `bo` source
    pswpin: int  # pages swapped in (vmstat `si` source)
    pswpout: int
    # Gauges, not counters:
    procs_running: int
    procs_blocked: int
    mem_free_kb: int
    mem_buff_kb: int
    mem_cache_kb: int
    swap_used_kb: int

    @property
    def busy(self) -> int:
        return self.user + self.nice + self.system + self.irq + self.softirq

    @property
    def total(self) -> int:
        # guest and guest_nice are already inside user and nice, so they are not added again.
        return self.busy + self.idle + self.iowait + self.steal


def snapshot_host() -> HostSnapshot:
    t = time.monotonic()
    cpu: dict[str, int] = {}
    ctxt = intr = forks = running = blocked = 0
    for line in read_proc("/proc/stat").splitlines():
        if line.startswith(b"cpu "):
            cpu = dict(zip(_CPU_FIELDS, map(int, line.split()[1:]), strict=False))
        elif line.startswith(b"ctxt "):
            ctxt = int(line[5:])
        elif line.startswith(b"intr "):
            intr = int(line.split(maxsplit=2)[1])  # the first number is the total; the rest are per IRQ
        elif line.startswith(b"processes "):
            forks = int(line[10:])
        elif line.startswith(b"procs_running "):
            running = int(line[14:])
        elif line.startswith(b"procs_blocked "):
            blocked = int(line[14:])
    vm: dict[bytes, int] = {}
    for line in read_proc("/proc/vmstat").splitlines():
        key, _, value = line.partition(b" ")
        if key in _VMSTAT_KEYS:
            vm[key] = int(value)
    mem: dict[bytes, int] = {}
    for line in read_proc("/proc/meminfo").splitlines():
        parts = line.split()
        if parts and parts[0] in _MEMINFO_KEYS:
            mem[parts[0]] = int(parts[1])
    return HostSnapshot(
        t=t,
        user=cpu.get("user", 0),
        nice=cpu.get("nice", 0),
        system=cpu.get("system", 0),
        idle=cpu.get("idle", 0),
        iowait=cpu.get("iowait", 0),
        irq=cpu.get("irq", 0),
        softirq=cpu.get("softirq", 0),
        steal=cpu.get("steal", 0),
        ctxt=ctxt,
        intr=intr,
        forks=forks,
        pgpgin_kb=vm.get(b"pgpgin", 0),
        pgpgout_kb=vm.get(b"pgpgout", 0),
        pswpin=vm.get(b"pswpin", 0),
        pswpout=vm.get(b"pswpout", 0),
        procs_running=running,
        procs_blocked=blocked,
        mem_free_kb=mem.get(b"MemFree:", 0),
        mem_buff_kb=mem.get(b"Buffers:", 0),
        mem_cache_kb=mem.get(b"Cached:", 0),
        swap_used_kb=mem.get(b"SwapTotal:", 0) - mem.get(b"SwapFree:", 0),
    )


@dataclass(frozen=True, slots=True)
class HostDelta:
    """What happened on the host between two snapshots: counts, and vmstat's rates and percentages."""

    seconds: float
    jiffies: int  # all CPU jiffies that passed (about seconds x ncpu x CLK_TCK)
    us_jiffies: int  # user + nice
    sy_jiffies: int  # system + irq + softirq
    id_jiffies: int
    wa_jiffies: int
    st_jiffies: int
    cs: int
    intr: int
    forks: int
    bi_kb: int
    bo_kb: int
    si_pages: int
    so_pages: int
    # Gauges as seen by the later snapshot:
    procs_running: int
    procs_blocked: int
    mem_free_kb: int
    mem_buff_kb: int
    mem_cache_kb: int
    swap_used_kb: int

    def _pct(self, part: int) -> float:
        return 100.0 * part / self.jiffies if self.jiffies > 0 else 0.0

    @property
    def us_pct(self) -> float:
        return self._pct(self.us_jiffies)

    @property
    def sy_pct(self) -> float:
        return self._pct(self.sy_jiffies)

    @property
    def id_pct(self) -> float:
        return self._pct(self.id_jiffies)

    @property
    def wa_pct(self) -> float:
        return self._pct(self.wa_jiffies)

    @property
    def st_pct(self) -> float:
        return self._pct(self.st_jiffies)

    @property
    def cpu_pct(self) -> float:
        """us + sy: the seeds' `cpu/s`."""
        return self._pct(self.us_jiffies + self.sy_jiffies)

    @property
    def busy_seconds(self) -> float:
        """CPU seconds the whole host spent busy (us + sy)."""
        return (self.us_jiffies + self.sy_jiffies) / CLK_TCK

    @property
    def cs_per_s(self) -> float:
        return self.cs / self.seconds if self.seconds > 0 else 0.0

    @property
    def intr_per_s(self) -> float:
        return self.intr / self.seconds if self.seconds > 0 else 0.0


def host_delta(a: HostSnapshot, b: HostSnapshot) -> HostDelta:
    return HostDelta(
        seconds=b.t - a.t,
        jiffies=b.total - a.total,
        us_jiffies=(b.user + b.nice) - (a.user + a.nice),
        sy_jiffies=(b.system + b.irq + b.softirq) - (a.system + a.irq + a.softirq),
        id_jiffies=b.idle - a.idle,
        wa_jiffies=b.iowait - a.iowait,
        st_jiffies=b.steal - a.steal,
        cs=b.ctxt - a.ctxt,
        intr=b.intr - a.intr,
        forks=b.forks - a.forks,
        bi_kb=b.pgpgin_kb - a.pgpgin_kb,
        bo_kb=b.pgpgout_kb - a.pgpgout_kb,
        si_pages=b.pswpin - a.pswpin,
        so_pages=b.pswpout - a.pswpout,
        procs_running=b.procs_running,
        procs_blocked=b.procs_blocked,
        mem_free_kb=b.mem_free_kb,
        mem_buff_kb=b.mem_buff_kb,
        mem_cache_kb=b.mem_cache_kb,
        swap_used_kb=b.swap_used_kb,
    )


def host_ncpu() -> int:
    """CPUs the /proc/stat totals are spread over (the `ncpu` of the seeds' µs conversions)."""
    n = sum(1 for line in Path("/proc/stat").read_text().splitlines() if line[:3] == "cpu" and line[3:4].isdigit())
    return n or os.cpu_count() or 1
