"""Where an engine's source code comes from, and its identity.

A target's `source` names one of: a Debian source package version (`debian:15.18`
or just `15.18`), a git repository and ref (`git:URL_OR_PATH@REF`), a tarball
(`tarball:PATH_OR_URL`), or a local source directory (`dir:PATH`). Each resolves
to a SourceTree: an unpacked tree ready to configure, plus an identity recorded
with every result.

The fetchers know no engine: the engine hands them a `Naming` (which Debian source
packages hold it, how a tree declares its version, which files its build writes into
a tree), and every fetch that reads a version or a package name takes it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import psutil

from dbsweep.errors import DbsweepError

SourceKind = Literal["debian", "git", "tarball", "dir"]


@dataclass(frozen=True)
class SourceTree:
    spec: str  # as written in the study
    kind: SourceKind
    path: Path  # the unpacked source root (holds `configure`)
    version: str  # the upstream version, e.g. "15.18"
    identity: str  # "sha256:<hex>" of the upstream tarball, "git:<commit>", or "dir:sha256:<hex>"
    details: dict[str, str] = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class BuildProducts:
    """What configuring, building and testing an engine write into its source tree, which a `dir:` source's
    identity leaves out (besides what every build writes: objects, libraries, executables, autoconf's files)."""

    dirs: frozenset[str] = frozenset()  # directory names, anywhere in the tree (test output)
    names: frozenset[str] = frozenset()  # file names, anywhere in the tree
    paths: frozenset[str] = frozenset()  # files by their path from the tree's root (generated headers)


@dataclass(frozen=True)
class Naming:
    """How an engine names its source, as the fetchers need it; each engine supplies one.

    `debian_package(version)` is the Debian source package that carries an upstream or Debian version of
    the engine, and raises DbsweepError for text that is no version of it. Every such package's name
    starts with `debian_prefix` (the archive's indexes are scanned for that literal), and
    `debian_major(package)` is the major version a package carries, or None for a package that is not the
    engine's own although it shares the prefix. `debian_majors` are the majors `debian.available` lists. An
    engine whose one package carries several majors (MariaDB's `mariadb`: 10.11, then 11.8) gives
    `version_major(version)`, the major of each version, which then takes the package's place.
    `tree_version(path)` is the upstream version an unpacked tree declares; it raises DbsweepError for a
    tree that is not the engine's.
    """

    title: str  # the engine as messages name it
    debian_prefix: str
    debian_package: Callable[[str], str]
    debian_major: Callable[[str], int | None]
    debian_majors: range
    tree_version: Callable[[Path], str]
    build_products: BuildProducts = BuildProducts()
    version_major: Callable[[str], int] | None = None


# --- helpers shared by the source kinds -------------------------------------------------

Log = Callable[[str], None]
META = "source.json"  # written last into a staged entry; its presence marks the entry complete
_OUTPUT_TAIL = 10


def quiet(_: str) -> None:
    """The default log: says nothing."""


def run(
    args: Sequence[str | Path], what: str, cwd: Path | None = None, *, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """Runs a command with its output captured; on failure (when `check`) raises with the output's last lines."""
    cmd = [str(a) for a in args]
    try:
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False)
    except FileNotFoundError:
        raise DbsweepError(f"{what} needs `{cmd[0]}`, which is not installed.") from None
    if check and r.returncode != 0:
        raise DbsweepError(f"{what} failed ({shlex.join(cmd)} exited {r.returncode}):\n{tail(r.stdout + r.stderr)}")
    return r


def tail(output: str, lines: int = _OUTPUT_TAIL) -> str:
    return "\n".join(output.strip().splitlines()[-lines:])


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Holds an exclusive lock on `path` (created if needed), so two dbsweep runs never fetch into one cache."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@contextlib.contextmanager
def staging(root: Path) -> Iterator[Path]:
    """A fresh directory under `root/.tmp` (same filesystem as the cache, so `publish` can rename).

    Removed on the way out; whatever `publish` moved away is no longer there to remove.
    """
    tmp_root = root / ".tmp"
    tmp_root.mkdir(parents=True, exist_ok=True)
    _remove_abandoned(tmp_root)
    d = Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=tmp_root))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _remove_abandoned(tmp_root: Path) -> None:
    """Removes staging directories whose process is gone (an interrupted fetch)."""
    for d in tmp_root.iterdir():
        pid = d.name.split("-", 1)[0]
        if pid.isdigit() and not psutil.pid_exists(int(pid)):
            shutil.rmtree(d, ignore_errors=True)


def publish(staged: Path, final: Path) -> None:
    """Moves a complete staged entry into place in one rename; a concurrent twin that got there first wins."""
    final.parent.mkdir(parents=True, exist_ok=True)
    try:
        staged.rename(final)
    except OSError:
        if (final / META).is_file():
            return
        # An entry without its record was not published by us (entries are renamed in whole): replace it.
        shutil.rmtree(final)
        staged.rename(final)


def write_meta(entry: Path, tree: SourceTree) -> None:
    """Records what `load_meta` needs to answer again without fetching anything."""
    data = {
        "kind": tree.kind,
        "tree": str(tree.path.relative_to(entry)),
        "version": tree.version,
        "identity": tree.identity,
        "details": tree.details,
    }
    (entry / META).write_text(json.dumps(data, indent=2) + "\n")


def load_meta(entry: Path, spec: str) -> SourceTree | None:
    """The SourceTree recorded in a published cache entry, or None when there is no complete entry."""
    try:
        data = json.loads((entry / META).read_text())
        return SourceTree(
            spec=spec,
            kind=data["kind"],
            path=entry / data["tree"],
            version=data["version"],
            identity=data["identity"],
            details=dict(data["details"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def sha256_file(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()
