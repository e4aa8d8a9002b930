"""The db_bench output parser against real db_bench 7.8.3 logs (tests/unit/data/dbbench/7.8.3, see the README
there) and synthetic logs in the formats of older and newer RocksDB versions: result lines with their
histograms, the report CSV, and the stats dump's §6 columns."""

from __future__ import annotations

from pathlib import Path

import pytest

from dbsweep.suites.dbbench.output import BenchResult, Histogram, interval_rates, lsm_stats, result, results

DATA = Path(__file__).parent / "data" / "dbbench"
REAL = DATA / "7.8.3"


def log(name: str) -> str:
    return (REAL / f"{name}.log").read_text()


def csv(name: str) -> str:
    return (REAL / f"{name}.csv").read_text()


# ---- result lines ---------------------------------------------------------------------------------------


def test_fillseq_result_and_its_write_histogram() -> None:
    r = result(log("fillseq"), "fillseq")
    assert (r.micros_per_op, r.ops_per_sec, r.seconds, r.operations, r.mb_per_sec) == (
        6.285,
        158823,
        0.126,
        20000,
        63.6,
    )
    assert r.found is None
    assert r.histogram_kind == "write"
    assert r.histogram == Histogram(
        count=20000,
        average=6.2866,
        stddev=252.28,
        min=0,
        median=0.6879,
        max=16281,
        percentiles={"p50": 0.69, "p75": 1.09, "p99": 5.00, "p99.9": 37.40, "p99.99": 16281.00},
        buckets=[
            (0, 1, 14536),
            (1, 2, 4913),
            (2, 3, 174),
            (3, 4, 56),
            (4, 6, 241),
            (6, 10, 24),
            (10, 15, 25),
            (15, 22, 3),
            (22, 34, 7),
            (34, 51, 5),
            (51, 76, 3),
            (76, 110, 3),
            (110, 170, 1),
            (170, 250, 1),
            (4400, 6600, 1),
            (6600, 9900, 1),
            (9900, 14000, 3),
            (14000, 22000, 3),
        ],
    )
    assert sum(b[2] for b in r.histogram.buckets) == r.histogram.count


def test_seekrandom_prints_found_and_a_blank_line_before_its_seek_histogram() -> None:
    text = log("revrange")
    # The "(N of M found)\n" message ends in its own newline: a blank line sits before the histogram.
    assert "found)\n\nMicroseconds per seek:" in text
    r = result(text, "seekrandom")
    assert (r.micros_per_op, r.ops_per_sec, r.seconds, r.operations, r.mb_per_sec) == (
        29.658,
        33716,
        3.025,
        101999,
        135.0,
    )
    assert r.found == (101999, 101999)
    assert r.histogram_kind == "seek"
    assert r.histogram is not None
    assert (r.histogram.count, r.histogram.min, r.histogram.max) == (101999, 14, 8154)
    assert r.histogram.percentiles["p99.99"] == 4082.36
    assert r.histogram.buckets[0] == (10, 15, 7) and r.histogram.buckets[-1] == (6600, 9900, 2)


def test_readrandom_with_two_threads_found_is_one_threads_count() -> None:
    r = result(log("readrandom"), "readrandom")
    assert (r.ops_per_sec, r.seconds, r.operations, r.mb_per_sec) == (215964, 3.005, 648998, 86.5)
    # db_bench keeps the first thread's message when it merges the threads' stats.
    assert r.found == (324999, 324999)
    assert r.histogram is not None and r.histogram_kind == "read"
    assert r.histogram.count == 648998
    assert r.histogram.percentiles == {"p50": 3.89, "p75": 4.98, "p99": 9.15, "p99.9": 3082.58, "p99.99": 4294.40}


def test_multireadrandom_counts_keys_but_times_batches() -> None:
    r = result(log("multireadrandom"), "multireadrandom")
    assert (r.micros_per_op, r.ops_per_sec, r.operations, r.mb_per_sec) == (3.852, 259631, 779990, 104.0)
    assert r.found == (779990, 779990)
    # One histogram entry per MultiGet of --batch_size=10 keys, and no blank line before it.
    assert r.histogram_kind == "read" and r.histogram is not None
    assert (r.histogram.count, r.histogram.average, r.histogram.median) == (77999, 38.5167, 32.0388)


