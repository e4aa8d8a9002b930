"""`git:URL_OR_PATH@REF`: a commit of a git repository, identified by its full sha.

Cache layout under the sources root:

    git/repos/<name>-<key>.git       a mirror clone of the repository, fetched into when a ref is unknown
    git/trees/<commit>/source.json   what resolve answers without fetching again
    git/trees/<commit>/tree/         the commit's files (`git archive`), no .git

A ref is looked up in the cached clone first, so a spec resolves offline once fetched;
a branch therefore stays where it was when first fetched until `refresh=True`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import subprocess
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
    staging,
    tail,
    write_meta,
)
from dbsweep.sources.tarball import unpack

_FULL_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_REMOTE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://|^[^/@:]+@[^/:]+:")  # scheme://… or user@host:path


def split_spec(location: str) -> tuple[str, str]:
    """`URL_OR_PATH@REF` -> (URL_OR_PATH, REF); the ref follows the last `@` (URLs may hold one too)."""
    url, sep, ref = location.rpartition("@")
    if not sep or not url or not ref or ":" in ref or ".." in ref or any(c.isspace() for c in ref):
        raise DbsweepError(
            f"git source {location!r} needs a ref after the last `@`, e.g. "
            "git:https://example.org/engine.git@v1.2 (a tag, a branch or a commit)."
        )
    return url, ref


def is_remote(url: str) -> bool:
    """A URL (scheme://… or user@host:path) rather than a local path."""
    return bool(_REMOTE.match(url))


def _normal(url: str) -> str:
    """A URL as it is, a local path made absolute: the cached clone is keyed by it."""
    return url if is_remote(url) else str(Path(url).expanduser().resolve())


def cached_git(spec: str, location: str, root: Path) -> SourceTree | None:
    """The tree `spec` names when the source cache already holds it; never clones or fetches."""
    url, ref = split_spec(location)
    url = _normal(url)
    tree = load_meta(_entry(root, ref), spec) if _FULL_SHA.fullmatch(ref) else None
    if tree is None:
        commit = _local_commit(_repo_dir(root, url), ref)
        tree = load_meta(_entry(root, commit), spec) if commit else None
    return _with_ref(tree, ref) if tree is not None else None


def resolve_git(
    spec: str, location: str, root: Path, log: Log = quiet, *, naming: Naming, refresh: bool = False
) -> SourceTree:
    """The files of the commit `REF` names, checked out once into a clean tree of their own."""
    url, ref = split_spec(location)
    url = _normal(url)
    if _FULL_SHA.fullmatch(ref) and not refresh:
        cached = load_meta(_entry(root, ref), spec)
        if cached is not None:
            return _with_ref(cached, ref)
    repo = _repo_dir(root, url)
    with locked(repo.with_suffix(".lock")):
        commit = None if refresh else _local_commit(repo, ref)
        if commit is None:
            _clone_or_fetch(url, repo, root, log)
            commit = _local_commit(repo, ref)
        if commit is None:
            raise DbsweepError(f"git ref {ref!r} is not a tag, branch or commit of {url}.")
    cached = load_meta(_entry(root, commit), spec)
    if cached is not None:
        return _with_ref(cached, ref)
    return _with_ref(_checkout(spec, url, repo, commit, root, log, naming), ref)


def _repo_dir(root: Path, url: str) -> Path:
    name = re.sub(r"[^A-Za-z0-9._-]", "_", Path(url.rstrip("/")).name.removesuffix(".git")) or "repo"
    return root / "git" / "repos" / f"{name}-{hashlib.sha256(url.encode()).hexdigest()[:12]}.git"


def _entry(root: Path, commit: str) -> Path:
    return root / "git" / "trees" / commit


def _local_commit(repo: Path, ref: str) -> str | None:
    """The full sha `ref` names in the cached clone, or None (no clone yet, or an unknown ref)."""
    if not repo.is_dir():
        return None
    try:
        r = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"],
            capture_output=True,
            text=True,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise DbsweepError("git sources need `git`, which is not installed.") from None
    return r.stdout.strip() if r.returncode == 0 else None


def _clone_or_fetch(url: str, repo: Path, root: Path, log: Log) -> None:
    if not is_remote(url) and not Path(url).exists():
        raise DbsweepError(f"git repository {url} does not exist.")
    if repo.is_dir():
        log(f"fetching {url}")
        run(["git", "-C", repo, "fetch", "--quiet", "--prune", "origin"], f"git fetch of {url}")
        return
    log(f"cloning {url}")
    with staging(root) as staged:
        run(["git", "clone", "--quiet", "--mirror", "--", url, staged / "repo.git"], f"git clone of {url}")
        repo.parent.mkdir(parents=True, exist_ok=True)
        (staged / "repo.git").rename(repo)


def _checkout(spec: str, url: str, repo: Path, commit: str, root: Path, log: Log, naming: Naming) -> SourceTree:
    log(f"checking out {commit[:12]}")
    with staging(root) as staged:
        entry = staged / "entry"
        entry.mkdir()
        path = _archive(repo, commit, entry, staged / "archive.err", url)
        describe = run(["git", "-C", repo, "describe", "--tags", "--always", commit], "git describe").stdout.strip()
        result = SourceTree(
            spec=spec,
            kind="git",
            path=path,
            version=naming.tree_version(path),
            identity=f"git:{commit}",
            details={"url": url, "commit": commit, "describe": describe},
        )
        write_meta(entry, result)
        final = _entry(root, commit)
        publish(entry, final)
    return dataclasses.replace(result, path=final / "tree")


def _archive(repo: Path, commit: str, entry: Path, errors: Path, url: str) -> Path:
    """Unpacks the commit's files (`git archive`, streamed) into `entry/tree`."""
    with errors.open("w+b") as err:
        archive = subprocess.Popen(
            ["git", "-C", str(repo), "archive", "--format=tar", commit],
            stdout=subprocess.PIPE,
            stderr=err,
            stdin=subprocess.DEVNULL,
        )
        assert archive.stdout is not None
        unpack_error: DbsweepError | None = None
        try:
            path = unpack(archive.stdout, entry, f"git archive of {commit}")
        except DbsweepError as e:
            unpack_error = e
        finally:
            archive.stdout.close()
            archive.wait()
    message = errors.read_text(errors="replace")
    if archive.returncode != 0 and (message or unpack_error is None):
        raise DbsweepError(f"git archive of {commit} in {url} failed:\n{tail(message)}")
    if unpack_error is not None:
        raise unpack_error
    return path


def _with_ref(tree: SourceTree, ref: str) -> SourceTree:
    return dataclasses.replace(tree, details={**tree.details, "ref": ref})


# --- history, for bisection ------------------------------------------------------------------------------


_FORMAT = "%H%x00%cI%x00%s"  # sha, committer date, subject


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str
    date: str  # the committer date, ISO 8601


def history(
    location: str, good: str, bad: str, root: Path, log: Log = quiet, sides: tuple[str, str] = ("--good", "--bad")
) -> list[Commit]:
    """The commits from `good` to `bad` along `bad`'s first parents, good first and bad last: the commits a
    bisection (or a series' range) chooses among. Refused, before anything is built, when a ref does not exist
    or `good` is not an ancestor of `bad`; the messages name the two ends as `sides` says."""
    url = _normal(location)
    repo = _repo_dir(root, url)
    with locked(repo.with_suffix(".lock")):
        if _local_commit(repo, good) is None or _local_commit(repo, bad) is None:
            _clone_or_fetch(url, repo, root, log)
        shas = []
        for side, ref in zip(sides, (good, bad), strict=True):
            commit = _local_commit(repo, ref)
            if commit is None:
                raise DbsweepError(f"{side}: {ref!r} is not a tag, branch or commit of {url}.")
            shas.append(commit)
    first, last = shas
    if first == last:
        raise DbsweepError(f"{sides[0]} and {sides[1]} name the same commit, {first[:12]}: there is nothing between.")
    if run(["git", "-C", repo, "merge-base", "--is-ancestor", first, last], "git merge-base", check=False).returncode:
        raise DbsweepError(
            f"{sides[0]} {good} ({first[:12]}) is not an ancestor of {sides[1]} {bad} ({last[:12]}) in {url}: "
            "a bisection needs the good commit in the bad one's history (swap them if the change is the reverse)."
        )
    listed = run(
        [
            "git",
            "-C",
            repo,
            "log",
            "--first-parent",
            "--reverse",
            f"--format={_FORMAT}",
            f"{first}..{last}",
        ],
        "git log",
    ).stdout
    commits = [_commit(repo, first)]
    for line in listed.splitlines():
        sha, date, subject = line.split("\0", 2)
        commits.append(Commit(sha, subject, date))
    return commits


def _commit(repo: Path, sha: str) -> Commit:
    out = run(["git", "-C", repo, "show", "-s", f"--format={_FORMAT}", sha], "git show").stdout.strip()
    full, date, subject = out.split("\0", 2)
    return Commit(full, subject, date)


def files_changed(location: str, sha: str, root: Path) -> list[str]:
    """The files a commit changed against its first parent (from the cached clone)."""
    url = _normal(location)
    out = run(
        [
            "git",
            "-C",
            _repo_dir(root, url),
            "diff-tree",
            "--no-commit-id",
            "--name-only",
            "-r",
            "--first-parent",
            "--root",
            sha,
        ],
        "git diff-tree",
    ).stdout
    return [line for line in out.splitlines() if line]
