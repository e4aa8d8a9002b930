"""RocksDB and the dbbench suite without running db_bench: the version a tree declares, the config's cache
word fitted to each version, refused and unknown options, and the db_bench command line of every step as the
method builds it (methodology §6)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dbsweep.configdiff import ConfigDiff
from dbsweep.engines.rocksdb import config, source
from dbsweep.errors import DbsweepError, StudyError
from dbsweep.measure.integrity import check
from dbsweep.study import Study, load_study
from dbsweep.suites.dbbench import Dbbench, DbbenchSettings, tool
from dbsweep.suites.dbbench.steps import JOBS, fitted

DATA = Path(__file__).parent / "data" / "dbbench"

KNOWN_7 = {"cache_type", "cache_size", "bloom_bits", "benchmarks"}
KNOWN_6 = {"cache_size", "bloom_bits", "benchmarks", "use_clock_cache"}


def _diff(text: str, name: str = "x") -> ConfigDiff:
    lines = [(ln, f"{name}.conf:{n}") for n, ln in enumerate(text.splitlines(), 1)]
    return ConfigDiff(name, text, config.parse(lines))


def suite(**kw: object) -> Dbbench:
    return Dbbench(DbbenchSettings(**kw))  # type: ignore[arg-type]


def test_a_tree_declares_its_version_in_version_h(tmp_path: Path) -> None:
    (tmp_path / "include" / "rocksdb").mkdir(parents=True)
    (tmp_path / "Makefile").write_text("")
    (tmp_path / "include" / "rocksdb" / "version.h").write_text(
        "#pragma once\n#define ROCKSDB_MAJOR 9\n#define ROCKSDB_MINOR 11\n#define ROCKSDB_PATCH 2\n"
    )
    assert source.tree_version(tmp_path) == "9.11.2"
    (tmp_path / "Makefile").unlink()
    with pytest.raises(DbsweepError, match="does not look like a RocksDB source tree"):
        source.tree_version(tmp_path)


def test_versions_and_debian_names() -> None:
    assert source.release_of("9.11.2-1") == (9, 11, 2) and source.major_of("6.11.4") == 6
    assert source.debian_package("7.8.3") == "rocksdb"
    assert source.debian_major("rocksdb") is not None and source.debian_major("rocksdb-java") is None
    with pytest.raises(DbsweepError, match="not a RocksDB version"):
        source.release_of("latest")


@pytest.mark.parametrize(
    ("version", "word", "flag"),
    [
        ("7.8.3", "lru", "lru_cache"),
        ("7.8.3", "hyper_clock", "hyper_clock_cache"),
        ("8.4.4", "hyper_clock", "hyper_clock_cache"),
        ("8.5.0", "hyper_clock", "auto_hyper_clock_cache"),
        ("9.11.2", "hyper_clock", "auto_hyper_clock_cache"),
    ],
)
def test_the_cache_word_is_fitted_to_each_version(version: str, word: str, flag: str) -> None:
    text, skipped = config.fit(_diff(f"cache_type = {word}\n"), KNOWN_7, version, set())
    assert config.flags(text) == [f"--cache_type={flag}"] and not skipped


def test_a_version_without_cache_type_gets_lru_without_the_flag_and_no_hyper_clock() -> None:
    text, skipped = config.fit(_diff("cache_type = lru\nbloom_bits = 12\n"), KNOWN_6, "6.11.4", set())
    assert config.flags(text) == ["--bloom_bits=12"] and not skipped
    assert "no --cache_type" in text
    with pytest.raises(DbsweepError, match=r"hyper_clock cache \(x.conf:1\).*optional_settings"):
        config.fit(_diff("cache_type = hyper_clock\n"), KNOWN_6, "6.11.4", set())
    text, skipped = config.fit(_diff("cache_type = hyper_clock\n"), KNOWN_6, "6.11.4", {"cache_type"})
    assert config.flags(text) == [] and skipped == ["cache_type"]


def test_an_option_the_binary_lacks_names_the_file_line_and_version() -> None:
    with pytest.raises(DbsweepError, match=r"sets no_such_flag \(x.conf:2\), which RocksDB 7.8.3's db_bench"):
        config.fit(_diff("bloom_bits = 10\nno_such_flag = 1\n"), KNOWN_7, "7.8.3", set())


def test_a_config_may_not_set_what_the_suite_owns() -> None:
    with pytest.raises(DbsweepError, match=r"x.conf:1: threads is set by the dbbench suite"):
        _diff("threads = 8\n")
    with pytest.raises(DbsweepError, match="cannot read"):
        _diff("--cache_size 10\n")


def test_help_flags_are_read_from_gflags_help() -> None:
    text = (
        "  Flags from tools/db_bench_tool.cc:\n"
        '    -cache_type (Type of block cache.) type: string default: "lru_cache"\n'
    )
    assert config.help_flags(text) == {"cache_type"}


def test_the_benchmarks_a_db_bench_knows_come_from_its_help() -> None:
    six = config.help_benchmarks((DATA / "6.11.4-help-benchmarks.txt").read_text())
    assert {"fillseq", "seekrandomwhilewriting", "multireadrandom", "levelstats", "stats"} <= six
    assert not {"flush", "waitforcompaction", "compact0", "memstats"} & six
    assert "Comma" not in six and "default" not in six
    assert config.help_benchmarks("    -cache_size (the cache) type: int64 default: 8388608\n") == set()


def test_a_db_bench_without_waitforcompaction_overwrites_alone_and_says_so() -> None:
    six = frozenset(config.help_benchmarks((DATA / "6.11.4-help-benchmarks.txt").read_text()))
    wait = ["overwrite", "waitforcompaction", "stats"]
    assert fitted(wait, frozenset()) == (wait, [])
    assert fitted(wait, six) == (["overwrite", "stats"], ["waitforcompaction"])
    assert fitted(["readwhilewriting", "stats"], six) == (["readwhilewriting", "stats"], [])
    # A step's own benchmark is not optional: the step fails naming it, rather than measuring something else.
    with pytest.raises(ValueError, match="no multireadrandom benchmark"):
        fitted(["multireadrandom", "stats"], six - {"multireadrandom"})
    # Without stats the step still runs; its LSM columns are then empty.
    assert fitted(["fillseq", "stats"], frozenset({"fillseq"})) == (["fillseq"], ["stats"])


def test_the_method_names_the_steps_and_the_seed_set_reports_five() -> None:
    s = suite(steps="seed", value_size=400)
    assert s.steps() == [
        "fillseq",
        "revrange",
        "overwritesome",
        "revrangewhilewriting",
        "fwdrangewhilewriting",
        "readwhilewriting",
        "overwriteandwait",
    ]
    assert s.step_label("fillseq", 1) == "fillseq.wal_disabled.v400"
    assert s.step_label("readwhilewriting", 16) == "readwhilewriting.t16"
    assert s.step_label("overwriteandwait", 1) == "overwriteandwait.t1.s0"
    assert [st for st in s.steps() if s.in_summaries(st)] == [
        "fillseq",
        "revrangewhilewriting",
        "fwdrangewhilewriting",
        "readwhilewriting",
        "overwriteandwait",
    ]
    assert Dbbench.canonical("readwhilewriting.t1") == "readwhilewriting"
    assert Dbbench.canonical("fillseq.wal_disabled.v400") == "fillseq" and Dbbench.canonical("fill") is None
    assert s.maintenance_points() == {"revrangewhilewriting"}


def test_threads_per_step() -> None:
    s = suite(clients=[1, 2])
    assert s.clients("fillseq") == [1] and s.clients("revrange") == [1]
    assert s.clients("readwhilewriting") == [1, 2] and s.clients("overwritesome") == [1]


def _flag(cmd: list[str], name: str) -> str | None:
    hits = [a.split("=", 1)[1] for a in cmd if a.startswith(f"--{name}=")]
    assert len(hits) <= 1, f"--{name} given twice: {hits}"
    return hits[0] if hits else None


def test_the_command_lines_follow_the_method() -> None:
    s = suite(keys=1000, read_seconds=7, write_seconds=9, settle_seconds=5, cache_mb=64, seed=3, background_jobs=2)
    fill = s.command("fillseq", 1)
    assert _flag(fill, "benchmarks") == "fillseq,stats"
    assert _flag(fill, "disable_wal") == "1" and _flag(fill, "use_existing_db") == "0"
    assert _flag(fill, "allow_concurrent_memtable_write") == "false" and _flag(fill, "num") == "1000"
    assert _flag(fill, "duration") is None and _flag(fill, "threads") == "1"
    assert _flag(fill, "cache_size") == str(64 * 1024 * 1024) and _flag(fill, "compression_type") == "none"
    assert _flag(fill, "seed") == "3" and _flag(fill, "sync") == "0" and _flag(fill, "max_background_jobs") == "2"
    assert _flag(fill, "histogram") == "1" and _flag(fill, "report_interval_seconds") == "1"
    settle = s.command("revrange", 2)
    assert _flag(settle, "num") == "100" and _flag(settle, "duration") == "5" and _flag(settle, "threads") == "1"
    assert _flag(settle, "reverse_iterator") == "true" and _flag(settle, "seek_nexts") == "10"
    rww = s.command("readwhilewriting", 2)
    assert _flag(rww, "benchmarks") == "readwhilewriting,stats" and _flag(rww, "threads") == "2"
    assert _flag(rww, "duration") == "9" and _flag(rww, "benchmark_write_rate_limit") == str(2 * 1024 * 1024)
    assert _flag(s.command("readrandom", 1), "duration") == "7"
    assert _flag(s.command("readrandom", 1), "benchmark_write_rate_limit") is None
    some = s.command("overwritesome", 2)
    assert _flag(some, "writes") == "50"  # 1000 keys / 2 threads / 10
    assert _flag(s.command("overwriteandwait", 1), "benchmarks") == "overwrite,waitforcompaction,stats"
    assert _flag(s.command("multireadrandom", 1), "batch_size") == "10"
    for step in JOBS:
        assert _flag(s.command(step, 1), "db") is None  # the instance says where the database is


def test_profiles_set_compression_and_direct_io() -> None:
    buf = suite(profile="iobuf", keys=10_000_000).command("readrandom", 1)
    assert _flag(buf, "compression_type") == "lz4" and _flag(buf, "min_level_to_compress") == "3"
    assert _flag(buf, "use_direct_reads") is None
    # The IO-bound cache holds a tenth of the data.
    assert int(_flag(buf, "cache_size") or 0) == (10_000_000 * 420) // 2**20 // 10 * 2**20
    direct = suite(profile="iodir").command("readrandom", 1)
    assert _flag(direct, "use_direct_reads") == "true" and _flag(direct, "use_direct_io_for_flush_and_compaction")


def test_what_a_whole_step_looks_like() -> None:
    s = suite(keys=1000, clients=[2], read_seconds=7, write_seconds=9)
    assert s.expectation("fillseq").work == ("operations", 1000)
    assert s.expectation("overwritesome").work == ("operations", 100)
    assert s.expectation("readrandom").seconds == 7 and s.expectation("readrandom").steady
    # Write stalls are RocksDB's behaviour, measured by stall%, not a lost step.
    assert s.expectation("overwriteandwait").seconds == 9 and not s.expectation("overwriteandwait").steady
    # Every read and seek, the settle step's and the while-writing steps' too, must find a key.
    finds = {st: [n.field for n in s.expectation(st).nonzero] for st in JOBS}
    assert finds == {st: [] if st in ("fillseq", "overwritesome", "overwriteandwait") else ["found"] for st in JOBS}
    # The run: readrandom on a database no step loaded, 689,783 ops/s, not one key found.
    empty = {"seconds": 7.0, "events": 1_379_999, "operations": 1_379_999, "found": [0, 1_379_999]}
    problem = check(s.expectation("readrandom"), empty, [])
    assert problem == (
        "no read found a key (0 of 1,379,999 found): the database holds none of the keys the step reads "
        "(fillseq loads them)"
    )
    assert check(s.expectation("fwdrange"), {**empty, "found": [0, 5]}, []) is not None
    assert check(s.expectation("readrandom"), {**empty, "found": [1_379_999, 1_379_999]}, []) is None


def test_a_study_pairs_the_suite_with_an_engine_of_its_kind(tmp_path: Path) -> None:
    p = tmp_path / "s.toml"
    p.write_text(
        'engine = "postgres"\nbase = "a"\n[suite]\nname = "dbbench"\n'
        '[[targets]]\nname = "a"\nsource = "system"\nconfig = "cx10a"\n'
    )
    with pytest.raises(StudyError, match=r"suite.name: the dbbench suite does not run against Postgres.*rocksdb"):
        load_study(p)
    p.write_text(
        'engine = "rocksdb"\nbase = "a"\n[suite]\nname = "sysbench"\n'
        '[[targets]]\nname = "a"\nsource = "system"\nconfig = "lru"\n'
    )
    with pytest.raises(StudyError, match=r"the sysbench suite does not run against RocksDB"):
        load_study(p)


def _system_study(tmp_path: Path, measure: str, suite_lines: str) -> Study:
    """A dbbench study of Debian's db_bench, with the given [measure] table and [suite] lines."""
    p = tmp_path / "s.toml"
    p.write_text(
        f'engine = "rocksdb"\nbase = "a"\nworkspace = "{tmp_path / "ws"}"\n{measure}'
        f'[suite]\nname = "dbbench"\nkeys = 1000\n{suite_lines}'
        '[[targets]]\nname = "a"\nsource = "system"\nconfig = "lru"\n'
    )
    return load_study(p)


