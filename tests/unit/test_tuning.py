"""The host's tuning facts, read from fake sysfs and procfs trees: a tuned server, a VM without cpufreq, an empty
root, unreadable files; and the facts as the run records them and the reports list them."""

from __future__ import annotations

import json
from pathlib import Path

from dbsweep import provenance
from dbsweep.measure import tuning
from dbsweep.report import noise

CPU = "sys/devices/system/cpu"
THP = "sys/kernel/mm/transparent_hugepage"


def _write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text + "\n")


def _server(root: Path) -> Path:
    """Four CPUs, three on `performance` and one on `powersave`; intel_pstate with turbo off; SMT on."""
    for n, gov in enumerate(("performance", "performance", "powersave", "performance")):
        _write(root, f"{CPU}/cpu{n}/cpufreq/scaling_governor", gov)
    (root / CPU / "cpufreq").mkdir(parents=True)
    (root / CPU / "cpuidle").mkdir()  # not a CPU, though its name starts like one
    _write(root, f"{CPU}/intel_pstate/no_turbo", "1")
    _write(root, f"{CPU}/cpufreq/boost", "1")  # ignored: intel_pstate's own switch decides
    _write(root, f"{CPU}/smt/active", "1")
    _write(root, f"{CPU}/smt/control", "on")
    _write(root, f"{THP}/enabled", "[always] madvise never")
    _write(root, f"{THP}/defrag", "always defer defer+madvise [madvise] never")
    _write(
        root,
        "proc/cpuinfo",
        "processor\t: 0\nflags\t\t: fpu vme de pse tsc msr\n\nprocessor\t: 1\nflags\t\t: fpu vme\n",
    )
    return root


def _vm(root: Path) -> Path:
    """Two vCPUs without cpufreq (an empty cpufreq directory, as a KVM guest has), SMT not supported."""
    for n in (0, 1):
        (root / CPU / f"cpu{n}" / "topology").mkdir(parents=True)
    (root / CPU / "cpufreq").mkdir()
    _write(root, f"{CPU}/smt/active", "0")
    _write(root, f"{CPU}/smt/control", "notsupported")
    _write(root, f"{THP}/enabled", "always [madvise] never")
    _write(root, f"{THP}/defrag", "always defer defer+madvise [madvise] never")
    _write(root, "proc/cpuinfo", "processor\t: 0\nflags\t\t: fpu vme hypervisor lahf_lm\n")
    return root


def test_a_tuned_server(tmp_path: Path) -> None:
    t = tuning.read_tuning(_server(tmp_path))
    assert t.governors.per_cpu == {0: "performance", 1: "performance", 2: "powersave", 3: "performance"}
    assert t.governors.describe() == "performance x3, powersave x1"
    assert t.boost == tuning.Boost(False, "intel_pstate/no_turbo")
    assert t.smt == tuning.Smt(True, "on")
    assert t.huge_pages == tuning.HugePages("always", "madvise")
    assert t.virtual == tuning.Virtual(False)


def test_a_vm_without_cpufreq_says_so(tmp_path: Path) -> None:
    t = tuning.read_tuning(_vm(tmp_path))
    assert not t.governors.available and t.governors.describe() == "unavailable"
    assert t.boost == tuning.Boost(None, None)
    assert t.smt == tuning.Smt(False, "notsupported")
    assert t.huge_pages == tuning.HugePages("madvise", "madvise")
    assert t.virtual == tuning.Virtual(True)


def test_cpufreq_boost_where_there_is_no_intel_pstate(tmp_path: Path) -> None:
    _write(tmp_path, f"{CPU}/cpufreq/boost", "0")
    assert tuning.read_boost(tmp_path) == tuning.Boost(False, "cpufreq/boost")


def test_nothing_there_is_none_and_no_crash(tmp_path: Path) -> None:
    t = tuning.read_tuning(tmp_path / "no-such-root")
    assert t.governors.per_cpu == {} and t.boost == tuning.Boost(None, None)
    assert t.smt == tuning.Smt(None, None) and t.huge_pages == tuning.HugePages(None, None)
    assert t.virtual == tuning.Virtual(None)


def test_unreadable_files_are_none(tmp_path: Path) -> None:
    # A directory where a file should be cannot be read, as root or not.
    for rel in (f"{CPU}/cpu0/cpufreq/scaling_governor", f"{CPU}/smt/active", f"{THP}/enabled", "proc/cpuinfo"):
        (tmp_path / rel).mkdir(parents=True)
    _write(tmp_path, f"{CPU}/cpu1/cpufreq/scaling_governor", "schedutil")
    _write(tmp_path, f"{CPU}/smt/control", "off")
    _write(tmp_path, f"{CPU}/intel_pstate/no_turbo", "maybe")
    t = tuning.read_tuning(tmp_path)
    assert t.governors.per_cpu == {0: None, 1: "schedutil"}
    assert t.governors.describe() == "unreadable x1, schedutil x1"
    assert t.smt == tuning.Smt(None, "off")
    assert t.huge_pages.enabled is None
    assert t.boost == tuning.Boost(None, None)  # an answer that is not 0 or 1 is no answer
    assert t.virtual == tuning.Virtual(None)


def test_recorded_with_the_host_facts_and_listed_by_the_reports(tmp_path: Path) -> None:
    facts = provenance.host_facts(tmp_path)
    here = tuning.read_tuning().as_dict()
    assert facts["tuning"] == here
    json.dumps(facts)  # the provenance record is JSON
    recorded = tuning.read_tuning(_vm(tmp_path / "vm")).as_dict()
    listed = dict(noise.tuning_facts({"tuning": recorded}))
    assert listed == {
        "CPU governor": "unavailable",
        "turbo/boost": "no control",
        "SMT": "inactive notsupported",
        "transparent huge pages": "enabled madvise, defrag madvise",
        "virtual machine": "yes (hypervisor flag)",
    }
    server = dict(noise.tuning_facts({"tuning": tuning.read_tuning(_server(tmp_path / "server")).as_dict()}))
    assert server["turbo/boost"] == "off (intel_pstate/no_turbo)" and server["SMT"] == "active on"
    assert noise.tuning_facts({}) == []  # a record from before the tuning facts
