"""`tarball:PATH_OR_URL`: a source tarball, identified by the sha256 of its bytes.

Cache layout under the sources root:

    tarball/<sha256>/source.json   what resolve answers without fetching again
    tarball/<sha256>/tree/         the unpacked source root
    tarball/by-url/<key>           the sha256 a URL gave last time (so a URL resolves offline)
"""

from __future__ import annotations

import dataclasses
import hashlib
import lzma
import shutil
import tarfile
import urllib.error
import urllib.parse
import urllib.request
import zlib
from pathlib import Path
from typing import IO

from dbsweep.errors import DbsweepError
from dbsweep.sources import (
    Log,
    Naming,
    SourceTree,
    load_meta,
    publish,
    quiet,
    sha256_file,
    staging,
    write_meta,
)

_CHUNK = 1 << 20
_TIMEOUT = 60  # seconds without progress before a download gives up


def resolve_tarball(spec: str, location: str, root: Path, log: Log = quiet, *, naming: Naming) -> SourceTree:
    """The unpacked tree of a local or downloadable tarball, fetched and unpacked once."""
    if is_url(location):
        return _from_url(spec, location, root, log, naming)
    return _from_file(spec, Path(location).expanduser(), root, log, naming)


def cached_tarball(spec: str, location: str, root: Path) -> SourceTree | None:
    """The unpacked tree when the source cache already holds it; never downloads or unpacks (a local
    file is hashed, to find its entry)."""
    if is_url(location):
        index = _url_index(root, location)
        digest = index.read_text().strip() if index.is_file() else None
        source = location
    else:
        path = Path(location).expanduser()
        digest = sha256_file(path) if path.is_file() else None
        source = str(path)
    cached = load_meta(_entry(root, digest), spec) if digest else None
    return _with_source(cached, source) if cached is not None else None


def _url_index(root: Path, url: str) -> Path:
    return root / "tarball" / "by-url" / hashlib.sha256(url.encode()).hexdigest()[:32]


def is_url(location: str) -> bool:
    return urllib.parse.urlsplit(location).scheme in ("http", "https")


def unpack(stream: IO[bytes], staged: Path, what: str) -> Path:
    """Unpacks a tar stream (plain, gzip, bzip2 or xz) into `staged/tree` and returns that path.

    When the archive holds a single top directory (`name-1.2/`), that directory becomes the tree.
    """
    dest = staged / "unpack"
    dest.mkdir()
    try:
        with tarfile.open(fileobj=stream, mode="r|*") as tf:
            # The "data" filter refuses absolute paths, links out of the tree and device files.
            tf.extractall(dest, filter="data")
    except (tarfile.TarError, EOFError, OSError, zlib.error, lzma.LZMAError) as e:  # bz2 errors are OSErrors
        raise DbsweepError(f"cannot unpack {what}: {e}") from None
    entries = list(dest.iterdir())
    top = entries[0] if len(entries) == 1 and entries[0].is_dir() else dest
    tree = staged / "tree"
    top.rename(tree)
    shutil.rmtree(dest, ignore_errors=True)
    return tree


def _from_file(spec: str, path: Path, root: Path, log: Log, naming: Naming) -> SourceTree:
    if not path.is_file():
        raise DbsweepError(f"tarball {path} does not exist.")
    cached = load_meta(_entry(root, sha256_file(path)), spec)
    if cached is not None:
        return _with_source(cached, str(path))
    with staging(root) as staged:
        # Unpack a copy, so the bytes unpacked are the bytes hashed even if the file changes meanwhile.
        copy = staged / path.name
        shutil.copyfile(path, copy)
        return publish_archive(spec, copy, sha256_file(copy), str(path), root, log, naming)


def _from_url(spec: str, url: str, root: Path, log: Log, naming: Naming) -> SourceTree:
    index = _url_index(root, url)
    if index.is_file():
        cached = load_meta(_entry(root, index.read_text().strip()), spec)
        if cached is not None:
            return _with_source(cached, url)
    with staging(root) as staged:
        name = Path(urllib.parse.urlsplit(url).path).name or "source.tar"
        download = staged / name
        log(f"downloading {url}")
        digest = _download(url, download)
        tree = publish_archive(spec, download, digest, url, root, log, naming)
        index.parent.mkdir(parents=True, exist_ok=True)
        (staged / "index").write_text(digest + "\n")
        (staged / "index").replace(index)
        return tree


def _download(url: str, dest: Path) -> str:
    """Saves `url` to `dest` and returns the sha256 of the bytes saved."""
    h = hashlib.sha256()
    try:
        with urllib.request.urlopen(url, timeout=_TIMEOUT) as r, dest.open("wb") as f:  # noqa: S310 (http(s) only)
            while chunk := r.read(_CHUNK):
                h.update(chunk)
                f.write(chunk)
    except (urllib.error.URLError, OSError) as e:
        raise DbsweepError(f"cannot download {url}: {e}") from None
    return h.hexdigest()


def publish_archive(
    spec: str, archive: Path, digest: str, source: str, root: Path, log: Log, naming: Naming
) -> SourceTree:
    """Unpacks an archive already hashed (`digest`) into the tarball cache, or answers from it."""
    entry = _entry(root, digest)
    cached = load_meta(entry, spec)
    if cached is not None:  # the same bytes came from elsewhere before
        return _with_source(cached, source)
    log(f"unpacking {archive.name}")
    staged = archive.parent / "entry"
    staged.mkdir()
    with archive.open("rb") as f:
        path = unpack(f, staged, archive.name)
    path, version = _engine_tree(path, naming)
    details = {"source": source, "file": archive.name}
    if path != staged / "tree":
        details["subdir"] = str(path.relative_to(staged / "tree"))
    result = SourceTree(
        spec=spec, kind="tarball", path=path, version=version, identity=f"sha256:{digest}", details=details
    )
    write_meta(staged, result)
    publish(staged, entry)
    return dataclasses.replace(result, path=entry / path.relative_to(staged))


def _engine_tree(path: Path, naming: Naming) -> tuple[Path, str]:
    """The engine's tree in an unpacked tarball and its version: the tarball's root, or else the one directory
    just below it that is the engine's tree (an archive that bundles it, such as a language binding's package
    of the engine's sources: `librocksdb-sys-6.11.4/rocksdb/`)."""
    try:
        return path, naming.tree_version(path)
    except DbsweepError as e:
        found: list[tuple[Path, str]] = []
        for sub in sorted(p for p in path.iterdir() if p.is_dir()):
            try:
                found.append((sub, naming.tree_version(sub)))
            except DbsweepError:
                continue
        if len(found) == 1:
            return found[0]
        if found:
            names = ", ".join(p.name for p, _ in found)
            raise DbsweepError(
                f"the tarball holds several {naming.title} trees ({names}); unpack the one to use"
            ) from e
        raise


def cached_digest(spec: str, digest: str, source: str, root: Path) -> SourceTree | None:
    """The tree of the archive with this sha256, when the cache holds it."""
    cached = load_meta(_entry(root, digest), spec)
    return _with_source(cached, source) if cached is not None else None


def _entry(root: Path, digest: str) -> Path:
    return root / "tarball" / digest


def _with_source(tree: SourceTree, source: str) -> SourceTree:
    """The cached tree, with `details` naming where this spec got it (several may give the same bytes)."""
    return dataclasses.replace(tree, details={**tree.details, "source": source})
