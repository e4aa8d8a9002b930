"""dbsweep validate's preflight: what a run would reject, found before any work, and what it would cost."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from dbsweep import paths, plan, preflight
from dbsweep.build import cache, variants
from dbsweep.build.compiler import compiler_for
from dbsweep.engines import postgres
from dbsweep.engines.postgres import config as postgres_config
from dbsweep.engines.postgres.build import RECIPE
from dbsweep.engines.postgres.source import NAMING
from dbsweep.sources.localdir import resolve_dir
from dbsweep.study import Study, load_study
from dbsweep.suites import ibench, sysbench

from ..conftest import ROOT, write_study

IBENCH = """\
name = "ib"
engine = "postgres"
base = "a"
workspace = "{workspace}"

[suite]
name = "ibench"
profile = "quick"
{suite}

[[targets]]
name = "a"
source = "system"
config = "cx10a_c2r24"
"""

DBBENCH = """\
name = "rx"
engine = "rocksdb"
base = "a"
workspace = "{workspace}"

[suite]
name = "dbbench"
keys = 1000
steps = {steps}

[[targets]]
name = "a"
source = "system"
config = "lru"
"""

# A source line of target b, as write_study writes it.
B_SOURCE = 'source = "system"\nconfig = "{config}"\n'


def _study(
    tmp: Path, b_source: str | None = None, b_variant: str | None = None, top: str = "", end: str = "", **kw: object
) -> Study:
    """write_study's file, with target b's source and variant replaced, and lines added at the top and the end."""
    path = write_study(tmp, "t", **kw)
    text = path.read_text()
    if b_source is not None or b_variant is not None:
        config = str(kw.get("config_b", "cx10a_sb1g_c2r24"))
        old = B_SOURCE.format(config=config)
        assert old in text
        new = f"source = {json.dumps(b_source or 'system')}\n"
        if b_variant is not None:
            new += f"variant = {json.dumps(b_variant)}\n"
        text = text.replace(old, new + f'config = "{config}"\n')
    if top:
        text = text.replace("repeats =", f"{top}\nrepeats =", 1)
    path.write_text(text + end)
    return load_study(path)


def _ibench(tmp: Path, suite: str) -> Study:
    path = tmp / "ib.toml"
    path.write_text(IBENCH.format(workspace=tmp / "ws", suite=suite))
    return load_study(path)


def _dbbench(tmp: Path, steps: str) -> Study:
    path = tmp / "rx.toml"
    path.write_text(DBBENCH.format(workspace=tmp / "ws", steps=steps))
    return load_study(path)


def _prefix(study: Study, fieldname: str) -> str:
    return f"{paths.shown(study.path)}: {fieldname}: "


def _at(messages: list[str], study: Study, fieldname: str) -> list[str]:
    """The messages about one field, without their prefix."""
    prefix = _prefix(study, fieldname)
    return [m.removeprefix(prefix) for m in messages if m.startswith(prefix)]


def _configs(tmp: Path, monkeypatch: pytest.MonkeyPatch, **extra: str) -> None:
    """A configs directory with the two configs write_study names, plus `extra` (name -> text)."""
    d = tmp / "configs" / "postgres"
    d.mkdir(parents=True)
    for name in ("cx10a_c2r24", "cx10a_sb1g_c2r24"):
        (d / f"{name}.conf").write_text((ROOT / "configs" / "postgres" / f"{name}.conf").read_text())
    for name, text in extra.items():
        (d / f"{name}.conf").write_text(text)
    monkeypatch.setenv("DBSWEEP_CONFIGS", str(tmp / "configs"))


def _tree(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*")) if path.exists() else []


# ---- a clean study and its estimate -------------------------------------------------------------------------


def test_clean_study_passes_with_an_estimate_whose_parts_add_up(tmp: Path) -> None:
    study = _study(tmp, steps='["point-query", "update-index", "read-write_range=100"]', clients=[1, 2])
    result = preflight.check(study)
    assert result.problems == []
    assert result.warnings == []
    e = result.estimate
    assert e.seconds == pytest.approx(sum(e.parts.values()))
    assert set(e.parts) == {"builds", "server starts", "loads", "steps", "maintenance", "instructions"}
    assert all(v >= 0 for v in e.parts.values())
    assert e.parts["builds"] == 0 and e.builds_needed == 0  # Debian's prebuilt Postgres
    assert e.parts["steps"] > 0 and e.parts["loads"] > 0 and e.parts["server starts"] > 0
    assert e.cells == len(plan.cells(study))
    assert e.data_bytes > postgres_config.EMPTY_CLUSTER_BYTES
    line = preflight.describe(e)
    assert line.startswith("estimated wall time ") and f"{e.cells} cells" in line
    assert "largest data directory ≈ " in line
    assert not (tmp / "ws").exists()  # nothing written: not even the workspace


def test_estimate_grows_with_repeats_and_seconds(tmp: Path) -> None:
    (tmp / "a").mkdir()
    (tmp / "b").mkdir()
    (tmp / "c").mkdir()
    base = preflight.check(_study(tmp / "a", seconds=2)).estimate
    more_repeats = preflight.check(_study(tmp / "b", seconds=2, repeats=3)).estimate
    longer = preflight.check(_study(tmp / "c", seconds=30)).estimate
    assert more_repeats.seconds > base.seconds and more_repeats.cells == 3 * base.cells
    assert longer.seconds > base.seconds and longer.cells == base.cells
    assert more_repeats.data_bytes == base.data_bytes  # one data directory at a time


def test_estimate_counts_builds_not_in_the_cache_by_recipe(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(preflight.instructions, "host_cpu_flags", lambda: {"avx2"})  # c's -march=native counts
    path = write_study(tmp)
    text = path.read_text().split("[[targets]]")[0]
    text += "".join(
        f'[[targets]]\nname = "{name}"\nsource = "15.18"\nvariant = "{variant}"\nconfig = "{config}"\n'
        for name, variant, config in (
            ("a", "def", "cx10a_c2r24"),
            ("b", "def", "cx10a_sb1g_c2r24"),  # the same build as a
            ("c", "o3_native_lto", "cx10a_c2r24"),
            ("d", "pgo_lto", "cx10a_c2r24"),
        )
    )
    path.write_text(text)
    result = preflight.check(load_study(path))
    assert result.problems == []  # no Debian lists cached: the version is not judged
    e = result.estimate
    assert e.builds_needed == 3
    # pgo_lto's profile comes from an instrumented build without LTO (pgo's): a plain build more.
    profile = preflight.PROFILE_FACTOR * preflight.BUILD_S
    expected = preflight.BUILD_S + preflight.LTO_BUILD_S + preflight.LTO_BUILD_S + profile
    assert e.parts["builds"] == pytest.approx(expected)
    assert "3 builds ≈ " in preflight.describe(e)

    # BOLT rewrites a copy of its base build, with gcc one compiled for BOLT: pgo_lto_bolt's is pgo_lto_bolt_base
    # (a PGO + LTO build of its own from d's profile, not d's pgo_lto), bolt's is bolt_base, each then BOLT's part;
    # counts-only builds the bases too.
    path.write_text(
        path.read_text()
        + '[[targets]]\nname = "e"\nsource = "15.18"\nvariant = "pgo_lto_bolt"\nconfig = "cx10a_c2r24"\n'
        + '[[targets]]\nname = "f"\nsource = "15.18"\nvariant = "bolt"\nconfig = "cx10a_c2r24"\n'
        + "[measure]\ninstructions = true\n"
    )
    study = load_study(path)
    for e in (preflight.check(study).estimate, preflight.estimate(study, counts_only=True)):
        assert e.builds_needed == 7
        # pgo_lto_bolt_base is built with d's profile (pgo's): no training more.
        pgo_lto = preflight.LTO_BUILD_S
        assert e.parts["builds"] == pytest.approx(expected + 2 * preflight.BOLT_S + preflight.BUILD_S + pgo_lto)


def test_ibench_estimate_and_clean_check(tmp: Path) -> None:
    study = _ibench(tmp, "clients = [1]")
    result = preflight.check(study)
    assert result.problems == []
    e = result.estimate
    assert e.seconds == pytest.approx(sum(e.parts.values()))
    assert e.parts["steps"] >= 6 * 30  # six read-write steps of 30 s
    assert e.parts["maintenance"] >= 15  # the quick profile's wait after l.i2
    assert e.cells == 10
    # 1M rows loaded + 200k through the queue at about 200 bytes each, with the WAL the load leaves.
    assert 1_200_000 * ibench.ROW_BYTES < e.data_bytes < 5 * 1_200_000 * ibench.ROW_BYTES


def test_instruction_pass_is_estimated_per_target_and_counted_step(tmp: Path) -> None:
    (tmp / "a").mkdir()
    (tmp / "b").mkdir()
    steps = '["point-query.pre", "point-query", "update-index", "random-points"]'
    off = preflight.check(_study(tmp / "a", steps=steps)).estimate
    end = "[measure]\ninstructions = true\ninstruction_jobs = 1\n"
    on = preflight.check(_study(tmp / "b", steps=steps, end=end)).estimate
    assert off.parts["instructions"] == 0
    # Two targets x four distinct counts: the load and update-index, each run on a server of its own, and
    # random-points and point-query (point-query.pre and point-query share a count), in one session: one start.
    per_step = preflight.VALGRIND_STARTS * preflight.VALGRIND_START_S
    assert on.parts["instructions"] > 2 * 2 * per_step
    assert on.parts["instructions"] < 2 * 3 * per_step + 2 * 60


# ---- 1. sizes the load client cannot take --------------------------------------------------------------------


def test_rows_beyond_i32_are_rejected(tmp: Path) -> None:
    study = _study(tmp, rows=3_000_000_000)
    got = _at(preflight.check(study).problems, study, "suite.rows")
    assert len(got) == 1
    assert "3000000000 is more than the load client takes" in got[0]
    assert "--rows is a signed 32-bit integer (i32)" in got[0]
    assert "the largest allowed value is 2147483647" in got[0]


def test_clients_beyond_u32_are_rejected(tmp: Path) -> None:
    study = _study(tmp, clients=[1, 5_000_000_000])
    problems = preflight.check(study).problems
    got = _at(problems, study, "suite.clients[1]")
    assert got and "unsigned 32-bit integer (u32)" in got[0] and "4294967295" in got[0]
    assert not _at(problems, study, "suite.clients[0]")


def test_negative_seed_is_rejected(tmp: Path) -> None:
    path = write_study(tmp)
    path.write_text(path.read_text().replace("maintenance_seconds = 0", "maintenance_seconds = 0\nseed = -1"))
    study = load_study(path)
    got = _at(preflight.check(study).problems, study, "suite.seed")
    assert (
        got
        and "not a seed the load client takes (an unsigned 64-bit integer (u64))" in got[0]
        and "0 to 18446744073709551615" in got[0]
    )


def test_range_steps_need_enough_rows(tmp: Path) -> None:
    study = _study(tmp, rows=150, steps='["read-only_range=10000", "hot-points", "point-query"]')
    got = _at(preflight.check(study).problems, study, "suite.rows")
    assert len(got) == 1
    assert "read-only_range=10000 needs rows >= 10000" in got[0]
    assert "hot-points_range=100 needs rows >= 199" in got[0]
    assert "point-query" not in got[0]  # its range is only a label
    assert "rows must be at least 10000" in got[0]


def test_insert_ids_could_pass_the_serial(tmp: Path) -> None:
    study = _study(tmp, rows=2_147_000_000, steps='["insert"]', seconds=60, clients=[1, 2])
    got = _at(preflight.check(study).problems, study, "suite.rows")
    assert len(got) == 1
    assert "ids of the insert step could pass 2147483647" in got[0]
    assert "sbtest's id is a 32-bit auto-increment" in got[0] and "the largest rows that is safe here is" in got[0]
    safe = int(got[0].rsplit(" ", 1)[1])
    (tmp / "ok").mkdir()
    fine = _study(tmp / "ok", rows=safe, steps='["insert"]', seconds=60, clients=[1, 2])
    assert not _at(preflight.check(fine).problems, fine, "suite.rows")


def test_ibench_ids_and_pacing_limits(tmp: Path) -> None:
    study = _ibench(tmp, "clients = [2]\nonly1t = true\nload_rows = 5000000000000000000\nrw_seconds = 20000000000")
    problems = preflight.check(study).problems
    ids = _at(problems, study, "suite.load_rows")
    assert ids and "would pass 9223372036854775807" in ids[0] and "64-bit auto-increment" in ids[0]
    assert "only1t" in ids[0]
    pacing = _at(problems, study, "suite.rw_seconds")
    assert pacing and "the largest allowed value is 18446744073" in pacing[0]


# ---- 2. connections ------------------------------------------------------------------------------------------


def test_client_counts_above_max_connections(tmp: Path) -> None:
    study = _study(tmp, clients=[1, 100])
    problems = preflight.check(study).problems
    for i, label in ((0, "a"), (1, "b")):
        got = _at(problems, study, f"targets[{i}].config")
        assert len(got) == 1, problems
        assert f"target {label!r}" in got[0]
        assert "allows 100 connections (max_connections, Postgres's default)" in got[0]
        assert "step point-query_range=100 at 100 client(s)" in got[0]
        assert "needs 101" in got[0] and "max_connections to at least 101" in got[0]


def test_connection_limit_reads_the_config(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # dbsweep connects as the bootstrap superuser: the reserved slots are its own, max_connections is the limit.
    _configs(tmp, monkeypatch, wide="max_connections = '200'  # a comment\nsuperuser_reserved_connections = 10\n")
    (tmp / "ok").mkdir()
    fine = _study(tmp / "ok", clients=[199], config_b="wide")
    assert not _at(preflight.check(fine).problems, fine, "targets[1].config")
    (tmp / "over").mkdir()
    over = _study(tmp / "over", clients=[200], config_b="wide")
    got = _at(preflight.check(over).problems, over, "targets[1].config")
    assert got and "allows 200 connections (max_connections, wide.conf:1)" in got[0]
    assert "needs 201" in got[0]


def test_unreadable_max_connections_is_a_problem(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _configs(tmp, monkeypatch, odd="max_connections = lots\n")
    study = _study(tmp, config_b="odd")
    got = _at(preflight.check(study).problems, study, "targets[1].config")
    assert got and "sets max_connections = 'lots' (odd.conf:1), which is not an integer" in got[0]


def test_ibench_connections_count_every_role(tmp: Path) -> None:
    study = _ibench(tmp, "clients = [30]")
    got = _at(preflight.check(study).problems, study, "targets[0].config")
    assert len(got) == 1
    # 4 per client in a read-write step, the load client's admin connection, dbsweep's own.
    assert "step qr100 at 30 client(s) needs 122 (4 per client (an inserter, a delete generator, a deleter" in got[0]
    assert "+ the load client's admin connection + 1 that dbsweep holds for its statistics" in got[0]


def test_warmup_and_maintenance_need_one_connection_per_table(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _configs(tmp, monkeypatch, small="max_connections = 50\n")
    (tmp / "warm").mkdir()
    warm = _study(tmp / "warm", tables=60, steps='["point-query.warm", "point-query"]', config_b="small")
    got = _at(preflight.check(warm).problems, warm, "targets[1].config")
    assert got and "step point-query.warm_range=100 at 60 client(s) (a warm-up: one client per table)" in got[0]
    assert "allows 50 connections" in got[0] and "needs 61 (one per client + 1 that dbsweep holds" in got[0]
    (tmp / "vacuum").mkdir()
    vacuum = _study(tmp / "vacuum", tables=60, steps='["point-query"]', config_b="small")
    got = _at(preflight.check(vacuum).problems, vacuum, "targets[1].config")
    assert got and "the postwrite maintenance needs 60 (one maintenance connection per table, 60 in parallel)" in got[0]
    assert not _at(preflight.check(vacuum).problems, vacuum, "targets[0].config")  # 100 connections there


# ---- 3. duplicate steps --------------------------------------------------------------------------------------


def test_duplicate_steps_name_both_indices(tmp: Path) -> None:
    study = _study(tmp, steps='["point-query", "update-index", "point-query_range=100"]')
    problems = preflight.check(study).problems
    got = _at(problems, study, "suite.steps[2]")
    assert len(got) == 1
    assert "'point-query_range=100' is the same step as suite.steps[0], 'point-query'" in got[0]
    assert not _at(problems, study, "suite.steps[0]") and not _at(problems, study, "suite.steps[1]")


# ---- steps that need data no step before them loads ---------------------------------------------------------


def test_a_dbbench_read_without_fillseq_before_it_is_refused(tmp: Path) -> None:
    study = _dbbench(tmp, '["readrandom"]')
    assert _at(preflight.check(study).problems, study, "suite.steps[0]") == [
        "dbbench step readrandom reads the database, which no step before it loads; add fillseq before it in "
        "[suite] steps"
    ]
    # A load after the read is too late, and only the first step without one is named.
    study = _dbbench(tmp, '["overwritesome", "fwdrange", "fillseq"]')
    problems = [p for p in preflight.check(study).problems if "no step before it loads" in p]
    assert problems == [
        f"{_prefix(study, 'suite.steps[0]')}dbbench step overwritesome overwrites keys of the database, which no "
        "step before it loads; add fillseq before it in [suite] steps"
    ]
    # Steps named as the method prints them are the same steps.
    study = _dbbench(tmp, '["fillseq.wal_disabled.v400", "readrandom.t1"]')
    assert preflight.check(study).problems == []


def test_every_named_set_and_a_load_first_pass(tmp: Path) -> None:
    for steps in ['"seed"', '"quick"', '"all"', '["fillseq", "readrandom", "readwhilewriting"]']:
        study = _dbbench(tmp, steps)
        assert not [p for p in preflight.check(study).problems if "no step before it loads" in p], steps
    # sysbench always loads its tables first; the Insert Benchmark's l.i0 is checked with the study.
    study = _study(tmp, steps='["point-query.pre", "delete", "insert"]')
    assert not [p for p in preflight.check(study).problems if "no step before it loads" in p]
    assert preflight.check(_ibench(tmp, "clients = [1]")).problems == []


# ---- 4. sources ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("dir:/nonexistent/postgres", "source directory /nonexistent/postgres does not exist"),
        ("tarball:/nonexistent/postgresql-15.18.tar.bz2", "tarball /nonexistent/postgresql-15.18.tar.bz2 does not"),
        ("git:/nonexistent/postgres.git@REL_15_18", "git repository /nonexistent/postgres.git does not exist"),
        ("git:/nonexistent/postgres.git", "needs a ref after the last `@`"),
    ],
)
def test_local_sources_that_do_not_exist(tmp: Path, source: str, message: str) -> None:
    study = _study(tmp, b_source=source)
    result = preflight.check(study)
    got = _at(result.problems, study, "targets[1].source")
    assert len(got) == 1 and message in got[0], result.problems
    assert result.estimate.builds_needed == 1


def test_urls_are_not_checked(tmp: Path) -> None:
    for i, source in enumerate(
        ("tarball:https://example.invalid/pg.tar.gz", "git:https://example.invalid/pg.git@main")
    ):
        (tmp / str(i)).mkdir()
        study = _study(tmp / str(i), b_source=source)
        assert preflight.check(study).problems == []


def test_dir_that_is_not_a_postgres_tree(tmp: Path) -> None:
    (tmp / "empty").mkdir()
    study = _study(tmp, b_source=f"dir:{tmp / 'empty'}")
    got = _at(preflight.check(study).problems, study, "targets[1].source")
    assert got and "does not look like a Postgres source tree" in got[0]


def test_local_git_ref_that_does_not_exist(tmp: Path) -> None:
    repo = tmp / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "configure").write_text("PACKAGE_VERSION='15.18'\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True)
    subprocess.run(["git", "-C", str(repo), "commit", "-qm", "x"], check=True, env=env)
    subprocess.run(["git", "-C", str(repo), "tag", "REL_15_18"], check=True)
    (tmp / "good").mkdir()
    good = _study(tmp / "good", b_source=f"git:{repo}@REL_15_18")
    assert preflight.check(good).problems == []
    (tmp / "bad").mkdir()
    bad = _study(tmp / "bad", b_source=f"git:{repo}@REL_99_0")
    got = _at(preflight.check(bad).problems, bad, "targets[1].source")
    assert got and "git ref 'REL_99_0' is not a tag, branch or commit" in got[0]


def test_system_major_that_is_not_installed(tmp: Path) -> None:
    majors = postgres.system_majors()
    if not majors:
        pytest.skip("no Postgres from Debian's packages")
    study = _study(tmp, b_source="system:9")
    got = _at(preflight.check(study).problems, study, "targets[1].source")
    assert len(got) == 1
    assert "Postgres 9 from Debian's packages is not installed" in got[0]
    assert f"installed: {', '.join(majors)}" in got[0]


def _debian_lists(sources: Path, versions: list[str]) -> None:
    """Private apt lists as dbsweep keeps them, with a Sources index holding `versions` of postgresql-15."""
    apt = sources / "apt"
    (apt / "lists").mkdir(parents=True)
    keyring = "/usr/share/keyrings/debian-archive-keyring.gpg"
    (apt / "sources.list").write_text(f"deb-src [signed-by={keyring}] http://deb.debian.org/debian bookworm main\n")
    (apt / "lists" / "deb.debian.org_debian_dists_bookworm_Release").write_text(
        "Origin: Debian\nSuite: stable\nCodename: bookworm\nComponents: main\nSHA256:\n"
        f" {'0' * 64} 100 main/source/Sources\n"
    )
    stanzas = "".join(f"Package: postgresql-15\nBinary: postgresql-15\nVersion: {v}\n\n" for v in versions)
    (apt / "lists" / "deb.debian.org_debian_dists_bookworm_main_source_Sources").write_text(stanzas)
    (apt / "updated").touch()


@pytest.mark.skipif(shutil.which("apt-get") is None, reason="needs apt")
def test_debian_version_is_checked_against_the_cached_lists(tmp: Path) -> None:
    # Postgres 16 is in no list: no pool revision to look for either.
    for i, source in enumerate(("16.99", "debian:16.2")):
        d = tmp / f"missing{i}"
        d.mkdir()
        study = _study(d, b_source=source)
        _debian_lists(d / "ws" / "sources", ["15.13-0+deb12u1", "15.14-0+deb12u1"])
        before = _tree(d / "ws")
        got = _at(preflight.check(study).problems, study, "targets[1].source")
        assert len(got) == 1, source
        assert "no Debian source for Postgres" in got[0] and "16" in got[0]
        assert "Debian source lists cached in" in got[0]
        assert _tree(d / "ws") == before  # the lists were read, not refreshed
    # A version of a listed package that no list carries may still be in the archive's pool: the run looks.
    for i, source in enumerate(("15.99", "debian:15.99", "15.14-0+deb12u9")):
        d = tmp / f"pool{i}"
        d.mkdir()
        study = _study(d, b_source=source)
        _debian_lists(d / "ws" / "sources", ["15.13-0+deb12u1", "15.14-0+deb12u1"])
        result = preflight.check(study)
        assert _at(result.problems, study, "targets[1].source") == [], source
        got = _at(result.warnings, study, "targets[1].source")
        assert len(got) == 1, source
        assert "no Debian source for Postgres" in got[0] and "pool of Debian's archive" in got[0]
    for i, source in enumerate(("15.14", "debian:15.13", "15.14-0+deb12u1")):
        d = tmp / f"listed{i}"
        d.mkdir()
        study = _study(d, b_source=source)
        _debian_lists(d / "ws" / "sources", ["15.13-0+deb12u1", "15.14-0+deb12u1"])
        assert preflight.check(study).problems == [], source


def test_debian_version_without_cached_lists_is_not_judged(tmp: Path) -> None:
    study = _study(tmp, b_source="15.99")
    result = preflight.check(study)
    assert result.problems == []
    assert result.estimate.builds_needed == 1


# ---- 5. settings the binary does not know --------------------------------------------------------------------

# io_method is a Postgres 18 setting: Debian's Postgres 15 does not know it.
FUTURE = "# io_method appeared in Postgres 18\nio_method = worker\n"


def _need_system_15() -> None:
    if "15" not in postgres.system_majors():
        pytest.skip("needs Debian's Postgres 15")


def test_unknown_setting_on_system_postgres(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _need_system_15()
    _configs(tmp, monkeypatch, future=FUTURE)
    (tmp / "strict").mkdir()
    strict = _study(tmp / "strict", b_source="system:15", config_b="future")
    problems = preflight.check(strict).problems
    got = _at(problems, strict, "targets[1].config")
    assert len(got) == 1, problems
    assert "config future sets io_method (future.conf:2)" in got[0]
    assert "which Postgres 15." in got[0] and "does not have" in got[0] and "optional_settings" in got[0]
    assert not _at(problems, strict, "targets[0].config")
    (tmp / "optional").mkdir()
    optional = _study(
        tmp / "optional", b_source="system:15", config_b="future", top='optional_settings = ["io_method"]'
    )
    assert preflight.check(optional).problems == []


def test_unknown_setting_on_a_cached_build(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A dir: source with a build in the cache: its binary is asked, and no build is counted."""
    _need_system_15()
    _configs(tmp, monkeypatch, future=FUTURE)
    src = tmp / "src"
    src.mkdir()
    (src / "configure").write_text("#!/bin/sh\nPACKAGE_VERSION='15.18'\n")
    study = _study(tmp, b_source=f"dir:{src}", config_b="future")
    assert preflight.check(study).estimate.builds_needed == 1  # not built yet
    # A build as the build cache leaves it, whose binary is Debian's Postgres 15.
    tree = resolve_dir(f"dir:{src}", str(src), naming=NAMING)
    variant = variants.builtin("def")
    key = cache.cache_key(RECIPE, tree, variant, compiler_for(variant))
    entry = study.workspace_dir / "builds" / cache.entry_name(RECIPE, tree, variant, key)
    (entry / "install" / "bin").mkdir(parents=True)
    (entry / "install" / "bin" / "postgres").symlink_to(postgres.SYSTEM_ROOT / "15" / "bin" / "postgres")
    meta = {
        "key": key,
        "engine": "postgres",
        "version": tree.version,
        "server_version": "postgres (PostgreSQL) 15.18",
        "variant": "def",
        "recipe": variant.recipe(),
        "source": {"spec": tree.spec, "kind": "dir", "identity": tree.identity, "path": str(src)},
        "compiler": {"name": "gcc", "version": "gcc"},
        "ccache": False,
        "configure_command": [],
        "pg_config": {"CC": "gcc", "CFLAGS": "", "LDFLAGS": "", "CONFIGURE": ""},
        "build_seconds": 1.0,
        "install_bytes": 1,
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "training": None,
    }
    (entry / "build.json").write_text(json.dumps(meta))
    before = _tree(study.workspace_dir)
    result = preflight.check(study)
    assert result.estimate.builds_needed == 0
    got = _at(result.problems, study, "targets[1].config")
    assert len(got) == 1 and "sets io_method" in got[0] and "Postgres 15.18 does not have" in got[0]
    assert _tree(study.workspace_dir) == before


