"""The suites behind their boundary, without running anything: the registry, the sysbench steps table and its
named sets, the one place each suite builds the load client's command, what a whole measurement of a step is,
where the postwrite maintenance runs, client counts, report groups, and the Insert Benchmark's SLA."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from dbsweep import paths, plan
from dbsweep.errors import DbsweepError
from dbsweep.measure.integrity import Expectation, check
from dbsweep.study import load_study
from dbsweep.suites import registry
from dbsweep.suites.base import Suite
from dbsweep.suites.dbbench import Dbbench
from dbsweep.suites.ibench import RATES, SLA_SHARE, Ibench, IbenchSettings
from dbsweep.suites.sysbench import Sysbench, SysbenchSettings
from dbsweep.suites.sysbench.steps import ALIASES, GROUPS, LOAD_STEP, SETS, STEPS

from ..conftest import write_study


def sysbench(**kw: object) -> Sysbench:
    return Sysbench(SysbenchSettings(**kw))  # type: ignore[arg-type]


def ibench(**kw: object) -> Ibench:
    return Ibench(IbenchSettings(**kw))  # type: ignore[arg-type]


def test_the_registry_names_each_suite_once() -> None:
    assert registry.names()[:4] == ["sysbench", "ibench", "dbbench", "analytics"]
    assert registry.names() == list(registry.SUITES)
    assert registry.DEFAULT == "sysbench"
    for name, cls in registry.SUITES.items():
        assert issubclass(cls, Suite) and cls.name == name and registry.suite_class(name) is cls
    settings = SysbenchSettings(rows=1000)
    assert registry.suite_for(settings) is registry.suite_for(settings)  # bound once per settings
    assert isinstance(registry.suite_for(IbenchSettings(profile="quick")), Ibench)
    assert registry.owner_of("rw_seconds") == ["ibench"] and registry.owner_of("rows") == ["sysbench"]
    assert set(registry.owner_of("clients")) == set(registry.names())  # every suite has client counts
    assert registry.operations() == ("insert", "delete", "query")
    assert registry.summary_columns()[:4] == ("ips", "dps", "achieved_rate", "target_rate")
    n = len(Dbbench.summary_columns)
    assert registry.summary_columns()[4 : 4 + n] == Dbbench.summary_columns


def test_the_named_sets_are_the_methods() -> None:
    all42 = [s for s in SETS["all42"] if STEPS[s].group != "warm"]
    assert len(all42) == 42 and len([s for s in all42 if STEPS[s].is_pre]) == 15
    assert len([s for s in SETS["set32"] if STEPS[s].in_summaries]) == 32
    assert len([s for s in SETS["base27"] if STEPS[s].in_summaries]) == 27
    assert set(Sysbench.sets()) == {"set32", "base27", "all42", "quick"}
    for steps in SETS.values():
        assert len(steps) == len(set(steps)) and set(steps) <= set(STEPS)
    assert set(GROUPS) >= {STEPS[s].group for s in STEPS}


def test_short_names_mean_range_100() -> None:
    assert Sysbench.canonical("point-query") == "point-query_range=100" == ALIASES["point-query"]
    assert Sysbench.canonical("read-only_range=10") == "read-only_range=10"
    assert Sysbench.canonical("read-only_range=7") is None and Sysbench.canonical("nope") is None
    assert sysbench(steps=["point-query", "scan"]).steps() == ["point-query_range=100", "scan_range=100"]
    assert sysbench(steps="quick").steps() == SETS["quick"] and sysbench().steps() == SETS["quick"]
    assert Ibench.canonical("qr100") == "qr100" and Ibench.canonical("qr300") is None


def test_a_workload_at_one_range_is_named_without_it() -> None:
    assert Sysbench.canonical("read-only-sum") == "read-only-sum_range=1000"
    assert Sysbench.canonical("write-only") == "write-only_range=10000"
    # Several ranges: the short name is range=100's, and a workload with none at 100 has no short name.
    assert Sysbench.canonical("random-points") == "random-points_range=100"
    assert Sysbench.canonical("read-only") == "read-only_range=100"
    assert all(Sysbench.canonical(short) == full for short, full in ALIASES.items())


def test_the_load_client_knows_every_sysbench_workload() -> None:
    out = subprocess.run([paths.load_binary(), "list", "--json"], capture_output=True, text=True, check=True).stdout
    known = {w["name"] for w in map(json.loads, out.splitlines())}
    assert {s.workload for s in STEPS.values()} <= known


def test_sysbench_commands() -> None:
    s = sysbench(tables=2, rows=5000, seed=7, read_seconds=30, write_seconds=20, warmup_seconds=3, clients=[1, 4])
    sizes = ["--tables", "2", "--rows", "5000", "--seed", "7"]
    assert s.command(LOAD_STEP, 1) == ["sysbench", "prepare", *sizes]
    assert sysbench(primary_key=False).command(LOAD_STEP, 1)[-1] == "--no-pk"
    run = s.command("point-query_range=100", 4)
    assert run == [
        "sysbench", "point-query", *sizes, "--range", "100", "--zipf-exp", "0.8", "--clients", "4",
        "--seconds", "30", "--warmup", "3",
    ]  # fmt: skip
    assert s.command("update-index_range=100", 1)[s.command("update-index_range=100", 1).index("--seconds") + 1] == "20"
    assert s.command("scan.warm_range=100", 2)[-3:] == ["60", "--warmup", "3"]  # the seeds' fixed 60 s
    assert sysbench(prepared=False).command("point-query_range=100", 1)[-1] == "--no-prepared"
    # The valgrind pass: one client, no warm-up, the seconds it asks for.
    one = s.instruction_command("read-only_range=10", 5)
    assert one[:2] == ["sysbench", "read-only"] and one[one.index("--range") + 1] == "10"
    assert one[one.index("--clients") + 1] == "1" and one[-4:] == ["--seconds", "5", "--warmup", "0"]


def test_sysbench_expectations_and_clients() -> None:
    s = sysbench(tables=3, rows=1000, read_seconds=10, write_seconds=20, clients=[1, 2], steps="all42")
    load = s.expectation(LOAD_STEP)
    assert load == Expectation(steady=False, work=("operations", 3000))
    assert s.expectation("point-query_range=100").seconds == 10.0
    assert s.expectation("update-index_range=100").seconds == 20.0
    # What a step must have read or written: reads return rows, updates and inserts change them.
    demands = {
        "point-query_range=100": ["rows_returned"],
        "points-covered-si.warm_range=100": ["rows_returned"],
        "read-only-count_range=1000": ["rows_returned"],
        "scan_range=100": [],
        "update-index_range=100": ["rows_affected"],
        "update-one_range=100": ["rows_affected"],
        "write-only_range=10000": ["rows_affected"],
        "read-write_range=10": ["rows_returned", "rows_affected"],
        # The method's delete empties a small table: a window with nothing left to delete is not a fault.
        "delete_range=100": [],
        "insert_range=100": ["rows_affected"],
    }
    assert {st: [n.field for n in s.expectation(st).nonzero] for st in demands} == demands
    assert {STEPS[st].workload for st in STEPS if not s.expectation(st).nonzero} == {"scan", "delete"}
    # The load step's summary counts its rows in `operations`: the expectation reads that field.
    assert check(load, {"operations": 3000, "seconds": 1.0, "events": 3000}, []) is None
    assert check(load, {"operations": 2999, "seconds": 1.0, "events": 2999}, []) is not None
    assert s.clients(LOAD_STEP) == [1]
    assert s.clients("point-query.warm_range=100") == [3]  # one client per table
    assert s.clients("point-query_range=100") == [1, 2]
    assert s.cell_steps() == [LOAD_STEP, *s.steps()] and s.setup_steps() == (LOAD_STEP,)
    assert s.group_of(LOAD_STEP) == "load" and s.ops_name(LOAD_STEP) == "rows"
    assert s.ops_name("scan_range=100") == "Krows" and s.ops_name("point-query_range=100") == "queries"
    assert not s.in_summaries(LOAD_STEP) and not s.in_summaries("point-query.pre_range=100")
    assert s.in_summaries("point-query_range=100") and not s.in_summaries("scan.warm_range=100")
    assert s.tables() == ["sbtest1", "sbtest2", "sbtest3"]


def test_sysbench_maintenance_runs_where_the_method_puts_it() -> None:
    quick = sysbench(steps="quick", rows=2_000_000, tables=4)
    # After the load (before the first step), and after read-write_range=100 (before the step that follows).
    assert quick.maintenance_points() == {"update-index_range=100", "read-only_range=100"}
    assert quick.maintenance_budget() == pytest.approx(60 + 8)
    assert sysbench(maintenance_seconds=5).maintenance_budget() == 5.0
    assert sysbench(rows=2_000_000_000, tables=2).maintenance_budget() == 1200.0
    # point-query.warm follows the load and has the maintenance after itself.
    warm = sysbench(steps=["point-query.warm", "point-query"])
    assert warm.maintenance_points() == {"point-query_range=100"}


def test_ibench_sizes_commands_and_expectations() -> None:
    s = ibench(profile="quick", clients=[2], rw_seconds=7, seed=3)
    z = s.sizes()
    assert (z.clients, z.load_rows, z.write_rows, z.rw_seconds, z.maintenance_seconds) == (2, 1_000_000, 200_000, 7, 15)
    assert s.command("l.i0", 2) == ["ibench", "l.i0", "--clients", "2", "--seed", "3", "--rows", "1000000"]
    assert s.command("l.i1", 2)[-1] == "160000" and s.command("l.i2", 2)[-1] == "40000"
    assert s.command("qp500", 2) == ["ibench", "qp500", "--clients", "2", "--seed", "3", "--seconds", "7"]
    assert ibench(profile="quick", only1t=True).command("l.x", 1)[-1] == "--only1t"
    assert s.expectation("l.i0") == Expectation(work=("inserted_rows", 2_000_000))
    assert s.expectation("l.x") == Expectation(steady=False, work=("inserted_rows", 200))
    qr = s.expectation("qr1000")
    assert (qr.seconds, qr.may_run_long, qr.work) == (7.0, True, ("inserted_rows", 14_000))
    assert [n.field for n in qr.nonzero] == ["query_rows"] and s.expectation("l.i1").nonzero == ()
    assert s.clients("qr100") == [2] and s.cell_steps() == list(s.step_names())
    assert s.setup_steps() == ("l.i0", "l.x", "l.i1", "l.i2")
    assert s.maintenance_points() == {"qr100"} and s.maintenance_budget() == 15.0
    assert ibench(profile="small-server").maintenance_budget() == pytest.approx(60 + 15)
    assert s.tables() == ["pi1", "pi2"] and ibench(profile="quick", clients=[2], only1t=True).tables() == ["pi1"]
    assert [s.ops_name(x) for x in ("l.i0", "l.x", "qp100")] == ["rows", "indexed rows", "queries"]
    assert {s.group_of(x) for x in RATES} == {"ibench-rw"} and s.group_of("l.i2") == "ibench-load"


def test_ibench_judges_the_sla_itself() -> None:
    s = ibench(profile="quick")
    target = 200
    assert s.judge({"step": "qr100", "target_rate": target, "achieved_rate": SLA_SHARE * target})["sla_ok"] is True
    assert s.judge({"step": "qr100", "target_rate": target, "achieved_rate": 189.9})["sla_ok"] is False
    # Whatever the client said: the rule is the suite's.
    assert s.judge({"step": "qp100", "target_rate": target, "achieved_rate": 10, "sla_ok": True})["sla_ok"] is False
    assert s.judge({"step": "qp100", "target_rate": target, "achieved_rate": None})["sla_ok"] is False
    assert "sla_ok" not in s.judge({"step": "l.i0", "target_rate": None})
    assert sysbench().judge({"step": "point-query_range=100"}) == {"step": "point-query_range=100"}


def test_ibench_settings_problems() -> None:
    assert ibench(profile="quick").settings_problems() == []
    assert ibench(load_rows=1, write_rows=1, rw_seconds=1).settings_problems() == []
    assert [f for f, _ in ibench().settings_problems()] == ["suite.profile"]
    assert [f for f, _ in ibench(profile="quick", clients=[1, 2]).settings_problems()] == ["suite.clients"]
    assert [f for f, _ in ibench(profile="quick", steps=["l.x"]).settings_problems()] == ["suite.steps[0]"]


def test_five_groups_split_points_by_index_and_name_ranges_by_part() -> None:
    """Seed 002's grouping: point-1 by the primary key, point-2 through the secondary index, range-1 without and
    range-2 with aggregation; warm-ups, writes and the load keep their groups, and so does the default."""
    four, five = sysbench(steps="all42"), sysbench(steps="all42", groups="five")
    assert four.report_groups() == GROUPS and list(five.report_groups())[2:6] == [
        "point-1",
        "point-2",
        "range-1",
        "range-2",
    ]
    expect = {
        "point-query_range=100": "point-1",
        "point-query.pre_range=100": "point-1",
        "random-points_range=1000": "point-1",
        "hot-points_range=100": "point-1",
        "points-notcovered-pk_range=100": "point-1",
        "points-covered-si_range=100": "point-2",
        "points-notcovered-si.pre_range=100": "point-2",
        "range-covered-si_range=100": "range-1",
        "scan_range=100": "range-1",
        "read-only_range=10": "range-2",
        "update-index_range=100": "write",
        "point-query.warm_range=100": "warm",
        LOAD_STEP: "load",
    }
    assert {s: five.group_of(s) for s in expect} == expect
    assert {s: four.group_of(s) for s in ("points-covered-si_range=100", "read-only_range=10")} == {
        "points-covered-si_range=100": "point",
        "read-only_range=10": "range-agg",
    }
    assert all(five.group_of(s) in five.report_groups() for s in five.cell_steps())


def test_a_study_regrouped_orders_its_rows_by_the_new_groups(tmp_path: Path) -> None:
    steps = '["points-covered-si", "read-only", "point-query", "update-index"]'
    study = load_study(write_study(tmp_path, steps=steps))
    five = study.regrouped("five")
    assert [s for s, _ in plan.row_keys(five)] == [
        "load",
        "point-query_range=100",
        "points-covered-si_range=100",
        "read-only_range=100",
        "update-index_range=100",
    ]
    assert five.bench.group_of("points-covered-si_range=100") == "point-2" and study.suite.groups == "four"
    with pytest.raises(DbsweepError, match=r"no report grouping 'six'; it has: four, five"):
        study.regrouped("six")
