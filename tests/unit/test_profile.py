"""Sampled profiles with the real perf of real processes of ours (a small C program), folded stacks and flame
graphs drawn by dbsweep-flame. Skipped where perf cannot sample or no C compiler is installed."""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from dbsweep.measure import profile
from dbsweep.measure.profile import ProfileError

# Waits for a line on stdin (so perf is attached before anything runs), then for SECONDS:
#   hot / cold: calls hot() / cold() in a loop;  fork: forks a child that calls hot(), and waits for it.
PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

volatile unsigned long sink;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

void hot(void) { for (unsigned long i = 0; i < 2000; i++) sink += i * i; }
void cold(void) { for (unsigned long i = 0; i < 2000; i++) sink += i ^ (i >> 3); }

void spin(void (*f)(void), double seconds) {
    double t0 = now();
    while (now() - t0 < seconds) f();
}

int main(int argc, char **argv) {
    char line[16];
    if (argc != 3 || !fgets(line, sizeof line, stdin)) return 2;
    double seconds = atof(argv[2]);
    if (strcmp(argv[1], "hot") == 0) spin(hot, seconds);
    else if (strcmp(argv[1], "cold") == 0) spin(cold, seconds);
    else if (strcmp(argv[1], "fork") == 0) {
        pid_t child = fork();
        if (child == 0) { spin(hot, seconds); _exit(0); }
        waitpid(child, NULL, 0);
    } else return 2;
    return 0;
}
"""


@dataclass(frozen=True)
class Programs:
    frame_pointers: Path  # -O1 -fno-omit-frame-pointer -fno-inline
    no_frame_pointers: Path  # -O2 -fomit-frame-pointer, as distributions build


@pytest.fixture(scope="module")
def support() -> profile.PerfSupport:
    s = profile.detect()
    if not s.cpu_clock:
        pytest.skip(f"perf cannot sample here: {s.reason}")
    return s


@pytest.fixture(scope="module")
def programs(tmp_path_factory: pytest.TempPathFactory, support: profile.PerfSupport) -> Programs:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the program to profile")
    d = tmp_path_factory.mktemp("prog")
    (d / "spin.c").write_text(PROGRAM)
    fp, nofp = d / "spin", d / "spin-nofp"
    subprocess.run([cc, "-g", "-O1", "-fno-omit-frame-pointer", "-fno-inline", "-o", fp, d / "spin.c"], check=True)
    subprocess.run([cc, "-g", "-O2", "-fomit-frame-pointer", "-fno-inline", "-o", nofp, d / "spin.c"], check=True)
    return Programs(fp, nofp)


def start(binary: Path, mode: str, seconds: float) -> subprocess.Popen[bytes]:
    return subprocess.Popen([binary, mode, str(seconds)], stdin=subprocess.PIPE, start_new_session=True)


def go(proc: subprocess.Popen[bytes]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(b"go\n")
    proc.stdin.close()


Started = list[subprocess.Popen[bytes]]


@pytest.fixture
def procs() -> Iterator[Started]:
    """Programs a test started: killed at its end, whatever happened."""
    started: Started = []
    yield started
    for p in started:
        if p.poll() is None:
            p.kill()
        p.wait()


def profiled(binary: Path, mode: str, out: Path, call_graph: str = "fp") -> tuple[profile.Recorder, dict[str, int]]:
    """Records the program for one second of `mode` (perf ends on its own when it exits) and folds it."""
    proc = start(binary, mode, 1.0)
    try:
        with profile.record([proc.pid], out, call_graph=call_graph) as rec:
            go(proc)
            assert proc.wait(timeout=120) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    return rec, profile.fold(rec.data)


@pytest.fixture(scope="module")
def hot_and_cold(programs: Programs, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, int], dict[str, int]]:
    d = tmp_path_factory.mktemp("profiles")
    _, hot = profiled(programs.frame_pointers, "hot", d / "hot")
    _, cold = profiled(programs.frame_pointers, "cold", d / "cold")
    return hot, cold


def perf_gone(pid: int | None) -> bool:
    """No perf process of ours at `pid`, and no perf among our children."""
    assert pid is not None
    ours = [c for c in psutil.Process().children(recursive=True) if c.name().startswith("perf")]
    if ours:
        return False
    try:
        return not psutil.Process(pid).name().startswith("perf")
    except psutil.NoSuchProcess:
        return True


def share(folded: dict[str, int], frame: str) -> float:
    return profile.frame_samples(folded, frame) / profile.total_samples(folded)


# detect ------------------------------------------------------------------------------------------------


def test_detect_reports_what_works_here(support: profile.PerfSupport) -> None:
    assert support.perf is not None and Path(support.perf).name == "perf"
    assert support.version and support.version[0].isdigit()
    assert support.paranoid is None or isinstance(support.paranoid, int)
    assert support.cpu_clock is True and support.can_sample
    assert set(support.hardware) == set(profile.HARDWARE_EVENTS)
    assert all(isinstance(v, bool) for v in support.hardware.values())
    if not all(support.hardware.values()):
        assert support.reason, "something is unavailable, so there is a reason"
        missing = [e for e, ok in support.hardware.items() if not ok]
        assert all(e in support.reason for e in missing)


def test_detect_without_perf_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(profile, "_perf_path", lambda: None)
    s = profile.detect()
    assert s.perf is None and not s.cpu_clock and not any(s.hardware.values())
    assert s.reason and "perf is not on PATH" in s.reason


# record, fold, draw ------------------------------------------------------------------------------------


def test_the_hot_function_has_most_samples(hot_and_cold: tuple[dict[str, int], dict[str, int]]) -> None:
    hot, cold = hot_and_cold
    assert share(hot, "hot") > 0.5, sorted(hot.items(), key=lambda kv: -kv[1])[:5]
    assert share(cold, "cold") > 0.5, sorted(cold.items(), key=lambda kv: -kv[1])[:5]
    # Root first, named after the process.
    top = max(hot, key=lambda s: hot[s])
    assert top.split(";")[0] == "spin" and top.split(";")[-1] == "hot"


def test_flame_graph_is_xml_naming_the_hot_function(hot_and_cold: tuple[dict[str, int], dict[str, int]]) -> None:
    hot, _ = hot_and_cold
    svg = profile.flamegraph_svg(hot, "hot <one> & only", subtitle="a 1 s profile")
    root = ET.fromstring(svg)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    texts = [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "hot <one> & only" in texts and "a 1 s profile" in texts
    titles = [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}title")]
    assert any(t.startswith("hot (") and "samples" in t and "%" in t for t in titles), titles
    # Offline: no script or stylesheet loaded from elsewhere.
    assert not [e for e in root.iter() if e.get("href") or e.get("{http://www.w3.org/1999/xlink}href")]
    assert "@import" not in svg and "<script src" not in svg


def test_diff_is_coloured_by_the_change_of_share(hot_and_cold: tuple[dict[str, int], dict[str, int]]) -> None:
    hot, cold = hot_and_cold
    plain = profile.flamegraph_svg(cold, "cold")
    diff = profile.diff_svg(hot, cold, "hot -> cold")
    ET.fromstring(diff)
    assert diff != plain
    titles = [t.text or "" for t in ET.fromstring(diff).iter("{http://www.w3.org/2000/svg}title")]
    # cold's share grew from (about) nothing to most of the samples: a positive change.
    cold_title = next(t for t in titles if t.startswith("cold ("))
    assert "; +" in cold_title, cold_title
    # Swapped, the hot frame grew.
    back = profile.diff_svg(cold, hot, "cold -> hot")
    hot_title = next(t for t in (e.text or "" for e in ET.fromstring(back).iter()) if t.startswith("hot ("))
    assert "; +" in hot_title, hot_title


def test_no_samples_is_an_error_not_an_empty_picture() -> None:
    with pytest.raises(ProfileError, match="no samples"):
        profile.flamegraph_svg({}, "nothing")
    with pytest.raises(ProfileError, match="no samples in the base"):
        profile.diff_svg({}, {"p;main 1": 1}, "nothing")


def test_folded_stacks_are_kept_as_text(tmp_path: Path) -> None:
    folded = {"postgres;main;operator new(unsigned long)": 3, "postgres;main;ExecScan": 7}
    path = tmp_path / "x.folded"
    profile.write_folded(folded, path)
    assert path.read_text() == "postgres;main;ExecScan 7\npostgres;main;operator new(unsigned long) 3\n"
    assert profile.read_folded(path) == folded
    path.write_text("a;b 1\na;b 2\n\nc 4\n")
    assert profile.read_folded(path) == {"a;b": 3, "c": 4}
    path.write_text("a;b x\n")
    with pytest.raises(ProfileError, match="line 1"):
        profile.read_folded(path)


def test_forked_children_are_followed(programs: Programs, tmp_path: Path) -> None:
    # Only the parent's pid is given; the child it forks once perf is attached does all the work.
    rec, folded = profiled(programs.frame_pointers, "fork", tmp_path)
    assert rec.samples
    assert share(folded, "hot") > 0.5, sorted(folded.items(), key=lambda kv: -kv[1])[:5]


def test_dwarf_call_graphs_unwind_code_without_frame_pointers(programs: Programs, tmp_path: Path) -> None:
    _, folded = profiled(programs.no_frame_pointers, "hot", tmp_path, call_graph="dwarf")
    full = sum(n for s, n in folded.items() if s.split(";")[-1] == "hot" and "main" in s.split(";"))
    assert full / profile.total_samples(folded) > 0.5, sorted(folded.items(), key=lambda kv: -kv[1])[:5]


# stopping ----------------------------------------------------------------------------------------------


def test_the_block_ends_perf_with_sigint(programs: Programs, tmp_path: Path, procs: Started) -> None:
    proc = start(programs.frame_pointers, "hot", 60)
    procs.append(proc)
    with profile.record([proc.pid], tmp_path) as rec:
        go(proc)
        assert rec.perf_pid is not None and psutil.pid_exists(rec.perf_pid)
        time.sleep(0.3)
    assert proc.poll() is None, "the program still runs: perf was stopped, not ended by its exit"
    assert rec.returncode == -signal.SIGINT
    assert perf_gone(rec.perf_pid)
    assert rec.samples and rec.data.is_file()
    assert profile.frame_samples(profile.fold(rec.data), "hot") > 0


def test_ctrl_c_in_the_block_stops_perf(programs: Programs, tmp_path: Path, procs: Started) -> None:
    proc = start(programs.frame_pointers, "hot", 60)
    procs.append(proc)
    with pytest.raises(KeyboardInterrupt), profile.record([proc.pid], tmp_path) as rec:
        go(proc)
        raise KeyboardInterrupt
    assert perf_gone(rec.perf_pid)


def test_an_error_of_the_block_is_not_hidden_and_stops_perf(programs: Programs, tmp_path: Path, procs: Started) -> None:
    proc = start(programs.frame_pointers, "hot", 60)
    procs.append(proc)
    with pytest.raises(RuntimeError, match="the block's own"), profile.Counter([proc.pid]) as counter:
        raise RuntimeError("the block's own")
    assert perf_gone(counter.perf_pid)


def gone_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def test_perf_failing_raises_its_message(tmp_path: Path, support: profile.PerfSupport) -> None:
    rec = profile.Recorder([gone_pid()], tmp_path)
    with pytest.raises(ProfileError, match=r"perf record for pids \d+ failed.*\n.*No such process") as e, rec:
        pass
    assert "exit status" in str(e.value)
    assert perf_gone(rec.perf_pid)
    # perf stat says it otherwise.
    with pytest.raises(ProfileError, match=r"perf stat for pids \d+ failed.*\n.*(No such process|threads)"):
        profile.stat([gone_pid()], 0.1)


def test_a_bad_event_raises_perf_message(tmp_path: Path, programs: Programs, procs: Started) -> None:
    proc = start(programs.frame_pointers, "hot", 60)
    procs.append(proc)
    bad = profile.Recorder([proc.pid], tmp_path, event="no-such-event")
    with pytest.raises(ProfileError, match="no-such-event"), bad:
        pass
    assert perf_gone(bad.perf_pid)


# A stand-in for perf that answers the control pipe like perf, then on SIGINT does what $ON_SIGINT says.
FAKE_PERF = r"""#!/bin/bash
for a in "$@"; do case $a in fd:*) fds=${a#fd:}; ctl=${fds%,*}; ack=${fds#*,};; esac; done
case $ON_SIGINT in
  fail) trap 'echo "fake perf: could not write the data" >&2; exit 3' INT;;
  ignore) trap '' INT;;
