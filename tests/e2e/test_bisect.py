"""`dbsweep bisect` for real: a git repository made from SQLite's source tree (the tree, then 12 harmless commits,
one of which adds a loop to every statement step), built at -O0 and counted with valgrind.

- By instructions, the bisection names the commit that added the loop, re-verifies it against its parent and
  names the function; killed with SIGKILL midway, it resumes with no build and no finished probe repeated.
- By QPS, with a cost far below what this machine's noise lets QPS see, it stops without naming a commit.
- The same by instructions on a repository made from Postgres 15's tree, the loop in PortalRun: an opt-in slow
  test (DBSWEEP_SLOW_TESTS=1; about seven builds of 3-4 min each, cold).

The commits are the same on every run (fixed authors and dates), so their builds live in the test cache
(DBSWEEP_TEST_CACHE): the first run on a machine builds seven commits (about 30 s each at -O0), later runs none.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from dbsweep.engines.registry import engine_named
from dbsweep.sources import debian

from ..bisectrepo import make
from ..conftest import counting, dbsweep, sigkill_when

pytestmark = pytest.mark.server

CACHE = Path(os.environ.get("DBSWEEP_TEST_CACHE", "/var/tmp/dbsweep-test-cache"))
CULPRIT = 8
SLOW = os.environ.get("DBSWEEP_SLOW_TESTS") == "1"

STUDY = """\
name = "bis"
engine = "sqlite"
base = "head"
workspace = "{ws}"

[measure]
instructions = true
instruction_seconds = 1
instruction_pairs = 1
max_repeats = 4
min_effect = 0.05

[[variants]]
name = "o0"
cflags = "-O0"

[suite]
name = "sysbench"
steps = ["point-query"]
tables = 1
rows = 2000
clients = [1]
read_seconds = 2
write_seconds = 2
warmup_seconds = 0
maintenance_seconds = 0

