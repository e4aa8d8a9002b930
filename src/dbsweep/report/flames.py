"""The sampled profiles of a report (measure.profile): per step and target the folded stacks perf recorded, the
hottest functions by their own samples, perf's counts per operation (hardware counters where the host has
them), and for the HTML report the flame graphs and the differential ones against the base.

`data.gather` fills `data.profiles`; the formats only show them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dbsweep.errors import DbsweepError
from dbsweep.measure import profile

if TYPE_CHECKING:
    from dbsweep.report.data import ReportData
    from dbsweep.results.store import Store

HOT_TOP = 5
HARDWARE = profile.HARDWARE_EVENTS


@dataclass
class StepProfiles:
    """One step's profiles: target -> folded stacks, and what else was stored (samples, counters, error)."""

    step: str
    folded: dict[str, dict[str, int]] = field(default_factory=dict)
    stored: dict[str, dict[str, Any]] = field(default_factory=dict)

    def hottest(self, target: str, top: int = HOT_TOP) -> list[tuple[str, float]]:
        """The functions with the most samples of their own (the leaf of each stack), with their share."""
        folded = self.folded.get(target) or {}
        total = profile.total_samples(folded)
        if not total:
            return []
        leaves: Counter[str] = Counter()
        for stack, n in folded.items():
            leaves[stack.rsplit(";", 1)[-1]] += n
        return [(f, n / total) for f, n in leaves.most_common(top)]

    def counters(self, target: str) -> dict[str, float | None]:
        return dict((self.stored.get(target) or {}).get("per_event") or {})


def attach(data: ReportData, store: Store) -> None:
    """Fills `data.profiles` from the store, in the report's step order, and a note when the host could not
    count hardware events."""
    stored = store.profiles(data.run_id)
    if not stored:
        return
    order = {r.step: i for i, r in enumerate(data.rows)}
    steps = sorted({s for _t, s in stored}, key=lambda s: order.get(s, len(order)))
    for step in steps:
        sp = StepProfiles(step)
        for t in data.ordered:
            d = stored.get((t, step))
            if d is None:
                continue
            sp.stored[t] = {k: v for k, v in d.items() if k != "folded"}
            if not d.get("error") and d.get("folded"):
                sp.folded[t] = profile.parse_folded(str(d["folded"]))
        data.profiles.append(sp)
    counted = [c for sp in data.profiles for t in sp.stored for c in [sp.counters(t)] if c]
    if counted and all(c.get(e) is None for c in counted for e in HARDWARE):
        data.notes.append(
            "Hardware counters per operation (cycles, instructions, cache and branch misses) are not available on "
            "this host (perf stat: not supported); the profiles sample the cpu-clock software event."
        )


def svgs(data: ReportData) -> list[dict[str, Any]]:
    """Per step: each target's flame graph and, for every target but the base, the differential one (SVG text).
    A graph that cannot be drawn is left out with the reason."""
    out = []
    for sp in data.profiles:
        graphs: list[tuple[str, str]] = []
        problems: list[str] = []
        base = sp.folded.get(data.base)
        for t in data.ordered:
            f = sp.folded.get(t)
            if f is None:
                why = (sp.stored.get(t) or {}).get("error") or "not profiled"
                problems.append(f"{t}: {why}")
                continue
            try:
                samples = profile.total_samples(f)
                graphs.append((f"{t}", profile.flamegraph_svg(f, f"{sp.step}: {t}", subtitle=f"{samples:,} samples")))
                if t != data.base and base:
                    title = f"{sp.step}: {t} against {data.base}"
                    sub = "red: a larger share of the samples than in the base, blue: a smaller one"
                    graphs.append((f"{t} against {data.base}", profile.diff_svg(base, f, title, subtitle=sub)))
            except DbsweepError as e:
                problems.append(f"{t}: {e}")
        out.append({"step": sp.step, "graphs": graphs, "problems": problems})
    return out


def to_json(data: ReportData) -> list[dict[str, Any]]:
    return [
        {
            "step": sp.step,
            "target": t,
            **{k: v for k, v in sp.stored.get(t, {}).items()},
            "hottest": [{"function": f, "share": s} for f, s in sp.hottest(t)],
            "folded": profile.format_folded(sp.folded[t]) if t in sp.folded else None,
        }
        for sp in data.profiles
        for t in data.ordered
        if t in sp.stored
    ]
