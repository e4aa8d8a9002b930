"""Instructions per operation, without valgrind running: which builds valgrind cannot run, the clear errors
before anything starts, and reading valgrind's output files. Under valgrind: e2e/test_instructions.py."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from dbsweep import loadclient
from dbsweep.engines.postgres import Install
from dbsweep.engines.registry import engine_named
from dbsweep.errors import DbsweepError, StepError
from dbsweep.measure import instructions
from dbsweep.measure.instructions import CountPlan, instructions_per_op, read_ir, unrunnable_flags
from dbsweep.suites.ibench import Ibench, IbenchSettings
from dbsweep.suites.sysbench import Sysbench, SysbenchSettings

SUITE = Sysbench(SysbenchSettings(rows=1000))


def _measure(install: Install, home: Path) -> None:
    engine = engine_named("postgres")
    instructions_per_op(
        engine,
        install,
        "",
        home,
        step="point-query_range=100",
        load=[SUITE.command("load", 1)],
        plan=SUITE.instruction_plan("point-query_range=100", 2),
        tables=SUITE.tables(),
    )


def test_march_native_is_refused_before_anything_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = Install(
        bindir=tmp_path / "no-such-install" / "bin",
        version="postgres (PostgreSQL) 15.18",
        source="git:REL_15_STABLE",
        provenance={"cflags": "-O3 -march=native -flto"},
    )
    monkeypatch.setattr(instructions, "host_cpu_flags", lambda: {"sse4_2", "avx2", "avx512f"})
    monkeypatch.setattr(instructions, "valgrind_version", lambda: "valgrind-3.19.0")
    with pytest.raises(DbsweepError, match=r"built with -march=native, which emits AVX-512 instructions"):
        _measure(fake, tmp_path / "srv")
    assert not (tmp_path / "srv").exists()


def test_which_flags_valgrind_cannot_run() -> None:
    avx512 = {"avx2", "avx512f", "avx512bw"}
    assert unrunnable_flags("-O2 -g -fno-omit-frame-pointer", avx512) is None
    assert unrunnable_flags("-O3 -march=x86-64-v3", avx512) is None
    assert unrunnable_flags("-O3 -march=native", {"avx2"}) is None  # no AVX-512 on this CPU: native is fine
    assert unrunnable_flags("-O3 -march=native", avx512) == "-march=native"
    assert unrunnable_flags("'CFLAGS=-O2 -march=x86-64-v4'", set()) == "-march=x86-64-v4"
    assert unrunnable_flags("-march=skylake-avx512 -O2", set()) == "-march=skylake-avx512"
    assert unrunnable_flags("-O2 -mavx512f", set()) == "-mavx512f"
    # Debian's own build is fine (its flags, here the unit tests' stand-in's).
    engine = engine_named("postgres")
    instructions.check_runnable(engine, engine.system_install("system"))


def test_the_engine_says_what_an_install_was_compiled_with(tmp_path: Path) -> None:
    engine = engine_named("postgres")
    built = Install(tmp_path / "bin", "postgres (PostgreSQL) 15.18", "15.18", provenance={"cflags": "-O3 -flto"})
    assert "-O3 -flto" in engine.compile_flags(built)  # no pg_config there: the recorded provenance
    system = engine.compile_flags(engine.system_install("system"))
    assert "-O2" in system and "--enable-debug" in system  # pg_config's CFLAGS and configure line


def test_missing_valgrind_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(instructions.shutil, "which", lambda _name: None)
    with pytest.raises(DbsweepError, match="needs valgrind, which is not installed"):
        _measure(engine_named("postgres").system_install("system"), tmp_path / "srv")
    assert not (tmp_path / "srv").exists()


def test_amounts_and_repeats_are_checked_first(tmp_path: Path) -> None:
    engine = engine_named("postgres")
    install = engine.system_install("system")
    common = {"step": "s", "load": [], "tables": []}
    nothing = CountPlan(lambda _n: [])
    with pytest.raises(DbsweepError, match="gives neither an amount nor a probe"):
        instructions_per_op(engine, install, "", tmp_path, plan=nothing, **common)  # type: ignore[arg-type]
    with pytest.raises(DbsweepError, match="amount must be positive, not 0"):
        instructions_per_op(engine, install, "", tmp_path, plan=CountPlan(lambda _n: [], short=0), **common)  # type: ignore[arg-type]
    with pytest.raises(DbsweepError, match="repeats must be at least 1, not 0"):
        plan = CountPlan(lambda _n: [], short=10)
        instructions_per_op(engine, install, "", tmp_path, plan=plan, repeats=0, **common)  # type: ignore[arg-type]
    with pytest.raises(DbsweepError, match="unknown valgrind tool 'massif'"):
        instructions.valgrind_wrapper("massif", tmp_path)  # type: ignore[arg-type]


def test_every_step_is_counted_by_a_fixed_amount_of_work() -> None:
    """Every measured step and the load have a plan; runs of a timed step are fixed numbers of events (the
    same statements for every target), the load a fixed number of rows from an empty database."""
    suite = Sysbench(SysbenchSettings(rows=50_000, steps=["update-index", "point-query", "scan"]))
    assert set(suite.instruction_steps()) == {
        "load",
        "update-index_range=100",
        "point-query_range=100",
        "scan_range=100",
    }
    plan = suite.instruction_plan("update-index_range=100", 2)
    assert plan.short is None and plan.probe is not None and plan.unit == "events" and not plan.from_empty
    assert plan.probe()[-4:] == ["--seconds", "2", "--warmup", "0"]
    fixed = suite.instruction_plan("update-index_range=100", 2, 1234).command(1234)
    assert fixed[-3:-1] == ["--events", "1234"] and "--clients" in fixed and fixed[fixed.index("--clients") + 1] == "1"
    load = suite.instruction_plan("load", 2)
    assert load.from_empty and load.unit == "rows" and load.short == 5_000
    assert load.command(15_000)[:2] == ["sysbench", "prepare"] and "15000" in load.command(15_000)
    # Counted runs print no line a second (an embedded engine's count would hold the client's clock-driven work).
    assert "--counting" in fixed and "--counting" in load.command(15_000)
    assert "--counting" not in plan.probe()


def test_a_slow_step_is_counted_by_at_least_the_fewest_events() -> None:
    """A probe that completed a few events (a scan of 100k rows under valgrind) still gives a count, of the
    fewest events a pair counts by; one that completed none is a clear error."""
    assert instructions.events_to_count("scan_range=100", 3) == instructions.MIN_EVENTS
    assert instructions.events_to_count("point-query_range=100", 5_000) == 5_000
    with pytest.raises(StepError, match=r"scan_range=100 completed no event.*measure\.instruction_seconds"):
        instructions.events_to_count("scan_range=100", 0)


def test_read_ir_waits_for_the_totals(tmp_path: Path) -> None:
    cg = tmp_path / "cg.123"
    cg.write_text("desc: x\ncmd: postgres\nevents: Ir\nfl=a.c\nfn=f\n1 5\n")
    assert read_ir(cg) is None  # still being written
    cg.write_text(cg.read_text() + "summary: 987654321\n")
    assert read_ir(cg) == 987654321
    callgrind = tmp_path / "callgrind.124"
    callgrind.write_text("version: 1\nevents: Ir\nsummary: 5\nfn=f\n1 5\n\ntotals: 77\n")
    assert read_ir(callgrind) == 77
    assert read_ir(tmp_path / "absent") is None


def test_the_insert_benchmark_counts_its_insert_steps_by_rows() -> None:
    """l.i0 from an empty database; l.i1 and l.i2 from the loaded tables; l.x and the read-write steps are not
    a fixed amount of work (one CREATE INDEX; inserts paced by the clock)."""
    suite = Ibench(IbenchSettings(profile="quick", clients=[1]))
    assert set(suite.instruction_steps()) == {"l.i0", "l.i1", "l.i2"}
    load = suite.instruction_plan("l.i0", 2)
    assert load.from_empty and load.unit == "rows" and load.short == 20_000
    assert load.command(20_000)[:2] == ["ibench", "l.i0"] and load.command(20_000)[-3:-1] == ["--rows", "20000"]
    # Counted runs keep no latencies (their summary would cost more the longer the statements took).
    assert "--counting" in load.command(20_000) and "--counting" not in suite.instruction_command("l.i1", 2)
    more = suite.instruction_plan("l.i1", 2)
    assert not more.from_empty and more.short is not None and 1000 <= more.short <= 20_000
    # Counted deletes follow their inserts (a fixed order), the load has none to order.
    assert "--serial" in more.command(1000) and "--serial" not in load.command(1000)
    assert "--serial" not in suite.instruction_command("l.i1", 2)


def test_held_settings_are_the_quiet_configs_lines() -> None:
    text = "# ---- a comment ----\nautovacuum = off   # why\n\nsynchronous_commit  =  on\n"
    assert instructions.held_settings(text) == ["autovacuum = off", "synchronous_commit = on"]
    assert instructions.held_settings("") == []


def test_mariadb_counts_hold_its_start_up_certificate_still() -> None:
    """11.4 and later make a TLS key at start-up; its random prime search moved 11.8's main thread by billions."""
    kind = engine_named("mariadb").instance_type
    assert kind is not None
    assert "ssl = OFF" in instructions.held_by(kind)
    assert kind.held_during_count[0] in instructions.held_by(kind)


