"""Facts about the host a result was measured on, collected in one place."""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any

import psutil


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
    }