esac
read -r line <&"$ctl"
echo ack >&"$ack"
while :; do sleep 0.05; done
"""


@pytest.fixture
def fake_perf(tmp_path: Path) -> Path:
    path = tmp_path / "perf"
    path.write_text(FAKE_PERF)
    path.chmod(0o755)
    return path


def test_perf_failing_at_stop_raises_its_message(
    fake_perf: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ON_SIGINT", "fail")
    rec = profile.Recorder([1], tmp_path / "out", perf=str(fake_perf))
    with pytest.raises(ProfileError, match=r"exit status 3\):\n  fake perf: could not write the data"), rec:
        pass
    assert perf_gone(rec.perf_pid)


def test_perf_that_will_not_stop_is_killed(fake_perf: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ON_SIGINT", "ignore")
    monkeypatch.setattr(profile, "_STOP_TIMEOUT_S", 0.5)
    counter = profile.Counter([1], perf=str(fake_perf))
    with pytest.raises(ProfileError, match=r"did not stop within .* and was killed"), counter:
        pass
    assert counter.returncode == -signal.SIGKILL
    assert perf_gone(counter.perf_pid)


def test_fold_of_no_perf_data_raises_perf_message(tmp_path: Path, support: profile.PerfSupport) -> None:
    bad = tmp_path / "perf.data"
    bad.write_bytes(b"not perf data at all")
    with pytest.raises(ProfileError, match=r"perf script -i .* failed"):
        profile.fold(bad)
    with pytest.raises(ProfileError, match="no perf data"):
        profile.fold(tmp_path / "missing.data")


# stat --------------------------------------------------------------------------------------------------


def test_stat_counts_a_process_and_its_forks(
    programs: Programs, support: profile.PerfSupport, procs: Started, tmp_path: Path
) -> None:
    proc = start(programs.frame_pointers, "fork", 0.5)
    procs.append(proc)
    with profile.Counter([proc.pid], out_dir=tmp_path) as counter:
        go(proc)
        assert proc.wait(timeout=120) == 0
    assert perf_gone(counter.perf_pid)
    counts = counter.counts
    assert set(counts) == set(profile.STAT_EVENTS)
    task_clock = counts["task-clock"]
    # Most of the CPU time is the forked child's (0.5 s of it when it had a CPU to itself).
    assert isinstance(task_clock, float) and task_clock > 100
    for e in profile.HARDWARE_EVENTS:
        assert counts[e] is None or isinstance(counts[e], int)
        if not support.hardware[e]:
            assert counts[e] is None


def test_stat_for_some_seconds(programs: Programs, procs: Started, support: profile.PerfSupport) -> None:
    proc = start(programs.frame_pointers, "hot", 60)
    procs.append(proc)
    go(proc)
    counts = profile.stat([proc.pid], 0.2, events=["task-clock", "cycles"])
    assert set(counts) == {"task-clock", "cycles"}
    assert isinstance(counts["task-clock"], float) and counts["task-clock"] > 0


def test_parse_stat() -> None:
    text = (
        "# started on Mon\n\n"
        "715.07,msec,task-clock,715074938,100.00,0.357,CPUs utilized\n"
        "<not supported>,,cycles,0,100.00,,\n"
        "<not counted>,,instructions,0,100.00,,\n"
        "100,,cpu_core/branch-misses/,5,100.00,,\n"
        "23,,cpu_atom/branch-misses/,5,100.00,,\n"
        "12,,page-faults:u,5,100.00,,\n"
    )
    events = ["task-clock", "cycles", "instructions", "branch-misses", "page-faults", "cache-misses"]
    assert profile.parse_stat(text, events) == {
        "task-clock": 715.07,
        "cycles": None,
        "instructions": None,
        "branch-misses": 123,
        "page-faults": 12,
        "cache-misses": None,
    }


def test_with_children(programs: Programs, procs: Started) -> None:
    proc = start(programs.frame_pointers, "fork", 60)
    procs.append(proc)
    go(proc)
    deadline = time.monotonic() + 30
    while len(psutil.Process(proc.pid).children()) < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    family = profile.with_children(proc.pid)
    assert family[0] == proc.pid and len(family) == 2
    for c in psutil.Process(proc.pid).children():
        c.kill()


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="pids"):
        profile.Recorder([], Path("/nonexistent"))
    with pytest.raises(ValueError, match="call_graph"):
        profile.Recorder([1], Path("/nonexistent"), call_graph="frames")
