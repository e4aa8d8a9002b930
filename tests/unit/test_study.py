"""Study files: bad input gets a message naming the file, the field and the problem."""

from __future__ import annotations

from pathlib import Path

import pytest

from dbsweep.errors import StudyError
from dbsweep.study import load_study

from .conftest import cli_process

GOOD = """\
engine = "postgres"
base = "a"
[suite]
steps = ["point-query"]
rows = 1000
read_seconds = 5
[[targets]]
name = "a"
config = "cx10a_c2r24"
[[targets]]
name = "b"
config = "cx10a_sb1g_c2r24"
"""


IBENCH = (
    GOOD.split("[suite]")[0]
    + """\
[[targets]]
name = "a"
config = "cx10a_c2r24"
[[targets]]
name = "b"
config = "cx10a_sb1g_c2r24"
[suite]
name = "ibench"
profile = "quick"
"""
)


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "x.toml"
    p.write_text(text)
    return p


def test_good_study_loads(tmp_path: Path) -> None:
    s = load_study(_write(tmp_path, GOOD))
    assert [t.label for t in s.targets] == ["a", "b"]
    assert s.base_target.config == "cx10a_c2r24"
    assert s.steps() == ["point-query_range=100"]
    assert s.suite.clients == [1]


BAD = [
    ("missing field", GOOD.replace('engine = "postgres"\n', ""), "engine: missing required field"),
    ("wrong type", GOOD.replace("rows = 1000", 'rows = "many"'), "suite.rows: expected an integer, got str 'many'"),
    ("unknown key", GOOD.replace("rows = 1000", "rows = 1000\nrowz = 5"), "suite.rowz: unknown key; allowed keys:"),
    (
        "unknown config",
        GOOD.replace('config = "cx10a_sb1g_c2r24"', 'config = "cx11"'),
        "targets[1].config: no config 'cx11' in configs/postgres; have: cx10a_avb_c2r24, ",
    ),
    ("base not a target", GOOD.replace('base = "a"', 'base = "zz"'), "base: 'zz' is not a target; have: a, b"),
    ("non-positive duration", GOOD.replace("read_seconds = 5", "read_seconds = 0"), "suite.read_seconds: must be > 0"),
    (
        "duplicate target",
        GOOD.replace('name = "b"', 'name = "a"'),
        "targets[1]: duplicate target name 'a' (also targets[0])",
    ),
    ("TOML syntax", GOOD.replace("rows = 1000", "rows = = 1000"), "not valid TOML: Invalid value (at line 5"),
    (
        "unknown step",
        GOOD.replace('"point-query"', '"point-qurey"'),
        "suite.steps[0]: unknown sysbench step 'point-qurey'; did you mean 'point-query_range=100'",
    ),
    ("unknown engine", GOOD.replace('"postgres"', '"oracle"'), "engine: 'oracle' is not allowed; expected 'postgres'"),
    (
        "bad variant",
        GOOD.replace('name = "b"', 'name = "b"\nvariant = "o9"'),
        "targets[1].variant: unknown variant 'o9'",
    ),
    ("negative clients", GOOD.replace("rows = 1000", "rows = 1000\nclients = [0]"), "suite.clients[0]: must be > 0"),
    (
        "bad source",
        GOOD.replace('name = "b"', 'name = "b"\nsource = "cvs:foo"'),
        "targets[1].source: unknown source 'cvs:foo'; use 'system'",
    ),
    (
        "variant on a prebuilt install",
        GOOD.replace('name = "b"', 'name = "b"\nsource = "system"\nvariant = "o3"'),
        "targets[1].variant: source 'system' is the prebuilt Postgres from Debian's packages, so its only variant",
    ),
    (
        "custom variant shadows a built-in",
        GOOD + '[[variants]]\nname = "o3"\ncflags = "-O3"\n',
        "variants[0].name: 'o3' is a built-in variant; choose another name",
    ),
    (
        "custom variant bad compiler",
        GOOD + '[[variants]]\nname = "mine"\ncompiler = "icc"\n',
        "variants[0].compiler: 'icc' is not a compiler: use 'gcc' or 'clang', or one of their versions",
    ),
    ("table expected", GOOD.replace("[suite]", "suite = 3\n[x]"), "suite: expected a table"),
    (
        "ibench without sizes",
        IBENCH.replace('profile = "quick"\n', ""),
        "suite.profile: set a profile (quick, small-server) or all of: load_rows, write_rows, rw_seconds",
    ),
    ("ibench unknown profile", IBENCH.replace('"quick"', '"huge"'), "suite.profile: 'huge' is not allowed"),
    ("ibench sysbench field", IBENCH + "rows = 5\n", "suite.rows: is not a setting of the ibench suite"),
    ("sysbench ibench field", GOOD.replace("rows = 1000", "rw_seconds = 5"), "suite.rw_seconds: is not a setting"),
    ("ibench two client counts", IBENCH + "clients = [1, 2]\n", "suite.clients: the ibench suite runs at one"),
    ("ibench step", IBENCH + 'steps = ["l.i0", "qr300"]\n', "suite.steps[1]: unknown ibench step 'qr300'"),
    ("ibench first step", IBENCH + 'steps = ["l.x"]\n', "suite.steps[0]: an ibench suite starts with l.i0"),
    ("slurm without classes", GOOD + '[hosts]\nscheduler = "slurm"\n', "hosts.classes: name at least one server"),
    (
        "classes run here",
        GOOD + '[[hosts.classes]]\nname = "s"\npartition = "p"\n',
        "hosts.classes: server classes are for a batch scheduler",
    ),
    (
        "class without nodes",
        GOOD + '[hosts]\nscheduler = "slurm"\n[[hosts.classes]]\nname = "s"\n',
        "hosts.classes[0]: name its nodes",
    ),
    (
        "class profile",
        GOOD + '[hosts]\nscheduler = "slurm"\n[[hosts.classes]]\nname = "s"\npartition = "p"\nprofile = "8c"\n',
        "hosts.classes[0].profile: '8c' is not a server size: write c<cores>r<GB of RAM>",
    ),
    (
        "class twice",
        GOOD + '[hosts]\nscheduler = "slurm"\n' + '[[hosts.classes]]\nname = "s"\npartition = "p"\n' * 2,
        "hosts.classes[1].name: duplicate class name 's'",
    ),
    ("unknown hosts key", GOOD + '[hosts]\nqueue = "x"\n', "hosts.queue: unknown key; allowed keys: scheduler"),
    (
        "counted step",
        GOOD + '[measure]\ninstructions = true\ninstruction_steps = ["insert"]\n',
        "measure.instruction_steps[0]: 'insert' is no step the study counts; it counts: load, point-query_range=100",
    ),
]