def test_preflight_counts_the_read_steps_and_says_no_profile(tmp_path: Path) -> None:
    from dbsweep import preflight

    study = _system_study(tmp_path, "[measure]\ninstructions = true\nprofile = true\n", "")
    assert set(study.bench.instruction_steps()) == {"readrandom", "fwdrange", "multireadrandom"}
    warnings = preflight.check(study).warnings
    assert not any("measure.instructions" in w for w in warnings), warnings
    assert any("measure.profile: the profile pass samples a server, and RocksDB runs inside" in w for w in warnings)


def test_preflight_counts_the_warm_up_of_each_counted_run(tmp_path: Path) -> None:
    from dbsweep import preflight

    (tmp_path / "c").mkdir()
    (tmp_path / "io").mkdir()
    measure = "[measure]\ninstructions = true\ninstruction_jobs = 1\n"
    cached = preflight.estimate(_system_study(tmp_path / "c", measure, ""))
    io_bound = preflight.estimate(_system_study(tmp_path / "io", measure, 'profile = "iobuf"\n'))
    # Three steps x (a probe and two pairs) x 1,000 keys read into the cache at 190k keys/s under valgrind.
    assert cached.parts["instructions"] - io_bound.parts["instructions"] == pytest.approx(3 * 5 * 1000 / 190_000)


