"""A target's install: Debian's prebuilt Postgres, or a build from source (cached)."""

from __future__ import annotations

from rich.progress import Progress

from dbsweep.engines import postgres
from dbsweep.study import Study, Target, source_kind


def get_install(study: Study, target: Target, progress: Progress) -> postgres.Install:
    """The install a target runs on, building it first when it is not in the build cache."""
    if source_kind(target.source) == "system":
        return postgres.system_install(target.source)
    from dbsweep.errors import DbsweepError

    raise DbsweepError(f"source {target.source!r}: building from source is not wired in yet")
