"""Source fetching and identity from local files: tarballs (also over loopback HTTP), git repositories and
directories, spec errors, and how an engine names its source. Debian's source packages, fetched into the
build cache: e2e/test_sources.py."""

from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import subprocess
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from dbsweep.engines.postgres.source import NAMING
from dbsweep.errors import DbsweepError
from dbsweep.sources import META, Naming, debian
from dbsweep.sources import resolve as sources_resolve
from dbsweep.sources.localdir import content_hash

from ..sourcetrees import fake_tree, make_tarball, resolve, sha256

SHA256 = re.compile(r"sha256:[0-9a-f]{64}")


# --- tarball --------------------------------------------------------------------------------


@pytest.mark.parametrize("compression", ["gz", "bz2", "xz"])
def test_tarball_from_a_file(tmp_path: Path, compression: str) -> None:
    archive = make_tarball(tmp_path, compression)
    root = tmp_path / "sources"
    tree = resolve(f"tarball:{archive}", root)
    assert tree.kind == "tarball"
    assert tree.identity == f"sha256:{sha256(archive)}"
    assert tree.version == "99.1"
    assert (tree.path / "configure").read_text().endswith("PACKAGE_VERSION='99.1'\n")
    assert os.access(tree.path / "configure", os.X_OK)
    assert tree.path == root / "tarball" / sha256(archive) / "tree"
    assert resolve(f"tarball:{archive}", root) == tree
    assert not list((root / ".tmp").iterdir())  # nothing staged is left behind


def test_a_copy_of_a_tree_for_a_separate_build(tmp_path: Path) -> None:
    """The Nth separate build of a source gets the same tree in a directory of its own, made once."""
    archive = make_tarball(tmp_path, "gz")
    root = tmp_path / "sources"
    tree = resolve(f"tarball:{archive}", root)
    copy = sources_resolve.copy_of(tree, root, 1)
    assert copy.path != tree.path and copy.path.is_relative_to(root / "copies")
    assert (copy.spec, copy.identity, copy.version) == (tree.spec, tree.identity, tree.version)
    assert (copy.path / "configure").read_bytes() == (tree.path / "configure").read_bytes()
    assert os.access(copy.path / "configure", os.X_OK)
    (copy.path / "configure").chmod(0o700)  # a second call answers from the entry, copying nothing
    assert sources_resolve.copy_of(tree, root, 1) == copy
    assert sources_resolve.copy_of(tree, root, 2).path not in (tree.path, copy.path)


def test_a_tarball_that_bundles_the_tree_one_level_down(tmp_path: Path) -> None:
    # A language binding's package of the engine's sources: binding-1.0/ holds its own files and the tree.
    top = tmp_path / "binding-1.0"
    fake_tree(top / "engine", "99.3")
    (top / "Cargo.toml").write_text("[package]\n")
    (top / "docs").mkdir()
    archive = tmp_path / "binding-1.0.crate"  # a gzip tarball by another name
    with tarfile.open(archive, "w:gz") as tf:
        tf.add(top, arcname=top.name)
    root = tmp_path / "sources"
    tree = resolve(f"tarball:{archive}", root)
    assert tree.version == "99.3" and tree.details["subdir"] == "engine"
    assert tree.path == root / "tarball" / sha256(archive) / "tree" / "engine"
    assert resolve(f"tarball:{archive}", root) == tree  # the cached entry records where the tree is
    fake_tree(top / "other", "99.4")
    again = tmp_path / "binding-2.tar.gz"
    with tarfile.open(again, "w:gz") as tf:
        tf.add(top, arcname=top.name)
    with pytest.raises(DbsweepError, match=r"several Postgres trees \(engine, other\)"):
        resolve(f"tarball:{again}", root)


@pytest.fixture
def http_dir(tmp_path: Path) -> Iterator[tuple[str, Path, http.server.ThreadingHTTPServer]]:
    served = tmp_path / "www"
    served.mkdir()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(served))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", served, server
    server.shutdown()
    server.server_close()


