"""The reads of a target counted on one server (measure.session), against Debian's Postgres 15: the same figure
as a server per run, repeatable to parts in ten thousand in lockstep, a failed step that leaves the others
counted, and nothing left running."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dbsweep.measure import instructions, session
from dbsweep.measure.instructions import CountPlan, InstructionCount
from dbsweep.suites.sysbench import Sysbench, SysbenchSettings

from ..conftest import POSTGRES_UNDER_VALGRIND, count_system_reads, count_system_step, own_dir

CONFIG = "shared_buffers=128MB\n"
SUITE = Sysbench(SysbenchSettings(rows=10000))
READS = ["point-query_range=100", "read-only_range=10"]
STATS_BOUND = "points-notcovered-si_range=100"  # its plan's cost follows the column's most common values

pytestmark = POSTGRES_UNDER_VALGRIND


@pytest.fixture(scope="module")
def workdir(_test_root: Path) -> Iterator[Path]:
    yield from own_dir(_test_root, "session")


def count_reads(
    home: Path, steps: list[tuple[str, int | None] | session.SessionStep], repeats: int = 2
) -> dict[str, InstructionCount | str]:
    return count_system_reads("postgres", CONFIG, home, SUITE, steps, repeats)


@pytest.fixture(scope="module")
def counts(workdir: Path) -> dict[str, InstructionCount | str]:
    """The reads, and the base of the A-A pair (`test_two_loads_of_the_tables_count_alike`), which its twin counts
    in the same order, after the point query."""
    return count_reads(workdir / "s", [(READS[0], None), (STATS_BOUND, None), (READS[1], None)])


def test_a_session_counts_each_read_repeatably(counts: dict[str, InstructionCount | str]) -> None:
    for step in READS:
        c = counts[step]
        assert isinstance(c, InstructionCount), c
        assert c.method == instructions.SESSION and c.counted == "server"
        assert c.per_event == c.foreground_per_event and set(c.by_role) == {instructions.FOREGROUND}
        assert len(c.pairs) == 2 and c.amount >= session.MIN_EVENTS
        if c.scheduling == "lockstep":
            # Neither process preempts the other: every statement waits once, whatever the machine does.
            assert c.spread < 3e-4, (step, c.spread, [p.per_event for p in c.pairs])
        assert c.functions and all(Path(p.short.output_dir).is_dir() for p in c.pairs)
    point, ro = counts[READS[0]], counts[READS[1]]
    assert isinstance(point, InstructionCount) and isinstance(ro, InstructionCount)
    assert 10_000 < point.per_event < 200_000  # ten primary-key lookups
    assert ro.per_event > 3 * point.per_event  # read-only adds ranges, a sum, an order and a distinct


def test_a_session_counts_what_a_server_per_run_counts(
    counts: dict[str, InstructionCount | str], workdir: Path
) -> None:
    """The same events counted both ways: the session saves the restarts, not the work."""
    point = counts[READS[0]]
    assert isinstance(point, InstructionCount)
    # From the session's own pristine copy: the same tables, so the two methods are all that differs.
    fresh = count_system_step("postgres", CONFIG, workdir / "s", SUITE, READS[0], 1, point.amount)
    assert fresh.reused_data
    assert fresh.method == instructions.RESTART and fresh.amount == point.amount
    assert fresh.scheduling == point.scheduling
    assert abs(point.per_event / fresh.foreground_per_event - 1) < 0.002  # the default floor


def test_a_failed_step_leaves_the_others_counted(counts: dict[str, InstructionCount | str], workdir: Path) -> None:
    point = counts[READS[0]]
    assert isinstance(point, InstructionCount)
    broken = CountPlan(lambda n: ["sysbench", "run", "--no-such-option", str(n)], short=5, keeps_state=True)
    # The step after the failed one is counted on the same server; its amount known, one pair says it was.
    steps: list[tuple[str, int | None] | session.SessionStep] = [
        session.SessionStep("broken", broken),
        (READS[0], point.amount),
    ]
    got = count_reads(workdir / "s", steps, repeats=1)  # the pristine copy of the first session is reused
    assert isinstance(got["broken"], str) and "no-such-option" in got["broken"], got["broken"]
    c = got[READS[0]]
    assert isinstance(c, InstructionCount) and c.per_event > 0 and c.reused_data


def test_two_loads_of_the_tables_count_alike(counts: dict[str, InstructionCount | str], workdir: Path) -> None:
    """An A-A pair: a second load of the same tables, counted with the base's amounts (so without the probe).
    Its statistics must be the same (ANALYZE reads every row), and its first runs must find the catalog cached as
    the probed target's did: both once moved a count by more than the floor."""
    point, c1 = counts[READS[0]], counts[STATS_BOUND]
    assert isinstance(point, InstructionCount)
    assert isinstance(c1, InstructionCount), c1  # probed, as the base's count is
    steps: list[tuple[str, int | None] | session.SessionStep] = [(READS[0], point.amount), (STATS_BOUND, c1.amount)]
    # One pair each: a session's pairs repeat to parts in a million (test_a_session_counts_each_read_repeatably).
    second = count_reads(workdir / "aa2", steps, repeats=1)
    for step, base in ((READS[0], point), (STATS_BOUND, c1)):
        twin = second[step]
        assert isinstance(twin, InstructionCount) and twin.amount == base.amount, twin
        assert abs(twin.per_event / base.per_event - 1) < 0.001, (step, base.per_event, twin.per_event)
