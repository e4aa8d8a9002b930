"""A cap on a server's memory, page cache included: a memory cgroup of its own (`memory.max` under cgroup v2,
`memory.limit_in_bytes` under v1), so that a machine with plenty of RAM runs a study's `io-bound` setup as a
server short of memory would: what does not fit is read from the device again.

The server is moved into the cgroup once it answers (its running processes; those it forks later are born
there), before the load: the tables it writes and reads are charged to the cap from the start. The cgroup is
removed when the server has stopped. dbsweep makes its cgroups as root, under the memory controller's root
(v1) or the unified hierarchy's (v2, where the root must delegate the memory controller: `cgroup.subtree_control`
names `memory`).
"""

from __future__ import annotations

import contextlib
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

import psutil

V2 = Path("/sys/fs/cgroup")
V1 = Path("/sys/fs/cgroup/memory")


class CapError(Exception):
    """A cap that cannot be made here; the message says why and what would allow it."""


def _hierarchy() -> tuple[Path, str, str]:
    """Where dbsweep's cgroups go: (directory, the limit's file, the version)."""
    if (V2 / "cgroup.controllers").is_file():
        enabled = (V2 / "cgroup.subtree_control").read_text().split()
        if "memory" not in enabled:
            raise CapError(
                "the cgroup v2 root does not delegate the memory controller (its cgroup.subtree_control lacks "
                "'memory'); as root: echo +memory > /sys/fs/cgroup/cgroup.subtree_control"
            )
        return V2, "memory.max", "v2"
    if (V1 / "memory.limit_in_bytes").is_file():
        return V1, "memory.limit_in_bytes", "v1"
    raise CapError("this machine has no memory cgroup controller mounted at /sys/fs/cgroup")


def check() -> str | None:
    """Why a memory cap cannot be made here, or None."""
    try:
        root, _, _ = _hierarchy()
    except CapError as e:
        return str(e)
    if not os.access(root, os.W_OK):
        return f"{root} is not writable by this user: a memory cap needs root"
    return None


@dataclass
class Cap:
    path: Path
    limit_bytes: int
    version: str

    @classmethod
    def make(cls, limit_bytes: int) -> Cap:
        root, limit_file, version = _hierarchy()
        path = root / f"dbsweep-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            path.mkdir()
            (path / limit_file).write_text(str(limit_bytes))
        except OSError as e:
            with contextlib.suppress(OSError):
                path.rmdir()
            raise CapError(f"cannot make the memory cgroup {path}: {e.strerror}") from None
        return cls(path, limit_bytes, version)

    def confine(self, pid: int) -> int:
        """Moves a process and its current descendants into the cgroup; returns how many moved."""
        try:
            procs = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
        except psutil.NoSuchProcess:
            return 0
        moved = 0
        for p in procs:
            try:
                (self.path / "cgroup.procs").write_text(str(p.pid))
                moved += 1
            except ProcessLookupError:
                continue  # it ended meanwhile
            except OSError as e:
                raise CapError(f"cannot move PID {p.pid} into {self.path}: {e.strerror}") from None
        return moved

    def peak_bytes(self) -> int | None:
        """The most memory the cgroup held (v1 keeps it; v2 from Linux 5.19)."""
        name = "memory.max_usage_in_bytes" if self.version == "v1" else "memory.peak"
        try:
            return int((self.path / name).read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def describe(self) -> dict[str, object]:
        return {"cgroup": str(self.path), "version": self.version, "limit_bytes": self.limit_bytes}

    def remove(self) -> None:
        """Removes the cgroup (its processes have ended: the server stopped). One still busy is left, said by
        nobody: it holds no process of ours once the server is gone."""
        with contextlib.suppress(OSError):
            self.path.rmdir()
