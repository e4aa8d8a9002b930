"""The bisection's measuring loop (`verdicts.probes.Prober`) by QPS, on the stand-in engine built from a small git
repository (`standin.py`): each commit's `cost` file sets its builds' rate, so the commit where it changes is the
culprit. The builds are real (the build cache, a copy and an install per commit, in the workspace); the steps run
in this process, against the real results store.

The repositories' commits have fixed authors and dates, so the same test makes the same commits on every run, and
the stand-in's noise (seeded by the cell) is the same too.
"""

from __future__ import annotations

import io
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path

import pytest

from dbsweep import say
from dbsweep.results.store import Store
from dbsweep.runner import store_path
from dbsweep.study import Study, load_study
from dbsweep.verdicts.probes import Bisection, Prober, Request, label

from ..bisectrepo import git
from .standin import Script, in_process, registered

CULPRIT = 8
COMMITS = 13  # 0 (good) .. 12 (bad, main)

STUDY = """\
name = "standin-bisect"
engine = "standin"
base = "head"
workspace = "{workspace}"
[measure]
max_repeats = {max_repeats}
[suite]
name = "standin"
[[targets]]
name = "head"
source = "git:{repo}@main"
config = "plain"
"""


def make_repo(repo: Path, costs: Sequence[int], broken: Collection[int] = ()) -> list[str]:
    """A repository whose commit n holds VERSION 1.n, `cost` costs[n], and a file `broken` when n is in `broken`
    (it does not build); returns the shas, oldest first."""
    repo.mkdir()
    git(repo, 0, "init", "--quiet", "--initial-branch=main")
    shas = []
    for n, cost in enumerate(costs):
        (repo / "VERSION").write_text(f"1.{n}\n")  # every commit changes something
        (repo / "cost").write_text(f"{cost}\n")
        if n in broken:
            (repo / "broken").write_text("")
        else:
            (repo / "broken").unlink(missing_ok=True)
        git(repo, n, "add", "--all")
        git(repo, n, "commit", "--quiet", "-m", f"commit {n}")
        shas.append(git(repo, n, "rev-parse", "HEAD"))
    return shas


def step_costs(before: int, after: int) -> list[int]:
    return [before if n < CULPRIT else after for n in range(COMMITS)]


@pytest.fixture
def script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Script]:
    in_process(tmp_path, monkeypatch)
    with registered() as s:
        yield s


def make_study(tmp_path: Path, repo: Path, max_repeats: int = 4) -> Study:
    path = tmp_path / "study.toml"
    path.write_text(STUDY.format(workspace=tmp_path / "ws", repo=repo, max_repeats=max_repeats))
    return load_study(path)


def bisect(study: Study, good: str, said: list[str] | None = None, steps: Sequence[str] | None = None) -> Bisection:
    """One `dbsweep bisect --good GOOD --bad main --by qps [--steps ...]` of the study's target, on a store opened
    for it."""
    chosen = list(steps) if steps is not None else study.steps()
    request = Request(study, study.target("head"), good, "main", chosen, "QPS", 1)
    console = say.console(file=io.StringIO(), width=200, color_system=None)
    prober = Prober(request, console, (said if said is not None else []).append)
    store = Store(store_path(study))
    try:
        return prober.run(store)
    finally:
        store.close()


def slug(lbl: str) -> str:
    """A target's data directory name, as the stand-in suite records its cells."""
    return lbl.replace(" ", "_")


def consistent(result: Bisection, culprit: int) -> bool:
    """Every measured probe is good before the culprit and bad from it on."""
    return all(p.outcome == ("bad" if p.index >= culprit else "good") for p in result.probes if p.outcome != "skipped")


def test_qps_bisection_names_the_commit_whose_cost_rose_and_verifies_it(tmp_path: Path, script: Script) -> None:
    shas = make_repo(tmp_path / "repo", step_costs(100, 150))
    study = make_study(tmp_path, tmp_path / "repo")
    result = bisect(study, shas[0])
    assert result.state == "found", result.explanation
    assert result.culprit is not None and result.culprit.sha == shas[CULPRIT]
    assert result.parent is not None and result.parent.sha == shas[CULPRIT - 1]
    assert result.confirmed and result.culprit.subject == f"commit {CULPRIT}"
    assert "cost" in result.files
    steps = study.steps()
    assert set(result.change) == set(steps) and set(result.change.values()) == {"slower"}
    # A third less QPS: the ratio of the rates, exactly (no noise).
    assert all(result.verified[s].verdict == "slower" for s in steps)
    assert all(abs((result.verified[s].ratio or 0) - 100 / 150) < 1e-9 for s in steps)
    assert result.probes and consistent(result, CULPRIT)
    assert {p.index for p in result.probes} >= {CULPRIT - 1, CULPRIT}
    assert len(result.probes) <= 4  # a bisection of 12 commits: ceil(log2 12)
    # Exact rates decide every pair in its first two rounds.
    assert all(p.repeats == 2 for p in result.probes)
    assert {c.rep for c in script.seen} == {1, 2}
    # The cells run: good and bad, each probe between a fresh good and bad of its own, and the verify pair.
    good, bad = label(shas[0]), label(shas[-1])
    wanted = {good, bad, f"{label(shas[CULPRIT - 1])} verify", f"{label(shas[CULPRIT])} verify"}
    for p in result.probes:
        lbl = label(p.commit.sha)
        wanted |= {lbl, f"{good} for {lbl}", f"{bad} for {lbl}"}
    assert {c.target for c in script.seen} == {slug(w) for w in wanted}
    # One build per commit measured: the fresh pairs and the verify pair run on the same builds.
    assert result.builds == len({0, COMMITS - 1, *(p.index for p in result.probes)})


