"""`debian:VERSION`: the upstream tarball of the engine's Debian source package for that version.

The engine's `Naming` says which source packages hold it (one per major, say `<name>-<major>`)
and which package carries a version; nothing here knows an engine.

apt runs with a private configuration under `<root>/apt/` (source list, package lists,
cache), so the system's sources and lists are never read or changed. apt checks the
archive's signatures and the index checksums; the files of the `.dsc` are checked here
once more. Only the upstream (`.orig`) tarball is unpacked, without Debian's patches.

A version the lists no longer carry (a point release replaced by the next, still in the
archive's pool) is fetched from the pool by its Debian version: the `.dsc` must bear a
good signature by a Debian uploader (`debian-keyring`), its files must match the signed
checksums, and the tree records that it came from the pool and who signed it, since no
signed archive index vouches for it.

Cache layout under the sources root:

    apt/                                       sources.list, lists/, cache/, updated (stamp)
    debian/<package>_<version>/source.json     what resolve answers without apt
    debian/<package>_<version>/tree/           the unpacked upstream source
    debian/<package>_<version>/download/       the .dsc, the .orig tarball, the Debian tarball
"""

from __future__ import annotations

import dataclasses
import functools
import re
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from dbsweep.errors import DbsweepError
from dbsweep.sources import (
    Log,
    Naming,
    SourceTree,
    load_meta,
    locked,
    publish,
    quiet,
    run,
    sha256_file,
    staging,
    tail,
    write_meta,
)
from dbsweep.sources.tarball import unpack

KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
_ARCHIVES = (
    ("http://deb.debian.org/debian", ("bullseye", "bookworm", "trixie", "forky", "sid")),
    ("http://deb.debian.org/debian-security", ("bullseye-security", "bookworm-security", "trixie-security")),
)
_MAX_AGE = 24 * 3600  # seconds before the package lists are refreshed
_RECHECK_AFTER = 300  # seconds before a version not found is worth another refresh
_APT_HELPER = "/usr/lib/apt/apt-helper"
# The pools of the archives above: where a version the lists have dropped may still be served.
_POOLS = (
    ("http://deb.debian.org/debian", "pool/main"),
    ("http://deb.debian.org/debian-security", "pool/updates/main"),
)
# The keys of Debian's uploaders (developers, then maintainers), which sign every .dsc.
UPLOADER_KEYRINGS = (
    Path("/usr/share/keyrings/debian-keyring.gpg"),
    Path("/usr/share/keyrings/debian-maintainers.gpg"),
)
_ORIG = re.compile(r"\.orig\.tar\.(gz|bz2|xz)$")


@dataclass(frozen=True)
class DebianSource:
    package: str  # the source package, one per major of the engine
    debian_version: str  # 15.18-0+deb12u1
    upstream_version: str  # 15.18
    suite: str  # bookworm (several joined by ", " when more than one carries it)
    major: int  # the engine's major version the package carries, as its Naming reads the package's name


# --- public -----------------------------------------------------------------------------


def available(root: Path, log: Log = quiet, *, naming: Naming) -> list[DebianSource]:
    """Every source package version of the engine the Debian archives carry, by major and then version."""
    _ensure_lists(root, log)
    return [s for s in _query(root, naming) if s.major in naming.debian_majors]


def fetched_from_pool(root: Path, *, naming: Naming) -> list[DebianSource]:
    """The engine's versions an earlier run fetched from the archive's pool (no list carries them), from the
    cache alone."""
    base = root / "debian"
    found = []
    for entry in sorted(base.iterdir()) if base.is_dir() else []:
        tree = load_meta(entry, "")
        if tree is None or tree.details.get("suite") != "pool":
            continue
        package, version = tree.details.get("package", ""), tree.details.get("debian_version", "")
        major = _major(package, version, naming) if version else None
        if major is None:
            continue
        found.append(DebianSource(package, version, upstream_of(version), "pool (fetched)", major))
    return sorted(found, key=functools.cmp_to_key(source_order))