def test_tarball_from_a_url_resolves_offline_the_second_time(
    tmp_path: Path, http_dir: tuple[str, Path, http.server.ThreadingHTTPServer]
) -> None:
    base, served, server = http_dir
    archive = make_tarball(tmp_path, "gz", "99.2")
    shutil.copy(archive, served / archive.name)
    root = tmp_path / "sources"
    tree = resolve(f"tarball:{base}/{archive.name}", root)
    assert tree.identity == f"sha256:{sha256(archive)}"
    assert tree.version == "99.2"
    assert tree.details["source"] == f"{base}/{archive.name}"

    server.shutdown()  # no network from here on
    assert resolve(f"tarball:{base}/{archive.name}", root) == tree


def test_tarball_download_error_is_clear(tmp_path: Path, http_dir: tuple[str, Path, object]) -> None:
    base, _, _ = http_dir
    with pytest.raises(DbsweepError, match="cannot download"):
        resolve(f"tarball:{base}/missing.tar.gz", tmp_path / "sources")


def test_not_a_tarball_is_clear(tmp_path: Path) -> None:
    bogus = tmp_path / "x.tar.gz"
    bogus.write_text("not a tarball")
    with pytest.raises(DbsweepError, match="cannot unpack"):
        resolve(f"tarball:{bogus}", tmp_path / "sources")
    assert not (tmp_path / "sources" / "tarball" / sha256(bogus)).exists()


def test_incomplete_entry_is_not_taken_for_a_tree(tmp_path: Path) -> None:
    """A tree left without its record (an interrupted unpack) is replaced, not used."""
    archive = make_tarball(tmp_path)
    root = tmp_path / "sources"
    half = root / "tarball" / sha256(archive) / "tree"
    half.mkdir(parents=True)
    (half / "partial-file").write_text("")
    abandoned = root / ".tmp" / "999999999-abc"  # a staging directory of a process that is gone
    abandoned.mkdir(parents=True)

    tree = resolve(f"tarball:{archive}", root)
    assert (tree.path / "configure").is_file()
    assert not (tree.path / "partial-file").exists()
    assert (tree.path.parent / META).is_file()
    assert not abandoned.exists()


# --- git ------------------------------------------------------------------------------------


def git(repo: Path, *args: str) -> str:
    r = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return r.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str, str]:
    """A repository with two commits (99.1, then 99.2 tagged v99.2); returns (path, first, second)."""
    path = fake_tree(tmp_path / "repo", "99.1")
    git(path, "init", "-q", "-b", "main")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "first")
    first = git(path, "rev-parse", "HEAD")
    (path / "configure").write_text("#!/bin/sh\nPACKAGE_VERSION='99.2'\n")
    (path / "src" / "new.c").write_text("/* new */\n")
    git(path, "commit", "-q", "-am", "second")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "new file")
    git(path, "tag", "v99.2")
    second = git(path, "rev-parse", "HEAD")
    return path, first, second


def test_git_commit_and_tag(tmp_path: Path, repo: tuple[Path, str, str]) -> None:
    path, first, second = repo
    root = tmp_path / "sources"

    at_first = resolve(f"git:{path}@{first}", root)
    assert at_first.kind == "git"
    assert at_first.identity == f"git:{first}"
    assert at_first.version == "99.1"
    assert not (at_first.path / "src" / "new.c").exists()
    assert not (at_first.path / ".git").exists()
    assert os.access(at_first.path / "configure", os.X_OK)

    at_tag = resolve(f"git:{path}@v99.2", root)
    assert at_tag.identity == f"git:{second}"
    assert at_tag.version == "99.2"
    assert (at_tag.path / "src" / "new.c").read_text() == "/* new */\n"
    assert at_tag.details["ref"] == "v99.2"

    assert resolve(f"git:{path}@{first[:10]}", root).identity == f"git:{first}"
    assert resolve(f"git:{path}@main", root).path == at_tag.path


def test_git_resolves_offline_once_fetched(tmp_path: Path, repo: tuple[Path, str, str]) -> None:
    path, first, second = repo
    root = tmp_path / "sources"
    resolve(f"git:{path}@{first}", root)
    resolve(f"git:{path}@v99.2", root)
    shutil.rmtree(path)  # the origin is gone: the cache must answer
    assert resolve(f"git:{path}@{first}", root).identity == f"git:{first}"
    assert resolve(f"git:{path}@v99.2", root).identity == f"git:{second}"