def test_a_commit_that_does_not_build_is_skipped_and_the_search_goes_around_it(tmp_path: Path, script: Script) -> None:
    # The first probe of 13 commits is the midpoint, 6: it does not build; 7 does again.
    shas = make_repo(tmp_path / "repo", step_costs(100, 150), broken={6})
    study = make_study(tmp_path, tmp_path / "repo")
    result = bisect(study, shas[0])
    skipped = [p for p in result.probes if p.outcome == "skipped"]
    assert [(p.index, p.why) for p in skipped] == [(6, "does not build")]
    assert result.state == "found" and result.culprit is not None and result.culprit.sha == shas[CULPRIT]
    assert result.confirmed and consistent(result, CULPRIT)
    assert slug(label(shas[6])) not in {c.target for c in script.seen}  # nothing measured on it
    assert list((study.workspace_dir / "builds" / "failed").glob("standin-1.6-*.log"))  # its build log kept


def test_a_culprit_among_commits_that_do_not_build_is_reported_as_the_range(tmp_path: Path, script: Script) -> None:
    # 7 and 8 (the culprit) do not build, so 9 cannot be told from them.
    shas = make_repo(tmp_path / "repo", step_costs(100, 150), broken={7, 8})
    study = make_study(tmp_path, tmp_path / "repo")
    result = bisect(study, shas[0])
    assert result.state == "ambiguous", result.explanation
    assert result.culprit is None and not result.confirmed
    assert [c.sha for c in result.left] == shas[7:10]
    assert sorted(p.index for p in result.probes if p.outcome == "skipped") == [7, 8]
    assert consistent(result, CULPRIT)


def test_a_second_bisection_replays_the_store_with_nothing_run_or_built(tmp_path: Path, script: Script) -> None:
    shas = make_repo(tmp_path / "repo", step_costs(100, 150), broken={6})
    study = make_study(tmp_path, tmp_path / "repo")
    first = bisect(study, shas[0])
    assert first.state == "found" and first.builds > 0
    seen = list(script.seen)
    again = bisect(study, shas[0])
    assert script.seen == seen  # no cell ran again
    assert again.builds == 0  # every build from the cache; the one that failed not tried again
    assert again.state == "found" and again.culprit == first.culprit and again.confirmed
    assert [(p.index, p.outcome, p.repeats) for p in again.probes] == [
        (p.index, p.outcome, p.repeats) for p in first.probes
    ]


def test_a_change_qps_cannot_see_through_the_noise_names_no_commit(tmp_path: Path, script: Script) -> None:
    # 1 % slower, under ±20 % of noise a cell: four rounds cannot tell good from bad. One step: with several, the
    # noise may decide one and not the others, which src/ does not survive yet (the test after this one).
    shas = make_repo(tmp_path / "repo", step_costs(100, 101))
    study = make_study(tmp_path, tmp_path / "repo", max_repeats=4)
    script.noise = 0.2
    said: list[str] = []
    result = bisect(study, shas[0], said, steps=["read"])
    assert result.state != "found" and result.culprit is None, result.explanation
    assert len(result.left) >= 2  # a range, not a commit
    # Two rounds, then two more while unsure, and no more than measure.max_repeats of any pair.
    assert max(c.rep for c in script.seen) == 4
    assert any("unsure after 2 rounds; two more" in m for m in said)


def test_steps_that_did_not_change_are_dropped_and_the_others_bisected(tmp_path: Path, script: Script) -> None:
    shas = make_repo(tmp_path / "repo", step_costs(100, 150))
    study = make_study(tmp_path, tmp_path / "repo")
    script.costless = {"read"}  # only the writes (and the load) got slower
    result = bisect(study, shas[0])
    assert result.dropped == ["read"] and set(result.change) == {"load", "write"}
    assert result.state == "found" and result.culprit is not None and result.culprit.sha == shas[CULPRIT]
    assert result.confirmed and consistent(result, CULPRIT)


def test_good_and_bad_that_do_not_differ_stop_the_bisection_before_any_probe(tmp_path: Path, script: Script) -> None:
    shas = make_repo(tmp_path / "repo", [100] * COMMITS)
    study = make_study(tmp_path, tmp_path / "repo")
    result = bisect(study, shas[0])
    assert result.state == "unconfirmed" and result.culprit is None
    assert result.probes == [] and result.change == {}
    assert sorted(result.dropped) == sorted(study.steps())
    assert "good and bad are the same" in result.explanation
    assert [c.sha for c in result.left] == shas[1:]
    assert {c.target for c in script.seen} == {slug(label(shas[0])), slug(label(shas[-1]))}
    assert result.builds == 2
