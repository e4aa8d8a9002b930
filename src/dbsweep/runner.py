"""Runs a study: its cells, group by group, through the engine and the suite, storing every cell.

Cells are grouped by (repetition, target): one data directory, the suite's setup (the load), then its
steps in order. The plan (`dbsweep.plan`) fixes the order; an executor (`dbsweep.hosts`) runs the groups.
The runner knows no engine and no suite by name: it asks the engine for an instance and the suite for
each step's command, expectation and progress, and holds every step to `integrity.check`.

Each round (repetition) opens with the canary (`dbsweep.measure.canary`), a fixed CPU workload timed
while no server runs, whose rate shows the machine's drift from round to round.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress, TaskID

from dbsweep import configs, installs, loadclient, memcap, placement, plan, provenance, workspace
from dbsweep.engines.base import Access, EngineError, Install, Instance, Watermark
from dbsweep.engines.registry import engine_named
from dbsweep.errors import DbsweepError, ServerError, StepError
from dbsweep.hosts import Executor, GroupJob, Local
from dbsweep.measure import Sampler, canary, countpool, instructions, integrity, profiling, session
from dbsweep.measure.watch import StepRun, StepWatch
from dbsweep.progress import CellLog, bars
from dbsweep.results.model import CellKey, CellResult
from dbsweep.results.store import Store, now
from dbsweep.say import styled
from dbsweep.study import Study, Target


def target_spec(study: Study, target: Target) -> dict[str, Any]:
    return {
        "source": target.source,
        "variant": target.variant,
        # Only when set: the targets of studies without the compiler axis keep the identity they had.
        **({"compiler": target.compiler} if target.compiler else {}),
        "config": target.config,
        "config_sha256": configs.load(study.engine, target.config).sha256,
        "optional_settings": sorted(study.optional_settings),
    }


def store_path(study: Study) -> Path:
    return study.workspace_dir / "results.db"


def open_run(study: Study, store: Store, fresh: bool) -> int:
    """The run id to continue (the study's latest) or a new one."""
    study_id = store.study_id(study.title, str(study.path))
    latest = store.latest_run(study.title)
    key = study.measurement_key()
    if latest is None or fresh:
        run_id = store.new_run(study_id, key, study.path.read_text())
    else:
        run_id, old_key = latest
        if old_key not in (key, study.legacy_measurement_key()):
            raise DbsweepError(
                f"the study's suite settings changed since run {run_id} started, so its results would mix; "
                "run with --fresh to start a new run."
            )
    for t in study.targets:
        try:
            store.ensure_target(run_id, t.label, study.engine, target_spec(study, t))
        except ValueError:
            raise DbsweepError(
                f"target {t.label!r} (or its config file) changed since run {run_id} started; "
                "run with --fresh to start a new run."
            ) from None
    return run_id


def _say(progress: Progress, who: str, message: str) -> None:
    progress.console.print(styled(f"{who}: {message}", "dim"))


def _state_file(instance: Instance) -> Path:
    """The setup steps whose work the data directory holds, one per line, in order; each with the identity of
    the file or directory that held the data then, for an engine whose data is one (see `_replaced`)."""
    return instance.home / "state"


def _mark_state(instance: Instance, step: str, serverless: bool) -> None:
    identity = instance.watermark().identity if serverless else ""
    with _state_file(instance).open("a") as f:
        f.write(f"{step} {identity}".rstrip() + "\n")
        f.flush()


def _held(instance: Instance) -> list[tuple[str, str]]:
    """(setup step, identity of the data then) as `_mark_state` wrote them."""
    out = []
    for line in _state_file(instance).read_text().splitlines():
        step, _, identity = line.strip().partition(" ")
        if step:
            out.append((step, identity))
    return out


def _replaced(instance: Instance, serverless: bool) -> str | None:
    """Why a kept data directory no longer holds what its setup steps left, or None. An engine without a server
    holds its data in one file or directory, replaced or removed as a whole (a step that died half-way through
    may leave a new, empty one behind); a resume on it would fail every cell again, for want of the tables."""
    if not serverless:
        return None
    now = instance.watermark().identity
    for step, identity in _held(instance):
        if identity and identity != now:
            return f"its data is no longer the one {step} made (it was replaced or removed since)"
    return None


@dataclass
class Prepared:
    """A target ready to run: its install and the config diff as that version takes it."""

    install: Install
    config_text: str
    skipped: list[str]


@dataclass
class Outcome:
    run_id: int
    done: int = 0
    failed: int = 0
    skipped_failed: int = 0
    failures: list[str] = field(default_factory=list)


# After a step that failed, how long the server may take to write its own account of a crash (a postmaster logs a
# crashed backend once it has reaped it, a moment after the client saw its connection reset), and how often to look.
SETTLE_S = 3.0
SETTLE_POLL_S = 0.1


def _disturbance(instance: Instance, mark: Watermark, step_failed: bool) -> str | None:
    """The server's account of what disturbed a step; after a failed step it is awaited a moment, so the client's
    "connection reset" never stands in for the crash that caused it."""
    found = instance.disturbance_since(mark)
    deadline = time.monotonic() + SETTLE_S
    while found is None and step_failed and time.monotonic() < deadline:
        time.sleep(SETTLE_POLL_S)
        found = instance.disturbance_since(mark)
    return found


def _resuming(run_id: int, planned: int, todo: int, kept_failed: int, counts: dict[str, list[str]]) -> str:
    """One line on what a continued run still has to do."""
    failed = f", {kept_failed} failed (kept; --rerun-failed runs them again)" if kept_failed else ""
    n = sum(len(steps) for steps in counts.values())
    counted = f"; {n} instruction count{'s' if n != 1 else ''} to take" if n else ""
    done = planned - todo - kept_failed
    return f"run {run_id} continues: {done} of {planned} cells done{failed}, {todo} to run{counted}"


def _counted(data: dict[str, Any], error: str | None) -> str:
    """A count's outcome in a few words, for its line in a log."""
    if error:
        return f"not counted: {error}"
    unit = "row" if data.get("unit") == "rows" else "event"
    return f"{data['per_event']:,.0f} instructions per {unit}"


def _advancer(progress: Progress, task: TaskID, by_rows: bool) -> Callable[[dict[str, Any]], None]:
    """Moves a step's bar on each per-second line: by rows for a loading step, by one second otherwise."""

    def advance(line: dict[str, Any]) -> None:
        progress.advance(task, line["ops"] if by_rows else 1)

    return advance


class Runner:
    def __init__(
        self,
        study: Study,
        store: Store,
        console: Console,
        *,
        rerun_failed: bool = False,
        keep_data: bool = False,
        executor: Executor | None = None,
        only: Collection[str] | None = None,
        counts_only: bool = False,
        count_steps: Collection[str] | None = None,
        rounds: Collection[int] | None = None,
        where: dict[str, Any] | None = None,
    ) -> None:
        self.study = study
        self.store = store
        self.console = console
        self.rerun_failed = rerun_failed
        self.keep_data = keep_data
        self.executor = executor or Local()
        self.engine = engine_named(study.engine)
        self.serverless = self.engine.kind != "server"  # no server process: its data is one file or directory
        self.suite = study.bench
        self.user = self.engine.server_user()
        # Where the cells ran, beyond the host's own facts (a batch job's node, class and job id).
        self.host = {**provenance.host_facts(study.workspace_dir), **(where or {})}
        self.load_version = loadclient.version()
        self.repeats: int | None = None  # set per call of run(): extra rounds of --until-decided
        self.cell_log = CellLog(console, [])
        # The user's restriction to some targets (run --target): their cells, counts and profiles only.
        self.only: set[str] | None = set(only) if only is not None else None
        # run --counts-only: the instruction counts alone, which a busy machine does not disturb (they count work,
        # not time); the timed cells and the profiles wait for a run on a quiet machine.
        self.counts_only = counts_only
        # Only these steps' counts (a bisection counts the steps it follows, not the load before them).
        self.count_steps = set(count_steps) if count_steps is not None else None
        self.retaken: set[tuple[str, str]] = set()  # (target, step): stored counts taken otherwise, taken again
        # Only these rounds' cells (a batch job runs one round); the counts and profiles, which are per target and
        # not per round, go with round 1.
        self.rounds = set(rounds) if rounds is not None else None
        try:
            self.cpus = placement.assign(study.measure.placement)
        except ValueError as e:
            raise DbsweepError(f"{study.path}: measure.placement: {e}") from None

    def home(self, target: Target, rep: int) -> Path:
        return self.study.workspace_dir / "data" / self.study.title / target.slug / f"r{rep}"

    def run(self, run_id: int, repeats: int | None = None, targets: set[str] | None = None) -> Outcome:
        out = Outcome(run_id)
        self.repeats = repeats
        wanted = targets if self.only is None else (self.only if targets is None else targets & self.only)
        status = self.store.statuses(run_id)
        planned = [] if self.counts_only else plan.cells(self.study, repeats, wanted)
        if self.rounds is not None:
            planned = [k for k in planned if k.repetition in self.rounds]
        todo: list[CellKey] = []
        for key in planned:
            st = status.get(key)
            if st is None or (st[0] == "failed" and self.rerun_failed):
                todo.append(key)
            elif st[0] == "failed":
                out.skipped_failed += 1
        per_target = targets is None and (self.rounds is None or 1 in self.rounds)
        counts = self._not_countable(run_id, self._instructions_todo(run_id)) if per_target else {}
        profiles = self._profiles_todo(run_id) if per_target and not self.counts_only else {}
        if not todo and not counts and not profiles:
            return out
        if len(planned) > len(todo):  # a resume: the estimate above was the whole study's
            self.console.print(_resuming(run_id, len(planned), len(todo), out.skipped_failed, counts))
        groups: dict[tuple[int, str], list[CellKey]] = {}
        for key in todo:
            groups.setdefault((key.repetition, key.target), []).append(key)
        target_ids = self.store.target_ids(run_id)
        labels = {k.target for k in todo} | set(counts) | set(profiles)
        stored = self.store.builds_measured(run_id)
        self._same_keys(run_id, {k: v for k, v in stored.items() if k not in labels})  # before any build
        with self._progress() as progress:
            # Every build happens before any step runs: never benchmark while building.
            prepared = {label: self._prepare(self.study.target(label), progress) for label in sorted(labels)}
        self._same_builds(run_id, prepared, stored)
        self.cell_log = CellLog(self.console, [self.suite.cell_seconds(k.step) for k in todo])
        with self._progress() as progress:
            overall = progress.add_task("cells", total=len(todo), unit="cells")
            timed: set[int] = set()  # the rounds whose canary this call has timed

            def work(job: GroupJob) -> None:
                keys = list(job.cells)
                ready = prepared[job.target]
                if isinstance(ready, str):
                    self._fail_all(keys, target_ids[job.target], ready, out, progress, overall)
                    return
                if job.repetition not in timed:
                    timed.add(job.repetition)
                    self._canary(run_id, job.repetition, progress)
                target = self.study.target(job.target)
                self._run_group(target, ready, job.repetition, keys, target_ids[job.target], out, progress, overall)

            jobs = [GroupJob(label, rep, tuple(keys)) for (rep, label), keys in groups.items()]
            self.executor.run(jobs, work)
        if counts:
            # The profile pass starts from the same pristine copy: it removes it, after.
            self._count_instructions(run_id, counts, prepared, target_ids, keep=set(profiles))
        if profiles:
            self._profile(run_id, profiles, prepared, target_ids)
        return out

    def _same_builds(
        self, run_id: int, prepared: dict[str, Prepared | str], stored: dict[str, list[dict[str, Any]]]
    ) -> None:
        """Refuses to go on when a target's binary is no longer the one its stored results of this run were
        measured with (a source branch that moved, another compiler release, a changed recipe, an upgraded
        package): the run's figures would mix two builds under one name."""
        for label, ready in prepared.items():
            if isinstance(ready, Prepared):
                now = ready.install.provenance
                changes = [c for old in stored.get(label, []) for c in provenance.build_changes(old, now)]
                self._refuse(run_id, label, changes)

    def _same_keys(self, run_id: int, stored: dict[str, list[dict[str, Any]]]) -> None:
        """The same for the targets this run measures nothing of, before anything is built: each is held by the key
        its build would have now (found without building or fetching), since its old figures would otherwise stand
        in the report beside the others' new ones as the study's build of it."""
        targets = {t.label: t for t in self.study.targets}
        for label, records in stored.items():
            if label in targets:  # a target the study no longer has is not reported
                self._refuse(run_id, label, self._key_changes(targets[label], records))

    def _refuse(self, run_id: int, label: str, changes: list[str]) -> None:
        if changes:
            raise DbsweepError(
                f"target {label!r} is no longer the build its results in run {run_id} were measured with "
                f"({'; '.join(changes)}), so its figures would mix two builds; run with --fresh to start a new run."
            )

    def _key_changes(self, target: Target, records: list[dict[str, Any]]) -> list[str]:
        """How the key of the build `target` names now differs from its stored results' (empty when it cannot be
        told: an installed package, a source not fetched, no llvm-bolt for a BOLT build)."""
        try:
            key = installs.build_key_now(self.study, target)
        except DbsweepError:
            return []
        old = {str(r["build_key"]) for r in records if r.get("build_key")}
        if key is None or not old or key in old:
            return []
        built = installs.cached_build(self.study, key)
        if built is not None:  # built already (for another run, or by dbsweep build): what changed, fact by fact
            return [c for r in records for c in provenance.build_changes(r, built.install.provenance)]
        return [f"build key {min(old)[:12]} → {key[:12]}: its source, recipe, compiler or PGO profile changed"]

    def _canary(self, run_id: int, rep: int, progress: Progress) -> None:
        """Times the canary before round `rep`'s first group and stores it. No server runs now: every group
        stops its server before the next one starts. A canary that fails is said; the round runs without."""
        try:
            c = canary.run(cpus=self.cpus.server)  # the CPUs the server will have: theirs is the drift that matters
        except canary.CanaryError as e:
            progress.console.print(styled(f"round {rep}: no canary: {e}", "yellow"))
            return
        self.store.write_canary(run_id, rep, c.iterations, c.seconds, c.cpu_seconds)
        progress.console.print(styled(f"round {rep}: canary {c.rate / 1e6:.2f} M iterations/s", "dim"))

    # ---- instructions per operation (measure.instructions) ---------------------------------------------

    def _wanted(self) -> list[Target]:
        return [t for t in self.study.targets if self.only is None or t.label in self.only]

    def _instructions_todo(self, run_id: int) -> dict[str, list[str]]:
        """target -> the steps whose instructions per operation are still to count."""
        steps = list(self.study.counted_steps()) if self.study.measure.instructions else []
        steps = [s for s in steps if self.count_steps is None or s in self.count_steps]
        if not steps:
            return {}
        have = self.store.instruction_counts(run_id)
        if self.rerun_failed:  # a count that failed is counted again, as a failed cell is run again
            have = {k: v for k, v in have.items() if not v.get("error")}
        stale, changed = instructions.stale_counts(have, instructions.held_by(self.engine.instance_type), self._method)
        if stale:
            self.console.print(
                styled(
                    f"{len(stale)} instruction counts were taken otherwise than {self.engine.title}'s counts are "
                    f"taken now ({'; '.join(changed)}): they are taken again.",
                    "yellow",
                ),
            )
            have = {k: v for k, v in have.items() if k not in stale}
        self.retaken = set(stale)
        todo = {t.label: [st for st in steps if (t.label, st) not in have] for t in self._wanted()}
        return {t: sts for t, sts in todo.items() if sts}

    def _not_countable(self, run_id: int, todo: dict[str, list[str]]) -> dict[str, list[str]]:
        """`todo` without the targets whose build valgrind cannot run on this CPU: their counts are stored as not
        counted, with the reason, and they are not built for it (under --counts-only, not built at all)."""
        found = installs.uncountable(self.study, instructions.host_cpu_flags())
        skipped = found.keys() & todo.keys()
        target_ids = self.store.target_ids(run_id) if skipped else {}
        for label in skipped:
            reason = f"valgrind cannot run {label}: {instructions.unrunnable_reason(found[label])}"
            for step in todo[label]:
                self.store.write_instructions(run_id, target_ids[label], step, {}, reason)
        return {label: steps for label, steps in todo.items() if label not in found}

    def _count_instructions(
        self,
        run_id: int,
        todo: dict[str, list[str]],
        prepared: dict[str, Prepared | str],
        target_ids: dict[str, int],
        keep: Collection[str] = (),
    ) -> None:
        """The valgrind pass: one client per step, from a freshly loaded copy of the tables, after every
        timed cell (valgrind's CPU load must not overlap a measured step), `measure.instruction_jobs` counts
        at a time. Steps that share their work (a .pre step and its plain form) are counted once per target;
        the reads of a target that can share a server are counted in one session."""
        shares = self.suite.instruction_steps()
        total = sum(len(v) for v in todo.values())
        known = known_amounts(self.store.instruction_counts(run_id), shares, self.retaken)
        tasks: list[countpool.Task] = []
        for label in sorted(todo, key=lambda label: label != self.study.base):
            by_key: dict[countpool.Key, list[str]] = {}
            for step in todo[label]:
                by_key.setdefault(shares[step], []).append(step)
            base = label == self.study.base
            shared = [k for k in by_key if self._can_share(prepared[label], by_key[k][0])]
            # A single read too: a step is counted one way for every target (`_method`), whatever else is left.
            if shared:
                steps = tuple(tuple(by_key[k]) for k in shared)
                tasks.append(countpool.Task(label, tuple(shared), steps, base, session=True))
            tasks += [countpool.Task(label, (k,), (tuple(v),), base) for k, v in by_key.items() if k not in shared]
        base_keys = [k for t in tasks if t.sets_amount for k in t.keys]
        amounts = countpool.Amounts(known, base_keys)
        jobs = sum(len(t.keys) if t.session else 1 for t in tasks)
        slots = [countpool.Slot(i, cpus) for i, cpus in enumerate(self._count_cpus(jobs))]
        log = CellLog(self.console, [1.0] * total)  # in a log, a line per count: they take minutes each
        with self._progress() as progress:
            bar = progress.add_task("instructions per operation (valgrind)", total=total, unit="steps")

            def count(
                task: countpool.Task, slot: countpool.Slot, amounts: countpool.Amounts, report: countpool.Report
            ) -> None:
                progress.update(bar, description=f"instructions: {task.label} {task.steps[0][0]}")
                target = self.study.target(task.label)
                if task.session:
                    self._count_session(prepared[task.label], target, task, slot, amounts, report)
                    return
                key = task.keys[0]
                data, error = self._count_one(
                    prepared[task.label], target, task.steps[0][0], amounts.get(key, wait=False), slot
                )
                report(task, key, data, error)

            failed: set[str] = set()

            def done(task: countpool.Task, key: countpool.Key, data: dict[str, Any], error: str | None) -> None:
                if error:
                    failed.add(task.label)
                ready = prepared[task.label]
                if data and isinstance(ready, Prepared):  # what built the count's binary, as a cell records it
                    target = self.study.target(task.label)
                    data = {
                        **data,
                        "build": {"engine": self.study.engine, "variant": target.variant, **ready.install.provenance},
                    }
                for step in task.steps[task.keys.index(key)]:
                    self.store.write_instructions(run_id, target_ids[task.label], step, data, error)
                    if error and not log.active:
                        progress.console.print(
                            styled(f"{task.label} {step}: instructions not counted: {error}", "yellow")
                        )
                    log.finished(f"{task.label} {step} instructions", 1.0, _counted(data, error), ok=not error)
                    progress.advance(bar)

            countpool.run_all(tasks, slots, count, amounts, done)
        # A failed count's message names valgrind's files and the server's log: its target's homes stay.
        for label in [] if self.keep_data else [t for t in todo if t not in failed]:
            for slot in slots:
                if slot.index or label not in keep:  # the profile pass starts from slot 0's pristine copy
                    shutil.rmtree(self._pass_home(self.study.target(label), slot.index), True)

    def _count_cpus(self, jobs: int) -> list[frozenset[int]]:
        """A CPU for each count that runs at once: as many as measure.instruction_jobs asks (by default every
        CPU this process may use), and there are counts to take."""
        wanted = self.study.measure.instruction_jobs or len(os.sched_getaffinity(0))
        return placement.one_cpu_each(min(wanted, jobs))

    def _can_share(self, ready: Prepared | str, step: str) -> bool:
        if isinstance(ready, str):
            return False
        plan = self.suite.instruction_plan(step, self.study.measure.instruction_seconds)
        return session.can_share(self.engine, self.engine.instance_type, plan)

    def _method(self, step: str) -> str | None:
        """How a step is counted now: in a session, or on a server of its own for every run (None for a step the
        suite no longer has)."""
        if step not in self.suite.instruction_steps():
            return None
        plan = self.suite.instruction_plan(step, self.study.measure.instruction_seconds)
        return session.method(self.engine, self.engine.instance_type, plan)

    def _count_session(
        self,
        ready: Prepared | str,
        target: Target,
        task: countpool.Task,
        slot: countpool.Slot,
        amounts: countpool.Amounts,
        report: countpool.Report,
    ) -> None:
        """A target's reads on one server; each step reported as it ends."""
        keys = {steps[0]: key for key, steps in zip(task.keys, task.steps, strict=True)}
        if isinstance(ready, str):
            for key in task.keys:
                report(task, key, {}, ready)
            return
        seconds = self.study.measure.instruction_seconds
        steps = [session.SessionStep(st, self.suite.instruction_plan(st, seconds)) for st in keys]
        reported: set[countpool.Key] = set()

        def counted(step: str, count: instructions.InstructionCount | None, error: str | None) -> None:
            reported.add(keys[step])
            report(task, keys[step], count.to_dict() if count is not None else {}, error)

        try:
            session.count_reads(
                self.engine,
                ready.install,
                ready.config_text,
                self._pass_home(target, slot.index),
                steps=steps,
                load=self._setup_commands(),
                tables=self.suite.tables(),
                counted=counted,
                repeats=self.study.measure.instruction_pairs,
                tool=self.study.measure.instruction_tool,
                client=self.suite.client(),
                cpus=placement.Lockstep(slot.cpus),
                amount_of=lambda step: amounts.get(keys[step], wait=not task.sets_amount),
            )
        except DbsweepError as e:
            for key in task.keys:
                if key not in reported:
                    report(task, key, {}, str(e))

    def _count_one(
        self, ready: Prepared | str, target: Target, step: str, amount: int | None, slot: countpool.Slot
    ) -> tuple[dict[str, Any], str | None]:
        if isinstance(ready, str):
            return {}, ready
        try:
            count = instructions.instructions_per_op(
                self.engine,
                ready.install,
                ready.config_text,
                self._pass_home(target, slot.index),
                step=step,
                load=self._setup_commands(),
                plan=self.suite.instruction_plan(step, self.study.measure.instruction_seconds, amount),
                tables=self.suite.tables(),
                tool=self.study.measure.instruction_tool,
                repeats=self.study.measure.instruction_pairs,
                client=self.suite.client(),
                cpus=placement.Lockstep(slot.cpus),
            )
        except DbsweepError as e:
            return {}, str(e)
        return count.to_dict(), None

    def _pass_home(self, target: Target, slot: int = 0) -> Path:
        """Where the passes after the timed cells keep a target's pristine copy and their files; counts that run
        at once (slot 1, 2, ...) each have a copy of their own. The path is as long for every target and slot:
        a counted server keeps its paths in memory it allocated (its data directory among its settings), and
        its backends inherit that heap, so a target named `untouched` beside one named `a` counted +0.28 % on
        update-index, all of it in malloc."""
        tag = hashlib.sha256(target.label.encode()).hexdigest()[:12]
        return self.study.workspace_dir / "data" / self.study.title / "counts" / f"{tag}-{slot:03d}"

    def _setup_commands(self) -> list[list[str]]:
        """The load client's commands of the suite's setup (the load), for the pristine copy."""
        return self.suite.instruction_setup()

    # ---- sampled profiles (measure.profile) ---------------------------------------------------------------

    def _profiles_todo(self, run_id: int) -> dict[str, list[str]]:
        """target -> the timed steps still to profile (the load is sized, not timed: not profiled)."""
        if not self.study.measure.profile or self.serverless:
            return {}  # preflight said why
        shares = self.suite.instruction_steps()
        setup = set(self.suite.setup_steps())
        steps = [st for st in shares if st not in setup]
        have = self.store.profiles(run_id)
        if self.rerun_failed:
            have = {k: v for k, v in have.items() if not v.get("error")}
        todo = {t.label: [st for st in steps if (t.label, st) not in have] for t in self._wanted()}
        return {t: sts for t, sts in todo.items() if sts}

    def _profile(
        self, run_id: int, todo: dict[str, list[str]], prepared: dict[str, Prepared | str], target_ids: dict[str, int]
    ) -> None:
        """The profile pass: perf samples the server while one client runs each step, from the pristine copy
        the instruction pass uses (no valgrind), after every timed cell."""
        shares = self.suite.instruction_steps()
        total = sum(len(v) for v in todo.values())
        seconds = self.study.measure.profile_seconds
        with self._progress() as progress:
            task = progress.add_task("sampled profiles (perf)", total=total, unit="steps")
            for label, steps in todo.items():
                ready = prepared[label]
                target = self.study.target(label)
                home = self._pass_home(target)
                done: dict[tuple[str, int], tuple[dict[str, Any], str | None]] = {}
                for step in steps:
                    key = shares[step]
                    if key not in done:
                        progress.update(task, description=f"profile: {label} {step}")
                        done[key] = self._profile_one(ready, home, step, seconds)
                    data, error = done[key]
                    self.store.write_profile(run_id, target_ids[label], step, data, error)
                    if error:
                        progress.console.print(styled(f"{label} {step}: not profiled: {error}", "yellow"))
                    progress.advance(task)
                if not self.keep_data:
                    shutil.rmtree(home, True)

    def _profile_one(
        self, ready: Prepared | str, home: Path, step: str, seconds: int
    ) -> tuple[dict[str, Any], str | None]:
        if isinstance(ready, str):
            return {}, ready
        try:
            prof = profiling.profile_step(
                self.engine,
                ready.install,
                ready.config_text,
                home,
                step=step,
                load=self._setup_commands(),
                command=self.suite.instruction_command(step, seconds),
                tables=self.suite.tables(),
            )
        except DbsweepError as e:
            return {}, str(e)
        return prof.to_dict(), None

    # ---- one target ready to run ------------------------------------------------------------------------

    def _progress(self) -> Progress:
        return bars(self.console)

    def _prepare(self, target: Target, progress: Progress) -> Prepared | str:
        """The target's install and its config fitted to the version, or why it cannot run."""
        try:
            install = installs.get_install(self.study, target, progress)
            diff = configs.load(self.study.engine, target.config)
            optional = {s.lower() for s in self.study.optional_settings}
            text, skipped = self.engine.fit_config(diff, install, optional, self.study.allow_unsafe_settings)
        except DbsweepError as e:
            progress.console.print(styled(f"{target.label}: {e}", "red"))
            return str(e)
        if skipped:
            progress.console.print(
                styled(
                    f"{target.label}: skipped settings {self.engine.title} {install.short_version} "
                    f"lacks (optional_settings): {', '.join(skipped)}",
                    "yellow",
                )
            )
        return Prepared(install, text, skipped)

    def _record(self, target_id: int, result: CellResult, out: Outcome) -> None:
        self.store.write_cell(out.run_id, target_id, result)
        if result.status == "done":
            out.done += 1
            s = result.summary or {}
            outcome = f"done, {float(s.get('rate') or 0):,.0f} {s.get('ops_name', 'queries')}/s"
        else:
            out.failed += 1
            out.failures.append(f"{result.key}: {result.error}")
            outcome = "failed: " + (result.error or "").splitlines()[0][:160]
        ok = result.status == "done"
        self.cell_log.finished(str(result.key), self.suite.cell_seconds(result.key.step), outcome, ok)

    def _fail_all(
        self, keys: list[CellKey], target_id: int, error: str, out: Outcome, progress: Progress, overall: TaskID
    ) -> None:
        t = now()
        for key in keys:
            self._record(target_id, CellResult(key, "failed", t, t, error=error), out)
            progress.advance(overall)

    # ---- one (target, repetition) group ----------------------------------------------------------------

    def _run_group(
        self,
        target: Target,
        ready: Prepared,
        rep: int,
        keys: list[CellKey],
        target_id: int,
        out: Outcome,
        progress: Progress,
        overall: TaskID,
    ) -> None:
        install, skipped = ready.install, ready.skipped
        instance = self.engine.instance(install, self.home(target, rep), target.config, ready.config_text, self.user)
        replay, why_fresh = self._replay_needed(instance, target, rep, keys)
        setup = self.suite.setup_steps()
        cap: memcap.Cap | None = None
        try:
            if replay is None:
                held = ", ".join(step for step, _ in _held(instance)) or "nothing yet"
                progress.console.print(
                    styled(
                        f"{target.label} r{rep}: resuming on the kept data directory {instance.home} "
                        f"(it holds: {held})",
                        "dim",
                    )
                )
                try:
                    instance.start()
                    lacking = self._lacking(instance)
                except ServerError as e:
                    # A kept directory the server cannot start on (a disk that filled, a file removed) holds
                    # nothing a resume can use; a fresh one can still run the cells.
                    lacking = f"the server did not start on it ({str(e).splitlines()[0]})"
                if lacking is not None:
                    instance.stop()
                    replay, why_fresh = self._setup_before(target, rep, keys), lacking
            if replay is not None:
                if why_fresh:
                    said = f"the kept data directory {instance.home} no longer holds what the cells need: {why_fresh}"
                    progress.console.print(
                        styled(f"{target.label} r{rep}: {said}: starting this repetition afresh", "yellow")
                    )
                progress.console.print(styled(f"{target.label} r{rep}: a fresh data directory, then start", "dim"))
                instance.init()
                _state_file(instance).write_text("")
                instance.start()
            if self.cpus.server is not None and instance.pid is not None:
                placement.pin_tree(instance.pid, self.cpus.server)
            cap = self._cap(instance)
        except (ServerError, memcap.CapError) as e:
            instance.stop()
            error = self._full_disk(instance, str(e), progress) or str(e)
            # Said before it is stored: a store that cannot be written (a full disk) must not hide why.
            progress.console.print(styled(f"{target.label}: {error}", "red"))
            self._fail_all(keys, target_id, error, out, progress, overall)
            return
        try:
            try:
                prov = provenance.record(
                    host=self.host,
                    load_client=self.load_version,
                    study=self.study,
                    target=target,
                    install=install,
                    instance=instance,
                    server_user=self.user,
                    placement=self.cpus.describe(),
                    reloaded=bool(replay),
                )
                prov["config"]["skipped_settings"] = skipped
                if self.study.part_setup:
                    prov["setup"] = {"name": self.study.part_setup, **(cap.describe() if cap else {})}
                build = {"engine": self.study.engine, "variant": target.variant, **install.provenance}
                access = loadclient.connection_to(instance, via_socket=self.suite.settings.connect == "socket")
                for key in replay or []:
                    progress.console.print(
                        styled(f"{target.label} r{rep}: {key.step} again, to rebuild the tables", "dim")
                    )
                    mark = instance.watermark()
                    try:
                        self._step(instance, access, key, lambda m: None)
                    except StepError as e:
                        raise StepError(_disturbance(instance, mark, step_failed=True) or str(e)) from e
                    _mark_state(instance, key.step, self.serverless)
            except (EngineError, StepError) as e:
                error = f"the server could not be readied for its steps: {e}"
                error = self._full_disk(instance, error, progress) or error
                progress.console.print(styled(f"{target.label} r{rep}: {error}", "red"))
                self._fail_all(keys, target_id, error, out, progress, overall)
                return
            maintain_before = self.suite.maintenance_points()
            for key in keys:
                before: dict[str, Any] | None = None
                bar = self.suite.progress(key.step)
                what = f"{target.label} r{rep} {key.step} c{key.clients}"
                task = progress.add_task(what, total=bar.total, unit=bar.unit)
                started = now()
                mark = instance.watermark()
                step: StepRun | None = None
                failure: str | None = None
                try:
                    if key.step in maintain_before and key.clients == self.suite.clients(key.step)[0]:
                        before = self._maintain(instance, functools.partial(_say, progress, str(key)))
                    step = self._step(instance, access, key, _advancer(progress, task, by_rows=bar.unit == "rows"))
                except StepError as e:
                    failure = str(e)
                # The server's own account comes first: it is the cause of whatever the client saw.
                disturbed = _disturbance(instance, mark, step_failed=failure is not None)
                if disturbed is not None:
                    failure = disturbed if failure is None else f"{disturbed}; the step saw: {failure}"
                full = None if failure is None else self._full_disk(instance, failure, progress, mark.log_offset)
                failure = full or failure
                if failure is None and step is not None:
                    if before is not None:
                        step.summary["maintenance_before"] = before
                    result = CellResult(
                        key,
                        "done",
                        started,
                        now(),
                        summary=step.summary,
                        seconds_lines=step.lines,
                        build=build,
                        provenance=prov,
                        measures=step.measures,
                        per_op=step.per_op,
                        host_samples=step.host_samples,
                        server_stats=step.server_stats,
                        histograms=step.histograms,
                    )
                    if key.step in setup:
                        _mark_state(instance, key.step, self.serverless)
                else:
                    result = CellResult(key, "failed", started, now(), error=failure, build=build, provenance=prov)
                progress.remove_task(task)
                if result.status == "failed":
                    progress.console.print(styled(f"{key}: {result.error}", "red"))
                self._record(target_id, result, out)
                progress.advance(overall)
                if result.status == "failed":
                    is_setup = key.step in setup
                    if disturbed is not None or is_setup or full is not None:
                        rest = keys[keys.index(key) + 1 :]
                        why = f"the server failed during {key}" if disturbed is not None else f"{key} failed"
                        why = f"the disk filled during {key}" if full is not None else why
                        self._fail_all(rest, target_id, f"not run: {why}", out, progress, overall)
                        break
        finally:
            instance.stop()
            if cap is not None:
                cap.remove()
        statuses = self.store.statuses(out.run_id)
        all_done = all(
            statuses.get(k, ("",))[0] == "done" for k in plan.group(self.study, target.label, rep, self.repeats)
        )
        if all_done and not self.keep_data:
            shutil.rmtree(instance.home, ignore_errors=True)

    def _cap(self, instance: Instance) -> memcap.Cap | None:
        """The io-bound setup's cap on the server's memory, page cache included, with the server in it: before
        the load, so its tables are charged to it from the first row."""
        if self.study.part_setup != "io-bound" or self.study.hosts.io_bound != "cap" or instance.pid is None:
            return None
        cap = memcap.Cap.make(self.study.hosts.io_bound_memory_mb * 2**20)
        try:
            cap.confine(instance.pid)
        except memcap.CapError:
            cap.remove()  # the caller stops the server, as for a start that failed
            raise
        return cap

    def _full_disk(self, instance: Instance, error: str, progress: Progress, log_from: int = 0) -> str | None:
        """When a full disk caused `error`: the error with one sentence naming the disk first, and the repetition's
        data directory removed (kept, it would starve the next target and the results store of the space; a later
        run starts the repetition afresh). None when the disk did not cause it."""
        try:
            excerpt = instance.log_excerpt(log_from)
        except (OSError, DbsweepError):
            excerpt = ""
        cause = workspace.disk_full(instance.home, f"{error}\n{excerpt}")
        if cause is None:
            return None
        instance.stop()
        shutil.rmtree(instance.home, ignore_errors=True)
        progress.console.print(
            styled(
                f"{cause}: the data directory {instance.home} is removed to give the space back; a later run starts "
                "this repetition afresh",
                "yellow",
            )
        )
        first = error.strip().splitlines()[0] if error.strip() else ""
        return cause if first in cause else f"{cause}; {first}"

    def _lacking(self, instance: Instance) -> str | None:
        """What the started instance lacks of what the suite's steps need (any data at all, then their tables), in
        words; None when it has it (or the engine cannot tell)."""
        try:
            if instance.data_bytes() == 0:
                return "it holds no data (0 bytes)"
            needed = self.suite.tables()
            if not needed:
                return None
            have = instance.tables()
        except EngineError as e:
            return f"its data could not be read ({e})"
        if have is None:
            return None
        missing = [t for t in needed if t not in have]
        if not missing:
            return None
        named = ", ".join(missing[:3]) + (", ..." if len(missing) > 3 else "")
        return f"{len(missing)} of the {len(needed)} tables its steps need are missing ({named})"

    def _setup_before(self, target: Target, rep: int, keys: list[CellKey]) -> list[CellKey]:
        """The finished setup cells of the group before the first cell to run: what a fresh directory replays."""
        group = plan.group(self.study, target.label, rep, self.repeats)
        setup = self.suite.setup_steps()
        return [k for k in group[: group.index(keys[0])] if k.step in setup]

    def _replay_needed(
        self, instance: Instance, target: Target, rep: int, keys: list[CellKey]
    ) -> tuple[list[CellKey] | None, str]:
        """(None, "") when the data directory already holds the state the first cell to run expects; else the
        finished setup cells to run again (unrecorded) on a fresh one, and what the kept directory lacks ("" when
        there was none to keep). A setup step that is itself to run always starts from a fresh data
        directory: a resume never builds on half a load."""
        before = self._setup_before(target, rep, keys)
        state = _state_file(instance)
        held = [step for step, _ in _held(instance)] if state.is_file() else []
        if keys[0].step in self.suite.setup_steps() or held != [k.step for k in before]:
            return before, ""
        if not instance.initialized():
            return before, f"it is no longer a whole {self.engine.title} data directory"
        replaced = _replaced(instance, self.serverless)
        return (before, replaced) if replaced is not None else (None, "")

    def _maintain(self, instance: Instance, say: Callable[[str], None]) -> dict[str, Any]:
        """The postwrite maintenance before a step; its failure fails that step, not the run."""
        try:
            return instance.postwrite(self.suite.tables(), self.suite.maintenance_budget(), say)
        except EngineError as e:
            raise StepError(f"the maintenance before this step failed: {e}") from e

    def _step(
        self, instance: Instance, access: Access, key: CellKey, tick: Callable[[dict[str, Any]], None]
    ) -> StepRun:
        cmd = self.suite.command(key.step, key.clients)
        log = instance.home / "client" / f"{key.step}.c{key.clients}.log"
        # No server pid (an embedded engine): the samplers charge the engine's work to the client.
        watch = StepWatch(Sampler(instance.pid, instance.datadir), tick)
        with watch.sampler:
            output = self.suite.run(
                key.step,
                cmd,
                access,
                log,
                on_second=watch.on_line,
                cpus=self.cpus.client,
                on_start=watch.on_start,
                on_summary=watch.on_summary,
            )
        summary = self.suite.judge(output.result.flat())
        summary.setdefault("command", ["dbsweep-load", *cmd])
        problem = integrity.check(self.suite.expectation(key.step), summary, output.seconds)
        if problem is not None:
            raise StepError(problem)
        run = StepRun(summary, output.seconds)
        watch.finish(run, instance)
        return run


def known_amounts(
    stored: Mapping[tuple[str, str], Mapping[str, Any]],
    shares: Mapping[str, countpool.Key],
    retaken: Collection[tuple[str, str]],
) -> dict[countpool.Key, int]:
    """Every target counts the same events of a step: the base's count of it finds how many, and the others take
    that amount, from the store when an earlier run counted it. A stored count taken otherwise (`retaken`, any
    target's) or failed sets none: a stale one's amount was found for the other method."""
    known: dict[countpool.Key, int] = {}
    for (target, step), v in stored.items():
        if v.get("amount") and not v.get("error") and step in shares and (target, step) not in retaken:
            known.setdefault(shares[step], int(v["amount"]))
    return known
