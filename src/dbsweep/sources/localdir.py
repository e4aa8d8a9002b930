"""`dir:PATH`: a source tree used in place, identified by a hash of its source files.

The hash covers each file's relative path and bytes. It leaves out what building or
testing in the tree creates (objects, libraries, executables, configure's outputs,
symlinks, and what the engine's `Naming.build_products` lists: its generated headers
and test output), so that building in place does not change the identity. In a git
checkout the files git ignores are left out as well: an engine's .gitignore usually
lists its build products.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from dbsweep.errors import DbsweepError
from dbsweep.sources import BuildProducts, Naming, SourceTree

# Directories that hold no source: version control, dependency files, autoconf's cache, Python's.
SKIP_DIRS = frozenset({".git", ".deps", "autom4te.cache", "__pycache__"})
# Files configure writes, by path from the tree's root.
SKIP_PATHS = frozenset({"config.status", "config.log"})
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
# Compiled output whatever its name (executables without a suffix): ELF, LLVM bitcode.
_BINARY_MAGIC = (b"\x7fELF", b"BC\xc0\xde")
_CHUNK = 1 << 20


def resolve_dir(spec: str, location: str, *, naming: Naming) -> SourceTree:
    path = Path(location).expanduser().resolve()
    if not path.is_dir():
        raise DbsweepError(f"source directory {location} does not exist.")
    version = naming.tree_version(path)
    files, digest = content_hash(path, naming.build_products)
    return SourceTree(
        spec=spec,
        kind="dir",
        path=path,
        version=version,
        identity=f"dir:sha256:{digest}",
        details={"path": str(path), "files": str(files)},
    )


def content_hash(tree: Path, products: BuildProducts | None = None) -> tuple[int, str]:
    """(number of files hashed, sha256 over their relative paths and contents), leaving out `products`."""
    products = products or BuildProducts()
    skip_dirs = SKIP_DIRS | products.dirs
    names = sorted(rel for rel in _candidates(tree, skip_dirs) if not _skipped(rel, skip_dirs, products))
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


def _candidates(tree: Path, skip_dirs: frozenset[str]) -> Iterator[str]:
    """Relative paths of the regular files that may be source."""
    listed = _git_files(tree)
    if listed is not None:
        yield from (rel for rel in listed if (tree / rel).is_file() and not (tree / rel).is_symlink())
        return
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames[:] = [d for d in dirnames if d not in skip_dirs]
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


def _skipped(rel: str, skip_dirs: frozenset[str], products: BuildProducts) -> bool:
    parts = rel.split("/")
    name = parts[-1]
    return (
        rel in SKIP_PATHS
        or rel in products.paths
        or name in products.names
        or name.endswith(SKIP_SUFFIXES)
        or any(d in skip_dirs for d in parts[:-1])
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