def resolve_debian(spec: str, version: str, root: Path, log: Log = quiet, *, naming: Naming) -> SourceTree:
    """The upstream tree of the engine's Debian source package at `version` (upstream, or a full Debian
    version)."""
    package = naming.debian_package(version)
    cached = _cached(root, package, version, spec)
    if cached is not None:
        return cached
    try:
        source = _find(root, package, version, log, naming)
    except _NotListed as e:
        candidates = pool_candidates(e.listing, version, naming=naming)
        if not candidates:
            raise DbsweepError(str(e)) from None
        with locked(root / "debian" / ".lock"):
            return _fetch_from_pool(spec, package, version, candidates, root, log, naming, unlisted=str(e))
    with locked(root / "debian" / ".lock"):
        cached = _cached(root, package, source.debian_version, spec)
        if cached is not None:  # fetched by another run while we waited
            return cached
        return _fetch(spec, source, root, log, naming)


def verify_dsc(dsc: Path) -> dict[str, str]:
    """Checks every file the .dsc lists (next to it) against its Checksums-Sha256; returns {name: sha256}."""
    return _check_listed(dsc, parse_checksums(dsc.read_text(errors="replace")))


def _check_listed(dsc: Path, listed: dict[str, tuple[str, int]]) -> dict[str, str]:
    """Checks the files a .dsc lists (next to it) against `listed`, the .dsc's Checksums-Sha256."""
    if not listed:
        raise DbsweepError(f"{dsc.name} lists no Checksums-Sha256.")
    for name, (digest, size) in listed.items():
        path = dsc.parent / name
        if not path.is_file():
            raise DbsweepError(f"{name}, listed in {dsc.name}, was not downloaded.")
        actual = sha256_file(path)
        if actual != digest or path.stat().st_size != size:
            raise DbsweepError(
                f"{name} does not match {dsc.name}: sha256 {actual}, size {path.stat().st_size}; "
                f"expected {digest}, size {size}."
            )
    return {name: digest for name, (digest, _) in listed.items()}


def parse_checksums(dsc_text: str) -> dict[str, tuple[str, int]]:
    """The `Checksums-Sha256` field of a .dsc: {file name: (sha256, size)}."""
    listed: dict[str, tuple[str, int]] = {}
    in_field = False
    for line in dsc_text.splitlines():
        if line.startswith("Checksums-Sha256:"):
            in_field = True
        elif in_field and line.startswith((" ", "\t")):
            fields = line.split()
            if len(fields) != 3 or not fields[1].isdigit():
                raise DbsweepError(f"unreadable Checksums-Sha256 line in a .dsc: {line.strip()!r}")
            listed[fields[2]] = (fields[0].lower(), int(fields[1]))
        else:
            in_field = False
    return listed


def compare_versions(a: str, b: str) -> int:
    """Debian version order (epoch, upstream, revision; `~` sorts before everything): <0, 0 or >0."""
    ea, ua, ra = _split_version(a)
    eb, ub, rb = _split_version(b)
    if ea != eb:
        return ea - eb
    return _compare_part(ua, ub) or _compare_part(ra, rb)


def upstream_of(debian_version: str) -> str:
    return _split_version(debian_version)[1]


def pool_candidates(listing: list[DebianSource], version: str, *, naming: Naming) -> list[str]:
    """The Debian versions to look for in the archive's pool when `version` is in no list: a Debian version
    as given; for an upstream version, the revisions the lists carry for its package (a security update's
    `0+deb13u1`, unstable's `2`), each with and without the repacking suffix the listed version has."""
    package = naming.debian_package(version)
    if "-" in version:
        return [version]
    found: list[str] = []
    for s in reversed(listing):  # the newest listed revisions first
        if s.package != package:
            continue
        epoch, upstream, revision = _split_version(s.debian_version)
        repacked = _REPACKED.search(upstream)
        uppers = [version, version + repacked.group(0)] if repacked and not _REPACKED.search(version) else [version]
        prefix = f"{epoch}:" if ":" in s.debian_version else ""
        found += [f"{prefix}{u}-{revision}" for u in uppers if revision]
    return list(dict.fromkeys(found))


