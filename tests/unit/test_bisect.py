"""The bisection's search (verdicts.bisect), with an oracle in place of measurements: which commits it probes,
where it stops, and that an unsure or skipped probe is never taken as good or bad."""

from __future__ import annotations

from pathlib import Path

import pytest

from dbsweep.errors import DbsweepError
from dbsweep.verdicts.bisect import Search, Side, StepJudgement, classify, confirm

COMMITS = [f"{i:02d}" + "0" * 38 for i in range(14)]  # good is 0, bad is 13


def _run(culprit: int, width: int = 1, skip: frozenset[int] = frozenset(), unsure: frozenset[int] = frozenset()):
    search = Search(COMMITS)
    probed: list[int] = []
    while search.state == "searching":
        chosen = search.next_probes(width)
        assert chosen and len(chosen) <= width
        for c in chosen:
            i = COMMITS.index(c)
            probed.append(i)
            if i in skip:
                search.record(c, "skipped", "does not build")
            elif i in unsure:
                search.record(c, "unsure", "the verdicts could not decide")
            else:
                search.record(c, "bad" if i >= culprit else "good")
    return search, probed


@pytest.mark.parametrize("culprit", range(1, 14))
def test_it_finds_every_culprit_in_few_probes(culprit: int) -> None:
    search, probed = _run(culprit)
    assert search.state == "found" and search.culprit == COMMITS[culprit]
    assert search.parent == COMMITS[culprit - 1]
    assert len(probed) <= 4  # ceil(log2(13))
    assert len(set(probed)) == len(probed)  # no commit probed twice


@pytest.mark.parametrize("culprit", [1, 5, 8, 13])
def test_several_probes_at_once(culprit: int) -> None:
    search, probed = _run(culprit, width=2)
    assert search.culprit == COMMITS[culprit]
    assert len(probed) <= 6


def test_the_first_round_spreads_its_probes() -> None:
    assert Search(COMMITS).next_probes(1) == [COMMITS[6]]  # the midpoint of 0..13 (6.5, the lower on a tie)
    assert Search(COMMITS).next_probes(2) == [COMMITS[4], COMMITS[9]]
    assert Search(COMMITS).next_probes(3) == [COMMITS[3], COMMITS[6], COMMITS[10]]


def test_an_unsure_probe_stops_the_search_with_its_range() -> None:
    search, probed = _run(culprit=9, unsure=frozenset({6}))
    assert probed == [6]
    assert search.state == "stuck" and search.culprit is None
    assert search.bounds == (0, 13)  # nothing was taken from the unsure probe
    assert "unsure" in search.explain() and COMMITS[6][:12] in search.explain()


def test_an_unsure_probe_after_some_progress_keeps_the_narrowed_range() -> None:
    search, probed = _run(culprit=9, unsure=frozenset({9}))
    assert probed == [6, 9] and search.state == "stuck"
    lo, hi = search.bounds
    assert (lo, hi) == (6, 13) and COMMITS[9] in search.left()


def test_a_commit_that_does_not_build_is_gone_around() -> None:
    search, probed = _run(culprit=9, skip=frozenset({6}))
    assert 6 in probed and search.culprit == COMMITS[9]
    assert search.known[COMMITS[6]] == "skipped"


def test_a_culprit_beside_commits_that_do_not_build_is_a_range() -> None:
    search, _ = _run(culprit=9, skip=frozenset({7, 8}))
    assert search.state == "ambiguous" and search.culprit is None
    assert search.left() == [COMMITS[7], COMMITS[8], COMMITS[9]]
    assert "did not build" in search.explain()


def test_good_after_bad_is_a_contradiction() -> None:
    search = Search(COMMITS)
    search.record(COMMITS[4], "bad")
    search.record(COMMITS[8], "good")
    assert search.state == "stuck" and "changed back" in search.explain()


def test_probes_to_go() -> None:
    assert Search(COMMITS).probes_to_go(1) == 4
    assert Search(COMMITS[:2]).probes_to_go(1) == 0
    assert Search(COMMITS[:2]).state == "found"


def _j(step: str, g: str, b: str) -> StepJudgement:
    return StepJudgement(step, Side(g), Side(b))


def test_classify() -> None:
    change = {"a": "slower", "b": "faster"}
    assert classify(change, [_j("a", "same", "slower"), _j("b", "same", "faster")])[0] == "good"
    assert classify(change, [_j("a", "slower", "same"), _j("b", "faster", "same")])[0] == "bad"
    outcome, why = classify(change, [_j("a", "slower", "slower"), _j("b", "faster", "same")])
    assert outcome == "unsure" and "between good and bad" in why
    outcome, why = classify(change, [_j("a", "unsure", "same"), _j("b", "faster", "same")])
    assert outcome == "unsure" and "could not decide" in why
    outcome, why = classify(change, [_j("a", "same", "slower"), _j("b", "faster", "same")])
    assert outcome == "unsure" and "more than one commit" in why
    outcome, why = classify(change, [_j("a", "faster", "slower"), _j("b", "faster", "same")])
    assert outcome == "unsure" and "otherwise" in why


def test_confirm_keeps_the_steps_that_changed() -> None:
    changed, dropped = confirm({"a": "slower", "b": "same", "c": "unsure", "d": "faster"})
    assert changed == {"a": "slower", "d": "faster"} and dropped == ["b", "c"]


