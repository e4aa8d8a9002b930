"""The block device under a path, and its counters: the `iostat -x` view from /proc/diskstats.

`find_device(path)` follows st_dev of the path to /sys/dev/block/MAJ:MIN. A
partition keeps its own stats line (what the database's files really hit) and
also names its parent disk; device-mapper and md devices list the devices they
sit on; a loop device names its backing file. Filesystems without a block device
of their own (tmpfs, overlay, NFS, ZFS datasets) give None; btrfs, whose st_dev
is an anonymous number, is found through the mount's source device.

`device_delta(a, b)` gives iostat -x's columns: r/s, rkB/s, w/s, wkB/s,
r_await/w_await (ms), rareq-sz/wareq-sz (KB), aqu-sz, %util, and the discard and
flush columns when the kernel reports them (4.18+ and 5.5+).
"""

from __future__ import annotations

import os
import re
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from ._proc import read_proc

_OCTAL = re.compile(r"\\([0-7]{3})")
_SECTOR = 512  # /proc/diskstats counts 512-byte sectors whatever the device's real sector size


@dataclass(frozen=True, slots=True)
class BlockDevice:
    name: str  # the kernel's name, as in /proc/diskstats: vda, nvme0n1p2, dm-0, loop3
    major: int
    minor: int
    kind: str  # disk, partition, dm, md, loop
    disk: str  # the whole disk: a partition's parent, otherwise the name itself
    label: str = ""  # dm: its mapper name; loop: its backing file
    slaves: tuple[str, ...] = ()  # dm/md: the devices underneath

    def describe(self) -> str:
        extra = [f"on {self.disk}"] if self.disk != self.name else []
        if self.label:
            extra.append(self.label)
        if self.slaves:
            extra.append("over " + ",".join(self.slaves))
        return f"{self.name} ({self.kind}{', ' + ', '.join(extra) if extra else ''})"


