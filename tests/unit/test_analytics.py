"""The analytics suite's settings, commands and steps, and its summary's penalty for a failed query."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from dbsweep.report.data import Entry, Rep, Row
from dbsweep.suites.analytics import LOAD, QUERIES, Analytics, AnalyticsSettings, sql_dir
from dbsweep.suites.analytics.report import PENALTY, penalised


def suite(**kw: object) -> Analytics:
    return Analytics(AnalyticsSettings(**kw))  # type: ignore[arg-type]


def test_the_load_comes_first_and_each_query_is_a_step() -> None:
    s = suite(scale=0.1)
    assert s.cell_steps() == [LOAD, *QUERIES] and len(QUERIES) == 22
    assert s.setup_steps() == (LOAD,) and s.loads(LOAD) and not s.loads("q01")
    assert s.needs_loaded("q05") == "reads the tables derived from TPC-H"
    assert suite(steps=["q06", "q01"]).cell_steps() == [LOAD, "q06", "q01"]
    assert s.tables() == ["region", "nation", "part", "supplier", "partsupp", "customer", "orders", "lineitem"]
    assert len(suite(data="tpcds").tables()) == 24
    assert s.group_of(LOAD) == "load" and s.group_of("q22") == "queries"


def test_commands_name_the_set_its_files_the_scale_and_the_runs() -> None:
    s = suite(scale=0.5, query_repeats=5, warmup_runs=2, query_timeout=60)
    load = s.command(LOAD, 1)
    assert load[:4] == ["analytics", "load", "--set", "tpch"]
    assert load[load.index("--dir") + 1] == str(sql_dir("tpch"))
    assert (sql_dir("tpch") / "q01.sql").is_file() and (sql_dir("tpcds") / "keys.sql").is_file()
    assert load[load.index("--scale") + 1] == "0.5" and Path(load[load.index("--generator") + 1]).name == "tpcgen-cli"
    q = s.command("q07", 1)
    pairs = dict(zip(q[2::2], q[3::2], strict=False))
    assert pairs["--query"] == "q07" and pairs["--repeats"] == "5" and pairs["--warmup-runs"] == "2"
    assert pairs["--timeout-s"] == "60"


def test_the_instruction_pass_counts_runs_on_a_small_copy_of_its_own() -> None:
    s = suite(scale=1, count_scale=0.02)
    (setup,) = s.instruction_setup()
    assert setup[setup.index("--scale") + 1] == "0.02"
    plan = s.instruction_plan("q03", 10)
    assert plan.keeps_state and plan.short == 1 and plan.unit == "events"
    counted = plan.command(4)
    assert counted[counted.index("--repeats") + 1] == "4" and counted[counted.index("--warmup-runs") + 1] == "0"
    assert counted[counted.index("--scale") + 1] == "0.02"
    assert set(s.instruction_steps()) == set(QUERIES)


def test_bad_settings_name_their_field() -> None:
    with pytest.raises(ValidationError, match="scale"):
        AnalyticsSettings(scale=0)
    with pytest.raises(ValidationError, match="data"):
        AnalyticsSettings(data="tpcc")  # type: ignore[arg-type]
    problems = dict(suite(clients=[2], generator="/nonexistent/tpcgen").settings_problems())
    assert "one at a time" in problems["suite.clients"]
    assert "/nonexistent/tpcgen is not an executable file" in problems["suite.generator"]


def test_a_failed_query_counts_twice_the_worst_time_taken_for_it() -> None:
    def entry(*times: float, failed: int = 0) -> Entry:
        reps = [Rep(k, k, 1 / t, 1 / t, summary={"query_s": t}) for k, t in enumerate(times, start=1)]
        return Entry(reps, failed)

    rows = [
        Row("q01", 1, "queries", "queries", {"a": entry(1.0, 1.2), "b": entry(2.0)}, True, {}),
        Row("q02", 1, "queries", "queries", {"a": entry(), "b": entry(failed=2)}, True, {}),
    ]
    out = penalised(["a", "b"], rows, timeout=30)
    # b's second repetition of q01 failed: twice the worst time taken for q01 (2.0 s); q02 ran nowhere.
    assert out["b"] == {1: [2.0, PENALTY * 30], 2: [PENALTY * 2.0, PENALTY * 30]}
    assert out["a"] == {1: [1.0, PENALTY * 30], 2: [1.2, PENALTY * 30]}


def test_a_cold_run_drops_the_page_cache_before_each_query_not_the_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dbsweep.suites.analytics as analytics

    knob = tmp_path / "drop_caches"
    knob.write_text("")
    monkeypatch.setattr(analytics, "DROP_CACHES", knob)
    suite(cold=True).before_run(LOAD)
    assert knob.read_text() == ""
    suite(cold=True).before_run("q01")
    assert knob.read_text() == "3\n"
    knob.write_text("")
    suite(cold=False).before_run("q01")
    assert knob.read_text() == ""
    monkeypatch.setattr(analytics.os, "access", lambda *_: False)
    assert "cannot write" in dict(suite(cold=True).settings_problems())["suite.cold"]