def test_the_while_writing_benchmarks_report_only_the_readers() -> None:
    rww = result(log("readwhilewriting"), "readwhilewriting")
    assert (rww.micros_per_op, rww.ops_per_sec, rww.seconds, rww.operations) == (12.748, 154748, 3.044, 470998)
    assert (rww.mb_per_sec, rww.found) == (62.0, (217999, 217999))
    assert rww.histogram_kind == "read" and rww.histogram is not None and rww.histogram.max == 20124
    srww = result(log("revrangewhilewriting"), "seekrandomwhilewriting")
    assert (srww.micros_per_op, srww.ops_per_sec, srww.operations, srww.mb_per_sec) == (33.214, 29804, 90999, 119.3)
    assert srww.histogram_kind == "seek" and srww.histogram is not None
    assert srww.histogram.percentiles["p99.9"] == 1900.08


def test_overwrite_with_a_fixed_number_of_writes() -> None:
    r = result(log("overwritesome"), "overwrite")
    # --writes=1000 per thread, two threads.
    assert (r.micros_per_op, r.ops_per_sec, r.seconds, r.operations, r.mb_per_sec) == (
        31.835,
        56800,
        0.035,
        2000,
        22.8,
    )
    assert r.histogram is not None and r.histogram.count == 2000 and r.histogram.stddev == 592.41


def test_overwrite_then_waitforcompaction_has_one_result_line() -> None:
    text = log("overwriteandwait")
    assert "waitforcompaction(/tmp/dbbfx/db): finished" in text
    assert [r.name for r in results(text)] == ["overwrite"]
    r = result(text, "overwrite")
    assert (r.ops_per_sec, r.seconds, r.operations, r.mb_per_sec) == (68986, 3.001, 206999, 27.6)
    # The waitforcompaction lines after the histogram do not end up in it.
    assert r.histogram is not None and r.histogram.buckets[-1] == (33000, 50000, 1)
    with pytest.raises(ValueError, match="waitforcompaction"):
        result(text, "waitforcompaction")


def test_steps_without_a_rate_print_no_result_line() -> None:
    assert results(log("flush_mt_l0")) == []


def test_a_missing_benchmark_is_named_in_the_error() -> None:
    with pytest.raises(ValueError, match=r"'readwhilewriting'.*readrandom"):
        result(log("readrandom"), "readwhilewriting")
    # An exact name: "seekrandom" is not a prefix match for "seekrandomwhilewriting".
    with pytest.raises(ValueError, match="'seekrandom'"):
        result(log("revrangewhilewriting"), "seekrandom")


def test_stderr_interval_lines_before_the_result_do_not_disturb_it() -> None:
    text = log("overwrite_interval")
    assert text.index("... thread 0:") < text.index("overwrite    :")
    (r,) = results(text)
    assert (r.name, r.ops_per_sec, r.operations) == ("overwrite", 76983, 231999)


def test_the_6x_result_line_has_no_seconds_or_operations() -> None:
    # db_bench 6.x and 7.0-7.2 print "<name> : <us> micros/op <n> ops/sec;" then the MB/s and the message;
    # 7.3 added "<s> seconds <n> operations" before the semicolon.
    rs = results((DATA / "v6_synthetic.log").read_text())
    assert [r.name for r in rs] == ["readrandom", "multireadrandom", "overwrite"]
    rr, mr, ow = rs
    assert rr == BenchResult(
        name="readrandom",
        micros_per_op=2.345,
        ops_per_sec=426439,
        seconds=None,
        operations=None,
        mb_per_sec=33.4,
        found=(100000, 100000),
        histogram=rr.histogram,
        histogram_kind="read",
    )
    assert rr.histogram is not None and rr.histogram.count == 100000 and len(rr.histogram.buckets) == 7
    # The 6.x multireadrandom line had no MB/s (benchmark.sh's "V1a").
    assert (mr.mb_per_sec, mr.found, mr.histogram) == (None, (177099990, 177099990), None)
    assert (ow.micros_per_op, ow.ops_per_sec, ow.mb_per_sec, ow.found) == (7.939, 125963, 50.5, None)


def test_a_lone_6x_line_and_a_line_without_mb_per_s() -> None:
    (r,) = results("readrandom   :       2.345 micros/op 426439 ops/sec;   33.4 MB/s (100000 of 100000 found)\n")
    assert (r.micros_per_op, r.ops_per_sec, r.mb_per_sec, r.found, r.seconds) == (
        2.345,
        426439,
        33.4,
        (100000, 100000),
        None,
    )
    (bare,) = results("compact      :  1000000.000 micros/op 1 ops/sec 1.000 seconds 1 operations;\n")
    assert (bare.name, bare.seconds, bare.operations, bare.mb_per_sec, bare.histogram) == (
        "compact",
        1.0,
        1,
        None,
        None,
    )


# ---- the report CSV ---------------------------------------------------------------------------------------