# --- answered from the cache alone (dbsweep validate: nothing fetched, nothing refreshed) ----------


def cached_tree(spec: str, version: str, root: Path, *, naming: Naming) -> SourceTree | None:
    """The tree of Debian's `version` when an earlier run fetched it; None otherwise. Never fetches."""
    return _cached(root, naming.debian_package(version), version, spec)


def cached_listing(root: Path, *, naming: Naming) -> list[DebianSource] | None:
    """Every source version of the engine in the private package lists as they are now, or None when no
    list has been fetched yet. Reads the lists only: never runs `apt-get update`."""
    if not (root / "apt" / "sources.list").is_file() or not _index_files(root):
        return None
    return _query(root, naming)


def listing_age(root: Path) -> float:
    """Seconds since the private package lists were refreshed (infinite when never)."""
    return _lists_age(root)


def not_listed(listing: list[DebianSource], version: str, *, naming: Naming) -> str | None:
    """What resolving `version` against `listing` would say when it finds nothing; None when it finds it."""
    package = naming.debian_package(version)
    if _match(listing, package, version) is not None:
        return None
    return _unknown_message(listing, package, version, naming)


# --- finding a version --------------------------------------------------------------------


def _cached(root: Path, package: str, version: str, spec: str) -> SourceTree | None:
    """A fetched tree for `version` (the newest Debian revision fetched, for an upstream version)."""
    base = root / "debian"
    if "-" in version:
        return load_meta(base / f"{package}_{_safe(version)}", spec)
    if not base.is_dir():
        return None
    fetched = [_unsafe(e.name.removeprefix(f"{package}_")) for e in base.iterdir() if e.name.startswith(f"{package}_")]
    matching = [v for v in fetched if _same_upstream(upstream_of(v), version)]
    for v in sorted(matching, key=functools.cmp_to_key(compare_versions), reverse=True):
        tree = load_meta(base / f"{package}_{_safe(v)}", spec)
        if tree is not None:
            return tree
    return None


def _find(root: Path, package: str, version: str, log: Log, naming: Naming) -> DebianSource:
    _ensure_lists(root, log)
    everything = _query(root, naming)
    found = _match(everything, package, version)
    if found is None and _lists_age(root) > _RECHECK_AFTER:
        # The lists may predate the version: refresh once before giving up.
        _ensure_lists(root, log, force=True)
        everything = _query(root, naming)
        found = _match(everything, package, version)
    if found is None:
        raise _NotListed(_unknown_message(everything, package, version, naming), everything)
    return found


class _NotListed(DbsweepError):
    """No list carries the version; the listing says what the lists do carry (for the pool's candidates)."""

    def __init__(self, message: str, listing: list[DebianSource]) -> None:
        super().__init__(message)
        self.listing = listing


def _match(sources: list[DebianSource], package: str, version: str) -> DebianSource | None:
    if "-" in version:
        exact = [s for s in sources if s.package == package and s.debian_version == version]
    else:
        exact = [s for s in sources if s.package == package and _same_upstream(s.upstream_version, version)]
    return exact[-1] if exact else None  # sorted ascending: the newest Debian revision


def _same_upstream(a: str, b: str) -> bool:
    return _plain_upstream(a) == _plain_upstream(b)


# The suffix of an upstream tarball Debian repacked (files removed for the DFSG): 11.8.9+ds, 2.1+dfsg1.
_REPACKED = re.compile(r"[+~.](?:dfsg|ds|repack)\d*$")


