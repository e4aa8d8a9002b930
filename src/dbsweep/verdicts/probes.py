"""`dbsweep bisect`: measuring the probes of a bisection through the runner, and judging each.

A bisection is a study of its own in the workspace (`<title>-bisect-<good>-<bad>`), whose targets are the study's
bisected target at each commit probed, named by the commit's first 12 hex digits. Its run holds every probe's
counts or cells, so a second `dbsweep bisect` with the same arguments replays the search from the store: each
probe already measured is read, not run, and each build is found in the build cache.

Each probe is decided by the figure the steps have:
- instructions per event where the suite counts the step: one count per build, deterministic, and every count
  of the probes of a round runs at once, a CPU each;
- otherwise QPS, in interleaved rounds of the good commit, the probe and the bad commit (A B C / C B A), two
  rounds at a time while a verdict is unsure, up to measure.max_repeats; one probe at a time, as timed steps
  must not overlap.

Before the search, good and bad are measured against each other: the steps that do not differ are dropped, and
with none left the bisection stops. After it, the culprit and its parent are measured again as a fresh pair
(targets `<commit> verify`); the culprit is reported only if that pair shows the change too.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from rich.console import Console

from dbsweep import installs, procs
from dbsweep.errors import DbsweepError
from dbsweep.measure import functions
from dbsweep.measure.functions import FunctionChange
from dbsweep.measure.instructions import FUNCTIONS_KEPT
from dbsweep.progress import bars
from dbsweep.results.store import Store
from dbsweep.runner import Runner, open_run
from dbsweep.sources import git
from dbsweep.study import Study, Target
from dbsweep.verdicts import bisect, instructions, series
from dbsweep.verdicts.bisect import Outcome, Search, Side, StepJudgement
from dbsweep.verdicts.judging import by_repetition, judge

By = Literal["instructions", "QPS"]
BUILD_FAILED = "build failed: "  # a probe's stored error that marks its commit as not buildable
WHY = 5  # functions shown per step for the culprit


@dataclass(frozen=True)
class Request:
    """What the user asked: the study, its target to bisect, the two refs, the steps, how to decide."""

    study: Study
    target: Target
    good: str
    bad: str
    steps: Sequence[str]
    by: By
    width: int


@dataclass(frozen=True)
class Probe:
    """One commit measured, in the order the search took them."""

    commit: git.Commit
    index: int  # its place from good (0) to bad
    outcome: Outcome
    why: str
    judged: tuple[StepJudgement, ...]
    round: int  # 0: the endpoints; then the search's rounds
    repeats: int | None = None  # QPS rounds measured


@dataclass
class Bisection:
    """A bisection's answer and how it got there."""

    request: Request
    url: str
    commits: list[git.Commit]
    change: dict[str, str] = field(default_factory=dict)  # step -> bad against good
    change_sides: dict[str, Side] = field(default_factory=dict)  # bad against good, with interval or floor
    dropped: list[str] = field(default_factory=list)  # steps that did not differ between good and bad
    probes: list[Probe] = field(default_factory=list)
    state: str = "unconfirmed"  # `unconfirmed` (good and bad do not differ), or the search's state
    explanation: str = ""
    left: list[git.Commit] = field(default_factory=list)  # the commits that may still be the culprit
    culprit: git.Commit | None = None
    parent: git.Commit | None = None
    files: list[str] = field(default_factory=list)
    verified: dict[str, Side] = field(default_factory=dict)  # culprit (verify) against parent (verify), per step
    confirmed: bool = False  # the fresh pair shows the change on every step
    why: dict[str, tuple[FunctionChange, ...]] = field(default_factory=dict)
    builds: int = 0  # builds this call made (the rest came from the build cache)
    seconds: float = 0.0

    @property
    def title(self) -> str:
        return study_name(self.request.study, self.commits[0].sha, self.commits[-1].sha)


def label(sha: str) -> str:
    return sha[:12]


