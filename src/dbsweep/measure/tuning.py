"""How the host is tuned, as the kernel says: the CPU frequency governor of each CPU, turbo/boost, SMT,
transparent huge pages, and whether this is a virtual machine. Recorded with every run's host facts,
because each one moves QPS more than many of the changes a study looks for.

Every reader takes the filesystem root (`/` unless a test gives a fake sysfs tree) and never raises: a
file that is missing or unreadable is None. Where the kernel offers no such control at all (a VM
without cpufreq) the record says so, rather than leaving a reader to guess.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path("/")
_CPU_DIR = Path("sys/devices/system/cpu")
_THP_DIR = Path("sys/kernel/mm/transparent_hugepage")
# `always [madvise] never`: the kernel marks the value in force with brackets.
_BRACKETED = re.compile(r"\[([^\]]+)\]")


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


def _flag(text: str | None) -> bool | None:
    """`1`/`0` (or `on`/`off`) as a bool; anything else is unknown."""
    if text is None:
        return None
    return {"1": True, "0": False, "on": True, "off": False}.get(text.lower())


@dataclass(frozen=True, slots=True)
class Governors:
    """The cpufreq scaling governor per CPU (None where unreadable); no CPU at all when the kernel exposes no
    cpufreq, as in most VMs."""

    per_cpu: dict[int, str | None]

    @property
    def available(self) -> bool:
        return bool(self.per_cpu)

    def describe(self) -> str:
        """`performance`, `powersave x2, performance x6`, or `unavailable` (no cpufreq)."""
        if not self.available:
            return "unavailable"
        counts = Counter(g or "unreadable" for g in self.per_cpu.values())
        if len(counts) == 1:
            return next(iter(counts))
        return ", ".join(f"{g} x{n}" for g, n in counts.most_common())


@dataclass(frozen=True, slots=True)
class Boost:
    """Whether the CPU may clock above its base frequency, and which control said so (`intel_pstate/no_turbo`
    or `cpufreq/boost`); both None when neither exists."""

    enabled: bool | None
    control: str | None


@dataclass(frozen=True, slots=True)
class Smt:
    """Simultaneous multithreading: whether sibling threads are active, and the control's state (`on`, `off`,
    `forceoff`, `notsupported`, `notimplemented`)."""

    active: bool | None
    control: str | None


@dataclass(frozen=True, slots=True)
class HugePages:
    """Transparent huge pages: the value in force of `enabled` and of `defrag`."""

    enabled: str | None
    defrag: str | None


@dataclass(frozen=True, slots=True)
class Virtual:
    """Whether the CPU reports running under a hypervisor (the `hypervisor` flag of /proc/cpuinfo)."""

    vm: bool | None


@dataclass(frozen=True, slots=True)
class HostTuning:
    """The host's tuning facts, each its own record."""

    governors: Governors
    boost: Boost
    smt: Smt
    huge_pages: HugePages
    virtual: Virtual

    def as_dict(self) -> dict[str, Any]:
        """For the provenance record (JSON): CPU numbers become strings, the governors get their summary."""
        out = asdict(self)
        out["governors"] = {
            "summary": self.governors.describe(),
            "per_cpu": {str(k): v for k, v in sorted(self.governors.per_cpu.items())},
        }
        return out


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:  # a directory we may not look into is as good as none
        return False


def _cpu_numbers(root: Path) -> list[int]:
    try:
        names = [p.name for p in (root / _CPU_DIR).iterdir()]
    except OSError:
        return []
    return sorted(int(n[3:]) for n in names if n.startswith("cpu") and n[3:].isdigit())


def read_governors(root: Path = ROOT) -> Governors:
    per_cpu: dict[int, str | None] = {}
    for n in _cpu_numbers(root):
        cpufreq = root / _CPU_DIR / f"cpu{n}" / "cpufreq"
        if _is_dir(cpufreq):
            per_cpu[n] = _read(cpufreq / "scaling_governor")
    return Governors(per_cpu)


def read_boost(root: Path = ROOT) -> Boost:
    # intel_pstate ignores cpufreq/boost, so its own switch is asked first; it is inverted (1 = no turbo).
    no_turbo = _flag(_read(root / _CPU_DIR / "intel_pstate" / "no_turbo"))
    if no_turbo is not None:
        return Boost(not no_turbo, "intel_pstate/no_turbo")
    boost = _flag(_read(root / _CPU_DIR / "cpufreq" / "boost"))
    if boost is not None:
        return Boost(boost, "cpufreq/boost")
    return Boost(None, None)


def read_smt(root: Path = ROOT) -> Smt:
    return Smt(_flag(_read(root / _CPU_DIR / "smt" / "active")), _read(root / _CPU_DIR / "smt" / "control"))


def _in_force(text: str | None) -> str | None:
    if text is None:
        return None
    m = _BRACKETED.search(text)
    return m.group(1) if m else text or None


def read_huge_pages(root: Path = ROOT) -> HugePages:
    return HugePages(_in_force(_read(root / _THP_DIR / "enabled")), _in_force(_read(root / _THP_DIR / "defrag")))


def read_virtual(root: Path = ROOT) -> Virtual:
    text = _read(root / "proc" / "cpuinfo")
    if text is None:
        return Virtual(None)
    flags = [line.partition(":")[2].split() for line in text.splitlines() if line.startswith("flags")]
    # An architecture whose cpuinfo lists no x86 flags cannot say either way.
    return Virtual(any("hypervisor" in f for f in flags) if flags else None)


def read_tuning(root: Path = ROOT) -> HostTuning:
    return HostTuning(read_governors(root), read_boost(root), read_smt(root), read_huge_pages(root), read_virtual(root))
