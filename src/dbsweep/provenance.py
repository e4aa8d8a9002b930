"""What produced a result, as one record kept with every cell: dbsweep's and the load client's versions,
the host's facts (its tuning among them), the engine's build and version, the config diff and the settings
the server reports, the suite's settings, the server user, the CPU placement and whether the tables were
rebuilt to resume."""

from __future__ import annotations

import json
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


# What tells one binary from another in a result's record, besides a build's key (which covers them all).
_BUILD_FACTS = ("source_identity", "version", "compiler_version", "cc", "cflags", "ldflags", "configure", "recipe")


def build_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """How the binary `new` (an install's provenance) differs from the one a stored result recorded (`old`),
    one phrase per fact; empty when it is the same. A build is the same when its key is (the key covers the
    source, recipe, flags and compiler); a record without a key (a prebuilt install, an older result) is
    compared by the facts both records have."""
    new = json.loads(json.dumps(new, default=str))  # as the stored record was written: lists, not tuples
    facts = [k for k in _BUILD_FACTS if k in old and k in new and old[k] != new[k]]
    phrases = [phrase for k in facts for phrase in _differences(k, old[k], new[k])]
    if old.get("build_key") and new.get("build_key"):
        if old["build_key"] == new["build_key"]:
            return []
        # The key also covers what the record does not show: the recipe's options, the training workload.
        keys = f"build key {old['build_key'][:12]} → {new['build_key'][:12]}"
        return phrases or [f"{keys}: the recipe's options, its training or its PGO profile differ"]
    return phrases


def _differences(name: str, a: Any, b: Any) -> list[str]:
    """`name a → b`, or for two records (a recipe), the same of each of their entries that differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        keys = sorted(set(a) | set(b), key=str)
        return [p for k in keys if a.get(k) != b.get(k) for p in _differences(f"{name}.{k}", a.get(k), b.get(k))]
    x, y = str(a), str(b)
    return [f"{name} {x} → {y}" if len(x) + len(y) < 100 else f"{name} differs"]