def _plain_upstream(version: str) -> str:
    """The version upstream gave: Debian writes pre-releases as 18~beta1 (18beta1), and a repacked tarball's
    version carries a suffix (11.8.9+ds) that the tree's own version does not."""
    return _REPACKED.sub("", version).replace("~", "")


def _unknown_message(everything: list[DebianSource], package: str, version: str, naming: Naming) -> str:
    same_major = [s for s in everything if s.package == package]
    pool = same_major or everything
    if "-" in version and same_major:
        have = [s.debian_version for s in pool]
    else:
        have = list(dict.fromkeys(s.upstream_version for s in pool))
    return f"no Debian source for {naming.title} {version}; have: {', '.join(have) or 'none'}"


# --- apt ------------------------------------------------------------------------------------


def _apt_options(root: Path) -> list[str]:
    apt = root / "apt"
    return [
        "-o",
        f"Dir::Etc::SourceList={apt / 'sources.list'}",
        "-o",
        "Dir::Etc::SourceParts=/nonexistent",
        "-o",
        f"Dir::State::Lists={apt / 'lists'}",
        "-o",
        f"Dir::Cache={apt / 'cache'}",
        "-o",
        "APT::Get::List-Cleanup=0",
    ]


def _sources_list() -> str:
    lines = [f"deb-src [signed-by={KEYRING}] {url} {suite} main" for url, suites in _ARCHIVES for suite in suites]
    return "\n".join(lines) + "\n"


def _lists_age(root: Path) -> float:
    """Seconds since the private package lists were refreshed (infinite when never)."""
    try:
        return time.time() - (root / "apt" / "updated").stat().st_mtime
    except FileNotFoundError:
        return float("inf")


def _ensure_lists(root: Path, log: Log, *, force: bool = False) -> None:
    """Refreshes the private package lists when missing, a day old, or forced."""
    apt = root / "apt"
    with locked(apt / ".lock"):
        sources = apt / "sources.list"
        changed = not sources.is_file() or sources.read_text() != _sources_list()
        if _lists_age(root) < _MAX_AGE and not changed and not force:
            return
        if not KEYRING.is_file():
            raise DbsweepError(
                f"Debian sources need the Debian archive keyring {KEYRING} (apt-get install debian-archive-keyring)."
            )
        for d in (apt / "lists" / "partial", apt / "cache" / "archives" / "partial"):
            d.mkdir(parents=True, exist_ok=True)
        sources.write_text(_sources_list())
        log("updating the Debian source package lists")
        r = run(["apt-get", *_apt_options(root), "update"], "apt-get update (Debian source lists)", check=False)
        if r.returncode != 0:
            # One archive failing (a suite moved to archive.debian.org, a mirror hiccup) need not stop
            # the others; with no list at all there is nothing to use.
            if not _index_files(root):
                raise DbsweepError(f"apt-get update (Debian source lists) failed:\n{tail(r.stdout + r.stderr)}")
            log(f"apt-get update reported problems; using the lists it has:\n{tail(r.stdout + r.stderr, 4)}")
        (apt / "updated").touch()


def _query(root: Path, naming: Naming) -> list[DebianSource]:
    """Every source package of the engine in the private lists, read straight from the Sources indexes.

    (One `apt-cache madison` per package scans all the indexes each time: seconds per major.)
    """
    suites: dict[tuple[str, str], list[str]] = {}
    for filename, suite in _index_files(root):
        for package, version in _stanzas(_index_text(filename), naming.debian_prefix):
            suites.setdefault((package, version), []).append(suite)
    found = []
    for (p, v), s in suites.items():
        major = _major(p, v, naming)
        if major is not None:  # a package that only shares the prefix
            found.append(DebianSource(p, v, upstream_of(v), ", ".join(dict.fromkeys(s)), major))
    return sorted(found, key=functools.cmp_to_key(source_order))