def _run(events: int, **by_role: int) -> instructions.Run:
    return instructions.Run(
        amount=events,
        events=events,
        queries=events,
        instructions=sum(by_role.values()),
        by_role={k.replace("_", " "): v for k, v in by_role.items()},
        output_dir="",
        wall_s=1.0,
    )


def test_a_pair_whose_long_run_counted_less_is_an_error_naming_the_role(tmp_path: Path) -> None:
    """11.8.6's point query: the foreground grew with the events, the main thread fell by 2.7 billion."""
    fine = instructions.Pair(
        _run(4923, foreground=955_449_010, main_thread=803_300_000),
        _run(14769, foreground=1_374_560_290, main_thread=803_200_000),
    )
    instructions.check_pairs("point-query_range=100", [fine], tmp_path)
    broken = instructions.Pair(
        _run(4923, foreground=955_449_010, main_thread=33_141_214_503),
        _run(14769, foreground=1_374_560_290, main_thread=30_411_016_941),
    )
    with pytest.raises(StepError, match=r"pair 2 of point-query.*main thread's work changed by -2,730,197,562"):
        instructions.check_pairs("point-query_range=100", [fine, broken], tmp_path)


def test_counts_taken_with_other_settings_held_are_stale() -> None:
    now = ["innodb_fast_shutdown = 0", "ssl = OFF"]
    method = instructions.METHOD
    have = {
        ("a", "s1"): {"held": ["innodb_fast_shutdown = 0"], "per_event": 1.0, "method_version": method},
        ("a", "s2"): {"held": now, "per_event": 1.0, "method_version": method},
        ("b", "s1"): {"error": "valgrind failed"},  # a failed count is retried by --rerun-failed, not here
        ("b", "s2"): {"per_event": 1.0},  # stored before counts recorded what they held: not judged
    }
    stale, changed = instructions.stale_counts(have, now)
    assert stale == {("a", "s1")}
    assert changed == ["ssl = OFF"]
    assert instructions.stale_counts(have, ["innodb_fast_shutdown = 0"]) == ({("a", "s2")}, ["ssl = OFF"])


