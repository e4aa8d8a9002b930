"""Build recipes and the build cache without the build cache: the built-in variants and the study's own,
the cache key, what is refused before building, and a toy recipe of another kind (no configure, a plain
Makefile, built from local files in seconds) that shows the cache knows no engine. Real Postgres builds:
e2e/test_build.py."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from dbsweep.build import bolt, cache, variants
from dbsweep.build.compiler import Compiler, compiler_for, output
from dbsweep.build.objects import Status
from dbsweep.build.recipe import Facts, Phase, Recipe, Step, TrainingRun
from dbsweep.build.variants import Variant
from dbsweep.cli import _pgo_words
from dbsweep.engines.base import Install
from dbsweep.engines.postgres.build import CONTRIB, RECIPE, PostgresRecipe, Training
from dbsweep.errors import DbsweepError, StudyError
from dbsweep.sources import SourceTree

from ..conftest import Recorder

VERSION = "15.18"


@pytest.fixture
def tree(tmp_path: Path) -> SourceTree:
    """A Postgres source tree as the cache keys it: its identity and version (nothing is built from it here)."""
    path = tmp_path / f"postgresql-{VERSION}"
    path.mkdir()
    return SourceTree(f"debian:{VERSION}", "debian", path, VERSION, "sha256:" + "a" * 64)


def test_builtin_variants_follow_the_method() -> None:
    flags = {name: (v.cflags_str, v.ldflags_str, v.pgo) for name, v in variants.BUILTINS.items()}
    assert flags == {
        "def": ("", "", False),
        "o2_nofp": ("-O2 -fno-omit-frame-pointer", "", False),
        "o3": ("-O3", "", False),
        "o3_native": ("-O3 -march=native -mtune=native", "", False),
        # Linked with relocations (code unchanged): their BOLT variants rewrite a copy of that very build.
        "o3_native_lto": ("-O3 -march=native -mtune=native -flto=auto", "-flto=auto -Wl,--emit-relocs", False),
        "o3_lto": ("-O3 -flto=auto", "-flto=auto", False),  # portable: valgrind counts it on any x86-64
        "os": ("-Os", "", False),
        "pgo": ("-O2", "", True),
        "pgo_lto": ("-O2 -flto=auto", "-flto=auto", True),
        # BOLT on the engine's own build, on the strongest one, and on PGO + LTO (test_bolt).
        "bolt": ("", "-Wl,--emit-relocs", False),
        "o3_native_lto_bolt": ("-O3 -march=native -mtune=native -flto=auto", "-flto=auto -Wl,--emit-relocs", False),
        "pgo_lto_bolt": ("-O2 -flto=auto", "-flto=auto -Wl,--emit-relocs", True),
    }
    v = variants.builtin("def")
    assert RECIPE.options(v, "15.18") == ["--enable-debug", "--with-lz4"]
    assert RECIPE.options(v, "16.4") == ["--enable-debug", "--with-lz4"]  # ICU is on by default from 16
    assert RECIPE.options(v, "18.1") == ["--enable-debug", "--with-lz4", "--with-liburing"]
    assert RECIPE.options(v, "13.20") == ["--enable-debug"]
    assert RECIPE.options(Variant("x", configure=("--with-icu",)), "15.18")[-1] == "--with-icu"
    with pytest.raises(DbsweepError, match="unknown build variant 'o9'"):
        variants.builtin("o9")


def test_cache_key_covers_what_changes_the_binary(tree: SourceTree) -> None:
    gcc = Compiler("gcc", "gcc (Debian 12.2.0-14+deb12u1) 12.2.0", None)
    base = variants.builtin("o2_nofp")
    key = cache.cache_key(RECIPE, tree, base, gcc)
    renamed = Variant("my_o2", cflags=base.cflags)
    assert cache.cache_key(RECIPE, tree, renamed, gcc) == key  # the name does not change the binary
    # The training only matters to PGO builds.
    assert cache.cache_key(PostgresRecipe(Training(seconds=5)), tree, base, gcc) == key
    other_tree = SourceTree(tree.spec, tree.kind, tree.path, tree.version, "sha256:" + "0" * 64)
    changed = [
        cache.cache_key(RECIPE, tree, Variant("x", cflags=("-O2",)), gcc),
        cache.cache_key(RECIPE, tree, base, Compiler("gcc", "gcc 13.1.0", None)),
        cache.cache_key(RECIPE, other_tree, base, gcc),
        cache.cache_key(RECIPE, tree, Variant("x", cflags=base.cflags, configure=("--with-icu",)), gcc),
        cache.cache_key(RECIPE, tree, variants.builtin("pgo"), gcc),
        cache.cache_key(PostgresRecipe(Training(seconds=5)), tree, variants.builtin("pgo"), gcc),
        cache.cache_key(RECIPE, tree, base, gcc, copy=1),  # a separate build of the same source
        cache.cache_key(RECIPE, tree, base, gcc, copy=2),
    ]
    assert len({key, *changed}) == len(changed) + 1
    assert cache.cache_key(RECIPE, tree, base, gcc, copy=0) == key  # the shared build keeps its key
    assert cache.entry_name(RECIPE, tree, base, key, 1).startswith(f"postgres-{tree.version}-o2_nofp.copy1-")


def test_a_clang_build_carries_debug_information_valgrind_reads() -> None:
    """clang 14's DWARF 5 stops valgrind 3.19 ("Possibly corrupted debuginfo file"): a clang variant compiles with
    -gdwarf-4, beside its own flags or the build's default level, and its key says so; gcc's keys do not change."""
    clang = Variant("c", compiler="clang")
    assert clang.debug_cflags == ("-gdwarf-4",) and clang.recipe()["debug_cflags"] == ["-gdwarf-4"]
    assert Variant("g").debug_cflags == () and "debug_cflags" not in Variant("g").recipe()
    assert Variant("c15", compiler="clang-15", cflags=("-O3",)).debug_cflags == ("-gdwarf-4",)


def test_study_variant_tables() -> None:
    v = variants.from_table(
        {"name": "clang_o3", "compiler": "clang", "cflags": "-O3  -g1", "configure": ["--with-icu"], "ldflags": ""}
    )
    assert v == Variant("clang_o3", compiler="clang", cflags=("-O3", "-g1"), configure=("--with-icu",))
    assert v.recipe() == {
        "compiler": "clang",
        "cflags": ["-O3", "-g1"],
        "ldflags": [],
        "configure": ["--with-icu"],
        "configure_vars": {},
        "pgo": False,
        "debug_cflags": ["-gdwarf-4"],
    }
    lto = variants.from_table({"name": "lto", "cflags": ["-O2", "-flto"], "configure_vars": {"AR": "gcc-ar"}})
    assert lto.configure_vars == (("AR", "gcc-ar"),)


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ({"name": "x", "cflags": 3}, 'variant "x": cflags: must be a string of flags or a list of strings'),
        ({"name": "x", "ldflags": ["-flto", 1]}, 'variant "x": ldflags: must be'),
        ({"name": "x", "compiler": "icc"}, "variant \"x\": compiler: 'icc' is not supported"),
        ({"name": "x", "configure": "--with-icu"}, 'variant "x": configure: must be a list'),
        ({"name": "x", "configure": ["with-icu"]}, "variant \"x\": configure[0]: 'with-icu' is not a configure option"),
        (
            {"name": "x", "configure": ["--prefix=/opt"]},
            "variant \"x\": configure[0]: '--prefix=/opt' is set by dbsweep",
        ),
        ({"name": "x", "pgo": "yes"}, 'variant "x": pgo: must be true or false'),
        (
            {"name": "x", "compiler": "clang", "pgo": True},
            'variant "x": pgo: profile-guided builds are supported with gcc',
        ),
        ({"name": "x", "configure_vars": {"CC": "tcc"}}, 'variant "x": configure_vars.CC: set it with'),
        ({"name": "x", "cflag": "-O2"}, 'variant "x": cflag: unknown field'),
        ({"name": "a/b"}, "variant: name: 'a/b' is not a name"),
        ({"cflags": "-O2"}, "variant: name: None is not a name"),
    ],
)
def test_variant_table_errors_name_the_field(table: dict[str, object], expected: str) -> None:
    with pytest.raises(StudyError) as info:
        variants.from_table(table)
    assert any(p.startswith(expected) for p in info.value.problems), info.value.problems


def test_pgo_with_clang_is_refused_before_building(tree: SourceTree, tmp_path: Path) -> None:
    clang_pgo = Variant("clang_pgo", compiler="clang", cflags=("-O2",), pgo=True)
    with pytest.raises(DbsweepError, match="gcc only"):
        cache.build(RECIPE, tree, clang_pgo, tmp_path / "builds")
    assert not (tmp_path / "builds").exists()


# ---- the cache with a recipe of another kind --------------------------------------------------------------

TOY_MAKEFILE = """\
toy: toy.o
\t$(CC) $(CFLAGS) $(LDFLAGS) -o toy toy.o
toy.o: toy.c
\t$(CC) $(CFLAGS) -c -o toy.o toy.c
"""
TOY_C = """\
#include <stdio.h>
int main(void) { long s = 0; for (long i = 0; i < 1000000; i++) s += i % 7; printf("toy 1.0\\n"); return s < 0; }
"""


class ToyRecipe(Recipe):
    """A tool whose Makefile builds in its tree (as RocksDB's db_bench would be): the tree is copied first."""

    engine = "toy"
    artefact = "bin/toy"
    supports_pgo = True

    def __init__(self) -> None:
        self.trained: list[Path] = []

    def options(self, variant: Variant, version: str) -> list[str]:
        return list(variant.configure)

    def configure(self, phase: Phase) -> list[Step]:
        return [Step("copy the tree", ("cp", "-a", f"{phase.tree.path}/.", "."))]

    def compile(self, phase: Phase) -> list[Step]:
        flags = [f"CC={phase.compiler}", f"CFLAGS={' '.join(phase.cflags)}", f"LDFLAGS={' '.join(phase.ldflags)}"]
        return [Step("make", ("make", *flags, *phase.tool_args), compiles=True)]

    def install(self, phase: Phase) -> list[Step]:
        return [Step("install", ("install", "-D", "toy", f"{phase.destdir or ''}{phase.prefix}/bin/toy"))]

    def probe(self, install_dir: Path) -> dict[str, object]:
        return {"toy": {"version": output([str(install_dir / "bin" / "toy")]).strip()}}

    def facts(self, record: object) -> Facts:
        assert isinstance(record, dict)
        return Facts(record["toy"]["version"], "cc", "", "", "")

    def install_of(self, bindir: Path, source: str, provenance: dict[str, object]) -> Install:
        return Install(bindir, str(provenance["version"]), source, provenance)

    def train(self, run: TrainingRun) -> None:
        self.trained.append(run.install_dir)
        subprocess.run([run.install_dir / "bin" / "toy"], check=True, capture_output=True)


def _toy_tree(path: Path) -> SourceTree:
    path.mkdir(parents=True)
    (path / "Makefile").write_text(TOY_MAKEFILE)
    (path / "toy.c").write_text(TOY_C)
    return SourceTree(f"dir:{path}", "dir", path, "1.0", "dir:sha256:" + "1" * 64)


def test_a_recipe_of_another_kind_is_built_cached_and_profiled(tmp_path: Path) -> None:
    toy, tree, root = ToyRecipe(), _toy_tree(tmp_path / "src"), tmp_path / "builds"
    o1 = Variant("o1", cflags=("-O1",))
    rec = Recorder()
    b = cache.build(toy, tree, o1, root, log=rec.log, progress=rec.on_progress)
    assert b.name == f"toy-1.0-o1-{b.key[:12]}" and b.engine == "toy"
    assert subprocess.run([b.bindir / "toy"], capture_output=True, text=True, check=True).stdout == "toy 1.0\n"
    assert b.configure_command == ("cp", "-a", f"{tree.path}/.", ".")
    assert b.metadata["objects"] == 1 and b.metadata["toy"] == {"version": "toy 1.0"}
    assert b.install.provenance["version"] == "toy 1.0" and b.install.source == tree.spec
    assert [f for f, _ in rec.progress][-1] == 1.0
    assert cache.find(toy, tree, o1, root) == b
    assert cache.list_builds(root, toy) == [b]
    assert cache.list_builds(root, RECIPE) == []  # a Postgres recipe sees no toy build
    assert cache.cache_key(toy, tree, o1, compiler_for(o1)) != cache.cache_key(RECIPE, tree, o1, compiler_for(o1))

    pgo = cache.build(toy, tree, Variant("pgo", cflags=("-O2",), pgo=True), root)
    assert len(toy.trained) == 1 and not toy.trained[0].exists()  # the instrumented install was scratch
    assert pgo.metadata["pgo"]["profile_files"] >= 1 and not pgo.ccache
    assert "-fprofile-use=" in " ".join(pgo.configure_command) or "-fprofile-use=" in pgo.log_path.read_text()

    bad = Variant("bad", cflags=("-fno-such-flag",))
    with pytest.raises(DbsweepError, match="failed: make exited with code") as info:
        cache.build(toy, tree, bad, root)
    assert "-fno-such-flag" in str(info.value)
    assert [p.name for p in (root / "failed").iterdir()] == [
        f"toy-1.0-bad-{cache.cache_key(toy, tree, bad, compiler_for(bad))[:12]}.log"
    ]
    assert not [p for p in root.iterdir() if p.name.startswith(".tmp-")]


class StrictToy(ToyRecipe):
    """The toy whose optimised compile fails where an object has no profile (gcc's -Wmissing-profile as an
    error), and that can be told to fail its optimised compile outright."""

    def __init__(self) -> None:
        super().__init__()
        self.fail_optimised = False

    def optimised(self, phase: Phase, profile: Path) -> Phase:
        p = super().optimised(phase, profile)
        cflags = tuple(f for f in p.cflags if f != "-Wno-missing-profile")
        return replace(p, cflags=(*cflags, "-Werror=missing-profile", *(("-fno-such-flag",) * self.fail_optimised)))


def test_pgo_and_pgo_lto_share_one_instrumented_build_and_training(tmp_path: Path) -> None:
    """The method's pgogen / pgouse / pgouse_lto: one instrumented build without LTO and one training make the
    profile both PGO builds use. It is kept under the root, so a failed optimised phase does not train again."""
    toy, tree, root = StrictToy(), _toy_tree(tmp_path / "src"), tmp_path / "builds"
    pgo, pgo_lto = variants.builtin("pgo"), variants.builtin("pgo_lto")
    kept = cache.Profile.of(toy, tree, pgo_lto, root)
    assert kept == cache.Profile.of(toy, tree, pgo, root)
    assert kept.key == cache.cache_key(toy, tree, pgo, compiler_for(pgo))

    toy.fail_optimised = True
    with pytest.raises(DbsweepError, match="-fno-such-flag") as info:
        cache.build(toy, tree, pgo, root)
    assert "if that profile is at fault" not in str(info.value)  # a profile trained now: not the one to blame
    assert len(toy.trained) == 1 and kept.facts() is not None  # trained, and the profile kept
    assert kept.facts()["instrumented_recipe"] == pgo.recipe()  # type: ignore[index]
    assert not [p.name for p in root.iterdir() if p.name.startswith((".tmp-", ".pgo-"))]
    # A failure with a kept profile names it, in case it is what is at fault.
    with pytest.raises(DbsweepError, match=f"compiled with the profile kept in {kept.dir}; if that profile is at"):
        cache.build(toy, tree, pgo, root)
    assert len(toy.trained) == 1

    toy.fail_optimised = False
    rec = Recorder()
    first = cache.build(toy, tree, pgo, root, progress=rec.on_progress)
    assert len(toy.trained) == 1  # from the kept profile: no instrumented build, no training
    assert first.metadata["pgo"]["profile_reused"] and first.metadata["pgo"]["profile_of"] == "pgo"
    assert first.metadata["objects"] == 1 and [f for f, _ in rec.progress][-1] == 1.0
    assert f"-fprofile-use={kept.data}" in first.log_path.read_text()  # found: -Werror=missing-profile passed

    second = cache.build(toy, tree, pgo_lto, root)
    assert len(toy.trained) == 1 and second.metadata["pgo"]["profile_key"] == kept.key
    log = second.log_path.read_text()
    assert "-flto=auto" in log and f"-fprofile-use={kept.data}" in log
    assert second.metadata["pgo"]["instrumented_recipe"]["cflags"] == ["-O2"]  # the profile's build had no LTO
    # `dbsweep builds` says whose profile a PGO build was made with.
    assert (_pgo_words(first.metadata), _pgo_words(second.metadata)) == (
        "(PGO, its kept profile)",
        "(PGO, pgo's kept profile)",
    )
    assert subprocess.run([second.bindir / "toy"], capture_output=True, text=True, check=True).stdout == "toy 1.0\n"
    assert not [p.name for p in root.iterdir() if p.name.startswith((".tmp-", ".pgo-"))]

    shutil.rmtree(kept.dir)
    assert cache.find(toy, tree, pgo_lto, root) == second  # a kept profile is not part of a build's identity


def test_a_kept_profile_is_found_by_its_key_where_its_objects_were(tmp_path: Path) -> None:
    """A study's own PGO pair shares a profile as pgo and pgo_lto do, whatever they are named. A root that moved
    has other object paths, where gcc would find none of the profile and say nothing: it is trained again.
    Leftovers of a killed PGO build are swept by the next build in the root."""
    toy, tree, root = StrictToy(), _toy_tree(tmp_path / "src"), tmp_path / "builds"
    mine = Variant("mine", cflags=("-O1",), pgo=True)
    mine_lto = Variant("mine_lto", cflags=("-O1", "-flto=auto"), ldflags=("-flto=auto",), pgo=True)
    (root / ".pgo-0123456789ab" / "build").mkdir(parents=True)  # a killed build's
    (root / cache.PROFILES / ".tmp-toy-1.0-0123").mkdir(parents=True)
    cache.build(toy, tree, mine_lto, root)
    assert not (root / ".pgo-0123456789ab").exists() and not (root / cache.PROFILES / ".tmp-toy-1.0-0123").exists()
    first = cache.build(toy, tree, mine, root)
    assert len(toy.trained) == 1 and first.metadata["pgo"]["trained_for"] == "mine_lto"
    assert _pgo_words(first.metadata) == "(PGO, mine_lto's kept profile)"

    moved = tmp_path / "moved"
    root.rename(moved)
    again = cache.build(toy, tree, variants.builtin("pgo_lto"), moved)  # -Werror=missing-profile: found
    assert len(toy.trained) == 2 and not again.metadata["pgo"]["profile_reused"]
    assert cache.Profile.of(toy, tree, mine, moved).facts() is None  # trained where the root was before

    # Reached through a symlink, the root is the same one: its profiles and object paths are the real ones.
    link = tmp_path / "link"
    link.symlink_to(moved)
    pgo = cache.build(toy, tree, variants.builtin("pgo"), link)
    assert len(toy.trained) == 2 and pgo.metadata["pgo"]["profile_reused"]


def test_a_source_build_cached_without_its_profile_is_said(tmp_path: Path) -> None:
    """pgo built before its profile was kept (or the profile removed): pgo_lto trains one of its own, and the
    build says the two now differ in their training too."""
    toy, tree, root = StrictToy(), _toy_tree(tmp_path / "src"), tmp_path / "builds"
    cache.build(toy, tree, variants.builtin("pgo"), root)
    shutil.rmtree(root / cache.PROFILES)
    rec = Recorder()
    b = cache.build(toy, tree, variants.builtin("pgo_lto"), root, log=rec.log)
    assert len(toy.trained) == 2
    assert "is cached without its PGO profile, so pgo_lto trains a profile of its own" in b.metadata["pgo_warning"]
    assert any("not only in LTO" in line for line in rec.messages)


def test_the_profile_source_of_a_variant() -> None:
    pgo, pgo_lto = variants.builtin("pgo"), variants.builtin("pgo_lto")
    assert variants.profile_source(pgo) is pgo and variants.profile_source(pgo_lto) == pgo
    by12 = variants.profile_source(variants.with_compiler(pgo_lto, "gcc-12"))
    assert by12.name == "pgo+gcc-12" and by12.compiler == "gcc-12" and "-flto=auto" not in by12.cflags
    # pgo_lto_bolt's base is compiled and linked for BOLT, which changes no counted code: pgo's profile too.
    base = variants.bolt_base(variants.builtin("pgo_lto_bolt"))
    assert base.split_cflags and variants.profile_source(base) == pgo
    by12 = variants.with_compiler(variants.builtin("pgo_lto_bolt"), "gcc-12")
    assert variants.profile_source(variants.bolt_base(by12)).name == "pgo+gcc-12"
    own = Variant("mine", cflags=("-O3", "-flto=4", "-ffat-lto-objects"), ldflags=("-flto=4",), pgo=True)
    assert variants.profile_source(own) == replace(
        own, name="mine_gen", cflags=("-O3",), ldflags=(), description=variants.profile_source(own).description
    )


@pytest.mark.skipif(bolt.tool() is None, reason="no llvm-bolt installed (scripts/setup.sh installs bolt-19)")
def test_a_bolt_build_rewrites_a_copy_of_its_base_build(tmp_path: Path) -> None:
    """PGO + BOLT: the PGO build is made once, as an entry of its own, and BOLT rewrites a copy of it (its profile
    included), training once more; a second BOLT build of it makes no PGO build again."""
    toy, tree, root = ToyRecipe(), _toy_tree(tmp_path / "src"), tmp_path / "builds"
    v = Variant("pgo_bolt", cflags=("-O2",), ldflags=("-Wl,--emit-relocs",), pgo=True, bolt=True, for_bolt=True)
    rec = Recorder()
    b = cache.build(toy, tree, v, root, progress=rec.on_progress)
    base = cache.find(toy, tree, variants.bolt_base(v), root)
    assert base is not None and base.name.startswith("toy-1.0-pgo_bolt_base-") and base.variant == "pgo_bolt_base"
    assert "-O2 -fno-reorder-blocks-and-partition" in base.log_path.read_text()  # compiled for BOLT
    assert len(toy.trained) == 2  # PGO's training, then BOLT's: one PGO build
    assert b.metadata["bolt_of"] == {"name": base.name, "key": base.key, "created": base.created}
    assert b.metadata["pgo"] == base.metadata["pgo"] and b.configure_command == base.configure_command
    assert b.metadata["bolt"]["profile_files"] >= 1 and b.metadata["objects"] == 0
    assert (b.bindir / "toy").read_bytes() != (base.bindir / "toy").read_bytes()  # rewritten, the base untouched
    assert subprocess.run([b.bindir / "toy"], capture_output=True, text=True, check=True).stdout == "toy 1.0\n"
    fractions = [f for f, _ in rec.progress]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0  # the base's share first, never backwards
    again = cache.build(toy, tree, replace(v, name="pgo_bolt2"), root)  # same recipe, same key: cached
    assert again.key == b.key and len(toy.trained) == 2
    other = Variant("o1_bolt", cflags=("-O1",), ldflags=("-Wl,--emit-relocs",), bolt=True)
    heard: list[Status] = []
    cache.build(toy, tree, other, root, status=heard.append)
    assert len(toy.trained) == 3  # BOLT's training alone: its base (not PGO) has none
    bolts = [s for s in heard if s.stage.startswith("BOLT")]
    assert bolts and all(s.objects_total == 0 and s.fraction >= cache.BASE_SHARE for s in bolts)


@pytest.mark.skipif(bolt.tool() is None, reason="no llvm-bolt installed (scripts/setup.sh installs bolt-19)")
def test_a_function_bolt_cannot_move_is_left_as_it_is_and_bolt_run_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """BOLT 19 refused Postgres's ExecInterpExpr ("unable to get new address ... Consider adding this function to
    --skip-funcs"): the build leaves that function as it is and runs llvm-bolt again, and records it. Here an
    llvm-bolt that says so of `main` until it is told to skip it, then is the real one."""
    real = bolt.require()
    wrapper = tmp_path / "llvm-bolt"
    wrapper.write_text(
        "#!/bin/sh\n"
        'case "$*" in *--skip-funcs=main*) ;; *)\n'
        "  echo 'BOLT-ERROR: unable to get new address corresponding to input address 0x1139 in function "
        "main/1(*2). Consider adding this function to --skip-funcs=...'; exit 1;;\n"
        "esac\n"
        f'exec {real.bolt} "$@"\n'
    )
    wrapper.chmod(0o755)
    monkeypatch.setattr(bolt, "require", lambda: replace(real, bolt=wrapper))
    toy, tree, root = ToyRecipe(), _toy_tree(tmp_path / "src"), tmp_path / "builds"
    b = cache.build(toy, tree, Variant("o1_bolt", cflags=("-O1",), ldflags=("-Wl,--emit-relocs",), bolt=True), root)
    assert b.metadata["bolt"]["left_as_they_are"] == ["main/1"]  # as --skip-funcs takes it
    assert "BOLT cannot move main/1: it is left as it is" in b.log_path.read_text()
    assert subprocess.run([b.bindir / "toy"], capture_output=True, text=True, check=True).stdout == "toy 1.0\n"


def test_cache_key_covers_the_modules_installed_beside_the_engine(tree: SourceTree) -> None:
    """A build made before a contrib module joined the list lacks it: it must not be taken from the cache."""
    gcc = Compiler("gcc", "gcc (Debian 12.2.0-14+deb12u1) 12.2.0", None)
    v = variants.builtin("o2_nofp")
    assert "pg_prewarm" in RECIPE.extra_installs()

    class Fewer(type(RECIPE)):  # type: ignore[misc]
        def extra_installs(self) -> list[str]:
            return ["pg_stat_statements"]

    fewer = Fewer.__new__(Fewer)
    fewer.__dict__.update(RECIPE.__dict__)
    assert cache.cache_key(fewer, tree, v, gcc) != cache.cache_key(RECIPE, tree, v, gcc)


def test_only_what_a_benchmark_runs_is_built_and_installed(tree: SourceTree, tmp_path: Path) -> None:
    """The server and what it loads, initdb, pg_ctl, pg_config and psql, in src/Makefile's order; no ecpg, no
    dump, backup or upgrade tools, no tests; a configure option that adds a part (a PL, the JIT) adds its make."""
    phase = Phase(tree, variants.builtin("def"), "gcc", tmp_path, tmp_path / "p", tmp_path / "d", (), (), 2, True)
    headers, *parts = RECIPE.compile(phase)
    # The generated headers before any part: with -j a part's compiles would not wait for them.
    assert headers.argv == ("make", "-j2", "CC=ccache gcc", "-C", "src/backend", "generated-headers")
    made = [s.argv for s in parts]
    assert all(s.compiles for s in parts)
    assert made[0] == ("make", "-j2", "CC=ccache gcc", "-C", "src/common")
    dirs = [argv[-1] for argv in made]
    assert dirs.index("src/backend") < dirs.index("src/bin/initdb") and "src/pl/plpgsql" in dirs
    assert not [d for d in dirs if d.startswith(("src/interfaces/ecpg", "src/test", "src/bin/pg_dump"))]
    installs = [s.argv for s in RECIPE.install(phase)]
    assert [a[-1] for a in installs[: len(dirs)]] == ["install"] * len(dirs)
    assert [a[a.index("-C") + 1] for a in installs[: len(dirs)]] == dirs
    assert f"DESTDIR={tmp_path / 'd'}" in installs[0]
    assert [a[a.index("-C") + 1] for a in installs[len(dirs) :]] == [f"contrib/{m}" for m in CONTRIB]
    python = Phase(tree, Variant("py", configure=("--with-python",)), "gcc", tmp_path, tmp_path, None, (), (), 2, False)
    assert [s.argv[-1] for s in RECIPE.compile(python)][-1] == "src/pl/plpython"


def test_a_target_may_build_its_variant_with_another_compiler(tree: SourceTree) -> None:
    """The compiler axis: a variant's flags under another compiler, its own name and key; clang with PGO refused."""
    o3 = variants.builtin("o3")
    v = variants.resolve_for("o3", "gcc-11")
    assert (v.name, v.compiler, v.cflags) == ("o3+gcc-11", "gcc-11", o3.cflags)
    assert variants.resolve_for("o3", None) is o3 and variants.with_compiler(o3, "gcc") is o3
    assert variants.resolve_for("o3", "clang-16").debug_cflags == ("-gdwarf-4",)
    gcc11 = Compiler("gcc-11", "gcc-11 (Debian 11.3.0-12) 11.3.0", None)
    gcc12 = Compiler("gcc", "gcc (Debian 12.2.0-14+deb12u1) 12.2.0", None)
    assert cache.cache_key(RECIPE, tree, v, gcc11) != cache.cache_key(RECIPE, tree, o3, gcc12)
    with pytest.raises(DbsweepError, match="profile-guided, which is supported with gcc only"):
        variants.resolve_for("pgo", "clang-19")
    with pytest.raises(DbsweepError, match="'icc' is not a compiler"):
        variants.with_compiler(o3, "icc")


def test_a_missing_compiler_is_named_with_the_line_that_installs_it() -> None:
    from dbsweep.build import compiler

    assert compiler.install_line("gcc-11") == "apt-get install gcc-11 g++-11"
    assert compiler.install_line("gcc") == "apt-get install gcc g++"
    assert compiler.install_line("clang-16") == "apt-get install clang-16 lld-16 llvm-16"
    assert compiler.missing("gcc") is None
    assert compiler.missing("gcc-99") == (
        "the compiler gcc-99 is not installed; install it with `apt-get install gcc-99 g++-99`"
    )
    with pytest.raises(DbsweepError, match=r"variant 'o3\+gcc-99': the compiler gcc-99 is not installed"):
        compiler_for(variants.resolve_for("o3", "gcc-99"))


def test_a_clang_lto_build_archives_and_links_with_llvms_tools() -> None:
    """LTO objects are LLVM bitcode: the archiver and the linker are LLVM's, of the compiler's version."""
    v = variants.resolve_for("o3_native_lto", "clang-16")
    assert dict(v.configure_vars) == {"AR": "llvm-ar-16", "RANLIB": "llvm-ranlib-16", "NM": "llvm-nm-16"}
    assert v.ldflags == ("-flto=auto", "-Wl,--emit-relocs", "-fuse-ld=lld-16")  # lld 16: Debian's ld.lld is 14
    assert variants.resolve_for("o3_native_lto", "clang").ldflags[-1] == "-fuse-ld=lld"
    assert variants.resolve_for("o3", "clang-16").configure_vars == ()  # no LTO: binutils do
    assert dict(variants.resolve_for("o3_native_lto", "clang").configure_vars)["AR"] == "llvm-ar"
    assert variants.resolve_for("o3_native_lto", "gcc-11").configure_vars == ()
