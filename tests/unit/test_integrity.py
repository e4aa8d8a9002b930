"""The checks that make a cell done, on the client's summary and per-second lines (no server)."""

from __future__ import annotations

from typing import Any

from dbsweep.measure.integrity import Expectation, Nonzero, check


def lines(ops: list[int], max_us: list[int] | None = None, warmup: int = 0) -> list[dict[str, Any]]:
    out = [{"t": t + 1, "phase": "warmup", "ops": 5, "errors": 0, "max_us": 100} for t in range(warmup)]
    for i, n in enumerate(ops):
        out.append(
            {"t": warmup + i + 1, "phase": "measure", "ops": n, "errors": 0, "max_us": (max_us or [0] * len(ops))[i]}
        )
    return out


def summary(**kw: Any) -> dict[str, Any]:
    return {"seconds": 10.0, "events": 1000, "error_count": 0, "ended_early": None, **kw}


TIMED = Expectation(seconds=10)


def test_a_whole_step_passes() -> None:
    assert check(TIMED, summary(), lines([100] * 10, warmup=2)) is None


def test_lost_connections_fail_the_step_with_when_and_why() -> None:
    early = {"connections_lost": 2, "at_s": 3.25, "reason": "57P02: terminating connection because of crash"}
    problem = check(TIMED, summary(ended_early=early), lines([100] * 10))
    assert problem == (
        "the load client lost 2 connections 3.2 s into the step (57P02: terminating connection because of crash)"
    )


def test_short_and_long_steps_fail_but_small_differences_pass() -> None:
    assert check(TIMED, summary(seconds=9.9), lines([100] * 10)) is None
    assert check(TIMED, summary(seconds=11.5), lines([100] * 10)) is None
    short = check(TIMED, summary(seconds=6.0), lines([100] * 6))
    assert short == "the step measured 6.0 s of the 10 s asked (it ended early)"
    long = check(TIMED, summary(seconds=40.0), lines([100] * 40))
    assert long is not None and "40.0 s where 10 s were asked" in long
    # A read-write step of the Insert Benchmark runs longer when the server cannot keep the rate.
    assert check(Expectation(seconds=10, may_run_long=True), summary(seconds=40.0), lines([100] * 40)) is None


def test_a_stall_up_to_the_end_fails() -> None:
    problem = check(TIMED, summary(), lines([100] * 7 + [0] * 3))
    assert problem == "no operation completed in seconds 8-10 of the step, up to its end"


def test_a_gap_without_a_slow_operation_fails_and_with_one_passes() -> None:
    ops = [100, 100, 0, 0, 100, 100, 100, 100, 100, 100]
    quick = [500] * 10
    problem = check(TIMED, summary(), lines(ops, quick))
    assert problem is not None and "seconds 3-4" in problem and "took 0.00 s" in problem
    # The operation that ended in second 5 took 2.1 s: it was in flight through the gap, a real stall.
    slow = [500, 500, 0, 0, 2_100_000, 500, 500, 500, 500, 500]
    assert check(TIMED, summary(), lines(ops, slow)) is None


def test_seconds_of_errors_are_not_a_stall_but_the_error_rate_judges_them() -> None:
    ln = lines([100] * 10)
    for x in ln[5:]:
        x.update(ops=0, errors=50)
    problem = check(TIMED, summary(events=500, error_count=250, error_samples=["53400: out of temp"]), ln)
    assert problem == "250 of 750 events failed (33%, more than 1%); first errors: 53400: out of temp"
    assert check(TIMED, summary(events=1000, error_count=5), ln) is None


def test_untimed_steps_check_their_work_and_may_end_quietly() -> None:
    load = Expectation(steady=False, work=("rows", 20_000))
    assert check(load, summary(rows=20_000), lines([5000, 5000, 5000, 5000, 0, 0])) is None
    assert check(load, summary(rows=12_000), lines([5000, 5000, 2000])) == (
        "the step was asked for 20,000 rows and did 12,000"
    )
    # A steady step with asked-for work may end with idle seconds (counting rows) once the work is done...
    inserts = Expectation(work=("inserted_rows", 1000))
    assert check(inserts, summary(inserted_rows=1000), lines([500, 500, 0])) is None
    # ... but not stall in the middle.
    assert check(inserts, summary(inserted_rows=1000), lines([500, 0, 0, 500], [9, 9, 9, 9])) is not None


def test_warmup_seconds_are_not_judged() -> None:
    ln = lines([100] * 10, warmup=3)
    for x in ln[:3]:
        x["ops"] = 0
    assert check(TIMED, summary(), ln) is None


FOUND = Nonzero("found", "no read found a key", "the database holds none of the keys the step reads")
ROWS = Nonzero("rows_returned", "no query returned a row", "the tables hold none of the rows the step reads")
CHANGED = Nonzero("rows_affected", "no update changed a row", "the tables hold none of the rows the step updates")


def test_a_read_that_found_no_key_fails_with_the_count() -> None:
    reads = Expectation(seconds=10, nonzero=(FOUND,))
    empty = summary(found=[0, 1_379_999], operations=1_379_999, ops_name="ops")
    assert check(reads, empty, lines([100] * 10)) == (
        "no read found a key (0 of 1,379,999 found): the database holds none of the keys the step reads"
    )
    assert check(reads, summary(found=[12, 1_379_999]), lines([100] * 10)) is None


def test_a_read_step_that_returned_no_row_fails() -> None:
    reads = Expectation(seconds=10, nonzero=(ROWS,))
    empty = summary(rows_returned=0, rows_affected=0, operations=52_301, ops_name="queries")
    assert check(reads, empty, lines([100] * 10)) == (
        "no query returned a row (rows returned 0 in 52,301 queries): the tables hold none of the rows the step reads"
    )
    assert check(reads, summary(rows_returned=5, rows_affected=0), lines([100] * 10)) is None


def test_an_update_step_that_changed_no_row_fails() -> None:
    updates = Expectation(seconds=10, nonzero=(CHANGED,))
    problem = check(updates, summary(rows_returned=0, rows_affected=0, operations=900), lines([100] * 10))
    assert problem is not None and problem.startswith("no update changed a row (rows affected 0 in 900 operations)")
    assert check(updates, summary(rows_returned=0, rows_affected=900), lines([100] * 10)) is None


def test_a_figure_the_summary_lacks_is_not_judged() -> None:
    # An older client reports no such field, and db_bench's write benchmarks print no "found": not a failure.
    every = Expectation(seconds=10, nonzero=(FOUND, ROWS, CHANGED))
    assert check(every, summary(), lines([100] * 10)) is None
    assert check(every, summary(found=None), lines([100] * 10)) is None
    # The first figure at zero is the one named.
    problem = check(every, summary(found=[3, 10], rows_returned=7, rows_affected=0), lines([100] * 10))
    assert problem is not None and problem.startswith("no update changed a row")