def test_counts_taken_by_an_older_method_are_stale() -> None:
    # Version 1 ran every run under the normal scheduler and every read on a server of its own.
    have = {("a", "s1"): {"held": ["ssl = OFF"], "per_event": 1.0}}
    stale, changed = instructions.stale_counts(have, ["ssl = OFF"])
    assert stale == {("a", "s1")}
    assert changed == [f"the counting method (version 1, now {instructions.METHOD})"]


def test_a_threaded_servers_files_are_read_per_thread(tmp_path: Path) -> None:
    """callgrind's separate threads write `<file>.<pid>-<thread>`: the pid and thread are read from the name, and a
    thread that ran the engine's connection handler (as run, or as called) is told from one that did not."""
    # No gdbserver: its per-pid file in /tmp, left by a killed valgrind, made a later process of that pid abort.
    assert all("--vgdb=no" in instructions.valgrind_wrapper(t, tmp_path) for t in ("cachegrind", "callgrind"))
    assert instructions.valgrind_wrapper("callgrind", tmp_path, threads=True)[-2:] == [
        "--separate-threads=yes",
        f"--callgrind-out-file={tmp_path}/callgrind.%p",
    ]
    with pytest.raises(DbsweepError, match="only callgrind counts per thread"):
        instructions.valgrind_wrapper("cachegrind", tmp_path, threads=True)
    names = {"callgrind.4321-03": (4321, 3), "callgrind.4321": (4321, None), "cg.77": (77, None)}
    for name, (pid, thread) in names.items():
        assert instructions._file_id(Path(name)) == (pid, thread)
    assert instructions._file_id(Path("callgrind.4321-x")) is None
    served = tmp_path / "callgrind.4321-03"
    served.write_text(
        "fn=(1) start_thread\ncfn=(2) handle_one_connection\ncalls=1 0\n1 5\n"
        "fn=(2)\ncfn=(3) do_handle_one_connection(CONNECT*, bool)\n"
    )
    timer = tmp_path / "callgrind.4321-04"
    timer.write_text(
        "fn=(1) start_thread\ncfn=(2) timer_handler\ncalls=1 0\n1 5\nfn=(9) do_handle_one_connection_stats\n"
    )
    wanted = ("do_handle_one_connection",)
    assert instructions._runs_any(served, wanted) and not instructions._runs_any(timer, wanted)


