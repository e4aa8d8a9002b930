"""Turns a study's `source` string into an unpacked, identified source tree.

Fetched trees are cached under the workspace's `sources/` directory and published
in one rename, so a second resolve of the same spec is answered from the cache
without apt or the network, and an interrupted fetch leaves nothing that looks complete.

Under the sources root:

    apt/                          private apt configuration and package lists (debian:)
    debian/<package>_<version>/   tree/, download/ (.dsc, .orig and Debian tarballs), source.json
    git/repos/<name>-<key>.git    mirror clones;  git/trees/<commit>/  tree/, source.json
    tarball/<sha256>/             tree/, source.json;  tarball/by-url/  URL -> sha256
    crate/<name>@<version>        the sha256 of the crate, whose tree is the tarball entry of those bytes
    copies/<identity>-<n>/        tree/, source.json: the tree a separate build N of a source is made from
    .tmp/                         staging, renamed into place when complete
`dir:` trees are used where they are; nothing is stored for them.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from dbsweep.errors import DbsweepError
from dbsweep.sources import Naming, SourceTree, load_meta, locked, publish, quiet, staging, write_meta
from dbsweep.sources.crate import cached_crate, resolve_crate
from dbsweep.sources.debian import cached_tree, resolve_debian
from dbsweep.sources.git import cached_git, resolve_git
from dbsweep.sources.localdir import resolve_dir
from dbsweep.sources.tarball import cached_tarball, resolve_tarball

_KINDS = ("debian", "git", "tarball", "crate", "dir")
FORMS = (
    "debian:VERSION (or a bare VERSION such as 15.18), git:URL_OR_PATH@REF, tarball:PATH_OR_URL, "
    "crate:NAME@VERSION or dir:PATH"
)


def resolve(
    spec: str, root: Path, log: Callable[[str], None] | None = None, *, naming: Naming, refresh: bool = False
) -> SourceTree:
    """The source tree `spec` names, fetched into `root` (the workspace's sources/) unless already there.

    `naming` is the engine's: its Debian source packages and how a tree declares its version. `refresh` makes
    a git source fetch even when its ref is known locally (to follow a moved branch).
    """
    say = log or quiet
    kind, rest = _kind(spec)
    if not rest:
        raise DbsweepError(f"source {spec!r} is not understood; use {FORMS}.")
    if kind == "dir":
        return resolve_dir(spec, rest, naming=naming)
    root.mkdir(parents=True, exist_ok=True)
    if kind == "debian":
        return resolve_debian(spec, rest, root, say, naming=naming)
    if kind == "git":
        return resolve_git(spec, rest, root, say, naming=naming, refresh=refresh)
    if kind == "tarball":
        return resolve_tarball(spec, rest, root, say, naming=naming)
    if kind == "crate":
        return resolve_crate(spec, rest, root, say, naming=naming)
    raise DbsweepError(f"source {spec!r} is not understood; use {FORMS}.")


def _kind(spec: str) -> tuple[str, str]:
    """A source's kind and what follows it: `git:URL@REF` -> ("git", "URL@REF"); a bare version is Debian's."""
    kind, _, rest = spec.partition(":")
    if kind not in _KINDS and re.match(r"\d", spec):
        return "debian", spec.strip()
    return kind, rest.strip()


def cached(spec: str, root: Path, *, naming: Naming) -> SourceTree | None:
    """The tree `spec` names if `root` already holds it (a local directory: read now), else None; never fetches
    (a git branch is the commit fetched last, not the branch's head now)."""
    kind, rest = _kind(spec)
    if kind == "dir":
        return resolve_dir(spec, rest, naming=naming)
    if kind == "debian":
        return cached_tree(spec, rest, root, naming=naming)
    if kind == "git":
        return cached_git(spec, rest, root)
    if kind == "tarball":
        return cached_tarball(spec, rest, root)
    if kind == "crate":
        return cached_crate(spec, rest, root)
    return None


def copy_of(tree: SourceTree, root: Path, n: int) -> SourceTree:
    """The same tree in a directory of its own (`root`/copies/), for the `n`th separate build of a source: a
    build records paths (the debugger's, `__FILE__` in messages), so two builds of one source differ in
    everything but the code only when each has its own."""
    name = re.sub(r"[^A-Za-z0-9]", "_", tree.identity)[:60]
    entry = root / "copies" / f"{name}-{n}"
    with locked(root / "copies" / ".lock"):
        if (known := load_meta(entry, tree.spec)) is not None:
            return known
        with staging(root) as staged:
            dest = staged / "tree"
            shutil.copytree(tree.path, dest, symlinks=True)
            write_meta(staged, replace(tree, path=dest))
            publish(staged, entry)
    copied = load_meta(entry, tree.spec)
    if copied is None:
        raise DbsweepError(f"could not copy the source tree {tree.path} to {entry}")
    return copied