@pytest.mark.parametrize(("what", "text", "message"), BAD, ids=[b[0] for b in BAD])
def test_bad_study_is_reported(tmp_path: Path, what: str, text: str, message: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(StudyError) as e:
        load_study(path)
    assert any(message in p for p in e.value.problems), e.value.problems
    # Every problem names the file first.
    assert all(p.startswith(f"{path}: ") for p in e.value.problems), e.value.problems


def test_the_steps_counted_are_those_measure_names(tmp_path: Path) -> None:
    """measure.instruction_steps names a step as the report does, or its microbenchmark for every form of it."""
    text = GOOD.replace('steps = ["point-query"]', 'steps = ["point-query", "read-only", "read-only.pre", "insert"]')
    every = load_study(_write(tmp_path, text))
    assert list(every.counted_steps()) == list(every.bench.instruction_steps())
    assert {"load", "insert_range=100", "read-only.pre_range=100"} <= set(every.counted_steps())
    some = load_study(_write(tmp_path, text + '[measure]\ninstruction_steps = ["read-only", "insert_range=100"]\n'))
    assert set(some.counted_steps()) == {"read-only.pre_range=100", "read-only_range=100", "insert_range=100"}
    assert set(some.counted_steps().values()) <= set(every.counted_steps().values())
    # A step that shares its count with a named one comes with it.
    pre = load_study(_write(tmp_path, text + '[measure]\ninstruction_steps = ["read-only_range=100"]\n'))
    assert set(pre.counted_steps()) == {"read-only.pre_range=100", "read-only_range=100"}


def test_ibench_profile_and_overrides(tmp_path: Path) -> None:
    from dbsweep.suites.ibench import Ibench

    s = load_study(_write(tmp_path, IBENCH + "rw_seconds = 7\nclients = [2]\n"))
    assert s.steps() == ["l.i0", "l.x", "l.i1", "l.i2", "qr100", "qp100", "qr500", "qp500", "qr1000", "qp1000"]
    suite = s.bench
    assert isinstance(suite, Ibench)
    z = suite.sizes()
    assert (z.clients, z.load_rows, z.write_rows, z.rw_seconds) == (2, 1_000_000, 200_000, 7)
    assert suite.step_rows("l.i1") + suite.step_rows("l.i2") == 200_000
    assert suite.step_rows("qp500") == 7 * 500
    assert suite.command("qr1000", 2)[:2] == ["ibench", "qr1000"]
    assert suite.tables() == ["pi1", "pi2"]


def test_source_forms_and_custom_variants(tmp_path: Path) -> None:
    text = GOOD.replace('name = "b"', 'name = "b"\nsource = "debian:15.18"\nvariant = "mine"')
    text += '[[variants]]\nname = "mine"\ncompiler = "clang"\ncflags = "-O2 -fno-plt"\n'
    s = load_study(_write(tmp_path, text))
    assert s.targets[1].source == "debian:15.18" and s.variants[0].compiler == "clang"
    from dbsweep.study import source_kind

    assert [
        source_kind(x) for x in ("15.18", "15.18-0+deb12u1", "git:/x@v1", "tarball:a.tgz", "dir:/s", "system:17")
    ] == ["debian", "debian", "git", "tarball", "dir", "system"]
    assert source_kind("15") is None and source_kind("git:") is None


def test_missing_file_is_reported(tmp_path: Path) -> None:
    with pytest.raises(StudyError, match="no such study file"):
        load_study(tmp_path / "nope.toml")


def test_cli_validate_prints_errors_and_fails(tmp_path: Path, system_root: Path) -> None:
    path = _write(tmp_path, GOOD.replace('base = "a"', 'base = "zz"'))
    r = cli_process(system_root, "validate", path)
    assert r.returncode == 2
    assert "base: 'zz' is not a target; have: a, b" in r.stderr
    ok = cli_process(system_root, "validate", _write(tmp_path, GOOD))
    assert ok.returncode == 0, ok.stderr
    assert "2 targets" in ok.stdout and "4 cells" in ok.stdout


@pytest.mark.parametrize("path", sorted((Path(__file__).parents[2] / "studies").glob("*.toml")), ids=lambda p: p.name)
def test_every_shipped_study_reads_without_a_problem(path: Path) -> None:
    study = load_study(path)
    assert study.targets and study.base in {t.label for t in study.targets}


def test_the_first_study_is_counted_by_valgrind_on_any_cpu() -> None:
    """The README's first command must end decided by its instruction counts: no target may carry a flag that
    emits AVX-512 on some CPU, which valgrind cannot run."""
    from dbsweep.build import variants
    from dbsweep.measure.instructions import unrunnable_flags

    study = load_study(Path(__file__).parents[2] / "studies" / "first.toml")
    assert study.measure.instructions
    avx512 = {"avx512f", "avx512bw"}
    for t in study.targets:
        flags = " ".join(variants.builtin(t.variant).cflags)
        assert unrunnable_flags(flags, avx512) is None, (t.label, flags)


SLURM = GOOD.replace("read_seconds = 5\n", "read_seconds = 5\n{clients}") + (
    '[hosts]\nscheduler = "slurm"\nsetups = ["cached", "io-bound"]\n'
    '[[hosts.classes]]\nname = "small"\npartition = "p"\n'
    '[[hosts.classes]]\nname = "large"\nconstraint = "c8r32"\nprofile = "c8r32"\n'
)


def test_parts_are_a_study_per_class_and_setup_sized_by_the_class(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configs = tmp_path / "configs" / "postgres"
    configs.mkdir(parents=True)
    for name in ("cx10a_c2r24", "cx10a_sb1g_c2r24"):
        (configs / f"{name}.conf").write_text("shared_buffers = 128MB\n")
    (configs / "cx10a_c8r32.conf").write_text("shared_buffers = 16GB\n")  # the large class's size of cx10a only
    monkeypatch.setenv("DBSWEEP_CONFIGS", str(tmp_path / "configs"))
    s = load_study(_write(tmp_path, SLURM.format(clients="")))
    parts = {p.title: p for p in s.parts()}
    assert list(parts) == ["x.small.cached", "x.small.io-bound", "x.large.cached", "x.large.io-bound"]
    large, small = parts["x.large.io-bound"], parts["x.small.cached"]
    assert (large.part_class, large.part_setup, small.part_class, small.part_setup) == (
        "large",
        "io-bound",
        "small",
        "cached",
    )
    # The class's size chooses the clients (1 and cores/2) and the config written for it, where there is one.
    assert large.suite.clients == [1, 4] and [t.config for t in large.targets] == ["cx10a_c8r32", "cx10a_sb1g_c2r24"]
    assert small.suite.clients == [1] and [t.config for t in small.targets] == ["cx10a_c2r24", "cx10a_sb1g_c2r24"]
    assert [t.label for t in large.targets] == ["a", "b"]  # the targets keep their names
    # Clients the study names are its own on every class.
    named = load_study(_write(tmp_path, SLURM.format(clients="clients = [2]\n")))
    assert {p.title: p.suite.clients for p in named.parts()}["x.large.cached"] == [2]
    # A study without classes or setups is its one part.
    plain = load_study(_write(tmp_path, GOOD))
    assert plain.parts() == [plain]


def test_a_class_sizes_the_tables_the_study_leaves_unsized(tmp_path: Path) -> None:
    sized = SLURM.format(clients="").replace("rows = 1000\n", "").replace("setups", 'io_bound = "size"\nsetups')
    s = load_study(_write(tmp_path, sized.replace('partition = "p"\n', 'partition = "p"\nprofile = "c2r4"\n')))
    rows = {p.title: p.suite.rows for p in s.parts()}  # type: ignore[attr-defined]
    # A quarter of the class's memory cached (270 bytes a row), three times its memory io-bound.
    assert rows["x.large.cached"] == 32 * 2**30 // 4 // 270 and rows["x.small.cached"] == 4 * 2**30 // 4 // 270
    assert rows["x.large.io-bound"] == 3 * 32 * 2**30 // 270
    # Named, the size is the study's everywhere; capped, io-bound keeps the cached size.
    named = load_study(_write(tmp_path, SLURM.format(clients="")))
    assert {p.suite.rows for p in named.parts()} == {1000}  # type: ignore[attr-defined]
    capped = load_study(_write(tmp_path, SLURM.format(clients="").replace("rows = 1000\n", "")))
    r = {p.title: p.suite.rows for p in capped.parts()}  # type: ignore[attr-defined]
    assert r["x.large.io-bound"] == r["x.large.cached"]
    # Sized io-bound needs every class's size.
    with pytest.raises(StudyError) as e:
        load_study(_write(tmp_path, sized))
    said = "hosts.io_bound: 'size' sizes the tables by a server class's memory; small"
    assert any(said in p for p in e.value.problems), e.value.problems