def test_a_session_counts_a_quarter_of_the_probe_and_at_least_two_events() -> None:
    from dbsweep.measure import session

    assert session.events_to_count("point-query_range=100", 4_000) == 1_000
    assert session.events_to_count("scan_range=100", 3) == session.MIN_EVENTS
    with pytest.raises(StepError, match="completed no event"):
        session.events_to_count("scan_range=100", 0)


def test_only_reads_on_a_server_that_counts_each_connection_apart_share_one() -> None:
    from dbsweep.engines.registry import engine_named
    from dbsweep.measure import session
    from dbsweep.suites.sysbench import Sysbench, SysbenchSettings

    suite = Sysbench(SysbenchSettings(rows=1000))
    postgres, mariadb, mysql, sqlite = (engine_named(n) for n in ("postgres", "mariadb", "mysql", "sqlite"))

    def shares(engine: Any, step: str) -> bool:
        return session.can_share(engine, engine.instance_type, suite.instruction_plan(step, 1))

    assert shares(postgres, "point-query_range=100") and shares(postgres, "scan_range=100")
    assert not shares(postgres, "update-index_range=100")  # a write: each run from the pristine copy
    assert not shares(postgres, "write-only_range=10000") and not shares(postgres, "insert_range=100")
    assert not shares(postgres, "load")  # from an empty database
    # One process, its client's threads named: a run is a dump of its threads' counters.
    assert shares(mariadb, "point-query_range=100") and shares(mysql, "scan_range=100")
    assert not shares(mariadb, "update-index_range=100") and not shares(mysql, "load")
    assert not shares(sqlite, "point-query_range=100")  # embedded: no server to share
    # How each step is counted, which a stored count must match to be kept.
    assert session.method(mysql, mysql.instance_type, suite.instruction_plan("point-query_range=100", 1)) == "session"
    assert session.method(mysql, mysql.instance_type, suite.instruction_plan("insert_range=100", 1)) == "restart"


def test_a_threaded_server_counted_in_a_session_dumps_as_its_marker_runs(tmp_path: Path) -> None:
    """callgrind counts inside the connection handler only and writes what it counted as a thread enters the
    engine's marker function (no gdbserver); a dump's file is told from the process's own."""
    from types import SimpleNamespace

    from dbsweep.engines.mariadb import Server
    from dbsweep.measure import session

    assert Server.dump_marker == ("DO SLEEP(0)", "Item_func_sleep::val_int*")
    instance: Any = SimpleNamespace(dump_marker=Server.dump_marker, client_thread_functions=("handle_connection",))
    wrapper = session._Session(instance, "callgrind", tmp_path, loadclient.run, frozenset({0}), threads=True).wrapper()
    assert "--vgdb=no" in wrapper and "--separate-threads=yes" not in wrapper  # one file: every thread's counts
    assert wrapper[-5:-1] == [
        "--dump-before=Item_func_sleep::val_int*",
        "--collect-atstart=no",
        "--toggle-collect=handle_connection",  # a C function's name
        "--toggle-collect=handle_connection(*",  # a C++ one's, with its parameters
    ]
    with pytest.raises(DbsweepError, match="only callgrind dumps"):
        instructions.valgrind_wrapper("cachegrind", tmp_path, dump_before="f*")
    dump = session._DUMP_FILE
    assert (m := dump.fullmatch("callgrind.4321.7")) is not None and m.groups() == ("4321", "7")
    assert dump.fullmatch("callgrind.4321") is None and dump.fullmatch("callgrind.4321-03") is None


