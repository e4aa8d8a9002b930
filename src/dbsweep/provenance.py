"""What produced a result, as one record kept with every cell: dbsweep's and the load client's versions,
the host's facts (its tuning among them), the engine's build and version, the config diff and the settings
the server reports, the suite's settings, the server user, the CPU placement and whether the tables were
rebuilt to resume."""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil

from dbsweep import __version__, unsafe
from dbsweep.measure import tuning

if TYPE_CHECKING:
    from dbsweep.engines.base import Install, Instance
    from dbsweep.study import Study, Target


def record(
    *,
    host: dict[str, Any],
    load_client: str,
    study: Study,
    target: Target,
    install: Install,
    instance: Instance,
    server_user: str | None,
    placement: dict[str, Any],
    reloaded: bool,
) -> dict[str, Any]:
    """The provenance of a (target, repetition) group's cells; asks the running server for its version and
    settings (raises EngineError when it cannot answer). The unsafe settings the study allowed the config are
    named with why each is unsafe, for the reports to say so."""
    engine = {"name": study.engine, "server_version": instance.server_version(), **install.provenance}
    config: dict[str, Any] = {
        "name": target.config,
        "diff": instance.config_text,
        "effective_settings": instance.settings(),
    }
    if allowed := unsafe.allowed_in(study.engine, instance.config_text):
        config[unsafe.PROVENANCE_KEY] = allowed
    return {
        "dbsweep_version": __version__,
        "load_client": load_client,
        "host": host,
        "engine": engine,
        "target": {
            "name": target.label,
            "source": target.source,
            "variant": target.variant,
            **({"compiler": target.compiler} if target.compiler else {}),
        },
        "config": config,
        "suite": study.suite.model_dump(),
        "server_user": server_user,
        "cpu_placement": placement,
        "reloaded_for_resume": reloaded,
    }


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _filesystem(path: Path) -> dict[str, str]:
    """The mount that holds `path`: device, filesystem type, mount point."""
    path = path.resolve()
    best: Any = None
    for part in psutil.disk_partitions(all=True):
        mp = Path(part.mountpoint)
        if (path == mp or mp in path.parents) and (best is None or len(part.mountpoint) > len(best.mountpoint)):
            best = part
    if best is None:
        return {}
    return {"device": best.device, "fstype": best.fstype, "mountpoint": best.mountpoint}


def host_facts(workspace: Path) -> dict[str, Any]:
    vm = psutil.virtual_memory()
    return {
        "hostname": platform.node(),
        "cpu_model": _cpu_model(),
        "cpus_logical": os.cpu_count(),
        "cpus_physical": psutil.cpu_count(logical=False),
        "memory_bytes": vm.total,
        "kernel": platform.release(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "workspace_fs": _filesystem(workspace),
        "tuning": tuning.read_tuning().as_dict(),
    }
