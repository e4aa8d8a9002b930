"""The samplers against real processes (stand-ins for a server and a client) and real devices: discovery, exited
children, windows, per-op figures. Against a real server: contract/test_measure.py."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dbsweep.measure import (
    PER_OP_KEYS,
    Sampler,
    StepMeasures,
    device_delta,
    dir_size,
    find_device,
    per_op,
    snapshot_device,
)
from dbsweep.measure.device import device_by_number, mount_of

# Forks children that burn CPU and write, one after another, reaps them, and reports what they used.
TREE = r"""
import json, os, sys, time
sys.stdin.readline()  # "go": the sampler is running
out = sys.argv[1]
pids = []
for i in range(4):
    pid = os.fork()
    if pid == 0:
        end = time.process_time() + 0.4
        while time.process_time() < end:
            pass
        with open(f"{out}/w{i}", "wb") as f:
            f.write(b"x" * (4 << 20))
        os._exit(0)
    pids.append(pid)
    time.sleep(0.15)
used = 0.0
for pid in pids:
    _, _, ru = os.wait4(pid, 0)
    used += ru.ru_utime + ru.ru_stime
print(json.dumps({"children_cpu": used, "written": 4 * (4 << 20)}), flush=True)
sys.stdin.readline()  # stay alive until the test has taken its window
"""

# A client: one thread that keeps sleeping (voluntary switches), the main one burns CPU, then waits.
CLIENT = r"""
import sys, threading, time
def nap():
    while True:
        time.sleep(0.005)
threading.Thread(target=nap, daemon=True).start()
end = time.process_time() + 0.3
while time.process_time() < end:
    pass
