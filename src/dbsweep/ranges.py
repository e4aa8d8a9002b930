"""Targets given as a range, for a series: expanded into one target each before the study is validated, so
every check (names, base, the series' one axis) sees the targets that will run.

A `[[targets]]` table may give, instead of one `source`:
- `versions = ["3.34.1", "3.40.1", ...]`: one target per version (any source form), in the order given;
- `source = "git:URL_OR_PATH@A..B"` with `every = N` (default 1): the commits from A to B along B's first
  parents, every Nth from A, and B always (a commit is named by the first 12 hex digits of its sha);
- `tarballs = "DIR"`: one target per tarball in DIR, in version order of their file names.

Each expanded target keeps the table's other fields (variant, config, build_copy) and is named
`NAME-<version>` (or the version alone without a `name`); a `base` that names the table names its first target.
A git range is read from the repository (cloned into the workspace's source cache, or fetched, when a ref is not
known yet), so a branch as an end moves when the branch does: name tags or commits for a series to report the
same targets later.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from dbsweep.errors import DbsweepError, StudyError
from dbsweep.sources import git

RANGE_KEYS = ("versions", "every", "tarballs")
_TARBALL = re.compile(r"\.(tar\.(gz|xz|bz2|zst)|tgz)$")
_UNSAFE = re.compile(r"[^A-Za-z0-9._/+-]")


def expand(data: dict[str, Any], where: str) -> dict[str, Any]:
    """`data` (a study file's table) with its range targets expanded; raises StudyError naming the file and field."""
    targets = data.get("targets")
    if not isinstance(targets, list) or not any(isinstance(t, dict) and _is_range(t) for t in targets):
        return data
    out: list[Any] = []
    problems: list[str] = []
    firsts: dict[str, str] = {}
    for i, t in enumerate(targets):
        if not isinstance(t, dict) or not _is_range(t):
            out.append(t)
            continue
        try:
            expanded = _expand_one(t, data)
        except (DbsweepError, ValueError) as e:
            problems.append(f"{where}: targets[{i}]: {e}")
            continue
        if isinstance(t.get("name"), str) and expanded:
            firsts[t["name"]] = expanded[0]["name"]
        out.extend(expanded)
    if problems:
        raise StudyError(problems)
    base = data.get("base")
    return {**data, "targets": out, **({"base": firsts[base]} if isinstance(base, str) and base in firsts else {})}


def _is_range(t: dict[str, Any]) -> bool:
    source = t.get("source")
    return any(k in t for k in RANGE_KEYS) or (isinstance(source, str) and _git_range(source) is not None)


def _git_range(source: str) -> tuple[str, str, str] | None:
    """`git:URL@A..B` -> (URL, A, B)."""
    if not source.startswith("git:"):
        return None
    url, sep, ref = source.removeprefix("git:").rpartition("@")
    if not sep or ".." not in ref:
        return None
    a, _, b = ref.partition("..")
    return url, a, b


def _named(t: dict[str, Any], what: str) -> str:
    name = t.get("name")
    tag = _UNSAFE.sub("_", what).lstrip("._/+-") or "x"
    return f"{name}-{tag}" if isinstance(name, str) else tag


def _rest(t: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in t.items() if k not in (*RANGE_KEYS, "source", "name")}


def _expand_one(t: dict[str, Any], data: dict[str, Any]) -> list[dict[str, Any]]:
    given = [k for k in ("versions", "tarballs") if k in t] + (["source"] if "source" in t else [])
    if len(given) > 1:
        raise ValueError(f"{' and '.join(given)} exclude each other: give one")
    source = t.get("source")
    parts = _git_range(source) if isinstance(source, str) else None
    if "every" in t and parts is None:
        raise ValueError("every: only a git range (source = 'git:URL@A..B') takes every")
    if "versions" in t:
        versions = t["versions"]
        if not isinstance(versions, list) or not versions or not all(isinstance(v, str) and v for v in versions):
            raise ValueError("versions: a list of versions or sources, e.g. ['3.34.1', '3.40.1']")
        return [{**_rest(t), "name": _named(t, v), "source": v} for v in versions]
    if "tarballs" in t:
        return _tarballs(t)
    assert parts is not None  # a range table without versions or tarballs has a git range or `every`
    every = t.get("every", 1)
    if not isinstance(every, int) or isinstance(every, bool) or every < 1:
        raise ValueError(f"every: a whole number of commits, 1 or more, not {every!r}")
    url, a, b = parts
    if not a or not b:
        raise ValueError(f"source: {source!r} needs a ref on both sides of '..'")
    root = Path(str(data.get("workspace", ".dbsweep"))).expanduser().resolve() / "sources"
    try:
        commits = git.history(url, a, b, root, sides=("the range start", "its end"))
    except DbsweepError as e:
        raise ValueError(f"source: {e}") from None
    picked = commits[::every]
    if picked[-1] != commits[-1]:
        picked.append(commits[-1])
    return [{**_rest(t), "name": _named(t, c.sha[:12]), "source": f"git:{url}@{c.sha}"} for c in picked]


def _version_key(name: str) -> tuple[tuple[int, int | str], ...]:
    """Natural order: 3.9.2 before 3.10.0."""
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in re.findall(r"\d+|[^\d.]+", name))


def _tarballs(t: dict[str, Any]) -> list[dict[str, Any]]:
    d = Path(str(t["tarballs"])).expanduser()
    if not d.is_dir():
        raise ValueError(f"tarballs: {d} is not a directory")
    found = sorted((p for p in d.iterdir() if _TARBALL.search(p.name)), key=lambda p: _version_key(p.name))
    if not found:
        raise ValueError(f"tarballs: {d} holds no .tar.gz, .tar.xz, .tar.bz2, .tar.zst or .tgz file")
    return [
        {**_rest(t), "name": _named(t, _TARBALL.sub("", p.name)), "source": f"tarball:{p.resolve()}"} for p in found
    ]