# ---- warnings and the rest -----------------------------------------------------------------------------------


def test_long_run_warning(tmp: Path) -> None:
    study = _study(tmp, seconds=100_000, steps='["point-query", "update-index"]')
    result = preflight.check(study)
    assert result.problems == []
    got = _at(result.warnings, study, "(top level)")
    assert len(got) == 1 and re.search(r"would run for about [\d,]+ h;", got[0]), got


def test_data_directory_larger_than_the_free_space(tmp: Path) -> None:
    study = _study(tmp, rows=2_000_000_000, tables=2)
    result = preflight.check(study)
    free = shutil.disk_usage(tmp).free
    assert result.estimate.data_bytes > 2 * 2_000_000_000 * sysbench.ROW_BYTES
    if result.estimate.data_bytes <= preflight.FULL_SHARE * free:
        pytest.skip("a filesystem with more than a terabyte free")
    got = _at(result.warnings, study, "workspace")
    assert len(got) == 1 and "free space of the filesystem holding" in got[0]


def test_placement_split_needs_two_cpus(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0})
    study = _study(tmp, end='[measure]\nplacement = "split"\n')
    got = _at(preflight.check(study).problems, study, "measure.placement")
    assert got and "needs two CPUs" in got[0]


def test_range_workloads_match_the_load_client() -> None:
    try:
        binary = paths.load_binary()
    except Exception:
        pytest.skip("the load client is not built")
    out = subprocess.run([binary, "list", "--json"], capture_output=True, text=True, check=True).stdout
    uses = {w["name"] for w in map(json.loads, out.splitlines()) if w["uses_range"]}
    assert uses == sysbench.USES_RANGE


