"""Build variants: named compiler recipes (`def`, `o2_nofp`, `o3_native_lto`, `pgo`, ...).

A Variant says everything about how an engine is compiled that changes the binary
and is the same for every engine: compiler, CFLAGS, LDFLAGS, extra options for the
engine's configure step and variables for it, and whether the build is profile-guided.
The build cache is keyed on `recipe()`, together with the options the engine's Recipe
derives for a source version (`Recipe.options`: what every build of that engine gets,
then the variant's `configure`).

The built-ins follow the build scripts of the method (methodology 5.1). `def` passes no
CFLAGS, so the engine's build picks its own optimisation level.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from dbsweep.errors import DbsweepError, StudyError

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,39}$")
COMPILER_RE = re.compile(r"^(gcc|clang)(-[0-9]+)?$")
VAR_RE = re.compile(r"^[A-Z][A-Z0-9_]*$")
# Set by dbsweep itself (the install directory, the compiler, its flags, the profile); a variant supplying
# them would silently fight the build.
RESERVED_OPTIONS = ("--prefix", "--exec-prefix", "--bindir", "--libdir", "--srcdir", "--cache-file")
RESERVED_VARS = ("CC", "CFLAGS", "LDFLAGS", "PROFILE", "COPT", "DESTDIR")
TABLE_KEYS = ("name", "compiler", "cflags", "ldflags", "configure", "configure_vars", "pgo", "bolt")
# The configure variables a clang LTO build sets to LLVM's own tools (`llvm-ar-16`, ...).
LLVM_TOOLS = ("AR", "RANLIB", "NM")
# What BOLT needs of the link: the relocations, kept in the binary.
BOLT_LDFLAGS = ("-Wl,--emit-relocs",)

_Complain = Callable[[str, str], None]  # (field, problem)


@dataclass(frozen=True)
class Variant:
    """A named build recipe. Empty cflags means "let the engine's build choose" (often `-O2`)."""

    name: str
    compiler: str = "gcc"
    cflags: tuple[str, ...] = ()
    ldflags: tuple[str, ...] = ()
    configure: tuple[str, ...] = ()
    # Extra configure variables, e.g. (("AR", "llvm-ar"),) for clang LTO; recorded by configure.
    configure_vars: tuple[tuple[str, str], ...] = ()
    pgo: bool = False
    description: str = ""
    # The finished binary rewritten by llvm-bolt with a profile of the training workload (`build.bolt`).
    bolt: bool = False
    # Compiled for BOLT (a BOLT variant and the build it rewrites): gcc's own hot/cold splitting off
    # (`split_cflags`).
    for_bolt: bool = False

    @property
    def compiler_family(self) -> str:
        """`gcc` or `clang` (a versioned name such as `gcc-13` counts as gcc)."""
        return self.compiler.split("-", 1)[0]

    @property
    def debug_cflags(self) -> tuple[str, ...]:
        """Flags dbsweep adds to every compile of the variant so valgrind can read its debug information: clang 14
        writes DWARF 5 forms (DW_FORM_addrx, DW_FORM_strx1) that valgrind 3.19 cannot read ("Possibly corrupted
        debuginfo file ... Giving up"), which stopped every instruction count of a clang build; DWARF 4 it reads."""
        return ("-gdwarf-4",) if self.compiler_family == "clang" else ()

    @property
    def split_cflags(self) -> tuple[str, ...]:
        """Flags dbsweep adds to every compile of a build for BOLT: gcc (from 8) splits functions into hot and cold
        parts by itself (`-freorder-blocks-and-partition`, on at -O2), and llvm-bolt 19 skips a function split
        that way ("skipped N functions due to cold fragments"). A skipped function keeps its old code and calls the
        old copies of the functions BOLT moved, which run un-laid-out and without a symbol (valgrind's `???`): 28
        functions of SQLite's PGO + LTO build. BOLT's authors ask for the flag; clang does not split by default
        and does not know it."""
        return ("-fno-reorder-blocks-and-partition",) if self.for_bolt and self.compiler_family == "gcc" else ()

    @property
    def added_cflags(self) -> tuple[str, ...]:
        """Every flag dbsweep adds to the variant's own (or to the build's default level, never in its place)."""
        return (*self.split_cflags, *self.debug_cflags)

    @property
    def cflags_str(self) -> str:
        return " ".join(self.cflags)

    @property
    def ldflags_str(self) -> str:
        return " ".join(self.ldflags)

    def recipe(self) -> dict[str, Any]:
        """Everything about the variant that changes the binary, canonical (the name does not)."""
        return {
            "compiler": self.compiler,
            "cflags": list(self.cflags),
            "ldflags": list(self.ldflags),
            "configure": list(self.configure),
            "configure_vars": dict(sorted(self.configure_vars)),
            "pgo": self.pgo,
            # Only where there are any: the keys of the builds that have none stay what they were.
            **({"debug_cflags": list(self.debug_cflags)} if self.debug_cflags else {}),
            **({"split_cflags": list(self.split_cflags)} if self.split_cflags else {}),
            **({"bolt": True} if self.bolt else {}),
        }


def _flags(text: str) -> tuple[str, ...]:
    return tuple(shlex.split(text))


_O3_NATIVE = "-O3 -march=native -mtune=native"

BUILTINS: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant("def", description="the engine's own flags"),
        Variant("o2_nofp", cflags=_flags("-O2 -fno-omit-frame-pointer"), description="-O2 with frame pointers"),
        Variant("o3", cflags=_flags("-O3")),
        Variant("o3_native", cflags=_flags(_O3_NATIVE)),
        # o3_native_lto keeps its relocations (the code is the same, the file larger), so that clang's
        # o3_native_lto_bolt, which splits nothing by itself, rewrites a copy of that very build (`bolt_base`).
        # gcc's BOLT variants are compiled for BOLT (`Variant.split_cflags`): their bases are builds of their
        # own, `<variant>_base`, which a study may name as targets to see BOLT's own part.
        Variant(
            "o3_native_lto",
            cflags=_flags(f"{_O3_NATIVE} -flto=auto"),
            ldflags=(*_flags("-flto=auto"), *BOLT_LDFLAGS),
            description="-O3 for this CPU with link-time optimisation",
        ),
        # Portable: valgrind counts it on any x86-64 CPU, where -march=native on one with AVX-512 cannot be.
        Variant(
            "o3_lto",
            cflags=_flags("-O3 -flto=auto"),
            ldflags=_flags("-flto=auto"),
            description="-O3 with link-time optimisation, for any CPU",
        ),
        Variant("os", cflags=_flags("-Os"), description="optimised for size"),
        Variant("pgo", cflags=_flags("-O2"), pgo=True, description="-O2, profile-guided (gcc)"),
        # PGO on top of -O2 + LTO, not of o3_native_lto: `pgo` vs `pgo_lto` then isolates LTO (as in the
        # method's pgouse/pgouse_lto pair), the binary stays portable, and -fprofile-use already
        # turns on most -O3 loop optimisations for the code the training makes hot.
        Variant(
            "pgo_lto",
            cflags=_flags("-O2 -flto=auto"),
            ldflags=_flags("-flto=auto"),
            pgo=True,
            description="-O2 + LTO, profile-guided (gcc)",
        ),
        # BOLT on top of the engine's own build, of the strongest portable-or-not build, and of PGO + LTO (the
        # strongest build the seeds know), each trained on the PGO training workload.
        Variant(
            "bolt", ldflags=BOLT_LDFLAGS, bolt=True, for_bolt=True, description="the engine's own flags, then BOLT"
        ),
        Variant(
            "o3_native_lto_bolt",
            cflags=_flags(f"{_O3_NATIVE} -flto=auto"),
            ldflags=(*_flags("-flto=auto"), *BOLT_LDFLAGS),
            bolt=True,
            for_bolt=True,
            description="o3_native_lto, then BOLT",
        ),
        Variant(
            "pgo_lto_bolt",
            cflags=_flags("-O2 -flto=auto"),
            ldflags=(*_flags("-flto=auto"), *BOLT_LDFLAGS),
            pgo=True,
            bolt=True,
            for_bolt=True,
            description="pgo_lto, then BOLT",
        ),
    )
}


