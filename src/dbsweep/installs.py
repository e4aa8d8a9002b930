"""A target's install: the engine's prebuilt one (`system`), or a build from source (cached).

The engine supplies how its source is named (`Engine.naming`) and how it is built (`Engine.recipe()`).
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from rich.progress import Progress

from dbsweep.build import bolt, cache, variants
from dbsweep.build.compiler import compiler_for
from dbsweep.build.objects import Status
from dbsweep.build.recipe import Recipe
from dbsweep.engines.base import Engine, Install
from dbsweep.engines.registry import engine_named
from dbsweep.errors import DbsweepError
from dbsweep.measure import instructions
from dbsweep.progress import BuildLog
from dbsweep.say import styled
from dbsweep.sources import Naming
from dbsweep.sources.resolve import cached as cached_source
from dbsweep.sources.resolve import copy_of, resolve
from dbsweep.study import Study, Target, source_kind


def naming_of(engine: str) -> Naming:
    """How `engine` names its source: Debian packages, the version a tree declares."""
    return _engine(engine).naming


def recipe_of(engine: str) -> Recipe:
    """How `engine` is built from source."""
    return _engine(engine).recipe()


def _engine(name: str) -> Engine:
    try:
        return engine_named(name)
    except KeyError as e:
        raise DbsweepError(str(e.args[0])) from None


def custom_variants(study: Study) -> dict[str, variants.Variant]:
    return {
        v.name: variants.from_table(v.model_dump(), where=f"{study.path.name}: variants[{i}]")
        for i, v in enumerate(study.variants)
    }


def uncountable(study: Study, cpu_flags: Collection[str]) -> dict[str, str]:
    """target label -> the compiler flag of its variant that keeps valgrind from running its build on a CPU
    with these flags (AVX-512 code). Known from the study alone: nothing is built to find it."""
    try:
        custom = custom_variants(study)
    except DbsweepError:
        return {}  # load_study reports it
    out: dict[str, str] = {}
    for t in study.targets:
        if source_kind(t.source) in (None, "system"):
            continue
        try:
            variant = variants.resolve_for(t.variant, t.compiler, custom)
        except DbsweepError:
            continue  # load_study reports it
        flag = instructions.unrunnable_flags(" ".join(variant.cflags), cpu_flags)
        if flag is not None:
            out[t.label] = flag
    return out


def build_from_source(
    engine: str,
    source: str,
    variant: variants.Variant,
    workspace: Path,
    progress: Progress,
    label: str,
    copy: int = 0,
) -> cache.Build:
    """The cached build of an engine's source at a variant, made now (with a progress bar) when missing; `copy`
    N > 0 is its Nth separate build, from a copy of the tree of its own."""
    recipe = recipe_of(engine)

    def tell(message: str) -> None:
        progress.console.print(styled(f"{label}: {message}", "dim"))

    tree = resolve(source, workspace / "sources", log=tell, naming=naming_of(engine))
    cached = cache.find(recipe, tree, variant, workspace / "builds", copy)
    if cached is not None:
        return cached
    if copy:
        tree = copy_of(tree, workspace / "sources", copy)
    task = progress.add_task(f"build {label}", total=100, unit="%")
    # The same figures on the bar and, when the console is a log, in a line every 30 s.
    figures = BuildLog(progress.console, f"{label} ({engine} {tree.version}, variant {variant.name})")

    def advance(status: Status) -> None:
        figures.update(status)
        progress.update(task, completed=100 * status.fraction, description=f"build {label}: {figures.figures()}")

    try:
        with figures.ticking():
            return cache.build(recipe, tree, variant, workspace / "builds", log=tell, status=advance, copy=copy)
    finally:
        progress.remove_task(task)


def build_key_now(study: Study, target: Target) -> str | None:
    """The key of the build a target would run on now, without building or fetching anything: a resumed run holds
    it against the key its stored results were measured with. None when it cannot be told: an installed package,
    a source not in the workspace's cache, a BOLT variant without llvm-bolt here."""
    if source_kind(target.source) == "system":
        return None
    variant = variants.resolve_for(target.variant, target.compiler, custom_variants(study))
    if variant.bolt and bolt.tool() is None:
        return None
    tree = cached_source(target.source, study.workspace_dir / "sources", naming=naming_of(study.engine))
    if tree is None:
        return None
    return cache.cache_key(recipe_of(study.engine), tree, variant, compiler_for(variant), target.build_copy)


def cached_build(study: Study, key: str) -> cache.Build | None:
    """The build of `key` in the study's build cache, if it is there."""
    return cache.find_key(recipe_of(study.engine), (study.workspace_dir / "builds").absolute(), key)


def get_install(study: Study, target: Target, progress: Progress) -> Install:
    """The install a target runs on, building it first when it is not in the build cache."""
    if source_kind(target.source) == "system":
        return engine_named(study.engine).system_install(target.source)
    variant = variants.resolve_for(target.variant, target.compiler, custom_variants(study))
    b = build_from_source(
        study.engine, target.source, variant, study.workspace_dir, progress, target.label, target.build_copy
    )
    return b.install