def test_describe_is_one_plain_line() -> None:
    e = preflight.Estimate(
        seconds=5100,
        parts={"builds": 600, "steps": 4500},
        builds_needed=2,
        data_bytes=2_400_000_000,
        cells=48,
    )
    assert preflight.describe(e) == (
        "estimated wall time 1 h 25 min (2 builds ≈ 10 min, 48 cells); largest data directory ≈ 2.4 GB"
    )
    e = preflight.Estimate(seconds=42, parts={"steps": 42}, builds_needed=0, data_bytes=60_000_000, cells=1)
    assert preflight.describe(e) == "estimated wall time 42 s (1 cell); largest data directory ≈ 60 MB"


def test_a_build_valgrind_cannot_run_is_said_before_the_run(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """-march=native on a CPU with AVX-512: the target gets no instruction counts, and validate says so."""
    for name, flags in (("avx512", {"sse4_2", "avx2", "avx512f"}), ("avx2", {"sse4_2", "avx2"})):
        monkeypatch.setattr(preflight.instructions, "host_cpu_flags", lambda flags=flags: set(flags))
        (tmp / name).mkdir()
        study = _study(tmp / name, b_source="15.18", b_variant="o3_native", end="[measure]\ninstructions = true\n")
        found = _at(preflight.check(study).warnings, study, "targets[1].variant")
        if name == "avx512":
            assert found and "valgrind cannot run a build with -march=native" in found[0], found
        else:
            assert not found


def test_counts_only_is_estimated_without_the_cells_and_the_builds_it_cannot_count(
    tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """run --counts-only: no cell and no timed step in the estimate; a -march=native target on a CPU with
    AVX-512 is neither counted nor built, elsewhere it is both."""
    passes = {}
    for name, flags in (("avx512", {"avx2", "avx512f"}), ("avx2", {"avx2"})):
        monkeypatch.setattr(preflight.instructions, "host_cpu_flags", lambda flags=flags: set(flags))
        (tmp / name).mkdir()
        study = _study(tmp / name, b_source="15.18", b_variant="o3_native", end="[measure]\ninstructions = true\n")
        full = preflight.estimate(study)
        only = preflight.estimate(study, counts_only=True)
        assert full.cells == 4 and only.cells == 0 and only.parts["steps"] == 0 == only.parts["loads"]
        assert full.builds_needed == 1 and only.builds_needed == (0 if name == "avx512" else 1)
        assert only.parts["instructions"] == full.parts["instructions"] > 0
        assert "instruction counts only); largest data directory" in preflight.describe(only)
        passes[name] = full.parts["instructions"]
    assert passes["avx512"] == pytest.approx(passes["avx2"] / 2)  # one target's pass, not two


def test_a_compiler_that_is_not_installed_is_named_with_its_package(tmp: Path) -> None:
    path = tmp / "c.toml"
    path.write_text(
        f'name = "c"\nengine = "postgres"\nbase = "gcc"\nworkspace = "{tmp / "ws"}"\n'
        '[suite]\nsteps = ["point-query"]\n'
        '[[targets]]\nname = "gcc"\nsource = "15.18"\nvariant = "o3"\nconfig = "cx10a_c2r24"\n'
        '[[targets]]\nname = "old"\nsource = "15.18"\nvariant = "o3"\ncompiler = "gcc-7"\nconfig = "cx10a_c2r24"\n'
    )
    study = load_study(path)
    assert [t.label for t in study.targets] == ["gcc", "old"]
    result = preflight.check(study)
    assert any(
        "variant 'o3+gcc-7': the compiler gcc-7 is not installed; install it with `apt-get install gcc-7 g++-7`" in m
        for m in _at(result.problems, study, "targets[1].variant")
    ), result.problems
