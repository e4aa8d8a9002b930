"""How noisy the machine was, beside the numbers: the A-A spread of each step's QPS next to its verdicts, the
steal time the steps saw, the canary's rate per round, and the host's tuning among the provenance facts.

The spread is what dbsweep measured of this step's noise: the CV of QPS that `dbsweep calibrate` stored
for it in the same workspace (the base's calibration, else another target's), else the CV of the base's
QPS over this run's repetitions. Either way it is the spread of one target's repetitions, so a verdict
`slower (±6.1% cal)` reads: slower, on a step whose A-A repetitions spread 6.1 %.

`data.gather` and its siblings fill these fields; the formats only show them.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from dbsweep.report.tables import ExtraTable, Value
from dbsweep.results.model import StoredCanary
from dbsweep.verdicts import calibrate, stats

if TYPE_CHECKING:
    from dbsweep.report.data import Rep, ReportData, Row
    from dbsweep.results.store import Store
    from dbsweep.study import Study

SpreadSource = Literal["calibrate", "repetitions"]
# Steal above this share of the host's CPU time during a step earns a note: the hypervisor took CPU from it.
STEAL_NOTE_PCT = 1.0
# How the formats tag a spread's source, briefly, beside a verdict.
TAGS: dict[str, str] = {"calibrate": "cal", "repetitions": "reps"}


@dataclass(frozen=True)
class Spread:
    """The A-A spread of a step's QPS: a CV, where it came from, how many repetitions it rests on and, in
    words, which run or target measured it."""

    cv: float
    source: SpreadSource
    n: int
    detail: str

    @property
    def tag(self) -> str:
        return TAGS[self.source]


@dataclass(frozen=True)
class Canaries:
    """The canaries of a run in the order they were timed (a resumed round may have several)."""

    timed: tuple[StoredCanary, ...] = ()

    @property
    def rates(self) -> list[float]:
        return [c.rate for c in self.timed]

    @property
    def cv(self) -> float | None:
        """The CV of the rates: the machine's drift between rounds (None with fewer than two)."""
        return stats.spread(self.rates)

    @property
    def median(self) -> float | None:
        return statistics.median(self.rates) if self.timed else None


# ---- the spread ------------------------------------------------------------------------------------------


def calibrated(study: Study, store: Store) -> calibrate.Measured | None:
    """The latest calibration stored for the study's base, else for its first other target that has one."""
    return calibrate.study_noise(study, store)


def row_spread(row: Row, base: str, measured: calibrate.Measured | None) -> Spread | None:
    """The step's spread from the calibration when it measured this step, else from the base's repetitions."""
    if measured is not None and (got := measured.cv_qps.get((row.step, row.clients))) is not None:
        cv, n = got
        return Spread(cv, "calibrate", n, f"dbsweep calibrate run {measured.run_id} of {measured.target} ({n} rounds)")
    values = row.cells[base].values
    own = stats.spread(values)
    if own is None:
        return None
    return Spread(own, "repetitions", len(values), f"{len(values)} repetitions of the base ({base})")


def spread_legend(rows: Iterable[Row]) -> str:
    """One sentence on what the ± beside a verdict means and where each kind came from ("" when no row has one)."""
    spreads = [s for r in rows if (s := r.spread) is not None]
    if not spreads:
        return ""
    parts = []
    cal = sorted({s.detail for s in spreads if s.source == "calibrate"})
    if cal:
        parts.append(f"`cal`: measured by {'; '.join(cal)}")
    if any(s.source == "repetitions" for s in spreads):
        parts.append("`reps`: over this run's repetitions of the base")
    return (
        "± beside a verdict: the A-A spread of the step's QPS (CV of one target's repetitions); "
        + "; ".join(parts)
        + "."
    )


# ---- steal -----------------------------------------------------------------------------------------------


def load_steal(store: Store, run_id: int, by_id: dict[int, Rep]) -> None:
    """Each repetition's steal time: the host's steal share over the step's measured window, as stored."""
    for cell_id, m in store.measures(run_id).items():
        v = m.get("host_st_pct")
        if (rep := by_id.get(cell_id)) is not None and isinstance(v, int | float) and not isinstance(v, bool):
            rep.steal_pct = float(v)


