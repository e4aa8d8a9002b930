"""A git repository made from an engine's source tree (SQLite's or Postgres's) for the bisection tests: the tree
as the first commit, then small harmless commits (notes beside the code), one of which adds a CPU cost to every
statement step.

Every commit has a fixed author, committer and date, so the same tree gives the same commits on every run
and machine: the build cache finds a commit's build from an earlier run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

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


@dataclass(frozen=True)
class Case:
    """Where an engine's tree takes the added cost: `file` holds `anchor` once (a function's opening), and the
    cost is a function of its own called first thing in it, so the per-function diff can name it."""

    name: str  # the first commit's subject names the tree
    file: str
    anchor: str
    noinline: str  # the engine's own spelling, so the function is kept whatever the flags
    left_out: tuple[str, ...]  # what the build does not read; left out to keep the repository small
    subject: str

    def patch(self, text: str, iterations: int) -> str:
        assert text.count(self.anchor) == 1, self.anchor
        cost = (
            f"static {self.noinline} int bisectAddedCost(int n){{\n"
            "  volatile int acc = 0;\n"
            "  int i;\n"
            "  for(i=0; i<n; i++) acc += i;\n"
            "  return acc;\n"
            "}\n"
        )
        return text.replace(self.anchor, f"{cost}{self.anchor}  bisectAddedCost({iterations});\n")


CASES = {
    # Every statement step: sqlite3_step.
    "sqlite": Case(
        "SQLite",
        "src/vdbeapi.c",
        "int sqlite3_step(sqlite3_stmt *pStmt){\n",
        "SQLITE_NOINLINE",
        ("test", "doc", "art", "mptest", "vsixtest", "debian", ".pc"),
        "a loop in sqlite3_step",
    ),
    # Every statement a client sends, simple or extended protocol: PortalRun.
    "postgres": Case(
        "Postgres",
        "src/backend/tcop/pquery.c",
        "bool\nPortalRun(Portal portal, long count, bool isTopLevel, bool run_once,\n"
        "\t\t  DestReceiver *dest, DestReceiver *altdest,\n\t\t  QueryCompletion *qc)\n{\n",
        "pg_noinline",
        ("debian", ".pc"),  # psql's help is made from doc/src/sgml
        "a loop in PortalRun",
    ),
}


def make(tree: Path, repo: Path, culprit: int, iterations: int, engine: str = "sqlite") -> list[str]:
    """The repository at `repo` (made again if it exists): commit 0 is `tree`, commits 1..HARMLESS add a note
    each, and commit `culprit` also adds the cost of `iterations` loop turns to the engine's case. Returns the
    commits' shas, oldest first."""
    case = CASES[engine]
    if repo.exists():
        shutil.rmtree(repo)
    shutil.copytree(
        tree, repo, symlinks=True, ignore=lambda d, names: [n for n in names if _left_out(tree, d, n, case)]
    )
    env = _env(0)
    _git(repo, "init", "--quiet", "--initial-branch=main", env=env)
    _git(repo, "add", "--all", env=env)
    _git(repo, "commit", "--quiet", "-m", f"{case.name}'s tree", env=env)
    shas = [_git(repo, "rev-parse", "HEAD", env=env)]
    for n in range(1, HARMLESS + 1):
        env = _env(n)
        notes = repo / "notes"
        notes.mkdir(exist_ok=True)
        (notes / f"{n:02d}.txt").write_text(f"note {n}\n")
        subject = f"note {n}"
        if n == culprit:
            step = repo / case.file
            step.write_text(case.patch(step.read_text(), iterations))
            subject = f"note {n}, and {case.subject}"
        _git(repo, "add", "--all", env=env)
        _git(repo, "commit", "--quiet", "-m", subject, env=env)
        shas.append(_git(repo, "rev-parse", "HEAD", env=env))
    return shas


def _left_out(tree: Path, where: str, name: str, case: Case) -> bool:
    return str(Path(where, name).relative_to(tree)) in case.left_out
