"""BOLT variants without building an engine: the variants and their keys, the relocations a rewrite needs (checked
on a real binary linked with and without them), the commands, and the tool's absence named with its package."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from dbsweep.build import bolt, cache, variants
from dbsweep.build.compiler import Compiler
from dbsweep.engines.postgres.build import RECIPE
from dbsweep.errors import DbsweepError, StudyError
from dbsweep.sources import SourceTree
from dbsweep.study import load_study

GCC = Compiler("gcc", "gcc (Debian 12.2.0-14+deb12u1) 12.2.0", None)
SPLIT = ("-fno-reorder-blocks-and-partition",)


def test_the_bolt_variants_keep_their_relocations_and_train() -> None:
    for name, flags_of in (("bolt", "def"), ("o3_native_lto_bolt", "o3_native_lto"), ("pgo_lto_bolt", "pgo_lto")):
        v, b = variants.builtin(name), variants.builtin(flags_of)
        assert v.bolt and not b.bolt and v.cflags == b.cflags and v.pgo == b.pgo, name
        assert "-Wl,--emit-relocs" in v.ldflags, name
        assert v.recipe()["bolt"] is True and "bolt" not in b.recipe()
        # Compiled without gcc's own hot/cold splitting, which BOLT 19 cannot take apart.
        assert v.split_cflags == SPLIT and v.recipe()["split_cflags"] == list(SPLIT) and not b.split_cflags, name
    mine = variants.from_table({"name": "mine", "cflags": "-O3", "bolt": True})
    assert mine.bolt and mine.ldflags == ("-Wl,--emit-relocs",) and mine.split_cflags == SPLIT
    with pytest.raises(DbsweepError, match="bolt: must be true or false"):
        variants.from_table({"name": "mine", "bolt": "yes"})


def test_bolt_rewrites_a_copy_of_its_base_build() -> None:
    """gcc's BOLT variants rewrite a build of their own, compiled for BOLT, which a study can name as a target
    (`<variant>_base`); clang's, which splits nothing by itself, rewrite a copy of that very build (o3_native_lto
    keeps its relocations)."""
    for name in ("bolt", "o3_native_lto_bolt", "pgo_lto_bolt"):
        v = variants.builtin(name)
        found = variants.bolt_base(v)
        assert found.name == f"{name}_base" and not found.bolt and found.split_cflags == SPLIT, name
        assert (found.cflags, found.ldflags, found.pgo) == (v.cflags, v.ldflags, v.pgo), name
        assert variants.resolve(f"{name}_base").recipe() == found.recipe() and f"{name}_base" in variants.BASES
    assert variants.bolt_base(variants.builtin("bolt")).recipe() != variants.builtin("def").recipe()
    clang = variants.with_compiler(variants.builtin("o3_native_lto_bolt"), "clang-16")
    assert not clang.split_cflags  # clang does not know the flag
    by_clang = variants.bolt_base(clang)
    assert by_clang.name == "o3_native_lto+clang-16"
    assert by_clang.recipe() == variants.with_compiler(variants.builtin("o3_native_lto"), "clang-16").recipe()
    assert variants.resolve_for("o3_native_lto_bolt_base", "clang-16").recipe() == by_clang.recipe()
    by_gcc12 = variants.bolt_base(variants.with_compiler(variants.builtin("pgo_lto_bolt"), "gcc-12"))
    assert by_gcc12.compiler == "gcc-12" and by_gcc12.split_cflags == SPLIT and by_gcc12.pgo
    mine = variants.bolt_base(variants.from_table({"name": "mine", "cflags": "-O3", "bolt": True}))
    assert mine.name == "mine_base" and mine.cflags == ("-O3",) and not mine.bolt and mine.split_cflags == SPLIT
    with pytest.raises(DbsweepError, match="pgo_lto_bolt_base"):  # the bases are listed with the variants
        variants.resolve("no_such_base")


def test_bolt_is_in_the_key(tmp_path: Path) -> None:
    tree = SourceTree("15.18", "debian", tmp_path, "15.18", "sha256:" + "1" * 64)
    plain = variants.Variant("x", ldflags=("-Wl,--emit-relocs",))
    with_bolt = variants.Variant("x", ldflags=("-Wl,--emit-relocs",), bolt=True)
    assert cache.cache_key(RECIPE, tree, plain, GCC) != cache.cache_key(RECIPE, tree, with_bolt, GCC)


def _binary(tmp_path: Path, *ldflags: str) -> Path:
    src = tmp_path / "main.c"
    src.write_text("int twice(int x) { return 2 * x; }\nint main(void) { return twice(0); }\n")
    out = tmp_path / ("with" if ldflags else "without")
    subprocess.run(["gcc", "-O2", str(src), "-o", str(out), *ldflags], check=True)
    return out


def test_a_binary_without_relocations_is_refused_with_the_flag_that_fixes_it(tmp_path: Path) -> None:
    with_relocs = _binary(tmp_path, "-Wl,--emit-relocs")
    assert bolt.has_relocations(with_relocs)
    bolt.check_relocations(with_relocs, "bin/with")
    without = _binary(tmp_path)
    assert not bolt.has_relocations(without)
    with pytest.raises(DbsweepError, match=r"BOLT cannot rewrite bin/postgres: .* Link it with -Wl,--emit-relocs"):
        bolt.check_relocations(without, "bin/postgres")


def test_the_commands_and_the_options_by_version(tmp_path: Path) -> None:
    t19 = bolt.Tool(Path("/usr/bin/llvm-bolt-19"), Path("/usr/bin/merge-fdata-19"), "LLVM version 19.1.7")
    t16 = bolt.Tool(Path("/usr/bin/llvm-bolt-16"), Path("/usr/bin/merge-fdata-16"), "LLVM version 16.0.6")
    assert "--reorder-functions=cdsort" in bolt.options(t19) and "--reorder-functions=hfsort" in bolt.options(t16)
    assert "--update-debug-sections" not in bolt.options(t19)  # beyond valgrind 3.19: the compiler's DWARF stays
    inst = bolt.instrument_command(t19, tmp_path / "postgres", tmp_path / "i", tmp_path / "p")
    assert inst[:3] == ["/usr/bin/llvm-bolt-19", str(tmp_path / "postgres"), "-instrument"]
    assert f"--instrumentation-file={tmp_path / 'p' / 'prof'}" in inst and "--instrumentation-file-append-pid" in inst
    opt = bolt.optimise_command(t19, tmp_path / "postgres", tmp_path / "o", tmp_path / "m.fdata")
    assert opt[2:5] == ["-o", str(tmp_path / "o"), f"--data={tmp_path / 'm.fdata'}"]


def test_no_llvm_bolt_is_named_with_its_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bolt, "tool", lambda: None)
    assert bolt.missing() == "llvm-bolt is not installed; install it with `apt-get install bolt-19`"
    with pytest.raises(DbsweepError, match="a BOLT variant needs llvm-bolt"):
        bolt.require()


@pytest.mark.parametrize(
    ("said", "name"),
    [
        (
            "BOLT-ERROR: unable to get new address corresponding to input address 0x2d2240 in function "
            "ExecInterpExpr/1(*2)",
            "ExecInterpExpr/1",
        ),
        # After LTO the name has the compiler's suffix, and BOLT ends its sentence right after it.
        (
            "BOLT-ERROR: unable to get new address corresponding to input address 0x43e761 in function "
            "ExecInterpExpr.lto_priv.0/1. Consider adding this function to --skip-funcs=...",
            "ExecInterpExpr.lto_priv.0/1",
        ),
        ("BOLT-ERROR: unable to get new address corresponding to input address 0x1 in function f\n", "f"),
        ("BOLT-INFO: 47290 instructions were shortened", None),
    ],
)
def test_the_function_bolt_cannot_move_is_named_as_skip_funcs_takes_it(said: str, name: str | None) -> None:
    assert bolt.unmovable(said) == name


def test_a_bolt_base_is_a_targets_variant_and_one_build_with_its_bolt_variants(tmp_path: Path) -> None:
    """`pgo_lto_bolt_base` by a compiler is the very build `pgo_lto_bolt` by that compiler rewrites (one name,
    one build in the estimate); as a target it is checked like any variant: profile-guided, so gcc only."""
    by_gcc12 = variants.resolve_for("pgo_lto_bolt_base", "gcc-12")
    assert by_gcc12 == variants.bolt_base(variants.with_compiler(variants.builtin("pgo_lto_bolt"), "gcc-12"))
    assert by_gcc12.name == "pgo_lto_bolt+gcc-12_base"
    assert variants.resolve_for("o3_native_lto_bolt_base", "clang-16").name == "o3_native_lto+clang-16"
    study = (
        'name = "b"\nengine = "postgres"\nbase = "a"\nworkspace = "{ws}"\n[suite]\nsteps = ["point-query"]\n'
        '[[targets]]\nname = "a"\nsource = "15.18"\nvariant = "pgo_lto_bolt_base"\ncompiler = "{cc}"\n'
        'config = "cx10a_c2r24"\n'
    )
    path = tmp_path / "b.toml"
    path.write_text(study.format(ws=tmp_path / "ws", cc="gcc-12"))
    assert load_study(path).targets[0].variant == "pgo_lto_bolt_base"
    path.write_text(study.format(ws=tmp_path / "ws", cc="clang-16"))
    with pytest.raises(StudyError, match=r"targets\[0\]\.compiler: variant 'pgo_lto_bolt_base' is profile-guided"):
        load_study(path)


def test_the_functions_bolt_folded_into_one_are_those_a_rewrite_made_share_an_address(tmp_path: Path) -> None:
    """`bolt.folded` reads the symbols of the binary before and after: names that came to share an address; names
    that already shared one before, and BOLT's own markers, are not a folding."""
    common = (
        "int f(int x) { return x * 3 + 1; }\n"
        'int c1(int x) { return x; }\nint c2(int x) __attribute__((alias("c1")));\n'  # an alias before and after
    )
    before = tmp_path / "before.c"
    before.write_text(common + "int g(int x) { return x * 3 + 2; }\nint main(void) { return f(1) + g(2) + c2(0); }\n")
    after = tmp_path / "after.c"
    after.write_text(
        common
        + 'int g(int x) __attribute__((alias("f")));\nvoid __hot_start(void) __attribute__((alias("main")));\n'
        + "int main(void) { return f(1) + g(2) + c2(0); }\n"
    )
    for src in (before, after):
        subprocess.run(["gcc", "-O1", "-o", str(src.with_suffix("")), str(src)], check=True)
    assert bolt.folded(tmp_path / "before", tmp_path / "after") == [["f", "g"]]
    assert bolt.folded(tmp_path / "after", tmp_path / "after") == []
