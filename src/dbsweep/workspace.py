"""The workspace directory: usable or a plain error, and written by one dbsweep at a time.

Every command that writes a workspace (run, calibrate, build) holds its lock for as long as it
runs; a second one says who holds it and stops. The lock is an flock on `<workspace>/lock`, so
the kernel releases it when its holder dies, however it dies; the file keeps the holder's PID,
command and start time for the message. Readers (status, report) take no lock.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from dbsweep.errors import DbsweepError

LOCK_NAME = "lock"


def ensure_writable(workspace: Path) -> None:
    """Creates the workspace if needed; a file in its place, or a place we cannot write, is a plain error."""
    if workspace.exists() and not workspace.is_dir():
        raise DbsweepError(f"the workspace {workspace} is a file, not a directory; give another one with --workspace.")
    try:
        workspace.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise DbsweepError(
            f"cannot create the workspace {workspace}: {e.strerror}; give another one with --workspace."
        ) from None
    if not os.access(workspace, os.W_OK | os.X_OK):
        raise DbsweepError(f"the workspace {workspace} is read-only for this user; give another one with --workspace.")


def _holder(fd: int) -> str:
    """Who holds the lock, as its file says."""
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        info = json.loads(os.read(fd, 4096) or b"{}")
        return f"PID {info['pid']}, `{info['command']}`, since {info['started']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "a process that left no details"


@contextlib.contextmanager
def writing(workspace: Path, command: str | None = None) -> Iterator[None]:
    """Holds the workspace's lock for the block; raises DbsweepError naming the holder when it is taken."""
    ensure_writable(workspace)
    path = workspace / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise DbsweepError(f"cannot open the workspace lock {path}: {e.strerror}.") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise DbsweepError(f"cannot lock the workspace {workspace}: {e.strerror}.") from None
            raise DbsweepError(
                f"the workspace {workspace} is in use by another dbsweep ({_holder(fd)}); "
                "wait for it to finish, or give this one another --workspace."
            ) from None
        info = {
            "pid": os.getpid(),
            "command": command or " ".join(["dbsweep", *sys.argv[1:]]),
            "started": datetime.now().astimezone().isoformat(timespec="seconds"),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode() + b"\n", 0)
        try:
            yield
        finally:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # releases the flock


# What engines and the OS say when a write finds the disk full (28 is ENOSPC: InnoDB's "failed with error 28").
_FULL_WORDS = re.compile(
    r"no space left on device|disk is full|disk full|enospc|\b(?:os )?(?:error|errno)[ :=]*28\b", re.IGNORECASE
)
# Below both of these, a filesystem counts as full whatever was said: a server that died of it may say only
# that a process of its was killed (Postgres's WAL writer aborts), and its log may not be readable.
_FULL_SHARE = 0.01
_FULL_BYTES = 64 * 2**20


def disk_full(where: Path, evidence: str = "") -> str | None:
    """One sentence saying that the disk holding `where` ran out of space, with the line of `evidence` (an error,
    a log excerpt) that says so; None when neither the words nor the free space say it."""
    said = next((ln.strip() for ln in evidence.splitlines() if _FULL_WORDS.search(ln)), "")
    probe = where
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        usage = os.statvfs(probe)
    except OSError:
        return None
    free = usage.f_bavail * usage.f_frsize
    total = usage.f_blocks * usage.f_frsize
    low = total > 0 and free < _FULL_SHARE * total and free < _FULL_BYTES
    if not said and not low:
        return None
    return (
        f"the disk holding {probe} ran out of space ({free / 2**20:.1f} MiB free of {total / 2**20:,.0f} MiB now)"
        + (f": {said}" if said else "")
    )
