"""`dir:PATH`: a source tree used in place, identified by a hash of its source files.

The hash covers each file's relative path and bytes. It leaves out what building or
testing in the tree creates (objects, libraries, executables, configure's outputs,
symlinks, test output), so that building in place does not change the identity. In a
git checkout the files git ignores are left out as well: Postgres's .gitignore lists
its build products.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from dbsweep.errors import DbsweepError
from dbsweep.sources import SourceTree, tree_version

# Directories that hold no source: version control, dependency files, autoconf's cache, test output.
SKIP_DIRS = frozenset(
    {".git", ".deps", "autom4te.cache", "__pycache__", "tmp_check", "tmp_install", "results", "log", "output_iso"}
)
# Files configure and make write, by path from the tree's root.
SKIP_PATHS = frozenset(
    {
        "config.status",
        "config.log",
        "GNUmakefile",
        "src/Makefile.global",
        "src/Makefile.port",
        "src/include/pg_config.h",
        "src/include/pg_config_ext.h",
        "src/include/pg_config_os.h",
        "src/include/stamp-h",
        "src/include/stamp-ext-h",
        "src/interfaces/ecpg/include/ecpg_config.h",
        "src/interfaces/ecpg/include/stamp-h",
        "src/port/pg_config_paths.h",
        "src/backend/utils/probes.h",
        "src/backend/snowball/snowball_create.sql",
    }
)
SKIP_NAMES = frozenset({"objfiles.txt", "regression.diffs", "regression.out", "exports.list"})
SKIP_SUFFIXES = (
    ".o",
    ".so",
    ".a",
    ".bc",
    ".lo",
    ".la",
    ".dylib",
    ".pyc",
    ".mo",
    ".gcda",
    ".gcno",
    ".profraw",
    ".profdata",
    ".pc",  # pkg-config files for the libraries
    "-stamp",
)
# Compiled output whatever its name (executables such as src/backend/postgres): ELF, LLVM bitcode.
_BINARY_MAGIC = (b"\x7fELF", b"BC\xc0\xde")
_CHUNK = 1 << 20


def resolve_dir(spec: str, location: str) -> SourceTree:
    path = Path(location).expanduser().resolve()
    if not path.is_dir():
        raise DbsweepError(f"source directory {location} does not exist.")
    files, digest = content_hash(path)
    return SourceTree(
        spec=spec,
        kind="dir",
        path=path,
        version=tree_version(path),
        identity=f"dir:sha256:{digest}",
        details={"path": str(path), "files": str(files)},
    )


def content_hash(tree: Path) -> tuple[int, str]:
    """(number of files hashed, sha256 over their relative paths and contents)."""
    names = sorted(rel for rel in _candidates(tree) if not _skipped(rel))
    # hashlib releases the GIL on large buffers, and the reads overlap: threads help on thousands of files.
    with ThreadPoolExecutor(max_workers=min(8, (os.cpu_count() or 1) + 2)) as pool:
        digests = list(pool.map(lambda rel: _file_digest(tree / rel), names))
    h = hashlib.sha256()
    files = 0
    for rel, d in zip(names, digests, strict=True):
        if d is None:  # compiled output, or gone since listing
            continue
        h.update(f"{d} {rel}\n".encode(errors="surrogateescape"))
        files += 1
    return files, h.hexdigest()


def _candidates(tree: Path) -> Iterator[str]:
    """Relative paths of the regular files that may be source."""
    listed = _git_files(tree)
    if listed is not None:
        yield from (rel for rel in listed if (tree / rel).is_file() and not (tree / rel).is_symlink())
        return
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
        base = Path(dirpath).relative_to(tree)
        for name in filenames:
            p = Path(dirpath, name)
            if not p.is_symlink() and p.is_file():
                yield (base / name).as_posix()


def _git_files(tree: Path) -> list[str] | None:
    """Tracked and untracked-but-not-ignored files when `tree` is a git checkout's top, else None."""
    if not (tree / ".git").exists():
        return None
    try:
        r = subprocess.run(
            ["git", "-C", str(tree), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            capture_output=True,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        return None
    if r.returncode != 0:
        return None
    return sorted({os.fsdecode(p) for p in r.stdout.split(b"\0") if p})


def _skipped(rel: str) -> bool:
    parts = rel.split("/")
    name = parts[-1]
    return (
        rel in SKIP_PATHS
        or name in SKIP_NAMES
        or name.endswith(SKIP_SUFFIXES)
        or any(d in SKIP_DIRS for d in parts[:-1])
    )


def _file_digest(path: Path) -> str | None:
    h = hashlib.sha256()
    try:
        with path.open("rb") as f:
            chunk = f.read(_CHUNK)
            if chunk.startswith(_BINARY_MAGIC):
                return None
            while chunk:
                h.update(chunk)
                chunk = f.read(_CHUNK)
    except FileNotFoundError:
        return None
    return h.hexdigest()
