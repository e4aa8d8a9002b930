"""What the server's own processes (and the load client) cost: CPU, context switches, IO bytes, RSS.

`ProcessTree(root)` watches a process and, by default, all its descendants; the
tree is enumerated again at every snapshot, so backends that connect during a
step are seen. Each `TreeSnapshot` holds cumulative counters for the whole tree
since the processes started; `tree_delta(a, b)` is the difference.

How exited processes are kept:

* CPU time and IO bytes lose nothing. When a parent reaps a child, Linux adds the
  child's CPU time (and that of the child's own reaped children) to the parent's
  cutime/cstime in /proc/PID/stat, and the child's IO counters to the parent's
  /proc/PID/io. So the tree's total is: for every live member, its own time plus
  its children's time, and its /proc/PID/io. A backend that exits moves from
  "live member" to "inside the postmaster's numbers" without a gap. Only work
  by a process that is reaped by someone outside the tree (an orphan adopted by
  init) drops out; Postgres reaps all its children itself. The root is read
  before its descendants, so a child reaped between the two reads is missed for
  that one snapshot (and counted in the next) rather than counted twice; the
  cumulative totals never go down.
* Context switches are not folded into anything another process can read (the
  parent's cnvcsw is only visible to getrusage in the parent itself), so the last
  value seen for every thread is carried after the thread disappears. What is
  lost: the switches between the last snapshot that saw a thread and its exit,
  and all of those of a process that starts and exits within one interval. With
  1 s sampling and long-lived backends this is small.
* IO bytes are None when /proc/PID/io cannot be read (it needs ptrace access:
  root or the server's user); the reason is in `io_note`.
* RSS is summed over the tree as the kernel reports it, so shared memory (e.g.
  Postgres's shared_buffers) counts once for every process that touched it; the
  largest single process is reported next to the sum.

/proc is read directly rather than through psutil: psutil's children() reads every
/proc/PID/stat to find parents and then discards the counters in them, so one
pass here gives the tree and its CPU times for the price of finding it.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from typing import NamedTuple

from ._proc import read_proc
from .host import CLK_TCK

PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
_CTXT = re.compile(rb"^voluntary_ctxt_switches:\s*(\d+)\s*^nonvoluntary_ctxt_switches:\s*(\d+)", re.MULTILINE)
_IO = re.compile(rb"^read_bytes:\s*(\d+)\s*^write_bytes:\s*(\d+)", re.MULTILINE)


class _Stat(NamedTuple):  # a NamedTuple: built for every member every sample, and cheap to build
    pid: int
    ppid: int
    cpu_user: int  # ticks: own utime + reaped children's cutime
    cpu_sys: int
    threads: int
    start: int  # ticks after boot: with the pid, the identity of a process
    rss_pages: int


def _fields(data: bytes) -> list[bytes]:
    # comm (field 2) may contain spaces and parentheses: the fields after it start past the last ')'.
    return data[data.rindex(b")") + 2 :].split()


def _parse_stat(pid: int, data: bytes) -> _Stat:
    f = _fields(data)
    return _Stat(pid, int(f[1]), int(f[11]) + int(f[13]), int(f[12]) + int(f[14]), int(f[17]), int(f[19]), int(f[21]))


def _stat(pid: int) -> _Stat | None:
    try:
        return _parse_stat(pid, read_proc(f"/proc/{pid}/stat"))
    except (OSError, ValueError, IndexError):  # gone, or a half-torn-down process
        return None


@dataclass(frozen=True, slots=True)
class TreeSnapshot:
    """Cumulative counters of a process tree at monotonic time `t`."""

    t: float
    alive: bool  # whether the root process was there
    procs: int  # processes in the tree now
    user_ticks: int
    sys_ticks: int
    cs_vol: int
    cs_invol: int
    read_bytes: int | None  # bytes the tree caused to be read from storage; None if unreadable
    write_bytes: int | None
    rss_bytes: int  # sum over the tree now
    rss_max_bytes: int  # the largest single process now
    io_note: str = ""

    @property
    def user_s(self) -> float:
        return self.user_ticks / CLK_TCK

    @property
    def sys_s(self) -> float:
        return self.sys_ticks / CLK_TCK


class ProcessTree:
    """A process and (with `descendants`) everything below it, sampled by `snapshot()`.

    Not thread-safe: one caller at a time (the Sampler holds a lock).
    """

    def __init__(self, root_pid: int, descendants: bool = True) -> None:
        st = _stat(root_pid)
        if st is None:
            raise ProcessLookupError(f"no process with pid {root_pid}")
        self.root_pid = root_pid
        self.descendants = descendants
        self._root_start = st.start
        # tid -> (start of its process, voluntary, involuntary) as last seen
        self._tasks: dict[int, tuple[int, int, int]] = {}
        self._gone_vol = 0
        self._gone_invol = 0
        self._last: TreeSnapshot | None = None

    def _members(self, root: _Stat) -> list[_Stat]:
        """The root, then its descendants in pid order.

        Pid order is creation order (until pids wrap), so a parent's stat is read
        before its children's: a child reaped in between is missed once, not counted twice.
        """
        if not self.descendants:
            return [root]
        # Every process's stat is read, but only the tree's are parsed in full.
        children: dict[int, list[tuple[int, bytes]]] = {}
        with os.scandir("/proc") as entries:
            pids = [int(e.name) for e in entries if e.name.isdigit()]
        for pid in pids:
            if pid == root.pid:
                continue
            try:
                data = read_proc(f"/proc/{pid}/stat")
                ppid = int(data[data.rindex(b")") + 2 :].split(maxsplit=2)[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append((pid, data))
        found: list[tuple[int, bytes]] = []
        todo = [root.pid]
        while todo:
            kids = children.get(todo.pop(), [])
            found.extend(kids)
            todo.extend(pid for pid, _ in kids)
        members = [root]
        for pid, data in sorted(found):
            try:
                members.append(_parse_stat(pid, data))
            except (ValueError, IndexError):
                continue
        return members

    def _ctx_switches(self, members: list[_Stat]) -> tuple[int, int]:
        seen: dict[int, tuple[int, int, int]] = {}
        for m in members:
            tids = [m.pid]
            if m.threads > 1:
                try:
                    with os.scandir(f"/proc/{m.pid}/task") as entries:
                        tids = [int(e.name) for e in entries]
                except OSError:
                    continue
            for tid in tids:
                path = f"/proc/{m.pid}/status" if tid == m.pid else f"/proc/{m.pid}/task/{tid}/status"
                try:
                    hit = _CTXT.search(read_proc(path))
                except OSError:
                    continue  # exited since the scan: its last values are carried below
                if hit:
                    seen[tid] = (m.start, int(hit[1]), int(hit[2]))
        for tid, (start, vol, invol) in self._tasks.items():
            now = seen.get(tid)
            # Gone, or the tid now belongs to another task: keep what the old one had done.
            if now is None or now[0] != start or now[1] < vol or now[2] < invol:
                self._gone_vol += vol
                self._gone_invol += invol
        self._tasks = seen
        return (
            self._gone_vol + sum(v for _, v, _ in seen.values()),
            self._gone_invol + sum(i for _, _, i in seen.values()),
        )

    def _io(self, members: list[_Stat]) -> tuple[int | None, int | None, str]:
        read = write = 0
        for m in members:
            try:
                hit = _IO.search(read_proc(f"/proc/{m.pid}/io"))
            except PermissionError:
                return None, None, f"cannot read /proc/{m.pid}/io: permission denied (needs root or the same user)"
            except OSError:
                continue  # exited: its bytes are now in its parent's counters
            if hit is None:
                return None, None, "no read_bytes/write_bytes in /proc/PID/io (kernel without task IO accounting)"
            read += int(hit[1])
            write += int(hit[2])
        return read, write, ""

    def snapshot(self) -> TreeSnapshot:
        t = time.monotonic()
        root = _stat(self.root_pid)
        last = self._last
        if root is None or root.start != self._root_start:
            # The root has exited: everything it did is in the last totals.
            snap = TreeSnapshot(
                t=t,
                alive=False,
                procs=0,
                user_ticks=last.user_ticks if last else 0,
                sys_ticks=last.sys_ticks if last else 0,
                cs_vol=last.cs_vol if last else 0,
                cs_invol=last.cs_invol if last else 0,
                read_bytes=last.read_bytes if last else None,
                write_bytes=last.write_bytes if last else None,
                rss_bytes=0,
                rss_max_bytes=0,
                io_note=last.io_note if last else "process not found",
            )
            self._last = snap
            return snap
        members = self._members(root)
        vol, invol = self._ctx_switches(members)
        read, write, note = self._io(members)
        user = sum(m.cpu_user for m in members)
        sys_ = sum(m.cpu_sys for m in members)
        if last is not None:
            # Never backwards: a reap between reading a parent and its child hides the child for one sample.
            user, sys_ = max(user, last.user_ticks), max(sys_, last.sys_ticks)
            vol, invol = max(vol, last.cs_vol), max(invol, last.cs_invol)
            if read is not None and write is not None and last.read_bytes is not None and last.write_bytes is not None:
                read, write = max(read, last.read_bytes), max(write, last.write_bytes)
        snap = TreeSnapshot(
            t=t,
            alive=True,
            procs=len(members),
            user_ticks=user,
            sys_ticks=sys_,
            cs_vol=vol,
            cs_invol=invol,
            read_bytes=read,
            write_bytes=write,
            rss_bytes=sum(m.rss_pages for m in members) * PAGE_SIZE,
            rss_max_bytes=max(m.rss_pages for m in members) * PAGE_SIZE,
            io_note=note,
        )
        self._last = snap
        return snap


def _dn(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else b - a


@dataclass(frozen=True, slots=True)
class TreeDelta:
    """What a process tree did between two snapshots; procs and RSS are as of the later one."""

    seconds: float
    user_s: float
    sys_s: float
    cs_vol: int
    cs_invol: int
    read_bytes: int | None
    write_bytes: int | None
    procs: int
    rss_bytes: int
    rss_max_bytes: int

    @property
    def cpu_s(self) -> float:
        return self.user_s + self.sys_s

    @property
    def cpu_pct(self) -> float:
        """Percent of one CPU, like top."""
        return 100.0 * self.cpu_s / self.seconds if self.seconds > 0 else 0.0

    @property
    def cs(self) -> int:
        return self.cs_vol + self.cs_invol


def tree_delta(a: TreeSnapshot, b: TreeSnapshot) -> TreeDelta:
    return TreeDelta(
        seconds=b.t - a.t,
        user_s=(b.user_ticks - a.user_ticks) / CLK_TCK,
        sys_s=(b.sys_ticks - a.sys_ticks) / CLK_TCK,
        cs_vol=b.cs_vol - a.cs_vol,
        cs_invol=b.cs_invol - a.cs_invol,
        read_bytes=_dn(a.read_bytes, b.read_bytes),
        write_bytes=_dn(a.write_bytes, b.write_bytes),
        procs=b.procs,
        rss_bytes=b.rss_bytes,
        rss_max_bytes=b.rss_max_bytes,
    )