def study_name(study: Study, good: str, bad: str) -> str:
    return f"{study.title}-bisect-{good[:12]}-{bad[:12]}"[:80]


def source_url(target: Target) -> str:
    if not target.source.startswith("git:"):
        raise DbsweepError(
            f"target {target.label!r} has source {target.source!r}; a bisection needs a git: source "
            "(git:URL_OR_PATH@REF), whose commits it builds."
        )
    url, _ref = git.split_spec(target.source.removeprefix("git:"))
    return url


def ref_of(study: Study, name: str, url: str) -> str:
    """`name` as a ref: a target of the study stands for the ref of its git: source (of the same repository)."""
    try:
        target = study.target(name)
    except KeyError:
        return name
    if not target.source.startswith("git:"):
        raise DbsweepError(
            f"target {name!r} has source {target.source!r}: a bisection runs between commits of a git: source; "
            "give the refs of its repository with --good and --bad."
        )
    other, ref = git.split_spec(target.source.removeprefix("git:"))
    if other != url:
        raise DbsweepError(f"target {name!r} is built from {other}, not from {url}: bisect one repository's commits.")
    return ref


def change_point(study: Study, store: Store, run_id: int, step: str, by: By) -> tuple[str, str]:
    """The targets on the two sides of the first confirmed change point of `step` in a series study's run, on the
    figure `by` (instructions, else QPS)."""
    if not study.series:
        raise DbsweepError(f"--at: {study.path} is not a series (series = true), so it has no change points.")
    figure = "instructions" if by == "instructions" else "QPS"
    found = [x for x in series.analyse(study, store, run_id) if x.step == step and x.figure == figure]
    points = [p for x in found for p in x.confirmed]
    if not points:
        raise DbsweepError(f"--at: the series has no confirmed change point of {step} by {figure}; nothing to bisect.")
    return points[0].before, points[0].after