[[targets]]
name = "head"
source = "git:{repo}@main"
variant = "o0"
config = "wal_normal"
"""


def _tree(engine: str = "sqlite", version: str = "3.40.1") -> Path:
    return debian.resolve_debian(version, version, CACHE / "sources", naming=engine_named(engine).naming).path


def _study(tmp: Path, repo: Path, text: str = STUDY) -> Path:
    ws = tmp / "ws"
    ws.mkdir()
    # The builds of the commits are kept in the test cache; the sources (the clone, the trees) are the test's.
    (CACHE / "builds").mkdir(parents=True, exist_ok=True)
    (ws / "builds").symlink_to(CACHE / "builds")
    path = tmp / "bis.toml"
    path.write_text(text.format(ws=ws, repo=repo))
    return path


def _counts(ws: Path) -> dict[tuple[str, str], tuple[int, str]]:
    if not (ws / "results.db").is_file():
        return {}
    try:
        with sqlite3.connect(f"file:{ws / 'results.db'}?mode=ro", uri=True) as db:
            rows = db.execute(
                "SELECT t.name, i.step, i.rowid, i.data FROM instructions i JOIN targets t ON t.id = i.target_id"
            ).fetchall()
    except sqlite3.OperationalError:  # the store's file is there before its tables are
        return {}
    return {(name, step): (rowid, data) for name, step, rowid, data in rows}


def _built() -> set[str]:
    """The commits the test cache holds an -O0 build of."""
    out = set()
    for meta in (CACHE / "builds").glob("sqlite-*-o0-*/build.json"):
        identity = json.loads(meta.read_text())["source"]["identity"]
        out.add(identity.removeprefix("git:"))
    return out


@pytest.fixture(scope="module")
def repo() -> tuple[Path, list[str]]:
    """The repository, at a fixed path (the source cache's clone of it is keyed by its path)."""
    where = CACHE / "bisect" / "repo"
    return where, make(_tree(), where, CULPRIT, iterations=300)


@pytest.mark.timeout(1800)  # cold: seven builds of about 30 s each before the counts
def test_bisect_by_instructions_names_the_commit_and_resumes_after_sigkill(
    tmp: Path, repo: tuple[Path, list[str]]
) -> None:
    path, shas = repo
    study = _study(tmp, path)
    args = ["bisect", str(study), "--good", shas[0][:10], "--bad", "main", "--format", "json"]

    def probing(proc: subprocess.Popen[str]) -> bool:
        """The endpoints and one probe counted, and another count under way."""
        return len(_counts(tmp / "ws")) >= 3 and counting(proc)

    sigkill_when(args, probing, tmp, timeout=1200)
    before = _counts(tmp / "ws")
    assert len(before) >= 3
    built = _built()

    r = dbsweep("bisect", study, "--good", shas[0][:10], "--bad", "main", "--format", "json", timeout=900)
    answer = json.loads(r.stdout)
    assert answer["state"] == "found", r.stdout + r.stderr
    culprit = answer["culprit"]
    assert culprit["sha"] == shas[CULPRIT] and culprit["parent"] == shas[CULPRIT - 1]
    assert culprit["confirmed"] and culprit["verified"]["point-query_range=100"]["verdict"] == "slower"
    assert culprit["verified"]["point-query_range=100"]["floor"] >= 0.002
    assert "src/vdbeapi.c" in culprit["files"] and "loop in sqlite3_step" in culprit["subject"]
    assert culprit["why"]["point-query_range=100"][0]["function"] == "bisectAddedCost"
    assert answer["change"]["point-query_range=100"]["verdict"] == "slower"
    # The resumed bisection built only the commits that had no build yet, and kept every count.
    used = {shas[0], shas[-1], *(p["sha"] for p in answer["probes"])}
    assert answer["builds"] == len(used - built)
    assert shas[0] in built and shas[-1] in built
    after = _counts(tmp / "ws")
    assert {k: v for k, v in after.items() if k in before} == before
    # Every commit probed was decided, none twice, and the good ones come before the culprit.
    probed = [(p["index"], p["outcome"]) for p in answer["probes"]]
    assert len({i for i, _o in probed}) == len(probed) <= 6
    assert all((o == "bad") == (i >= CULPRIT) for i, o in probed)
    # Every probe's count records the build it ran: the commit, the flags, the compiler.
    for (name, _step), (_rowid, data) in after.items():
        build = json.loads(data)["build"]
        assert build["source_identity"] == f"git:{next(s for s in shas if s.startswith(name[:12]))}", name
        assert "-O0" in build["cflags"] and build["compiler_version"] and build["variant"] == "o0"
    # A third call replays it from the store: the same answer, in markdown, with nothing run.
    md = dbsweep("bisect", study, "--good", shas[0][:10], "--bad", "main", "--format", "markdown").stdout
    assert f"The first bad commit is {shas[CULPRIT][:12]}" in md and "bisectAddedCost" in md
    assert _counts(tmp / "ws") == after


@pytest.mark.timeout(1200)
def test_bisect_by_qps_never_names_a_commit_it_cannot_see(tmp: Path, repo: tuple[Path, list[str]]) -> None:
    """A cost of a few instructions a statement (about 0.2 % of a point query) is far below QPS's noise here:
    the bisection stops with the range it has, naming no commit."""
    path = CACHE / "bisect" / "faint"
    shas = make(_tree(), path, CULPRIT, iterations=2)
    assert shas[0] == repo[1][0]  # the same first commit: its build is shared
    # 1 s cells: a cost of 0.2 % stays far below what QPS can see, and below min_effect, at any length.
    study = _study(tmp, path, STUDY.replace("read_seconds = 2", "read_seconds = 1"))
    r = dbsweep(
        "bisect", study, "--good", shas[0], "--bad", "main", "--by", "qps", "--format", "json", check=False, timeout=900
    )
    assert r.returncode == 3, r.stdout + r.stderr
    answer = json.loads(r.stdout)
    assert answer["culprit"] is None and answer["state"] != "found"
    assert answer["answer"].startswith("No culprit named")
    assert len(answer["left"]) >= 2  # a range, not a commit


def test_bad_refs_are_refused_before_any_build(tmp: Path, repo: tuple[Path, list[str]]) -> None:
    path, shas = repo
    study = _study(tmp, path)
    r = dbsweep("bisect", study, "--good", "nosuchref", "--bad", "main", check=False)
    assert r.returncode != 0 and "--good: 'nosuchref' is not a tag, branch or commit" in r.stderr
    r = dbsweep("bisect", study, "--good", "main", "--bad", shas[0], check=False)
    assert r.returncode != 0 and "is not an ancestor of --bad" in r.stderr
    r = dbsweep("bisect", study, "--good", shas[0], "--bad", "main", "--steps", "nosuchstep", check=False)
    assert r.returncode != 0 and "--steps: 'nosuchstep' is not a sysbench step" in r.stderr
    r = dbsweep("bisect", study, "--good", shas[0], "--bad", "main", "--steps", "read-write", check=False)
    assert r.returncode != 0 and "read-write" in r.stderr
    assert not (tmp / "ws" / "results.db").exists() or not _counts(tmp / "ws")


POSTGRES = (
    STUDY.replace('engine = "sqlite"', 'engine = "postgres"')
    .replace('config = "wal_normal"', 'config = "cx10a_sb1g_c2r24"')
    .replace("rows = 2000", "rows = 10000")
)


@pytest.mark.skipif(not SLOW, reason="about seven Postgres builds (3-4 min each, cold): set DBSWEEP_SLOW_TESTS=1")
@pytest.mark.timeout(3600)
def test_bisect_of_postgres_names_the_commit(tmp: Path) -> None:
    """Postgres 15's tree, then 12 harmless commits, the eighth of which adds a loop of 2,000 turns to PortalRun:
    the bisection by instructions names that commit, its parent is the last good one, and the function is on
    top of the culprit's diff."""
    path = CACHE / "bisect" / "postgres"
    shas = make(_tree("postgres", "15.18"), path, CULPRIT, iterations=2000, engine="postgres")
    study = _study(tmp, path, POSTGRES)
    r = dbsweep("bisect", study, "--good", shas[0][:10], "--bad", "main", "--format", "json", timeout=3300)
    answer = json.loads(r.stdout)
    assert answer["state"] == "found", r.stdout + r.stderr
    culprit = answer["culprit"]
    assert culprit["sha"] == shas[CULPRIT] and culprit["parent"] == shas[CULPRIT - 1]
    assert culprit["confirmed"] and culprit["verified"]["point-query_range=100"]["verdict"] == "slower"
    assert "src/backend/tcop/pquery.c" in culprit["files"] and "loop in PortalRun" in culprit["subject"]
    assert culprit["why"]["point-query_range=100"][0]["function"] == "bisectAddedCost"
    assert all((p["outcome"] == "bad") == (p["index"] >= CULPRIT) for p in answer["probes"])