def bolt_base(variant: Variant) -> Variant:
    """The build a BOLT variant rewrites a copy of: the same recipe without BOLT, named as the built-in variant
    of that recipe if there is one (clang's o3_native_lto_bolt's is o3_native_lto), else `<variant>_base` (gcc's,
    compiled for BOLT; bolt's: the engine's own flags, linked with relocations)."""
    base = replace(variant, bolt=False, description=f"what {variant.name} rewrites")
    for v in BUILTINS.values():
        if v.bolt:
            continue
        try:
            same = with_compiler(v, variant.compiler)  # pgo_lto_bolt+gcc-12's is pgo_lto+gcc-12
        except DbsweepError:
            continue
        if same.recipe() == base.recipe():
            return replace(base, name=same.name, description=same.description)
    return replace(base, name=f"{variant.name[:34]}_base")


def _no_lto(flags: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(f for f in flags if not f.startswith(("-flto", "-ffat-lto-objects", "-fno-fat-lto-objects")))


def profile_source(variant: Variant) -> Variant:
    """The instrumented build whose training makes a PGO variant's profile: the variant without LTO and without
    what BOLT needs, as in the method's pgogen build, whose one profile both pgouse and pgouse_lto are built with.
    `pgo`, `pgo_lto` and `pgo_lto_bolt_base` thus share one instrumented build and training (by one compiler), and
    differ in LTO and BOLT's flags alone. Those change no code the profile counts: gcc instruments each function's
    control flow before its hot/cold splitting (which BOLT's builds turn off), `--emit-relocs` is the linker's, and
    a profile that did not fit would stop the compile with a coverage mismatch. Named as the built-in variant of
    that recipe if there is one (pgo_lto's is pgo), else `<variant>_gen`."""
    gen = replace(
        variant,
        cflags=_no_lto(variant.cflags),
        ldflags=tuple(f for f in _no_lto(variant.ldflags) if f not in BOLT_LDFLAGS),
        bolt=False,
        for_bolt=False,
        description=f"the instrumented build {variant.name}'s profile comes from",
    )
    if gen.recipe() == variant.recipe():
        return variant
    for v in BUILTINS.values():
        try:
            same = with_compiler(v, variant.compiler)
        except DbsweepError:
            continue
        if same.recipe() == gen.recipe():
            return replace(gen, name=same.name, description=same.description)
    return replace(gen, name=f"{variant.name[:35]}_gen")


def builtin(name: str) -> Variant:
    try:
        return BUILTINS[name]
    except KeyError:
        raise DbsweepError(f"unknown build variant {name!r}; built-in: {', '.join(BUILTINS)}") from None


def _bolt_variant_of(name: str) -> Variant | None:
    """The built-in BOLT variant whose base `name` (`pgo_lto_bolt_base`) names, if it does."""
    of = BUILTINS.get(name.removesuffix("_base")) if name.endswith("_base") else None
    return of if of is not None and of.bolt else None


def resolve(name: str, custom: Mapping[str, Variant] | None = None) -> Variant:
    """A study's own variant by that name, else the built-in one."""
    if custom and name in custom:
        return custom[name]
    if name in BUILTINS:
        return BUILTINS[name]
    if (of := _bolt_variant_of(name)) is not None:
        return bolt_base(of)  # what a BOLT variant rewrites, as a target of its own
    known = [*BUILTINS, *BASES, *(custom or {})]
    raise DbsweepError(f"unknown build variant {name!r}; have: {', '.join(known)}")


def with_compiler(variant: Variant, compiler: str | None) -> Variant:
    """`variant` built by another compiler (a target's `compiler`, the study's compiler axis): its flags, under
    the name `<variant>+<compiler>`; the variant itself when `compiler` is None or already its own."""
    if compiler is None or compiler == variant.compiler:
        return variant
    if not COMPILER_RE.match(compiler):
        raise DbsweepError(f"{compiler!r} is not a compiler: use 'gcc' or 'clang', or a version ('gcc-12', 'clang-16')")
    if variant.pgo and not compiler.startswith("gcc"):
        raise DbsweepError(f"variant {variant.name!r} is profile-guided, which is supported with gcc only")
    out = replace(variant, name=f"{variant.name}+{compiler}", compiler=compiler)
    if compiler.startswith("clang") and any(f.startswith("-flto") for f in (*variant.cflags, *variant.ldflags)):
        out = _llvm_lto(out)
    return out


def _llvm_lto(variant: Variant) -> Variant:
    """A clang LTO build's objects are LLVM bitcode: binutils' ar and ld cannot index or link them without a
    plugin Debian does not set up, so the archives are made by the LLVM tools of the compiler's version and the
    link by lld of that version too (`-fuse-ld=lld-16` runs `ld.lld-16`): Debian's clang-16 given `-fuse-ld=lld`
    ran the default `ld.lld`, lld 14, which cannot read LLVM 16's bitcode ("Opaque pointers are only supported in
    -opaque-pointers mode"), and configure found no working compiler. What the variant sets itself stays."""
    _, dash, version = variant.compiler.partition("-")
    tools = {k: f"llvm-{k.lower()}{dash}{version}" for k in LLVM_TOOLS}
    given = dict(variant.configure_vars)
    configure_vars = (*variant.configure_vars, *((k, v) for k, v in tools.items() if k not in given))
    ldflags = (
        variant.ldflags
        if any(f.startswith("-fuse-ld=") for f in variant.ldflags)
        else (
            *variant.ldflags,
            f"-fuse-ld=lld{dash}{version}",
        )
    )
    return replace(variant, configure_vars=configure_vars, ldflags=ldflags)


def resolve_for(name: str, compiler: str | None, custom: Mapping[str, Variant] | None = None) -> Variant:
    """A target's variant: `resolve(name)` built by the target's compiler, if it names one. A BOLT variant's
    base by that compiler has the name its BOLT variant's build gives it (`pgo_lto_bolt+gcc-12_base`, clang's
    `o3_native_lto+clang-16`), so that the two count as one build."""
    if not (custom and name in custom) and (of := _bolt_variant_of(name)) is not None:
        return bolt_base(with_compiler(of, compiler))
    return with_compiler(resolve(name, custom), compiler)


def from_table(table: Mapping[str, Any], where: str = "variant") -> Variant:
    """A Variant from a study's `{name, compiler, cflags, ldflags, configure, configure_vars, pgo}` table.

    Raises StudyError with one message per problem, each naming the field (`variant "x": cflags: ...`).
    """
    name = table.get("name")
    label = f'{where} "{name}"' if isinstance(name, str) and NAME_RE.match(name) else where
    problems: list[str] = []

    def bad(fieldname: str, why: str) -> None:
        problems.append(f"{label}: {fieldname}: {why}")

    for key in table:
        if key not in TABLE_KEYS:
            bad(str(key), f"unknown field; allowed: {', '.join(TABLE_KEYS)}")
    if not isinstance(name, str) or not NAME_RE.match(name):
        bad("name", f"{name!r} is not a name: use up to 40 letters, digits, '_', '.', '+', '-'")
    compiler = table.get("compiler", "gcc")
    if not isinstance(compiler, str) or not COMPILER_RE.match(compiler):
        bad("compiler", f"{compiler!r} is not supported: use 'gcc' or 'clang' (or a versioned 'gcc-13')")
    cflags = _flag_list(table.get("cflags", ""), "cflags", bad)
    ldflags = _flag_list(table.get("ldflags", ""), "ldflags", bad)
    configure = _configure_list(table.get("configure", []), bad)
    configure_vars = _configure_vars(table.get("configure_vars", {}), bad)
    pgo = table.get("pgo", False)
    if not isinstance(pgo, bool):
        bad("pgo", f"must be true or false, not {pgo!r}")
    bolt = table.get("bolt", False)
    if not isinstance(bolt, bool):
        bad("bolt", f"must be true or false, not {bolt!r}")
    elif bolt:
        ldflags = (*ldflags, *(f for f in BOLT_LDFLAGS if f not in ldflags))
    elif pgo and isinstance(compiler, str) and compiler.startswith("clang"):
        bad("pgo", "profile-guided builds are supported with gcc only")
    if problems:
        raise StudyError(problems)
    assert isinstance(name, str) and isinstance(compiler, str) and isinstance(pgo, bool) and isinstance(bolt, bool)
    return Variant(name, compiler, cflags, ldflags, configure, configure_vars, pgo, bolt=bolt, for_bolt=bolt)


def _flag_list(value: Any, fieldname: str, bad: _Complain) -> tuple[str, ...]:
    """Flags as one string ("-O2 -g") or a list of strings."""
    if isinstance(value, str):
        try:
            return tuple(shlex.split(value))
        except ValueError as e:
            bad(fieldname, f"cannot split {value!r} into flags: {e}")
            return ()
    if isinstance(value, Sequence) and all(isinstance(v, str) for v in value):
        return tuple(value)
    bad(fieldname, f"must be a string of flags or a list of strings, not {value!r}")
    return ()


def _configure_list(value: Any, bad: _Complain) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        bad("configure", f"must be a list of options such as ['--with-llvm'], not {value!r}")
        return ()
    out: list[str] = []
    for i, opt in enumerate(value):
        if not isinstance(opt, str) or not opt.startswith("--"):
            bad(f"configure[{i}]", f"{opt!r} is not a configure option (they start with '--')")
        elif opt.split("=", 1)[0] in RESERVED_OPTIONS:
            bad(f"configure[{i}]", f"{opt!r} is set by dbsweep (each build gets its own install directory)")
        else:
            out.append(opt)
    return tuple(out)


def _configure_vars(value: Any, bad: _Complain) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, Mapping):
        bad("configure_vars", f"must be a table such as {{AR = 'llvm-ar'}}, not {value!r}")
        return ()
    out: list[tuple[str, str]] = []
    for k, v in value.items():
        if not isinstance(k, str) or not VAR_RE.match(k):
            bad(f"configure_vars.{k}", "variable names are upper case, e.g. AR or RANLIB")
        elif k in RESERVED_VARS:
            bad(f"configure_vars.{k}", "set it with the compiler, cflags or ldflags fields instead")
        elif not isinstance(v, str):
            bad(f"configure_vars.{k}", f"must be a string, not {v!r}")
        else:
            out.append((k, v))
    return tuple(sorted(out))


# The bases of the built-in BOLT variants that are builds of their own (gcc's), by the names `resolve` takes.
BASES = tuple(f"{v.name}_base" for v in BUILTINS.values() if v.bolt and bolt_base(v).name == f"{v.name}_base")
