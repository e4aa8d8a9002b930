"""`run --until-decided`: after the study's repetitions, two more interleaved rounds at a time of the base
and every target whose verdict is still unsure, until every verdict is decided or measure.max_repeats."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from dbsweep.results.store import Store
from dbsweep.study import Study
from dbsweep.verdicts import calibrate, instructions
from dbsweep.verdicts.judging import unsure_targets

if TYPE_CHECKING:
    from dbsweep.runner import Outcome, Runner


def decided_by_instructions(study: Study, store: Store, run_id: int) -> set[tuple[str, str, int]]:
    """(target, step, 1): the single-client cells whose instruction verdict is decided. Instructions decide
    first; QPS rounds are added only where no count decides (other client counts, steps not counted)."""
    judged = instructions.run_verdicts(store.counts(run_id), study.base, instructions.calibrated_floors(study, store))
    return {(t, step, 1) for (t, step), j in judged.items() if j.decided}


def until_decided(study: Study, store: Store, runner: Runner, outcome: Outcome, say: Callable[[str], None]) -> None:
    """Adds rounds to `outcome`'s run (and counts them into it) while any verdict is unsure."""
    measured = calibrate.study_noise(study, store)
    calibrated = measured.cv_qps if measured is not None else None
    while True:
        rows = store.results(outcome.run_id)
        # The same rules as the report's: a change far beyond the noise is decided from one repetition.
        seconds = store.second_spreads(outcome.run_id)
        decided = decided_by_instructions(study, store, outcome.run_id)
        unsure = unsure_targets(study, rows, decided, calibrated, seconds)
        reps = max([study.repeats, *(r.repetition for r in rows)])
        if not unsure:
            say(f"Every verdict is decided after {reps} repetitions.")
            return
        if reps >= study.measure.max_repeats:
            say(f"Still unsure after {reps} repetitions (measure.max_repeats): {', '.join(sorted(unsure))}.")
            return
        more = min(reps + 2, study.measure.max_repeats)
        say(f"Unsure: {', '.join(sorted(unsure))}; adding repetitions {reps + 1}..{more}.")
        extra = runner.run(outcome.run_id, repeats=more, targets=unsure | {study.base})
        outcome.done += extra.done
        outcome.failed += extra.failed
        outcome.failures += extra.failures
        if extra.done == 0:
            return  # nothing could run (every new cell failed before): stop rather than loop
