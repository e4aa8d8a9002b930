"""Postgres-shaped source trees and tarballs made on the spot, and the resolver as Postgres names its source:
for the source tests of unit/ (local files) and e2e/ (Debian's archive)."""

from __future__ import annotations

import hashlib
import tarfile
from pathlib import Path

from dbsweep.engines.postgres.source import NAMING
from dbsweep.sources import SourceTree
from dbsweep.sources import resolve as sources_resolve


def resolve(spec: str, root: Path, *, refresh: bool = False) -> SourceTree:
    """A source of Postgres, as the engine names it."""
    return sources_resolve.resolve(spec, root, naming=NAMING, refresh=refresh)


def fake_tree(d: Path, version: str = "99.1") -> Path:
    """A minimal tree that looks like Postgres source to dbsweep."""
    (d / "src").mkdir(parents=True)
    (d / "configure").write_text(f"#!/bin/sh\nPACKAGE_NAME='PostgreSQL'\nPACKAGE_VERSION='{version}'\n")
    (d / "configure").chmod(0o755)
    (d / "src" / "main.c").write_text("int main(void) { return 0; }\n")
    return d


def make_tarball(tmp_path: Path, compression: str = "gz", version: str = "99.1") -> Path:
    tree = fake_tree(tmp_path / f"postgresql-{version}", version)
    archive = tmp_path / f"postgresql-{version}.tar.{compression}"
    with tarfile.open(archive, f"w:{compression}") as tf:
        tf.add(tree, arcname=tree.name)
    return archive


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
