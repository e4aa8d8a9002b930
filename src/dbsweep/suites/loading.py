"""Whether a study loads the data its steps need before they run: a read of an empty database is fast and
finds nothing, and would be measured as if it were a read. Preflight refuses such a study, naming the step to
add."""

from __future__ import annotations

from dbsweep.suites.base import Found, Suite


def unloaded(suite: Suite) -> list[Found]:
    """The first step that needs data no step before it loads, with the step that loads it; none otherwise."""
    loaders = [st for st in suite.step_names() if suite.loads(st)]
    steps = suite.steps()
    loaded = False
    # cell_steps: a suite that always loads first (sysbench) puts its load before the study's steps.
    for step in suite.cell_steps():
        if suite.loads(step):
            loaded = True
            continue
        does = suite.needs_loaded(step)
        if does is None or loaded:
            continue
        listed = isinstance(suite.settings.steps, list) and step in steps
        field = f"suite.steps[{steps.index(step)}]" if listed else "suite.steps"
        add = " or ".join(loaders) or "a step that loads it"
        return [
            (
                field,
                f"{suite.name} step {step} {does}, which no step before it loads; add {add} before it in [suite] steps",
            )
        ]
    return []