class Prober:
    """Measures and judges the probes of one bisection in its own run of the workspace's store."""

    def __init__(self, request: Request, console: Console, say: Callable[[str], None]) -> None:
        """Reads the commits from good to bad (cloning or fetching the repository when a ref is not known yet):
        a ref that does not exist, or a good commit that is not an ancestor of the bad one, is refused here,
        before anything is built or stored."""
        self.request = request
        self.store: Store
        self.console = console
        self.say = say
        self.url = source_url(request.target)
        self.commits = git.history(self.url, request.good, request.bad, request.study.workspace_dir / "sources", say)
        self.good, self.bad = label(self.commits[0].sha), label(self.commits[-1].sha)
        self.labels: list[str] = [self.good, self.bad]
        self.run_id = 0

    # ---- the derived study --------------------------------------------------------------------------------

    def study(self) -> Study:
        s = self.request.study
        suite = s.suite.model_copy(update={"steps": list(self.request.steps)})
        return s.model_copy(
            update={
                "name": study_name(s, self.commits[0].sha, self.commits[-1].sha),
                "targets": [self._target(lbl) for lbl in self.labels],
                "base": self.good,
                "suite": suite,
                # The steps a bisection follows are counted (runner's count_steps), whatever the study chose.
                "measure": s.measure.model_copy(update={"instruction_steps": []}),
                "series": False,
            }
        )

    def _target(self, lbl: str) -> Target:
        sha = self._sha(lbl.split(" ")[0])
        return self.request.target.model_copy(update={"name": lbl, "source": f"git:{self.url}@{sha}"})

    def _sha(self, short: str) -> str:
        return next(c.sha for c in self.commits if c.sha.startswith(short))

    def _add(self, *labels: str) -> Study:
        for lbl in labels:
            if lbl not in self.labels:
                self.labels.append(lbl)
        study = self.study()
        self.run_id = open_run(study, self.store, fresh=False)
        return study

    # ---- building -------------------------------------------------------------------------------------

    def _build(self, study: Study, labels: Sequence[str]) -> list[str]:
        """Builds what `labels` need (each build once, from the cache when there); returns the labels whose
        commit does not build, each stored as failed with why."""
        failed: list[str] = []
        ids = self.store.target_ids(self.run_id)
        have = self.store.instruction_counts(self.run_id)
        for lbl in labels:
            if any(str(v.get("error") or "").startswith(BUILD_FAILED) for (t, _s), v in have.items() if t == lbl):
                failed.append(lbl)
                continue
            try:
                with bars(self.console) as progress:
                    installs.get_install(study, study.target(lbl), progress)
            except DbsweepError as e:
                self.say(f"{lbl} does not build; the search goes around it: {str(e).splitlines()[0]}")
                for step in self.request.steps:
                    self.store.write_instructions(self.run_id, ids[lbl], step, {}, BUILD_FAILED + str(e))
                failed.append(lbl)
        return failed

    # ---- measuring --------------------------------------------------------------------------------------

    def _count(self, study: Study, labels: Sequence[str]) -> None:
        with procs.cleanup_on_exit():
            runner = Runner(
                study, self.store, self.console, counts_only=True, only=labels, count_steps=self.request.steps
            )
            runner.run(self.run_id)

    def _rounds(self, study: Study, labels: Sequence[str], repeats: int) -> None:
        with procs.cleanup_on_exit():
            Runner(study, self.store, self.console).run(self.run_id, repeats=repeats, targets=set(labels))

    # ---- judging ------------------------------------------------------------------------------------------

    def _judge_counts(self, base: str, target: str) -> dict[str, Side]:
        """step -> the verdict of `target` against `base` on instructions per event."""
        counts = self.store.counts(self.run_id)
        out: dict[str, Side] = {}
        for step in self.request.steps:
            b, t = counts.get((base, step)), counts.get((target, step))
            if b is None or t is None or not b.ok or not t.ok:
                bad = next((c for c in (b, t) if c is not None and not c.ok), None)
                out[step] = Side("unsure")
                if bad is not None:
                    self.say(f"{bad.target} {step}: not counted: {bad.error}")
                continue
            j = instructions.judge(b, t)  # on the figure the two counts share (their step's basis)
            out[step] = Side(j.verdict or "unsure", j.ratio, floor=j.floor)
        return out

    def _judge_qps(self, base: str, target: str) -> dict[str, Side]:
        """step -> the verdict of `target` against `base` on QPS, every client count of the step as one verdict:
        the same when all agree, else unsure (the interval shown is the first client count's)."""
        reps = by_repetition(self.store.results(self.run_id))
        study = self.request.study
        out: dict[str, Side] = {}
        for step in self.request.steps:
            verdicts: list[str] = []
            first: Side | None = None
            for clients in study.bench.clients(step):
                b, t = reps.get((base, step, clients), {}), reps.get((target, step, clients), {})
                j = judge(b, t, study)
                verdicts.append(j.verdict)
                if first is None and j.ci is not None:
                    first = Side(j.verdict, j.ci.ratio, j.ci.low, j.ci.high)
            verdict = verdicts[0] if len(set(verdicts)) == 1 else "unsure"
            out[step] = Side(verdict, first.ratio, first.low, first.high) if first else Side(verdict)
        return out

    def _judge(self, base: str, target: str) -> dict[str, Side]:
        return self._judge_counts(base, target) if self.request.by == "instructions" else self._judge_qps(base, target)

    def _probe_judgements(self, good: str, probe: str, bad: str, steps: Collection[str]) -> tuple[StepJudgement, ...]:
        """The probe against good and bad on the steps the bisection follows (those good and bad differ on)."""
        g, b = self._judge(good, probe), self._judge(probe, bad)
        return tuple(StepJudgement(s, g[s], b[s]) for s in self.request.steps if s in steps)

    def _counted(self, labels: Sequence[str]) -> bool:
        have = self.store.instruction_counts(self.run_id)
        return all((lbl, s) in have for lbl in labels for s in self.request.steps)

    def _qps_decided(self, labels: Sequence[str], until: Callable[[], bool]) -> int:
        """Interleaved rounds of `labels` until `until()` or measure.max_repeats; returns the rounds run."""
        study = self.study()
        reps = max(2, study.repeats)
        while True:
            self._rounds(study, labels, reps)
            if until() or reps >= study.measure.max_repeats:
                return reps
            reps = min(reps + 2, study.measure.max_repeats)
            self.say(f"{', '.join(labels)}: unsure after {reps - 2} rounds; two more")

    # ---- the bisection ------------------------------------------------------------------------------------

    def run(self, store: Store) -> Bisection:
        self.store = store
        started = time.monotonic()
        builds = _builds(self.request.study.workspace_dir)
        out = Bisection(self.request, self.url, self.commits)
        study = self._add()
        self.say(
            f"bisecting {len(self.commits) - 1} commits from {self.good} (good) to {self.bad} (bad) on "
            f"{', '.join(self.request.steps)}, by {self.request.by}"
        )
        if self._build(study, [self.good, self.bad]):
            raise DbsweepError("the good or the bad commit does not build, so nothing can be compared to it.")
        rounds = 0
        if self.request.by == "instructions":
            self._count(study, [self.good, self.bad])
            confirm = self._judge_counts(self.good, self.bad)
        else:

            def decided() -> bool:
                return all(v.verdict != "unsure" for v in self._judge_qps(self.good, self.bad).values())

            rounds = self._qps_decided([self.good, self.bad], decided)
            confirm = self._judge_qps(self.good, self.bad)
        out.change, out.dropped = bisect.confirm({s: v.verdict for s, v in confirm.items()})
        out.change_sides = {s: confirm[s] for s in out.change}
        if not out.change:
            out.explanation = _not_confirmed(confirm, self.request.by, rounds, self.request.study.measure.min_effect)
            out.left = self.commits[1:]
            return self._finish(out, started, builds)
        if out.dropped:
            self.say(
                f"good and bad are the same, or cannot be told apart, on {', '.join(out.dropped)}: the bisection "
                "follows the others"
            )
        search = Search([c.sha for c in self.commits])
        width = self.request.width if self.request.by == "instructions" else 1
        rnd = 0
        while search.state == "searching":
            rnd += 1
            chosen = search.next_probes(width)
            lo, hi = search.bounds
            self.say(
                f"round {rnd}: {hi - lo} commits left ({label(self.commits[lo].sha)}..{label(self.commits[hi].sha)}), "
                f"{len(out.probes)} probes done, about {search.probes_to_go(width)} to go; probing "
                + ", ".join(label(c) for c in chosen)
            )
            for probe in self._measure_round([label(c) for c in chosen], out.change):
                search.record(probe.commit.sha, probe.outcome, probe.why)
                out.probes.append(replace(probe, round=rnd))
                self.say(f"  {label(probe.commit.sha)} {probe.outcome}" + (f": {probe.why}" if probe.why else ""))
        out.state = search.state
        out.explanation = search.explain()
        out.left = [c for c in self.commits if c.sha in search.left()]
        if search.culprit is not None and search.parent is not None:
            self._verify(out, search.parent, search.culprit)
        return self._finish(out, started, builds)

    def _measure_round(self, chosen: list[str], change: dict[str, str]) -> list[Probe]:
        study = self._add(*chosen)
        failed = set(self._build(study, chosen))
        runnable = [c for c in chosen if c not in failed]
        probes: list[Probe] = []
        if self.request.by == "instructions":
            if runnable and not self._counted(runnable):
                self._count(study, runnable)
            for lbl in chosen:
                probes.append(self._judged(lbl, self.good, self.bad, change, lbl in failed))
            return probes
        for lbl in chosen:
            if lbl in failed:
                probes.append(self._judged(lbl, self.good, self.bad, change, True))
                continue
            g, b = f"{self.good} for {lbl}", f"{self.bad} for {lbl}"
            self._add(g, lbl, b)

            def decided(g: str = g, lbl: str = lbl, b: str = b) -> bool:
                judged = self._probe_judgements(g, lbl, b, change)
                return not any("unsure" in (j.against_good, j.against_bad) for j in judged)

            reps = self._qps_decided([g, lbl, b], decided)
            probes.append(replace(self._judged(lbl, g, b, change, False), repeats=reps))
        return probes

    def _judged(self, lbl: str, good: str, bad: str, change: dict[str, str], failed: bool) -> Probe:
        sha = self._sha(lbl)
        commit = next(c for c in self.commits if c.sha == sha)
        index = self.commits.index(commit)
        if failed:
            return Probe(commit, index, "skipped", "does not build", (), 0)
        judged = self._probe_judgements(good, lbl, bad, change)
        outcome, why = bisect.classify(change, judged)
        return Probe(commit, index, outcome, why, judged, 0)

    def _verify(self, out: Bisection, parent: str, culprit: str) -> None:
        """The culprit against its parent again, as a fresh pair of targets, before it is reported."""
        p, c = f"{label(parent)} verify", f"{label(culprit)} verify"
        study = self._add(p, c)
        self.say(f"re-verifying {label(culprit)} against its parent {label(parent)} with a fresh pair")
        self._build(study, [p, c])
        if self.request.by == "instructions":
            if not self._counted([p, c]):
                self._count(study, [p, c])
        else:

            def decided() -> bool:
                return all(v.verdict != "unsure" for s, v in self._judge_qps(p, c).items() if s in out.change)

            self._qps_decided([p, c], decided)
        judged = self._judge(p, c)
        out.verified = judged
        out.confirmed = all(judged[s].verdict == v for s, v in out.change.items())
        out.culprit = next(x for x in self.commits if x.sha == culprit)
        out.parent = next(x for x in self.commits if x.sha == parent)
        out.files = git.files_changed(self.url, culprit, self.request.study.workspace_dir / "sources")
        if not out.confirmed:
            out.state = "unverified"
            out.explanation = (
                f"{label(culprit)} was the first bad commit of the search, but a fresh pair against its parent does "
                "not show the change: " + ", ".join(f"{s} {judged[s].verdict}" for s in out.change)
            )
        if self.request.by == "instructions":
            counts = self.store.counts(self.run_id)
            for step in out.change:
                b, t = counts.get((p, step)), counts.get((c, step))
                if b is not None and t is not None and b.ok and t.ok:
                    out.why[step] = tuple(
                        functions.diff(b.profile(), t.profile(), WHY, kept=FUNCTIONS_KEPT, folded=(b.folded, t.folded))
                    )

    def _finish(self, out: Bisection, started: float, builds: set[str]) -> Bisection:
        out.builds = len(_builds(self.request.study.workspace_dir) - builds)
        out.seconds = time.monotonic() - started
        return out


def _not_confirmed(confirm: dict[str, Side], by: By, rounds: int, min_effect: float) -> str:
    same = [s for s, v in confirm.items() if v.verdict == "same"]
    unsure = [s for s, v in confirm.items() if v.verdict != "same"]
    within = f" within measure.min_effect ({min_effect:.1%})" if by == "QPS" else ""
    parts = [f"good and bad are the same on {', '.join(same)}{within}"] if same else []
    if unsure:
        after = f" after {rounds} interleaved rounds" if by == "QPS" else ""
        parts.append(
            f"whether they differ on {', '.join(unsure)} is unsure{after}, so the change, if any, is smaller than "
            "this machine's noise lets the verdict see"
            + ("; count instructions (--by instructions) or raise measure.max_repeats" if by == "QPS" else "")
        )
    return "; ".join(parts) + ": the range stays the whole of good..bad"


def _builds(workspace: Path) -> set[str]:
    root = workspace / "builds"
    return {p.name for p in root.iterdir() if (p / "build.json").is_file()} if root.is_dir() else set()
