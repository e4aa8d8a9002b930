"""A target's install: Debian's prebuilt Postgres, or a build from source (cached)."""

from __future__ import annotations

from pathlib import Path

from rich.progress import Progress

from dbsweep import build, variants
from dbsweep.engines import postgres
from dbsweep.sources.resolve import resolve
from dbsweep.study import Study, Target, source_kind


def custom_variants(study: Study) -> dict[str, variants.Variant]:
    return {
        v.name: variants.from_table(v.model_dump(), where=f"{study.path.name}: variants[{i}]")
        for i, v in enumerate(study.variants)
    }


def build_from_source(
    source: str,
    variant: variants.Variant,
    workspace: Path,
    progress: Progress,
    label: str,
) -> build.Build:
    """The cached build of a source at a variant, made now (with a progress bar) when missing."""
    tree = resolve(source, workspace / "sources", log=lambda m: progress.console.print(f"[dim]{label}: {m}[/dim]"))
    cached = build.find(tree, variant, workspace / "builds")
    if cached is not None:
        return cached
    task = progress.add_task(f"build {label}", total=100, unit="%")

    def advance(fraction: float, message: str) -> None:
        progress.update(task, completed=100 * fraction, description=f"build {label}: {message}")

    try:
        return build.build(
            tree,
            variant,
            workspace / "builds",
            log=lambda m: progress.console.print(f"[dim]{label}: {m}[/dim]"),
            progress=advance,
        )
    finally:
        progress.remove_task(task)


def get_install(study: Study, target: Target, progress: Progress) -> postgres.Install:
    """The install a target runs on, building it first when it is not in the build cache."""
    if source_kind(target.source) == "system":
        return postgres.system_install(target.source)
    variant = variants.resolve(target.variant, custom_variants(study))
    b = build_from_source(target.source, variant, study.workspace_dir, progress, target.label)
    return b.install
