"""`crate:NAME@VERSION`: an engine's source as a package of Rust's registry carries it (a binding's `-sys`
crate bundles the engine's whole tree, e.g. `librocksdb-sys@6.11.4` holds RocksDB 6.11.4 in `rocksdb/`).

Cargo fetches it, through its own registry configuration, for a throwaway package that depends on exactly
that version; the `.crate` file is a gzip tarball, identified by its sha256 (the checksum the registry's
index gives, which Cargo checked and wrote into the lock file), and unpacked as `tarball:` does, the engine's
tree found one directory down.

Cache layout under the sources root: `crate/<name>@<version>` holds the sha256; the tree is the tarball
entry of those bytes (`tarball/<sha256>/`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

from dbsweep.errors import DbsweepError
from dbsweep.sources import Log, Naming, SourceTree, sha256_file, staging
from dbsweep.sources.tarball import cached_digest, publish_archive

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
_VERSION = re.compile(r"\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.+-]+)?")
_TIMEOUT_S = 900


def parse(rest: str) -> tuple[str, str]:
    name, sep, version = rest.partition("@")
    if not sep or not _NAME.fullmatch(name) or not _VERSION.fullmatch(version):
        raise DbsweepError(
            f"crate:{rest} is not understood; write crate:NAME@VERSION with the exact version, "
            "e.g. crate:some-sys@1.2.3"
        )
    return name, version


def _index(root: Path, name: str, version: str) -> Path:
    return root / "crate" / f"{name}@{version}"


def cached_crate(spec: str, rest: str, root: Path) -> SourceTree | None:
    """The unpacked tree when the source cache already holds the crate; never fetches."""
    name, version = parse(rest)
    index = _index(root, name, version)
    if not index.is_file():
        return None
    return cached_digest(spec, index.read_text().strip(), f"crate {name} {version}", root)


def resolve_crate(spec: str, rest: str, root: Path, log: Log, *, naming: Naming) -> SourceTree:
    name, version = parse(rest)
    cached = cached_crate(spec, rest, root)
    if cached is not None:
        return cached
    cargo = shutil.which("cargo")
    if cargo is None:
        raise DbsweepError(f"source {spec!r}: cargo is not installed (scripts/setup.sh installs it)")
    with staging(root) as staged:
        project = staged / "fetch"
        (project / "src").mkdir(parents=True)
        (project / "src" / "lib.rs").write_text("")
        (project / "Cargo.toml").write_text(
            '[package]\nname = "dbsweep-source-fetch"\nversion = "0.0.0"\nedition = "2021"\n\n'
            f'[dependencies]\n"{name}" = "={version}"\n'
        )
        log(f"fetching crate {name} {version} with cargo")
        try:
            r = subprocess.run(
                [cargo, "fetch", "--manifest-path", str(project / "Cargo.toml")],
                capture_output=True,
                text=True,
                timeout=_TIMEOUT_S,
                env={**os.environ, "CARGO_TARGET_DIR": str(staged / "target")},
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise DbsweepError(f"source {spec!r}: cargo fetch took more than {_TIMEOUT_S} s") from None
        if r.returncode != 0:
            tail = " ".join(r.stderr.strip().splitlines()[-3:])
            raise DbsweepError(f"source {spec!r}: cargo could not fetch {name} {version}: {tail}")
        checksum = _locked_checksum(project / "Cargo.lock", name, version)
        archive = _downloaded(name, version, checksum)
        copy = staged / f"{name}-{version}.crate"
        shutil.copyfile(archive, copy)
        digest = sha256_file(copy)
        if checksum is not None and digest != checksum:
            raise DbsweepError(
                f"source {spec!r}: the crate cargo left ({archive}) does not match the registry's checksum {checksum}"
            )
        tree = publish_archive(spec, copy, digest, f"crate {name} {version}", root, log, naming)
        index = _index(root, name, version)
        index.parent.mkdir(parents=True, exist_ok=True)
        (staged / "index").write_text(digest + "\n")
        (staged / "index").replace(index)
        return tree


def _locked_checksum(lock: Path, name: str, version: str) -> str | None:
    """The registry index's sha256 of the crate, as cargo wrote it into the lock file."""
    try:
        data = tomllib.loads(lock.read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return None
    for p in data.get("package", []):
        if p.get("name") == name and p.get("version") == version:
            return str(p["checksum"]) if p.get("checksum") else None
    return None


def _downloaded(name: str, version: str, checksum: str | None) -> Path:
    """The `.crate` cargo keeps in its registry cache (any registry it is configured for)."""
    home = Path(os.environ.get("CARGO_HOME") or Path.home() / ".cargo")
    found = sorted((home / "registry" / "cache").glob(f"*/{name}-{version}.crate"))
    if checksum is not None:
        found = [f for f in found if sha256_file(f) == checksum] or found
    if not found:
        raise DbsweepError(f"cargo fetched {name} {version} but its .crate is not under {home / 'registry' / 'cache'}")
    return found[0]