print("done", flush=True)
sys.stdin.readline()
"""


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[str]]:
    """A quiet process to stand in for a server."""
    p = subprocess.Popen(["sleep", "60"], text=True)
    yield p
    p.kill()
    p.wait()


def _python(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )


def _finish(p: subprocess.Popen[str]) -> None:
    if p.stdin:
        p.stdin.close()
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def test_device_discovery() -> None:
    root = find_device(Path("/"))
    assert mount_of(Path("/")) is not None
    if root is None:
        pytest.skip("the root filesystem has no block device here (overlay)")
    assert Path(f"/sys/dev/block/{root.major}:{root.minor}").exists()
    names = {line.split()[2] for line in Path("/proc/diskstats").read_text().splitlines()}
    assert root.name in names and root.disk in names
    assert root.kind in {"disk", "partition", "dm", "md", "loop"}
    # A path that does not exist yet is on the filesystem of its nearest parent.
    assert find_device(Path("/var/tmp/dbsweep-not-there/x/y")) == find_device(Path("/var/tmp"))
    # /tmp: a disk or tmpfs, but no error either way.
    tmp = find_device(Path("/tmp"))
    tmp_mount = mount_of(Path("/tmp"))
    assert tmp_mount is not None
    assert (tmp is None) == (tmp_mount.fstype in {"tmpfs", "overlay"})
    assert find_device(Path("/dev/shm")) is None  # tmpfs
    loop0 = device_by_number(7, 0)
    if loop0 is not None:
        assert loop0.kind == "loop" and loop0.name == "loop0"


def test_fsynced_writes_show_on_the_device() -> None:
    dev = find_device(Path("/var/tmp"))
    if dev is None:
        pytest.skip("/var/tmp has no block device here")
    a = snapshot_device(dev)
    with tempfile.NamedTemporaryFile(dir="/var/tmp", prefix="dbsweep-measure-") as f:
        for _ in range(20):
            f.write(os.urandom(1 << 20))
        f.flush()
        os.fsync(f.fileno())
        b = snapshot_device(dev)
    assert a is not None and b is not None
    d = device_delta(a, b)
    assert d.write_kb > 10 * 1024
    assert d.writes > 0 and d.w_s > 0 and d.wkb_s > 0 and d.wareq_sz > 0
    assert 0 <= d.util_pct <= 100


def test_exited_children_are_not_lost() -> None:
    out = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="dbsweep-measure-"))
    parent = _python(TREE, str(out))
    assert parent.stdin and parent.stdout
    try:
        with Sampler(parent.pid, out, interval=0.1) as s:
            t0 = time.monotonic()
            parent.stdin.write("go\n")
            parent.stdin.flush()
            truth = json.loads(parent.stdout.readline())
            t1 = time.monotonic()
            m = s.window(t0, t1)
    finally:
        _finish(parent)
        for f in out.iterdir():
            f.unlink()
        out.rmdir()
    used = truth["children_cpu"]
    assert used > 1.0
    assert m.server_cpu_s >= 0.8 * used, (m.server_cpu_s, used)
    assert m.server_cpu_s <= used + 0.3, "an exited child was counted twice"
    assert m.server_cs > 0
    assert m.server_write_bytes is not None and m.server_write_bytes >= 0.9 * truth["written"]
    # The tree grew and shrank inside the window: children were seen, and all had exited by its end.
    procs = [x.server.procs for x in s.snapshots() if m.start <= x.t <= m.end]
    assert max(procs) >= 2 and procs[-1] == 1
    assert m.server_procs_max >= 2
    assert m.server_rss_peak_bytes >= m.server_rss_max_proc_bytes > 0
    print(f"\ntree: children used {used:.3f} s, sampler saw {m.server_cpu_s:.3f} s over {m.intervals} intervals")


def test_client_attached_after_start(sleeper: subprocess.Popen[str]) -> None:
    with Sampler(sleeper.pid, Path("/var/tmp"), interval=0.1) as s:
        time.sleep(0.15)
        client = _python(CLIENT)
        assert client.stdout
        try:
            s.attach_client(client.pid)
            t0 = time.monotonic()
            assert client.stdout.readline().strip() == "done"
            time.sleep(0.15)
            t1 = time.monotonic()
            m = s.window(t0, t1)
        finally:
            _finish(client)
    cpu = m.client_cpu_s
    assert cpu is not None and cpu > 0.1
    # The sleeping thread's switches count too, not only the main thread's.
    assert m.client_cs_vol is not None and m.client_cs_vol >= 20
    assert m.server_cpu_s < cpu  # the stand-in server only sleeps
    records = s.samples()
    assert records[0].client is None and records[-1].client is not None


def test_window_totals_are_the_sum_of_intervals(sleeper: subprocess.Popen[str]) -> None:
    with (
        Sampler(sleeper.pid, Path("/var/tmp"), interval=0.05) as s,
        tempfile.NamedTemporaryFile(dir="/var/tmp", prefix="dbsweep-measure-") as f,
    ):
        for _ in range(8):
            f.write(os.urandom(256 << 10))
            f.flush()
            os.fsync(f.fileno())
            time.sleep(0.05)
    snaps = s.snapshots()
    records = s.samples()
    assert len(records) == len(snaps) - 1 >= 6
    assert snaps[0].reason == "start" and snaps[-1].reason == "stop"
    assert all(r.t1 > r.t0 for r in records)

    m = s.window(snaps[0].t, snaps[-1].t)
    assert m.intervals == len(records)
    assert m.elapsed_s == pytest.approx(sum(r.seconds for r in records))
    assert m.host_cs == sum(r.host.cs for r in records)
    assert m.host_intr == sum(r.host.intr for r in records)
    assert m.server_user_s == pytest.approx(sum(r.server.user_s for r in records), abs=1e-9)
    assert m.server_cs_vol == sum(r.server.cs_vol for r in records)
    jiffies = sum(r.host.jiffies for r in records)
    busy = sum(r.host.us_jiffies + r.host.sy_jiffies for r in records)
    assert m.host_cpu_pct == pytest.approx(100.0 * busy / jiffies)
    if s.device is not None:
        assert m.dev_write_kb is not None and m.dev_writes is not None
        assert m.dev_write_kb == pytest.approx(sum(r.device.write_kb for r in records if r.device))
        assert m.dev_writes == sum(r.device.writes for r in records if r.device)
        assert m.dev_write_kb >= 2 * 1024  # 8 x 256 KB, fsynced

    # A window between samples widens to the samples that bracket it.
    lo = (snaps[1].t + snaps[2].t) / 2
    hi = (snaps[-3].t + snaps[-2].t) / 2
    w = s.window(lo, hi)
    assert (w.start, w.end) == (snaps[1].t, snaps[-2].t)
    assert w.host_cs == sum(r.host.cs for r in records[1:-1])
    with pytest.raises(ValueError, match="not after"):
        s.window(hi, lo)
    print(f"\nsampler cost: {s.cost_per_sample() * 1e3:.2f} ms CPU per sample over {len(snaps)} samples")


def test_no_device_is_recorded_not_fatal(sleeper: subprocess.Popen[str]) -> None:
    with Sampler(sleeper.pid, Path("/dev/shm"), interval=0.1) as s:
        time.sleep(0.05)
    assert s.device is None and "tmpfs" in s.device_note
    snaps = s.snapshots()
    m = s.window(snaps[0].t, snaps[-1].t)
    assert m.device is None and m.dev_writes is None and "no device" in m.device_note
    assert per_op(m, 100)["r/o"] is None


def _hand_made() -> StepMeasures:
    return StepMeasures(
        start=100.0,
        end=110.0,
        elapsed_s=10.0,
        ncpu=4,
        host_cpu_pct=50.0,
        host_cs=200_000,
        server_user_s=3.0,
        server_sys_s=1.0,
        server_cs_vol=15_000,
        server_cs_invol=5_000,
        device="nvme0n1",
        dev_reads=1_000,
        dev_read_kb=8_000.0,
        dev_writes=500,
        dev_write_kb=4_000.0,
        client_user_s=0.75,
        client_sys_s=0.25,
    )


def test_per_op_by_hand() -> None:
    got = per_op(_hand_made(), 20_000)  # 2000 ops/s
    want = {
        "o/s": 2000.0,
        "cpu/o": 200.0,  # 4 s x 1e6 / 20000
        "cs/o": 1.0,  # 20000 / 20000
        "host_cs/o": 10.0,
        "r/o": 0.05,
        "w/o": 0.025,
        "rKB/o": 0.4,
        "wKB/o": 0.2,
        "client_cpu/o": 50.0,
        "host_cpu/o": 0.025,  # 50 % / 2000 ops/s
        "cpupq": 1000.0,  # 50 % of 4 CPUs = 2 CPU-s/s over 2000 ops/s = 1 ms/op
    }
    assert set(got) == set(want) == set(PER_OP_KEYS)
    for k, v in want.items():
        assert got[k] == pytest.approx(v), k
    # §3.1: cpu/o x ncpu x 1e4 is the µs form.
    assert got["host_cpu/o"] is not None and math.isclose(got["host_cpu/o"] * 4 * 1e4, 1000.0)

    bare = dataclasses.replace(
        _hand_made(), device=None, dev_reads=None, dev_read_kb=None, dev_writes=None, dev_write_kb=None
    )
    got = per_op(bare, 20_000)
    assert got["r/o"] is None and got["w/o"] is None and got["rKB/o"] is None and got["wKB/o"] is None
    assert got["cpu/o"] == pytest.approx(200.0)
    no_client = dataclasses.replace(_hand_made(), client_user_s=None, client_sys_s=None)
    assert per_op(no_client, 20_000)["client_cpu/o"] is None
    assert all(v is None for v in per_op(_hand_made(), 0).values())


def test_dir_size_counts_regular_files_once(tmp: Path) -> None:
    d = tmp / "data"
    (d / "base" / "1").mkdir(parents=True)
    (d / "a").write_bytes(b"x" * 1000)
    (d / "base" / "b").write_bytes(b"x" * 2345)
    (d / "base" / "1" / "c").write_bytes(b"x" * 10)
    (d / "empty").write_bytes(b"")
    big = tmp / "outside"
    big.write_bytes(b"x" * 100_000)
    (d / "link").symlink_to(big)  # not followed
    (d / "dirlink").symlink_to(tmp)  # not followed either
    os.link(d / "a", d / "base" / "a-again")  # a hard link counts once
    assert dir_size(d) == 1000 + 2345 + 10
    assert dir_size(tmp / "missing") == 0