def _major(package: str, debian_version: str, naming: Naming) -> int | None:
    """The engine's major version a package's version carries; None for a package that is not the engine's."""
    major = naming.debian_major(package)
    if major is not None and naming.version_major is not None:  # one package, several majors
        major = naming.version_major(upstream_of(debian_version))
    return major


def _index_files(root: Path) -> list[tuple[str, str]]:
    """(file, suite) of each Sources index present in the private lists."""
    targets = run(
        ["apt-get", *_apt_options(root), "indextargets", "--format", "$(FILENAME)\t$(CODENAME)", "Created-By: Sources"],
        "apt-get indextargets",
    ).stdout
    found = []
    for line in targets.splitlines():
        filename, _, suite = line.partition("\t")
        if Path(filename).is_file():
            found.append((filename, suite))
    return found


def _index_text(filename: str) -> bytes:
    """An index file's text; apt's helper undoes whichever compression apt stored it with."""
    try:
        r = subprocess.run([_APT_HELPER, "cat-file", filename], capture_output=True, check=False)
    except FileNotFoundError:
        raise DbsweepError(f"Debian sources need {_APT_HELPER} (part of apt), which is missing.") from None
    if r.returncode != 0:
        raise DbsweepError(f"cannot read {filename}:\n{tail(r.stderr.decode(errors='replace'))}")
    return r.stdout


@functools.cache
def _stanza(prefix: str) -> re.Pattern[bytes]:
    return re.compile(rb"Package: (" + re.escape(prefix.encode()) + rb"\S*)\n(?:.*\n)*?Version: (\S+)$", re.MULTILINE)


def _stanzas(index: bytes, prefix: str) -> Iterator[tuple[str, str]]:
    """(package, version) of each stanza of a Sources index whose package name starts with `prefix`."""
    # A plain substring search: a regex anchored with ^ would be tried at every offset of ~60 MB.
    marker = b"\nPackage: " + prefix.encode()
    stanza = _stanza(prefix)
    starts = [0] if index.startswith(marker[1:]) else []
    at = index.find(marker)
    while at >= 0:
        starts.append(at + 1)
        at = index.find(marker, at + 1)
    for start in starts:
        end = index.find(b"\n\n", start)
        m = stanza.match(index, start, end if end >= 0 else len(index))
        if m:
            yield m.group(1).decode(), m.group(2).decode()


def source_order(a: DebianSource, b: DebianSource) -> int:
    return (a.major - b.major) or compare_versions(a.debian_version, b.debian_version)


# --- fetching ---------------------------------------------------------------------------------


def _fetch(spec: str, source: DebianSource, root: Path, log: Log, naming: Naming) -> SourceTree:
    log(f"fetching Debian source {source.package} {source.debian_version} ({source.suite})")
    with staging(root) as staged:
        entry = staged / "entry"
        download = entry / "download"
        download.mkdir(parents=True)
        with locked(root / "apt" / ".lock"):  # not while another run rewrites the lists
            run(
                [
                    "apt-get",
                    *_apt_options(root),
                    "source",
                    "--download-only",
                    f"{source.package}={source.debian_version}",
                ],
                f"download of Debian source {source.package} {source.debian_version}",
                cwd=download,
            )
        dscs = list(download.glob("*.dsc"))
        if len(dscs) != 1:
            raise DbsweepError(f"apt-get source left {len(dscs)} .dsc files for {source.package}, expected one.")
        checksums = verify_dsc(dscs[0])
        return _unpack_and_publish(spec, source, entry, dscs[0], checksums, root, log, naming, {})