def test_the_counted_runs_read_a_fixed_number_of_keys_without_periodic_reports() -> None:
    s = suite(keys=1000, read_seconds=7, cache_mb=64)
    plan = s.instruction_plan("fwdrange", 3)
    assert plan.short is None and plan.probe is not None
    probe = plan.probe()
    assert _flag(probe, "duration") == "3" and _flag(probe, "threads") == "1" and _flag(probe, "reads") is None
    counted = plan.command(500)
    assert _flag(counted, "reads") == "500" and _flag(counted, "duration") == "0"
    assert _flag(counted, "report_interval_seconds") == "0" and _flag(counted, "stats_interval_seconds") == "0"
    assert _flag(counted, "seek_nexts") == "10" and _flag(counted, "num") == "1000"
    assert sum(a.startswith("--duration=") for a in counted) == 1
    assert _flag(counted, "histogram") == "0" and sum(a.startswith("--histogram=") for a in counted) == 1
    # The cached profile reads the database into the block cache first, in the probe and in every counted run,
    # and the run's result is still the step's own benchmark.
    assert _flag(probe, "benchmarks") == "readtocache,seekrandom,stats" == _flag(counted, "benchmarks")
    assert tool.default_result(counted) == "seekrandom"
    io_bound = suite(keys=1000, read_seconds=7, cache_mb=64, profile="iobuf").instruction_plan("readrandom", 3)
    assert _flag(io_bound.command(500), "benchmarks") == "readrandom,stats"
    assert tool.default_result(["--benchmarks=overwrite,waitforcompaction"]) == "overwrite"


def test_a_study_without_maintenance_opens_no_connections(tmp_path: Path) -> None:
    from dbsweep import preflight

    study = _system_study(tmp_path, "", 'steps = ["fillseq"]\n')
    assert preflight.connection_need(study).need == 0
    assert not preflight.check(study).problems


def test_throughput_over_time_in_sixths_of_the_step() -> None:
    from dbsweep.report.data import Sample
    from dbsweep.suites.dbbench.report import _windows

    # 60 one-second rows of 1,000 ops, with a stall of two seconds at 100 ops in the last sixth.
    secs = [Sample(t, "measure", 100 if t in (55, 56) else 1000, 0) for t in range(1, 61)]
    rates, slowest, cv = _windows([Sample(0, "warmup", 5, 0), *secs])
    assert rates[:5] == [1000.0] * 5 and rates[5] == pytest.approx((8 * 1000 + 2 * 100) / 10)
    assert slowest == 100.0 and cv is not None and 0.1 < cv < 0.3
    # Fewer report rows than sixths: the sixths without one have no figure rather than zero.
    short, _, _ = _windows([Sample(1, "measure", 500, 0), Sample(2, "measure", 700, 0)])
    assert short.count(None) == 4 and short[2] == pytest.approx(500 / (2 / 6))
