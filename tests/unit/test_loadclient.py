"""The load client from dbsweep's side, without a server: its option errors before it connects, the summary
envelope parsed into one StepResult, and `loadclient.run` against a stand-in binary (what it passes, what it
reads, how a failure is said)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dbsweep import loadclient, paths
from dbsweep.engines.base import Access
from dbsweep.errors import StepError
from dbsweep.results.model import StepResult

ENVELOPE = {
    "type": "summary",
    "suite": "sysbench",
    "step": "point-query",
    "ops_name": "queries",
    "operations": 300,
    "events": 300,
    "seconds": 3.0,
    "rate": 100.0,
    "tps": 100.0,
    "latency_us": {"p50": 90.0, "p99": 400.0, "max": 900.0},
    "histogram": "HISTFAAAAB94nJNpmSzMwMDAxAABzFCaEUzOmbWR",
    "errors": {},
    "error_count": 0,
    "error_samples": [],
    "client_cpu_user_s": 0.1,
    "client_cpu_sys_s": 0.2,
    "client_max_rss_kb": 30000,
    "ended_early": None,
    "detail": {"workload": "point-query", "queries": 300, "warmup_events": 50, "statements_per_event": 1},
}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["bogus"], "unknown step 'bogus'; the steps are l.i0, l.x, l.i1, l.i2, qr100, qp100, qr500, qp500, qr1000"),
        (["l.i0", "--clients", "0", "--rows", "10"], "--clients must be at least 1"),
        (["l.i0", "--rows", "0"], "--rows must be at least 1 for l.i0"),
        (["l.i1"], "l.i1 needs --rows, the rows each client inserts"),
        (["qr100", "--rate", "0"], "--rate must be at least 1 row per second per client for qr100"),
        (["qp100", "--rows", "5", "--seconds", "5"], "give qp100 --seconds or --rows, not both"),
    ],
)
def test_bad_ibench_options_fail_before_connecting(args: list[str], message: str) -> None:
    # Port 1: nothing listens, so a connection attempt would fail differently.
    cmd = [str(paths.load_binary()), "ibench", *args, "--host", "127.0.0.1", "--port", "1"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
    assert r.returncode == 2
    assert message in r.stderr and "connect" not in r.stderr
    assert json.loads(r.stdout.splitlines()[-1])["type"] == "error"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope"], "unknown step 'nope'; the steps are prepare, point-query, random-points, "),
        (
            ["point-query", "--rows", "0", "--seconds", "1"],
            "tables, rows, clients, seconds and events must all be positive",
        ),
        (["point-query", "--range", "0"], "--range must be at least 1"),
        (["prepare", "--rows", "0"], "prepare needs at least one table and one row per table"),
    ],
)
def test_bad_sysbench_options_fail_before_connecting(args: list[str], message: str) -> None:
    cmd = [str(paths.load_binary()), "sysbench", *args, "--host", "127.0.0.1", "--port", "1"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
    assert r.returncode == 2
    assert message in r.stderr and "connect" not in r.stderr
    assert message in json.loads(r.stdout.splitlines()[-1])["message"]


def test_the_old_subcommands_are_gone() -> None:
    for old in ("run", "prepare"):
        r = subprocess.run([paths.load_binary(), old], capture_output=True, text=True, timeout=30, check=False)
        assert r.returncode != 0, old


def test_an_envelope_is_one_typed_result_and_its_flat_summary() -> None:
    r = StepResult.from_envelope(ENVELOPE)
    assert (r.suite, r.step, r.ops_name, r.operations, r.rate) == ("sysbench", "point-query", "queries", 300, 100.0)
    assert r.latency_us.p99 == 400.0 and r.latency_us.p95 == 0  # what the client did not give is 0
    assert r.detail["warmup_events"] == 50
    flat = r.flat()
    assert flat["warmup_events"] == 50 and flat["rate"] == 100.0 and "detail" not in flat and "type" not in flat
    # A step's field never hides a common one.
    clash = StepResult.from_envelope({**ENVELOPE, "detail": {"rate": -1, "queries": 300}})
    assert clash.flat()["rate"] == 100.0


def test_a_malformed_envelope_is_the_steps_failure() -> None:
    bad = {k: v for k, v in ENVELOPE.items() if k != "operations"}
    with pytest.raises(
        StepError, match=r"the load client's summary is not what dbsweep reads: operations: Field required"
    ):
        StepResult.from_envelope(bad)
    with pytest.raises(StepError, match=r"summary is not what dbsweep reads: rate: "):
        StepResult.from_envelope({**ENVELOPE, "rate": "fast"})


STAND_IN = """\
#!{python}
import json, os, signal, sys
args = sys.argv[1:]
with open(os.environ["STAND_IN_SEEN"], "w") as f:
    json.dump({{"args": args, "password": os.environ.get("DBSWEEP_PASSWORD")}}, f)