def test_git_new_commit_is_fetched(tmp_path: Path, repo: tuple[Path, str, str]) -> None:
    path, _, _ = repo
    root = tmp_path / "sources"
    resolve(f"git:{path}@main", root)
    (path / "src" / "later.c").write_text("/* later */\n")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "later")
    later = git(path, "rev-parse", "HEAD")
    assert resolve(f"git:{path}@{later}", root).identity == f"git:{later}"  # unknown sha: fetched
    assert resolve(f"git:{path}@main", root, refresh=True).identity == f"git:{later}"


def test_git_unknown_ref_and_missing_ref(tmp_path: Path, repo: tuple[Path, str, str]) -> None:
    path, _, _ = repo
    with pytest.raises(DbsweepError, match="'nope' is not a tag, branch or commit"):
        resolve(f"git:{path}@nope", tmp_path / "sources")
    with pytest.raises(DbsweepError, match="needs a ref after the last `@`"):
        resolve(f"git:{path}", tmp_path / "sources")


# --- dir ------------------------------------------------------------------------------------


def test_dir_identity_follows_sources_not_build_products(tmp_path: Path) -> None:
    path = fake_tree(tmp_path / "pg")
    tree = resolve(f"dir:{path}", tmp_path / "sources")
    assert tree.kind == "dir"
    assert tree.path == path
    assert tree.version == "99.1"
    assert re.fullmatch(r"dir:sha256:[0-9a-f]{64}", tree.identity)
    assert resolve(f"dir:{path}", tmp_path / "sources").identity == tree.identity

    # What configure and make leave in the tree does not count.
    (path / "src" / "main.o").write_bytes(b"\x7fELF object")
    (path / "src" / "postgres").write_bytes(b"\x7fELF executable")
    (path / "config.status").write_text("#!/bin/sh\n")
    (path / "config.log").write_text("log\n")
    (path / "GNUmakefile").write_text("all:\n")
    (path / "src" / "Makefile.global").write_text("CC = gcc\n")
    (path / "src" / ".deps").mkdir()
    (path / "src" / ".deps" / "main.Po").write_text("main.o: main.c\n")
    (path / "src" / "link.c").symlink_to("main.c")
    assert resolve(f"dir:{path}", tmp_path / "sources").identity == tree.identity

    (path / "src" / "main.c").write_text("int main(void) { return 1; }\n")
    changed = resolve(f"dir:{path}", tmp_path / "sources").identity
    assert changed != tree.identity
    (path / "src" / "extra.h").write_text("\n")
    assert resolve(f"dir:{path}", tmp_path / "sources").identity not in (tree.identity, changed)


def test_dir_in_a_git_checkout_leaves_out_ignored_files(tmp_path: Path, repo: tuple[Path, str, str]) -> None:
    path, _, _ = repo
    (path / ".gitignore").write_text("/src/generated.c\n")
    before = content_hash(path)
    (path / "src" / "generated.c").write_text("/* made by the build */\n")
    assert content_hash(path) == before
    (path / "src" / "untracked.c").write_text("/* new source, not yet added */\n")
    assert content_hash(path) != before


def test_dir_must_exist(tmp_path: Path) -> None:
    with pytest.raises(DbsweepError, match="does not exist"):
        resolve(f"dir:{tmp_path / 'nope'}", tmp_path / "sources")