def test_a_count_taken_otherwise_than_its_step_is_counted_now_is_stale() -> None:
    have = {
        ("a", "point"): {"held": [], "method_version": instructions.METHOD, "method": "restart"},
        ("a", "insert"): {"held": [], "method_version": instructions.METHOD, "method": "restart"},
        ("b", "point"): {"held": [], "method_version": instructions.METHOD, "method": "session"},
        ("b", "gone"): {"held": [], "method_version": instructions.METHOD, "method": "restart"},
    }
    now = {"point": "session", "insert": "restart"}
    stale, changed = instructions.stale_counts(have, [], now.get)
    assert stale == {("a", "point")}  # a step the suite no longer has (None) is left as it is
    assert changed == ["some steps counted as restart runs, now as session runs"]
    assert instructions.stale_counts(have, [])[0] == set()


def test_only_a_server_is_counted_in_lockstep() -> None:
    from dbsweep import placement

    cpu = placement.Lockstep({0})
    assert isinstance(instructions.lockstep_for(engine_named("postgres"), cpu), placement.Lockstep)
    assert isinstance(instructions.lockstep_for(engine_named("mariadb"), cpu), placement.Lockstep)
    # Counted inside its client: a thread that never blocks would starve the timer that ends a timed run.
    for name in ("sqlite", "rocksdb"):
        got = instructions.lockstep_for(engine_named(name), cpu)
        assert got == cpu and not isinstance(got, placement.Lockstep)


def test_a_server_is_quiet_when_no_thread_of_it_runs() -> None:
    """The session's dumps wait for this: a thread that is running or runnable (state R) is not quiet, one asleep
    is, and a process that is gone has nothing left to count."""
    from dbsweep.measure import session

    busy = subprocess.Popen(["sh", "-c", "while :; do :; done"])
    asleep = subprocess.Popen(["sleep", "60"])
    try:
        assert session._running(busy.pid)  # runnable whether or not it has a CPU now
        deadline = time.monotonic() + 10
        while session._running(asleep.pid) and time.monotonic() < deadline:
            time.sleep(0.01)  # until it has reached its sleep
        assert not session._running(asleep.pid)
    finally:
        for p in (busy, asleep):
            p.kill()
            p.wait()
    assert not session._running(busy.pid)


def test_a_marker_that_dumps_nothing_fails_the_run(tmp_path: Path) -> None:
    """A marker statement the server ran without entering the marker's function (another build names it otherwise):
    the run fails, naming the statement, the function and valgrind's messages, rather than count nothing."""
    from types import SimpleNamespace

    from dbsweep.measure import session

    asleep = subprocess.Popen(["sleep", "60"])
    try:
        marker = ("DO SLEEP(0)", "Item_func_sleep::val_int*")
        instance: Any = SimpleNamespace(pid=asleep.pid, user=None, dump_marker=marker, log=tmp_path / "server.log")
        s = session._Session(instance, "callgrind", tmp_path, lambda *a, **k: None, frozenset({0}), threads=True)
        s.out.mkdir(parents=True)
        ran: list[int] = []
        s.mark = lambda: ran.append(1)
        with pytest.raises(StepError, match=r"as the server ran DO SLEEP\(0\): its function Item_func_sleep::val_int"):
            s._dump()
        assert ran == [1]
    finally:
        asleep.kill()
        asleep.wait()


def test_a_server_that_stays_busy_after_a_run_fails_the_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A thread still running when the next marker is due (a statement of the run not finished): its work would be
    counted in the next run, so the step fails instead of waiting without end or marking anyway."""
    from types import SimpleNamespace

    from dbsweep.measure import session

    monkeypatch.setattr(session, "_SETTLE_S", 0.3)
    busy = subprocess.Popen(["sh", "-c", "while :; do :; done"])
    try:
        instance: Any = SimpleNamespace(pid=busy.pid, log=tmp_path / "server.log")
        s = session._Session(instance, "callgrind", tmp_path, loadclient.run, frozenset({0}), threads=True)
        ran: list[int] = []
        s.mark = lambda: ran.append(1)
        with pytest.raises(StepError, match=r"still had a thread running 0 s after the run"):
            s._dump()
        assert ran == []  # no marker sent
    finally:
        busy.kill()
        busy.wait()