def _first_line(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def device_by_number(major: int, minor: int) -> BlockDevice | None:
    """The block device MAJ:MIN as sysfs describes it, or None if there is none."""
    link = Path(f"/sys/dev/block/{major}:{minor}")
    if not link.exists():
        return None
    sysdir = link.resolve()
    name = sysdir.name
    if (sysdir / "partition").exists():
        # A partition's sysfs directory sits inside its disk's: /sys/.../block/nvme0n1/nvme0n1p2
        return BlockDevice(name, major, minor, "partition", sysdir.parent.name)
    slaves_dir = sysdir / "slaves"
    slaves = tuple(sorted(p.name for p in slaves_dir.iterdir())) if slaves_dir.is_dir() else ()
    if (sysdir / "dm").is_dir():
        return BlockDevice(name, major, minor, "dm", name, _first_line(sysdir / "dm" / "name"), slaves)
    if (sysdir / "md").is_dir():
        return BlockDevice(name, major, minor, "md", name, "", slaves)
    if (sysdir / "loop").is_dir() or name.startswith("loop"):
        return BlockDevice(name, major, minor, "loop", name, _first_line(sysdir / "loop" / "backing_file"), slaves)
    return BlockDevice(name, major, minor, "disk", name, "", slaves)


def _unescape(field: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as octal (\040 ...).
    return _OCTAL.sub(lambda m: chr(int(m[1], 8)), field)


@dataclass(frozen=True, slots=True)
class Mount:
    mountpoint: str
    fstype: str
    source: str


def mount_of(path: Path) -> Mount | None:
    """The mount that holds `path` (the longest mount point that contains it)."""
    target = str(path.resolve())
    best: Mount | None = None
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, rfields = left.split(), right.split()
        if len(fields) < 5 or len(rfields) < 2:
            continue
        mp = _unescape(fields[4])
        inside = target == mp or target.startswith(mp.rstrip("/") + "/")
        # A later mount on the same point hides the earlier one, so ties go to the later line.
        if inside and (best is None or len(mp) >= len(best.mountpoint)):
            best = Mount(mp, rfields[0], _unescape(rfields[1]))
    return best


def _existing(path: Path) -> Path:
    # The data directory may not exist yet; its nearest existing parent lives on the same filesystem.
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def find_device(path: Path) -> BlockDevice | None:
    """The block device that holds `path`, or None (tmpfs, overlay, network filesystems)."""
    path = _existing(path)
    st_dev = path.stat().st_dev
    dev = device_by_number(os.major(st_dev), os.minor(st_dev))
    if dev is not None:
        return dev
    # Anonymous st_dev (major 0): btrfs and the like still sit on a real device named as the mount's source.
    mount = mount_of(path)
    if mount is None or not mount.source.startswith("/dev/"):
        return None
    try:
        st = Path(mount.source).stat()
    except OSError:
        return None
    if not stat.S_ISBLK(st.st_mode):
        return None
    return device_by_number(os.major(st.st_rdev), os.minor(st.st_rdev))


def no_device_reason(path: Path) -> str:
    """Why `find_device(path)` found nothing, for the record."""
    mount = mount_of(_existing(path))
    if mount is None:
        return f"no device: no mount found for {path}"
    return f"no device: {path} is on {mount.fstype} ({mount.source}) at {mount.mountpoint}"


@dataclass(frozen=True, slots=True)
class DiskSnapshot:
    """One /proc/diskstats line at monotonic time `t`: cumulative counts, sectors and milliseconds."""

    t: float
    reads: int
    reads_merged: int
    sectors_read: int
    ms_reading: int
    writes: int
    writes_merged: int
    sectors_written: int
    ms_writing: int
    in_flight: int  # a gauge
    ms_io: int  # time with at least one request in flight: the source of %util
    ms_weighted: int  # sum of request times: the source of aqu-sz
    discards: int | None = None
    discards_merged: int | None = None
    sectors_discarded: int | None = None
    ms_discarding: int | None = None
    flushes: int | None = None
    ms_flushing: int | None = None


def snapshot_device(dev: BlockDevice) -> DiskSnapshot | None:
    """The device's counters now, or None if it has gone (e.g. a loop device detached)."""
    t = time.monotonic()
    major, minor = str(dev.major).encode(), str(dev.minor).encode()
    for line in read_proc("/proc/diskstats").splitlines():
        f = line.split()
        if len(f) < 14 or f[0] != major or f[1] != minor:
            continue
        n = [int(x) for x in f[3:]]
        extra: list[int | None] = [*n[11:17], *([None] * (6 - len(n[11:17])))]
        return DiskSnapshot(t, *n[:11], *extra)
    return None


def _d(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else b - a


@dataclass(frozen=True, slots=True)
class DeviceDelta:
    """What the device did between two snapshots: counts, and iostat -x's derived columns."""

    seconds: float
    reads: int
    reads_merged: int
    read_kb: float
    ms_reading: int
    writes: int
    writes_merged: int
    write_kb: float
    ms_writing: int
    ms_io: int
    ms_weighted: int
    discards: int | None
    discard_kb: float | None
    ms_discarding: int | None
    flushes: int | None
    ms_flushing: int | None

    def _rate(self, n: float) -> float:
        return n / self.seconds if self.seconds > 0 else 0.0

    @property
    def r_s(self) -> float:
        return self._rate(self.reads)

    @property
    def rkb_s(self) -> float:
        return self._rate(self.read_kb)

    @property
    def rrqm_s(self) -> float:
        return self._rate(self.reads_merged)

    @property
    def w_s(self) -> float:
        return self._rate(self.writes)

    @property
    def wkb_s(self) -> float:
        return self._rate(self.write_kb)

    @property
    def wrqm_s(self) -> float:
        return self._rate(self.writes_merged)

    @property
    def r_await(self) -> float:
        """Mean ms per read, queueing included (0 when there were no reads, as iostat prints)."""
        return self.ms_reading / self.reads if self.reads else 0.0

    @property
    def w_await(self) -> float:
        return self.ms_writing / self.writes if self.writes else 0.0

    @property
    def await_ms(self) -> float:
        """iostat's older combined `await` over reads and writes."""
        n = self.reads + self.writes
        return (self.ms_reading + self.ms_writing) / n if n else 0.0

    @property
    def rareq_sz(self) -> float:
        """Mean read size in KB."""
        return self.read_kb / self.reads if self.reads else 0.0

    @property
    def wareq_sz(self) -> float:
        return self.write_kb / self.writes if self.writes else 0.0

    @property
    def aqu_sz(self) -> float:
        return self.ms_weighted / (self.seconds * 1000.0) if self.seconds > 0 else 0.0

    @property
    def util_pct(self) -> float:
        # Capped like iostat: ms_io can run a tick ahead of our clock.
        return min(100.0, 100.0 * self.ms_io / (self.seconds * 1000.0)) if self.seconds > 0 else 0.0

    @property
    def d_s(self) -> float | None:
        return None if self.discards is None else self._rate(self.discards)

    @property
    def dkb_s(self) -> float | None:
        return None if self.discard_kb is None else self._rate(self.discard_kb)

    @property
    def d_await(self) -> float | None:
        if self.discards is None or self.ms_discarding is None:
            return None
        return self.ms_discarding / self.discards if self.discards else 0.0

    @property
    def f_s(self) -> float | None:
        return None if self.flushes is None else self._rate(self.flushes)

    @property
    def f_await(self) -> float | None:
        if self.flushes is None or self.ms_flushing is None:
            return None
        return self.ms_flushing / self.flushes if self.flushes else 0.0


def device_delta(a: DiskSnapshot, b: DiskSnapshot) -> DeviceDelta:
    sd = _d(a.sectors_discarded, b.sectors_discarded)
    return DeviceDelta(
        seconds=b.t - a.t,
        reads=b.reads - a.reads,
        reads_merged=b.reads_merged - a.reads_merged,
        read_kb=(b.sectors_read - a.sectors_read) * _SECTOR / 1024,
        ms_reading=b.ms_reading - a.ms_reading,
        writes=b.writes - a.writes,
        writes_merged=b.writes_merged - a.writes_merged,
        write_kb=(b.sectors_written - a.sectors_written) * _SECTOR / 1024,
        ms_writing=b.ms_writing - a.ms_writing,
        ms_io=b.ms_io - a.ms_io,
        ms_weighted=b.ms_weighted - a.ms_weighted,
        discards=_d(a.discards, b.discards),
        discard_kb=None if sd is None else sd * _SECTOR / 1024,
        ms_discarding=_d(a.ms_discarding, b.ms_discarding),
        flushes=_d(a.flushes, b.flushes),
        ms_flushing=_d(a.ms_flushing, b.ms_flushing),
    )