def test_a_tree_without_a_version_is_refused(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(DbsweepError, match="does not look like a Postgres source tree"):
        resolve(f"dir:{tmp_path / 'empty'}", tmp_path / "sources")


# --- spec forms -----------------------------------------------------------------------------


@pytest.mark.parametrize("spec", ["svn:https://example.org/pg", "latest", "", "debian:", "dir:", "debian:fifteen"])
def test_bad_spec_names_the_accepted_forms(tmp_path: Path, spec: str) -> None:
    with pytest.raises(DbsweepError) as e:
        resolve(spec, tmp_path / "sources")
    message = str(e.value)
    assert "\n" not in message
    if spec != "debian:fifteen":
        for form in ("debian:VERSION", "git:URL_OR_PATH@REF", "tarball:PATH_OR_URL", "dir:PATH"):
            assert form in message
    else:
        assert "is not a Postgres version" in message


# --- another engine's naming ------------------------------------------------------------------


def _toy_version(tree: Path) -> str:
    version = tree / "VERSION"
    if not version.is_file():
        raise DbsweepError(f"{tree} is no toy tree")
    return version.read_text().strip()


TOY = Naming(
    title="Toy",
    debian_prefix="toy",
    debian_package=lambda v: f"toy{v.split('.')[0]}",
    debian_major=lambda p: int(p[3:]) if p[3:].isdigit() else None,
    debian_majors=range(1, 10),
    tree_version=_toy_version,
)


def test_the_engine_reads_the_version_of_every_kind_of_source(tmp_path: Path) -> None:
    path = tmp_path / "toy-2.5"
    path.mkdir()
    (path / "VERSION").write_text("2.5\n")
    assert sources_resolve.resolve(f"dir:{path}", tmp_path / "sources", naming=TOY).version == "2.5"
    archive = tmp_path / "toy-2.5.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        tf.add(path, arcname=path.name)
    assert sources_resolve.resolve(f"tarball:{archive}", tmp_path / "sources", naming=TOY).version == "2.5"
    with pytest.raises(DbsweepError, match="is no toy tree"):
        sources_resolve.resolve(f"dir:{fake_tree(tmp_path / 'pg')}", tmp_path / "sources", naming=TOY)


def test_the_engine_names_its_debian_packages() -> None:
    index = b"".join(
        f"Package: {p}\nBinary: {p}\nVersion: {v}\nSection: database\n\n".encode()
        for p, v in [
            ("postgresql-15", "15.18-0+deb12u1"),
            ("postgresql-common", "248"),
            ("postgresql-16", "16.10-1"),
            ("toy3", "3.1-1"),
        ]
    )
    listed = list(debian._stanzas(index, NAMING.debian_prefix))
    assert [p for p, _ in listed if NAMING.debian_major(p) is not None] == ["postgresql-15", "postgresql-16"]
    assert list(debian._stanzas(index, TOY.debian_prefix)) == [("toy3", "3.1-1")]
    assert NAMING.debian_package("15.18-0+deb12u1") == "postgresql-15" == NAMING.debian_package("15.18")
    listing = [debian.DebianSource("toy3", "3.1-1", "3.1", "trixie", 3)]
    assert debian.not_listed(listing, "3.2", naming=TOY) == "no Debian source for Toy 3.2; have: 3.1"
    assert debian.not_listed(listing, "3.1", naming=TOY) is None


# --- Debian's pool: a version the lists no longer carry ----------------------------------------------------------


def test_the_pool_is_asked_for_the_revisions_the_lists_carry() -> None:
    from dbsweep.engines.mariadb.source import NAMING as MARIADB

    listing = [
        debian.DebianSource("mariadb", "1:10.11.19-0+deb12u1", "10.11.19", "bookworm-security", 10),
        debian.DebianSource("mariadb", "1:11.8.9+ds-0+deb13u1", "11.8.9+ds", "trixie", 11),
        debian.DebianSource("mariadb", "1:11.8.9+ds-2", "11.8.9+ds", "forky", 11),
        debian.DebianSource("mariadb-10.5", "1:10.5.29-0+deb11u1", "10.5.29", "bullseye-security", 10),
    ]
    found = debian.pool_candidates(listing, "11.8.6", naming=MARIADB)
    assert found[:4] == ["1:11.8.6-2", "1:11.8.6+ds-2", "1:11.8.6-0+deb13u1", "1:11.8.6+ds-0+deb13u1"]
    assert "1:11.8.6-0+deb12u1" in found
    assert not any("deb11" in v for v in found)  # another package's revisions
    assert debian.pool_candidates(listing, "10.5.22", naming=MARIADB) == ["1:10.5.22-0+deb11u1"]
    assert debian.pool_candidates(listing, "1:11.8.6-0+deb13u1", naming=MARIADB) == ["1:11.8.6-0+deb13u1"]
    assert debian.pool_candidates([], "11.8.6", naming=MARIADB) == []


_AGENT_HOMES: list[Path] = []


def _gpg(home: Path, *args: str, stdin: bytes | None = None) -> bytes:
    env = {**os.environ, "GNUPGHOME": str(home)}
    if home not in _AGENT_HOMES:
        _AGENT_HOMES.append(home)
    return subprocess.run(
        ["gpg", "--batch", "--quiet", *args], input=stdin, env=env, check=True, capture_output=True
    ).stdout


@pytest.fixture(autouse=True)
def _no_agent_left() -> Iterator[None]:
    """gpg starts an agent for each home that signs; it would outlive the test."""
    yield
    while _AGENT_HOMES:
        home = _AGENT_HOMES.pop()
        subprocess.run(["gpgconf", "--homedir", str(home), "--kill", "gpg-agent"], capture_output=True, check=False)


@pytest.fixture
def uploader(tmp_path: Path) -> tuple[Path, Path]:
    """A signing key made on the spot (its GNUPGHOME) and a keyring that holds only its public half."""
    if shutil.which("gpg") is None:
        pytest.skip("gpg is not installed (scripts/setup.sh installs it)")
    home = tmp_path / "gnupg"
    home.mkdir(mode=0o700)
    _gpg(home, "--passphrase", "", "--quick-gen-key", "Toy Uploader <toy@example.org>", "ed25519", "sign", "never")
    keyring = tmp_path / "uploader.gpg"
    keyring.write_bytes(_gpg(home, "--export"))
    return home, keyring


def _publish_toy(served: Path, home: Path, version: str, *, orig_bytes: bytes | None = None) -> Path:
    """toy3's `version` in a pool layout: the orig tarball, a Debian tarball and the clearsigned .dsc."""
    work = served.parent / f"make-{version}"
    tree = work / f"toy-{version}"
    tree.mkdir(parents=True)
    (tree / "VERSION").write_text(f"{version}\n")
    folder = served / "pool" / "main" / "t" / "toy3"
    folder.mkdir(parents=True, exist_ok=True)
    orig = folder / f"toy3_{version}.orig.tar.gz"
    with tarfile.open(orig, "w:gz") as tf:
        tf.add(tree, arcname=tree.name)
    deb = folder / f"toy3_{version}-1.debian.tar.xz"
    deb.write_bytes(b"not unpacked")
    lines = [f" {sha256(f)} {f.stat().st_size} {f.name}" for f in (orig, deb)]
    text = f"Format: 3.0 (quilt)\nSource: toy3\nVersion: {version}-1\nChecksums-Sha256:\n" + "\n".join(lines) + "\n"
    dsc = folder / f"toy3_{version}-1.dsc"
    dsc.write_bytes(_gpg(home, "--clearsign", "--output", "-", stdin=text.encode()))
    if orig_bytes is not None:  # the served tarball is not the one signed for
        orig.write_bytes(orig_bytes)
    return dsc


@pytest.fixture
def toy_pool(
    monkeypatch: pytest.MonkeyPatch,
    http_dir: tuple[str, Path, http.server.ThreadingHTTPServer],
    uploader: tuple[Path, Path],
) -> tuple[Path, Path, Path]:
    """Debian's lists carry toy3 3.1-1 only; the pool at a loopback HTTP server is where other versions may be."""
    base, served, _ = http_dir
    listing = [debian.DebianSource("toy3", "3.1-1", "3.1", "trixie", 3)]

    def not_listed(root: Path, package: str, version: str, log: object, naming: Naming) -> debian.DebianSource:
        raise debian._NotListed(debian._unknown_message(listing, package, version, naming), listing)

    monkeypatch.setattr(debian, "_find", not_listed)
    monkeypatch.setattr(debian, "_POOLS", ((base, "pool/main"),))
    monkeypatch.setattr(debian, "UPLOADER_KEYRINGS", (uploader[1],))
    return served, uploader[0], uploader[1]


def test_a_version_only_the_pool_holds_is_fetched_checked_and_kept(
    tmp_path: Path, toy_pool: tuple[Path, Path, Path], http_dir: tuple[str, Path, http.server.ThreadingHTTPServer]
) -> None:
    served, home, _ = toy_pool
    _publish_toy(served, home, "3.2")
    said: list[str] = []
    tree = sources_resolve.resolve("debian:3.2", tmp_path / "sources", said.append, naming=TOY)
    assert tree.version == "3.2"
    assert tree.identity == f"sha256:{sha256(served / 'pool/main/t/toy3/toy3_3.2.orig.tar.gz')}"
    assert tree.details["debian_version"] == "3.2-1"
    assert tree.details["suite"] == "pool"
    assert tree.details["from"].endswith("/pool/main/t/toy3/ (in no signed index)")
    assert tree.details["signed_by"].startswith("Toy Uploader <toy@example.org> (key ")
    assert any("in no Debian source list" in m for m in said)
    http_dir[2].shutdown()  # the second time, from the cache alone
    assert sources_resolve.resolve("debian:3.2", tmp_path / "sources", naming=TOY) == tree
    # `dbsweep sources` lists it beside what the lists carry.
    assert debian.fetched_from_pool(tmp_path / "sources", naming=TOY) == [
        debian.DebianSource("toy3", "3.2-1", "3.2", "pool (fetched)", 3)
    ]


def test_a_pool_file_that_does_not_match_its_signed_dsc_is_refused(
    tmp_path: Path, toy_pool: tuple[Path, Path, Path]
) -> None:
    served, home, _ = toy_pool
    _publish_toy(served, home, "3.2", orig_bytes=b"something else")
    with pytest.raises(DbsweepError, match=r"toy3_3\.2\.orig\.tar\.gz does not match toy3_3\.2-1\.dsc"):
        sources_resolve.resolve("debian:3.2", tmp_path / "sources", naming=TOY)
    assert not (tmp_path / "sources" / "debian" / "toy3_3.2-1").exists()


def test_a_pool_dsc_not_signed_by_an_uploader_is_refused(tmp_path: Path, toy_pool: tuple[Path, Path, Path]) -> None:
    served, _, _ = toy_pool
    stranger = tmp_path / "stranger"
    stranger.mkdir(mode=0o700)
    _gpg(stranger, "--passphrase", "", "--quick-gen-key", "Stranger <s@example.org>", "ed25519", "sign", "never")
    _publish_toy(served, stranger, "3.2")
    with pytest.raises(DbsweepError, match="bears no good signature by a Debian uploader"):
        sources_resolve.resolve("debian:3.2", tmp_path / "sources", naming=TOY)
    # Altering the signed text breaks a signature that was good.
    _, home, _ = toy_pool
    dsc = _publish_toy(served, home, "3.3")
    dsc.write_text(dsc.read_text().replace("Version: 3.3-1", "Version: 3.3-9"))
    with pytest.raises(DbsweepError, match="bears no good signature"):
        sources_resolve.resolve("debian:3.3", tmp_path / "sources", naming=TOY)


def test_a_version_neither_listed_nor_in_the_pool_names_what_was_tried(
    tmp_path: Path, toy_pool: tuple[Path, Path, Path]
) -> None:
    with pytest.raises(DbsweepError) as e:
        sources_resolve.resolve("debian:3.9", tmp_path / "sources", naming=TOY)
    message = str(e.value)
    assert message.startswith("no Debian source for Toy 3.9; have: 3.1, and the archive's pool does not serve")
    assert "/pool/main/t/toy3/toy3_3.9-1.dsc" in message


# --- crate ----------------------------------------------------------------------------------


def test_a_crate_source_names_its_exact_version() -> None:
    from dbsweep.sources import crate

    assert crate.parse("librocksdb-sys@0.17.1+9.9.3") == ("librocksdb-sys", "0.17.1+9.9.3")
    for bad in ("librocksdb-sys", "librocksdb-sys@9", "@6.11.4", "a b@1.2.3"):
        with pytest.raises(DbsweepError, match="write crate:NAME@VERSION"):
            crate.parse(bad)


def test_a_crate_is_checked_against_the_lock_files_checksum(tmp_path: Path) -> None:
    from dbsweep.sources import crate

    lock = tmp_path / "Cargo.lock"
    lock.write_text(
        'version = 3\n\n[[package]]\nname = "other"\nversion = "1.0.0"\nchecksum = "00"\n\n'
        '[[package]]\nname = "librocksdb-sys"\nversion = "6.11.4"\nchecksum = "ab12"\n'
    )
    assert crate._locked_checksum(lock, "librocksdb-sys", "6.11.4") == "ab12"
    assert crate._locked_checksum(lock, "librocksdb-sys", "6.11.5") is None