def _unpack_and_publish(
    spec: str,
    source: DebianSource,
    entry: Path,
    dsc: Path,
    checksums: dict[str, str],
    root: Path,
    log: Log,
    naming: Naming,
    details: dict[str, str],
) -> SourceTree:
    """Unpacks the checked upstream tarball of a staged entry and publishes the entry in the cache."""
    origs = sorted(name for name in checksums if _ORIG.search(name))
    if len(origs) != 1:
        raise DbsweepError(f"{dsc.name} lists {len(origs)} upstream tarballs, expected one: {origs}")
    orig = dsc.parent / origs[0]
    log(f"unpacking {orig.name}")
    with orig.open("rb") as f:
        path = unpack(f, entry, orig.name)
    version = naming.tree_version(path)
    if not _same_upstream(version, source.upstream_version):
        raise DbsweepError(f"{orig.name} holds {naming.title} {version}, not {source.upstream_version}.")
    result = SourceTree(
        spec=spec,
        kind="debian",
        path=path,
        version=version,
        identity=f"sha256:{checksums[orig.name]}",
        details={
            "package": source.package,
            "debian_version": source.debian_version,
            "suite": source.suite,
            "orig": orig.name,
            "dsc": dsc.name,
            **details,
        },
    )
    write_meta(entry, result)
    final = root / "debian" / f"{source.package}_{_safe(source.debian_version)}"
    publish(entry, final)
    return dataclasses.replace(result, path=final / "tree")


# --- fetching from the pool (a version the lists no longer carry) -----------------------------


def _fetch_from_pool(
    spec: str,
    package: str,
    version: str,
    candidates: list[str],
    root: Path,
    log: Log,
    naming: Naming,
    *,
    unlisted: str,
) -> SourceTree:
    for candidate in candidates:  # another run may have fetched it while we waited for the lock
        cached = _cached(root, package, candidate, spec)
        if cached is not None:
            return cached
    keyrings = [k for k in UPLOADER_KEYRINGS if k.is_file()]
    if not keyrings:
        raise DbsweepError(
            f"{unlisted}. The archive's pool may still hold it, but checking a .dsc from the pool needs the "
            f"uploaders' keys in {UPLOADER_KEYRINGS[0]} (apt-get install debian-keyring)."
        )
    log(f"{naming.title} {version} is in no Debian source list; looking for it in the archive's pool")
    with staging(root) as staged:
        entry = staged / "entry"
        download = entry / "download"
        download.mkdir(parents=True)
        tried: list[str] = []
        for debian_version in candidates:
            name = f"{package}_{_no_epoch(debian_version)}.dsc"
            for base, pool in _POOLS:
                folder = f"{base}/{pool}/{_pool_folder(package)}/{package}"
                tried.append(f"{folder}/{name}")
                if _download(f"{folder}/{name}", download / name):
                    return _from_pool(spec, package, debian_version, folder, download / name, root, log, naming)
        shown = "\n".join(f"  {url}" for url in tried)
        raise DbsweepError(f"{unlisted}, and the archive's pool does not serve it either; tried:\n{shown}")


def _from_pool(
    spec: str, package: str, debian_version: str, folder: str, dsc: Path, root: Path, log: Log, naming: Naming
) -> SourceTree:
    """The tree of a .dsc downloaded from the pool: its signature checked, then its files against it."""
    signed, signer = _signed_text(dsc)
    listed = parse_checksums(signed)
    for name in listed:
        if "/" in name or name.startswith("."):
            raise DbsweepError(f"{dsc.name} lists a file name that is no plain name: {name!r}")
        log(f"fetching {name} from the pool")
        if not _download(f"{folder}/{name}", dsc.parent / name):
            raise DbsweepError(f"{name}, listed in {dsc.name}, is not served at {folder}/{name}.")
    checksums = _check_listed(dsc, listed)
    major = _major(package, debian_version, naming)
    source = DebianSource(package, debian_version, upstream_of(debian_version), "pool", major or 0)
    details = {"from": f"{folder}/ (in no signed index)", "signed_by": signer}
    return _unpack_and_publish(spec, source, dsc.parent.parent, dsc, checksums, root, log, naming, details)