how = os.environ.get("STAND_IN_HOW", "ok")
print(json.dumps({{"type": "second", "t": 1, "phase": "warmup", "ops": 5, "errors": 0, "max_us": 10}}), flush=True)
print("a line that is not JSON", flush=True)
print(json.dumps({{"type": "second", "t": 2, "phase": "measure", "ops": 7, "errors": 0, "max_us": 12}}), flush=True)
if how == "killed":
    os.kill(os.getpid(), signal.SIGKILL)
if how == "error":
    print(json.dumps({{"type": "error", "message": "needs tables sbtest1..sbtest3 but only 1 of them exist"}}))
    sys.exit(1)
if how == "silent":
    print("it went wrong somehow", file=sys.stderr)
    sys.exit(3)
print({envelope}, flush=True)
"""


@pytest.fixture
def stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    exe = tmp_path / "dbsweep-load"
    exe.write_text(STAND_IN.format(python=sys.executable, envelope=repr(json.dumps(ENVELOPE))))
    exe.chmod(0o755)
    monkeypatch.setenv("DBSWEEP_LOAD", str(exe))
    monkeypatch.setenv("STAND_IN_SEEN", str(tmp_path / "seen.json"))
    return tmp_path / "seen.json"


def test_run_passes_the_command_and_the_access_and_reads_the_lines(stand_in: Path, tmp_path: Path) -> None:
    access = Access(["--host", "127.0.0.1", "--port", "5"], {"DBSWEEP_PASSWORD": "secret"})
    started: list[int] = []
    seconds: list[dict[str, object]] = []
    summaries: list[bool] = []
    out = loadclient.run(
        ["sysbench", "point-query", "--seconds", "3"],
        access,
        tmp_path / "logs" / "r.log",
        seconds.append,
        on_start=started.append,
        on_summary=lambda: summaries.append(True),
    )
    seen = json.loads(stand_in.read_text())
    assert seen == {"args": ["sysbench", "point-query", "--seconds", "3", "--host", "127.0.0.1", "--port", "5"],
                    "password": "secret"}  # fmt: skip
    assert out.result == StepResult.from_envelope(ENVELOPE)
    assert [s["t"] for s in out.seconds] == [1, 2] and seconds == out.seconds
    assert len(started) == 1 and started[0] > 0 and summaries == [True]
    assert (tmp_path / "logs" / "r.log").is_file()


@pytest.mark.parametrize(
    ("how", "message"),
    [
        ("killed", r"^the load client \(dbsweep-load sysbench\) was killed by SIGKILL before the step ended$"),
        ("error", r"^dbsweep-load sysbench failed: needs tables sbtest1..sbtest3 but only 1 of them exist$"),
        ("silent", r"^dbsweep-load sysbench failed: it went wrong somehow$"),
    ],
)
def test_a_failed_client_is_said_in_one_sentence(
    stand_in: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str, message: str
) -> None:
    monkeypatch.setenv("STAND_IN_HOW", how)
    with pytest.raises(StepError, match=message):
        loadclient.run(["sysbench", "point-query"], Access([], {}), tmp_path / "r.log")