def test_interval_rates_of_real_report_files() -> None:
    assert interval_rates(csv("revrange")) == [(1, 29870), (2, 36816), (3, 34494)]
    assert interval_rates(csv("readrandom")) == [(1, 208185), (2, 210444)]
    # fillseq ends before the first 1 s interval: the file has only its header.
    assert csv("fillseq") == "secs_elapsed,interval_qps\n"
    assert interval_rates(csv("fillseq")) == []


def test_interval_rates_skip_junk() -> None:
    text = (DATA / "junk.csv").read_text()
    assert interval_rates(text) == [(1, 29870), (2, 36816), (5, 33001.5), (6, 31000)]


# ---- the stats dump ---------------------------------------------------------------------------------------


def test_lsm_stats_after_overwrite_and_waitforcompaction() -> None:
    s = lsm_stats(log("overwriteandwait"))
    assert s.lsm_gb == pytest.approx(11.85 / 1024)  # " Sum     13/0   11.85 MB"
    assert s.blob_gb == 0.0
    assert (s.compaction_write_gb, s.compaction_mb_per_s) == (0.22, 27.61)
    assert (s.compaction_seconds, s.compaction_cpu_seconds) == (3.76, 1.07)
    assert (s.flush_gb, s.ingest_gb) == (0.078, 0.08)
    assert s.write_amp == pytest.approx((0.22 + 0.078) / 0.08)
    assert (s.uptime_s, s.stall_pct, s.stall_count) == (8.1, 3.6, 21)


def test_lsm_stats_of_fillseq_count_memtable_stalls() -> None:
    s = lsm_stats(log("fillseq"))
    assert s.lsm_gb == pytest.approx(6.48 / 1024)
    assert (s.compaction_write_gb, s.compaction_mb_per_s, s.compaction_seconds) == (0.01, 48.20, 0.09)
    assert (s.uptime_s, s.stall_pct, s.stall_count) == (0.2, 59.1, 8)
    assert s.write_amp == pytest.approx((0.01 + 0.007) / 0.01)


def test_lsm_stats_take_the_last_dump() -> None:
    text = log("overwrite_interval")
    # Two periodic dumps (stderr, --stats_interval_seconds=1) before the final one of the `stats` benchmark.
    assert text.count("** DB Stats **") == 3
    s = lsm_stats(text)
    assert (s.uptime_s, s.stall_count, s.stall_pct) == (3.1, 19, 8.7)
    assert (s.compaction_write_gb, s.flush_gb, s.ingest_gb) == (0.24, 0.086, 0.09)
    assert s.lsm_gb == pytest.approx(14.54 / 1024)


def test_no_ingest_means_no_write_amp() -> None:
    s = lsm_stats(log("flush_mt_l0"))
    assert (s.ingest_gb, s.write_amp) == (0.0, None)
    assert s.lsm_gb == pytest.approx(8.63 / 1024) and s.uptime_s == 10.2 and s.stall_count == 0


def test_no_stats_benchmark_means_no_dump() -> None:
    s = lsm_stats(log("readrandom_nostats"))
    assert all(v is None for v in vars(s).values())


def test_lsm_stats_of_the_6_0_layout() -> None:
    s = lsm_stats((DATA / "v6_synthetic.log").read_text())
    assert s.lsm_gb == 1.17 and s.blob_gb is None  # no Blob file line before 6.20
    assert (s.compaction_seconds, s.compaction_cpu_seconds) == (279.00, 241.06)
    assert (s.compaction_write_gb, s.compaction_mb_per_s, s.flush_gb, s.ingest_gb) == (41.80, 152.65, 12.3, 12.31)
    assert s.write_amp == pytest.approx((41.80 + 12.3) / 12.31)
    # benchmark.sh's $2+$6+$10+$14+$18+$20: 3 + 1 + 0 + 4 + 5 + 6, not the *_with_compaction 2 and 1.
    assert (s.stall_count, s.stall_pct, s.uptime_s) == (19, 4.4, 280.4)


def test_lsm_stats_of_the_10_4_layout() -> None:
    s = lsm_stats((DATA / "v10_stats_synthetic.log").read_text())
    # WPreComp(GB) shifts the columns by one: found by header name, Comp(sec) is still 60.02, not Wr(MB/s).
    assert (s.compaction_seconds, s.compaction_cpu_seconds) == (60.02, 48.50)
    assert (s.lsm_gb, s.blob_gb) == (2.5, 1.5)
    # 8.1+: total-delays 9 + total-stops 5; the DB-scope Write Stall line after it has no totals.
    assert s.stall_count == 14
    assert s.write_amp == pytest.approx((12.60 + 3.1) / 3.01)