def _signed_text(dsc: Path) -> tuple[str, str]:
    """The part of a clearsigned .dsc that a Debian uploader's good signature covers, and who signed it."""
    keyrings = [a for k in UPLOADER_KEYRINGS if k.is_file() for a in ("--keyring", str(k))]
    try:
        r = subprocess.run(
            ["gpgv", "--status-fd", "2", *keyrings, "--output", "-", str(dsc)],
            capture_output=True,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except FileNotFoundError:
        raise DbsweepError("checking a .dsc from the pool needs `gpgv` (apt-get install gpgv).") from None
    status = r.stderr.decode(errors="replace")
    # A key that has expired since (or only in an older keyring than the uploader's renewal) still made a
    # good signature; a bad or revoked one did not.
    good = re.search(r"^\[GNUPG:\] (GOODSIG|EXPKEYSIG) (\S+) (.*)$", status, re.MULTILINE)
    valid = re.search(r"^\[GNUPG:\] VALIDSIG (\S+)", status, re.MULTILINE)
    bad = re.search(r"^\[GNUPG:\] (BADSIG|REVKEYSIG|ERRSIG)", status, re.MULTILINE)
    if r.returncode != 0 or good is None or valid is None or bad is not None:
        said = tail("\n".join(line for line in status.splitlines() if not line.startswith("[GNUPG:]")), 4)
        raise DbsweepError(
            f"{dsc.name} from the archive's pool bears no good signature by a Debian uploader, so it is not "
            f"used:\n{said}"
        )
    expired = ", expired in the installed keyring" if good.group(1) == "EXPKEYSIG" else ""
    return r.stdout.decode(errors="replace"), f"{good.group(3)} (key {valid.group(1)}{expired})"


def _download(url: str, target: Path) -> bool:
    """Downloads with apt's own transport (its proxy settings); False when the file is not served."""
    r = subprocess.run(
        [_APT_HELPER, "download-file", url, str(target)], capture_output=True, stdin=subprocess.DEVNULL, check=False
    )
    return r.returncode == 0 and target.is_file()


def _pool_folder(package: str) -> str:
    """The pool's folder of a source package: its first letter, or four for a library (libfoo: libf)."""
    return package[:4] if package.startswith("lib") else package[:1]


def _no_epoch(debian_version: str) -> str:
    return debian_version.partition(":")[2] if ":" in debian_version else debian_version


def _safe(version: str) -> str:
    return version.replace(":", "%3a")  # an epoch's colon has no place in a directory name


def _unsafe(name: str) -> str:
    return name.replace("%3a", ":")


# --- Debian version order ---------------------------------------------------------------------


def _split_version(v: str) -> tuple[int, str, str]:
    epoch, sep, rest = v.partition(":")
    if not sep:
        epoch, rest = "0", v
    upstream, sep, revision = rest.rpartition("-")
    if not sep:
        upstream, revision = rest, ""
    return int(epoch), upstream, revision


def _char_order(c: str) -> int:
    if c == "~":
        return -1  # before everything, even the end of the string: 18~beta1 < 18
    if c.isalpha():
        return ord(c)
    return ord(c) + 256  # other characters sort after letters


def _compare_part(a: str, b: str) -> int:
    """dpkg's comparison of an upstream version or revision: alternate runs of non-digits and digits."""
    while a or b:
        na, a = _leading(a, digits=False)
        nb, b = _leading(b, digits=False)
        for i in range(max(len(na), len(nb))):
            oa = _char_order(na[i]) if i < len(na) else 0
            ob = _char_order(nb[i]) if i < len(nb) else 0
            if oa != ob:
                return oa - ob
        da, a = _leading(a, digits=True)
        db, b = _leading(b, digits=True)
        if int(da or 0) != int(db or 0):
            return int(da or 0) - int(db or 0)
    return 0


def _leading(s: str, *, digits: bool) -> tuple[str, str]:
    i = 0
    while i < len(s) and s[i].isdigit() == digits:
        i += 1
    return s[:i], s[i:]