def test_a_series_change_point_gives_the_two_sides(tmp_path: Path) -> None:
    """`bisect --at STEP`: the targets on the two sides of the step's first confirmed change point."""
    from dbsweep.results.store import Store
    from dbsweep.study import load_study
    from dbsweep.verdicts.probes import change_point

    from .test_series import STEP, gathered

    gathered(tmp_path)
    study = load_study(tmp_path / "ser.toml")
    store = Store(tmp_path / "ws" / "results.db", read_only=True)
    try:
        assert change_point(study, store, 1, STEP, "instructions") == ("v3", "v4")
        assert change_point(study, store, 1, STEP, "QPS") == ("v3", "v4")
        with pytest.raises(DbsweepError, match="no confirmed change point of read-only"):
            change_point(study, store, 1, "read-only", "instructions")
    finally:
        store.close()


def test_a_target_stands_for_its_ref(tmp_path: Path) -> None:
    from dbsweep.study import load_study
    from dbsweep.verdicts.probes import ref_of

    path = tmp_path / "s.toml"
    path.write_text(
        'engine = "sqlite"\nbase = "old"\n[suite]\nsteps = ["point-query"]\n'
        '[[targets]]\nname = "old"\nsource = "git:/src/sqlite@version-3.40.1"\nconfig = "wal_normal"\n'
        '[[targets]]\nname = "new"\nsource = "git:/src/other@version-3.46.1"\nconfig = "wal_normal"\n'
        '[[targets]]\nname = "deb"\nsource = "3.46.1"\nconfig = "wal_normal"\n'
    )
    study = load_study(path)
    assert ref_of(study, "old", "/src/sqlite") == "version-3.40.1"
    assert ref_of(study, "abc123", "/src/sqlite") == "abc123"  # not a target: a ref as given
    with pytest.raises(DbsweepError, match="not from /src/sqlite"):
        ref_of(study, "new", "/src/sqlite")
    with pytest.raises(DbsweepError, match="between commits of a git: source"):
        ref_of(study, "deb", "/src/sqlite")


def test_the_answer_in_every_format(tmp_path: Path) -> None:
    """A bisection's answer: the culprit with its facts, the fresh pair's verdicts with their floor, the function
    that explains it and the log, in terminal, markdown, HTML and JSON; a stopped one names no commit."""
    import io
    import json

    from dbsweep import say
    from dbsweep.measure.functions import FunctionChange
    from dbsweep.report import bisection as rb
    from dbsweep.sources.git import Commit
    from dbsweep.study import load_study
    from dbsweep.verdicts.probes import Bisection, Probe, Request

    path = tmp_path / "s.toml"
    path.write_text(
        'engine = "sqlite"\nbase = "head"\n[suite]\nsteps = ["point-query"]\n'
        '[[targets]]\nname = "head"\nsource = "git:/src/sqlite@main"\nconfig = "wal_normal"\n'
    )
    study = load_study(path)
    commits = [Commit(c, f"note {i}", f"2026-01-01T00:{i:02d}:00+00:00") for i, c in enumerate(COMMITS)]
    step = "point-query_range=100"
    slower = Side("slower", 1.685, floor=0.002)
    b = Bisection(Request(study, study.targets[0], "a", "b", [step], "instructions", 2), "/src/sqlite", commits)
    b.change, b.change_sides = {step: "slower"}, {step: slower}
    b.probes = [
        Probe(commits[6], 6, "good", "", (StepJudgement(step, Side("same", 1.0001), Side("slower", 1.68)),), 1),
        Probe(commits[9], 9, "bad", "", (StepJudgement(step, Side("slower", 1.68), Side("same", 1.0)),), 1),
        Probe(commits[7], 7, "skipped", "does not build", (), 2),
    ]
    b.state, b.explanation = "found", "the first bad commit is ..."
    b.culprit, b.parent, b.files, b.confirmed = commits[8], commits[7], ["src/vdbeapi.c"], True
    b.verified = {step: slower}
    b.why = {step: (FunctionChange("bisectAddedCost", "sqlite3.c", 88123, 0.0, 3612.0, None, None, 1.0),)}
    buf = io.StringIO()
    rb.render(b, say.console(file=buf, width=200, color_system=None))
    md, page, js = rb.markdown(b), rb.page(b), json.loads(json.dumps(rb.to_dict(b)))
    for text in (buf.getvalue(), md, page):
        assert f"The first bad commit is {COMMITS[8][:12]} (note 8)" in text
        assert "slower +68.50% (floor 0.20%)" in text and "bisectAddedCost" in text and "src/vdbeapi.c" in text
        assert COMMITS[7][:12] in text and "skipped" in text and "does not build" in text
    assert js["culprit"]["sha"] == COMMITS[8] and js["culprit"]["parent"] == COMMITS[7]
    assert js["culprit"]["verified"][step]["floor"] == 0.002 and js["culprit"]["why"][step][0]["delta_per_op"] == 3612
    assert [p["outcome"] for p in js["probes"]] == ["good", "bad", "skipped"]
    assert js["probes"][0]["steps"][step]["bad_against_it"]["verdict"] == "slower"

    b.state, b.culprit, b.explanation = "stuck", None, "stopped in 0..13: ... is unsure"
    b.left = commits[1:]
    assert rb.headline(b).startswith("No culprit named: stopped in 0..13")
    assert rb.to_dict(b)["culprit"] is None and "Commits left" in rb.markdown(b)
