"""RocksDB end to end through Debian's db_bench (rocksdb-tools), which is engine and client at once: a study of
the LRU block cache against the hyper clock cache runs the method's seed set at one and two threads and
reports, every cell whole, with db_bench's own figures (the §6 columns), the per-second rates and the
flush_mt_l0 maintenance; the cache word is fitted to the installed version; an option db_bench does not know
stops the run before it starts, with the file, the line and the version; a killed db_bench is a failed cell, and the run
resumes on a fresh database.

This is what of the engine contract applies to an engine with no server (tests/contract: its lifecycle, a
refused config, a disturbed step, a resume)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import time
from pathlib import Path

import psutil
import pytest

from dbsweep.engines.registry import engine_named

from ..conftest import dbsweep, start_run, stored_cells, worker_cpu, write_dbbench_study

pytestmark = pytest.mark.server


def _needs_db_bench() -> str:
    versions = engine_named("rocksdb").system_versions()
    if not versions:
        pytest.fail("Debian's db_bench is not installed: scripts/setup.sh installs rocksdb-tools")
    return versions[0]


def _study(
    tmp: Path, config: str = "hyper_clock", write_seconds: int = 2, steps: str = '"seed"', clients: str = "[1, 2]"
) -> Path:
    suite = f"read_seconds = 2\nwrite_seconds = {write_seconds}\nsettle_seconds = 1\ncache_mb = 64"
    return write_dbbench_study(tmp, config=config, steps=steps, clients=clients, suite=suite)


def test_lru_against_hyper_clock_runs_and_reports(tmp_path: Path) -> None:
    version = _needs_db_bench()
    study = _study(tmp_path)
    dbsweep("run", study, timeout=900)
    cells = stored_cells(tmp_path / "ws")
    # fillseq, revrange and overwritesome once, the four timed steps at 1 and 2 threads; per target.
    assert len(cells) == 2 * (3 + 4 * 2)
    assert all(c[3] == "done" for c in cells), [c[:4] for c in cells if c[3] != "done"]
    by = {(t, st, c): s for t, st, c, _, s in cells}
    fill = by[("lru", "fillseq", 1)]
    assert fill["operations"] == 50000 and float(fill["rate"]) > 0  # type: ignore[arg-type]
    assert fill["command"][0] == "db_bench" and "--benchmarks=fillseq,stats" in fill["command"]  # type: ignore[index]
    # db_bench's own account: the stats dump's columns and the latency histogram.
    ow = by[("hcc", "overwriteandwait", 2)]
    assert float(ow["w_amp"]) > 0 and float(ow["c_wgb"]) >= 0 and ow["stall_pct"] is not None  # type: ignore[arg-type]
    assert float(ow["latency_us"]["p99"]) > 0 and ow["histogram_buckets"]  # type: ignore[index]
    assert float(ow["u_cpu"]) > 0 and int(ow["rss_kb"]) > 0  # type: ignore[arg-type]
    # flush_mt_l0 ran once, before the first while-writing step.
    assert "flush_mt_l0_s" in by[("lru", "revrangewhilewriting", 1)]["maintenance_before"]  # type: ignore[operator]
    assert "maintenance_before" not in by[("lru", "readwhilewriting", 1)]
    # The cache the config asked for, as this version's db_bench calls it.
    command = by[("hcc", "readwhilewriting", 1)]["command"]
    hcc = [a for a in command if "cache_type" in a]  # type: ignore[union-attr]
    want = "hyper_clock_cache" if version < "8.5" else "auto_hyper_clock_cache"
    assert hcc == [f"--cache_type={want}"]
    db = sqlite3.connect(tmp_path / "ws" / "results.db")
    per_second = db.execute(
        "SELECT count(*) FROM samples s JOIN cells c ON c.id = s.cell_id WHERE c.step = 'readwhilewriting'"
    ).fetchone()[0]
    db.close()
    assert per_second >= 4  # two targets, two thread counts, a line per second of db_bench's report
    md = dbsweep("report", study, "--format", "markdown").stdout
    assert "readwhilewriting.t2" in md and "fillseq.wal_disabled.v400" in md
    # The method's report.tsv columns, with ratios to the base.
    table = md.split("report.tsv", 1)[1]
    assert all(col in table for col in ("ops_sec", "lsm_sz", "c_wgb", "w_amp", "stall%", "Nstall", "u_cpu", "rss"))
    hcc_line = next(ln for ln in table.splitlines() if ln.startswith("overwriteandwait.t2.s0") and " hcc " in ln)
    assert "(" in hcc_line  # each value of a target beside the base carries its ratio
    html = tmp_path / "rx.html"
    dbsweep("report", study, "--format", "html", "--out", html)
    page = html.read_text()
    assert "readwhilewriting.t2" in page and "overwriteandwait.t1.s0" in page  # the main table's and charts' names
    # Throughput over time of the while-writing steps, in the formats without charts too.
    over = md.split("throughput over time", 1)[1]
    line = next(ln for ln in over.splitlines() if ln.startswith("readwhilewriting.t2") and " hcc " in ln)
    assert len(line.split()) == 2 + 6 + 2  # test, target, six sixths, slowest second, CV
    report = json.loads(dbsweep("report", study, "--format", "json").stdout)
    tables = {t["key"]: t for t in report["suite_tables"]}
    timed = [r for r in tables["dbbench-over-time"]["rows"] if r["test"] == "readwhilewriting.t1"]
    sixths = [r[f"{i}/6"] for r in timed for i in range(1, 7)]
    assert len(timed) == 2 and any(isinstance(v, float) and v > 0 for v in sixths), timed
    assert {r["test"] for r in tables["dbbench-columns"]["rows"]} >= {"fillseq.wal_disabled.v400"}
    rows = report["rows"]
    assert {r["step"] for r in rows} >= {"fillseq", "readwhilewriting", "overwriteandwait"}
    assert all(r["w_amp"] is not None for r in rows if r["step"] == "overwriteandwait")


def test_an_option_db_bench_lacks_stops_the_run_before_it_starts(tmp_path: Path) -> None:
    version = _needs_db_bench()
    configs = tmp_path / "configs" / "rocksdb"
    configs.mkdir(parents=True)
    for name in ("lru", "hyper_clock"):
        (configs / f"{name}.conf").write_text(
            (Path(__file__).resolve().parents[2] / "configs" / "rocksdb" / f"{name}.conf").read_text()
        )
    (configs / "odd.conf").write_text("# an option no db_bench has\ncache_type = lru\nno_such_option = 3\n")
    study = _study(tmp_path, config="odd")
    r = dbsweep("run", study, check=False, timeout=900, env={"DBSWEEP_CONFIGS": str(tmp_path / "configs")})
    out = r.stdout + r.stderr
    said = " ".join(out.split())
    assert f"sets no_such_option (odd.conf:3), which RocksDB {version}'s db_bench does not know" in said
    # Preflight checks every target's config against its binary: nothing runs.
    assert r.returncode != 0 and not (tmp_path / "ws" / "results.db").exists()


def test_a_read_of_a_database_no_step_loads_is_refused_before_it_runs(tmp_path: Path) -> None:
    _needs_db_bench()
    study = _study(tmp_path, steps='["readrandom"]')
    r = dbsweep("validate", study, check=False)
    said = " ".join((r.stdout + r.stderr).split())
    assert r.returncode == 2, said
    assert (
        "suite.steps[0]: dbbench step readrandom reads the database, which no step before it loads; add fillseq "
        "before it in [suite] steps" in said
    )
    assert not (tmp_path / "ws" / "results.db").exists()


def test_a_killed_db_bench_is_a_failed_cell_and_the_run_resumes(tmp_path: Path) -> None:
    _needs_db_bench()
    study = _study(tmp_path, write_seconds=6, steps='["fillseq", "readwhilewriting"]', clients="[1]")
    # Target lru alone: the kill and the retry are its cells; hcc would add a third flush_mt_l0 (two 5 s sleeps of
    # db_bench's waitforcompaction) and a whole step that prove nothing about either.
    proc = start_run(study, "--target", "lru")
    try:
        victim = None
        deadline = time.monotonic() + 300
        while victim is None and time.monotonic() < deadline:
            for p in psutil.Process(proc.pid).children(recursive=True):
                try:
                    if p.name() == "db_bench" and any("readwhilewriting" in a for a in p.cmdline()):
                        victim = p
                except psutil.Error:
                    continue
            time.sleep(0.2)
        assert victim is not None, "readwhilewriting never started"
        time.sleep(1.0)
        os.kill(victim.pid, signal.SIGKILL)
        proc.wait(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
    failed = [(t, st, c, s) for t, st, c, status, s in stored_cells(tmp_path / "ws") if status == "failed"]
    assert failed and failed[0][1] == "readwhilewriting"
    dbsweep("run", study, "--rerun-failed", "--target", "lru", timeout=900)
    final = {(t, st, c): status for t, st, c, status, _ in stored_cells(tmp_path / "ws")}
    assert final == {("lru", "fillseq", 1): "done", ("lru", "readwhilewriting", 1): "done"}, final


def test_a_version_from_a_bindings_crate(tmp_path: Path) -> None:
    # Debian's archive here serves 7.8.3's files only; Rust's registry carries RocksDB's whole tree in the
    # binding's -sys crate, fetched by cargo through its own registry configuration.
    from dbsweep.sources import resolve as sources

    naming = engine_named("rocksdb").naming
    root = tmp_path / "sources"
    tree = sources.resolve("crate:librocksdb-sys@6.11.4", root, naming=naming)
    assert tree.version == "6.11.4" and tree.details["subdir"] == "rocksdb"
    assert (tree.path / "tools" / "db_bench_tool.cc").is_file() and (tree.path / "Makefile").is_file()
    assert tree.identity.startswith("sha256:")
    # The second time comes from the cache: the same tree, without cargo.
    assert sources.resolve("crate:librocksdb-sys@6.11.4", root, naming=naming, refresh=False) == tree


def test_instructions_per_read_count_db_bench_whole(tmp_path: Path) -> None:
    """The valgrind pass on the engine's own client: db_bench loads the database at full speed, compacts it
    (settle), then each pair of runs reads a fixed number of keys from that copy under valgrind."""
    from dbsweep.measure import instructions
    from dbsweep.suites.dbbench import Dbbench, DbbenchSettings

    _needs_db_bench()
    engine = engine_named("rocksdb")
    install = engine.system_install("system")
    suite = Dbbench(DbbenchSettings(keys=20000, cache_mb=64))
    load = [suite.command(s, suite.clients(s)[0]) for s in suite.setup_steps()]
    count = instructions.instructions_per_op(
        engine,
        install,
        "",
        tmp_path / "vg",
        step="readrandom",
        load=load,
        plan=suite.instruction_plan("readrandom", 2, 2000),
        tables=suite.tables(),
        repeats=2,
        client=suite.client(),
        cpus=worker_cpu(),
    )
    assert count.counted == "client" and count.amount == 2000
    assert all(p.short.events == 2000 and p.long.events == 6000 for p in count.pairs)
    # A cached point read of RocksDB costs thousands of instructions, not hundreds nor millions.
    assert 1_000 < count.per_event < 200_000, count.per_event
    assert count.spread < 0.02, [p.per_event for p in count.pairs]
    assert count.command[-1] == "--reads=2000" and "--duration=0" in count.command
    assert "--report_interval_seconds=0" in count.command
    assert any("rocksdb" in f["function"].lower() for f in count.functions), [
        f["function"] for f in count.functions[:5]
    ]