def steal_note(rows: Iterable[Row], targets: Sequence[str]) -> str | None:
    """A note naming the steps whose repetitions saw more steal than STEAL_NOTE_PCT; None when none did."""
    hit: list[tuple[float, str]] = []
    for row in rows:
        for t in targets:
            for rep in row.cells[t].reps:
                if rep.steal_pct is not None and rep.steal_pct > STEAL_NOTE_PCT:
                    hit.append((rep.steal_pct, f"{row.step} c{row.clients} {t} r{rep.repetition} {rep.steal_pct:.1f}%"))
    if not hit:
        return None
    hit.sort(reverse=True)
    shown = "; ".join(text for _, text in hit[:8]) + (f"; and {len(hit) - 8} more" if len(hit) > 8 else "")
    return (
        f"Steal time above {STEAL_NOTE_PCT:.0f}% of the host's CPU time (the hypervisor ran something else on "
        f"this machine's CPUs) during {len(hit)} step{'s' if len(hit) != 1 else ''}, worst first: {shown}. "
        "Their QPS may be lower than the machine gives when it is quiet."
    )


# ---- the canary ------------------------------------------------------------------------------------------


def canary_line(canaries: Canaries) -> str:
    """The canary's rate per round and its CV, in one line ("" without canaries)."""
    if not canaries.timed:
        return ""
    rates = ", ".join(f"r{c.repetition} {c.rate / 1e6:.2f}" for c in canaries.timed)
    cv = f"; CV {canaries.cv * 100:.1f}%" if canaries.cv is not None else ""
    return f"Canary before each round (fixed CPU work, M iterations/s): {rates}{cv}."


def canary_table(canaries: Canaries) -> ExtraTable | None:
    """The canary per round: its rate, its ratio to the median and its share of the wall time on a CPU."""
    if not canaries.timed:
        return None
    median = canaries.median or 0.0
    rows = [
        [
            Value(str(c.repetition)),
            Value(c.measured_at.replace("T", " ")[:19]),
            Value(f"{c.rate / 1e6:.3f}", sort=c.rate),
            Value(f"{c.rate / median:.3f}" if median else "-", sort=c.rate / median if median else None),
            Value(f"{100 * c.cpu_seconds / c.seconds:.0f}%" if c.seconds else "-"),
        ]
        for c in canaries.timed
    ]
    cv = f"{canaries.cv * 100:.1f}%" if canaries.cv is not None else "- (one round)"
    return ExtraTable(
        key="canary",
        title="canary before each round",
        header=["round", "timed at (UTC)", "M iterations/s", "/ median", "on CPU"],
        rows=rows,
        note=f"A fixed amount of pure CPU work, timed before each round's first step; CV of its rate: {cv}. "
        "A drift between rounds lands on every target alike (rounds interleave them); 'on CPU' below 100% "
        "means the canary waited for a CPU.",
        labels=2,
        section="Noise",
        formats=frozenset({"markdown", "html"}),
    )


# ---- host tuning, as provenance facts ----------------------------------------------------------------------


def _on_off(v: Any, on: str = "on", off: str = "off") -> str:
    return on if v is True else off if v is False else ""


def tuning_facts(host: dict[str, Any]) -> list[tuple[str, str]]:
    """Label and value of the host's tuning facts (`dbsweep.measure.tuning`) recorded with the run."""
    t = host.get("tuning")
    if not isinstance(t, dict):
        return []
    governors = (t.get("governors") or {}).get("summary") or ""
    boost = t.get("boost") or {}
    boost_text = _on_off(boost.get("enabled"))
    boost_text = (
        f"{boost_text} ({boost['control']})" if boost_text and boost.get("control") else boost_text or "no control"
    )
    smt = t.get("smt") or {}
    smt_text = " ".join(
        x for x in (_on_off(smt.get("active"), "active", "inactive"), str(smt.get("control") or "")) if x
    )
    thp = t.get("huge_pages") or {}
    thp_text = ", ".join(f"{k} {thp[k]}" for k in ("enabled", "defrag") if thp.get(k))
    vm = _on_off((t.get("virtual") or {}).get("vm"), "yes (hypervisor flag)", "no")
    return [
        ("CPU governor", governors),
        ("turbo/boost", boost_text),
        ("SMT", smt_text),
        ("transparent huge pages", thp_text),
        ("virtual machine", vm),
    ]


# ---- filling the model ---------------------------------------------------------------------------------------


def attach(data: ReportData, study: Study, store: Store, *, canaries: bool = True) -> None:
    """Fills the report's noise fields: every row's spread, the run's canaries (unless the report spans two runs)
    and a note on steal. The repetitions' steal was read with the cells (`load_steal`)."""
    measured = calibrated(study, store)
    for row in data.rows:
        row.spread = row_spread(row, data.base, measured)
    if canaries:
        data.canaries = Canaries(tuple(store.canaries(data.run_id)))
    if (note := steal_note(data.rows, data.ordered)) is not None:
        data.notes.append(note)
