"""A git repository made from SQLite's source tree for the bisection tests: the tree as the first commit, then
small harmless commits (notes beside the code), one of which adds a CPU cost to every statement step.

Every commit has a fixed author, committer and date, so the same tree gives the same commits on every run
and machine: the build cache finds a commit's build from an earlier run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

# What the build of the amalgamation does not read; left out to keep the repository small.
LEFT_OUT = ("test", "doc", "art", "mptest", "vsixtest", "debian", ".pc")
HARMLESS = 12  # commits after the first


def git(repo: Path, n: int, *args: str) -> str:
    """`git -C REPO ARGS` as the fixed author and committer, at minute `n` of the fixed date; its output."""
    return _git(repo, *args, env=_env(n))


def _git(repo: Path, *args: str, env: dict[str, str]) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], env=env, check=True, capture_output=True, text=True
    ).stdout.strip()


def _env(n: int) -> dict[str, str]:
    when = f"2026-01-01T00:{n:02d}:00+00:00"
    return {
        **os.environ,
        "GIT_AUTHOR_NAME": "dbsweep tests",
        "GIT_AUTHOR_EMAIL": "tests@dbsweep.invalid",
        "GIT_COMMITTER_NAME": "dbsweep tests",
        "GIT_COMMITTER_EMAIL": "tests@dbsweep.invalid",
        "GIT_AUTHOR_DATE": when,
        "GIT_COMMITTER_DATE": when,
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_CONFIG_NOSYSTEM": "1",
    }


def cost_patch(iterations: int) -> tuple[str, str]:
    """The text that replaces `int sqlite3_step(...){` in src/vdbeapi.c to add the cost: a function of its
    own, so the per-function diff can name it."""
    return (
        "int sqlite3_step(sqlite3_stmt *pStmt){\n",
        "static SQLITE_NOINLINE int bisectAddedCost(int n){\n"
        "  volatile int acc = 0;\n"
        "  int i;\n"
        "  for(i=0; i<n; i++) acc += i;\n"
        "  return acc;\n"
        "}\n"
        "int sqlite3_step(sqlite3_stmt *pStmt){\n"
        f"  bisectAddedCost({iterations});\n",
    )


def make(tree: Path, repo: Path, culprit: int, iterations: int) -> list[str]:
    """The repository at `repo` (made again if it exists): commit 0 is `tree`, commits 1..HARMLESS add a note
    each, and commit `culprit` also adds the cost of `iterations` loop turns to sqlite3_step. Returns the
    commits' shas, oldest first."""
    if repo.exists():
        shutil.rmtree(repo)
    shutil.copytree(
        tree, repo, symlinks=True, ignore=lambda d, names: [n for n in names if d == str(tree) and n in LEFT_OUT]
    )
    env = _env(0)
    _git(repo, "init", "--quiet", "--initial-branch=main", env=env)
    _git(repo, "add", "--all", env=env)
    _git(repo, "commit", "--quiet", "-m", "SQLite's tree", env=env)
    shas = [_git(repo, "rev-parse", "HEAD", env=env)]
    for n in range(1, HARMLESS + 1):
        env = _env(n)
        notes = repo / "notes"
        notes.mkdir(exist_ok=True)
        (notes / f"{n:02d}.txt").write_text(f"note {n}\n")
        subject = f"note {n}"
        if n == culprit:
            step = repo / "src" / "vdbeapi.c"
            old, new = cost_patch(iterations)
            text = step.read_text()
            assert text.count(old) == 1
            step.write_text(text.replace(old, new))
            subject = f"note {n}, and a loop in sqlite3_step"
        _git(repo, "add", "--all", env=env)
        _git(repo, "commit", "--quiet", "-m", subject, env=env)
        shas.append(_git(repo, "rev-parse", "HEAD", env=env))
    return shas
