"""Shared by every test directory: where test workspaces live (so leaks are easy to find), study files, the CLI,
processes and leak checks, and one engine instance for a block.

The three directories (see DESIGN.md, "Layout and boundaries"):

- `unit/`: no server, no root, no engine installed (`pytest -m "not server"` runs only these);
- `contract/`: engine behaviour written once and run for every registered engine (`contract/engines.py` holds
  what each engine must tell the tests);
- `e2e/`: real runs through the command line, reports in a real browser, real builds.

Every test in `contract/` and `e2e/` carries the `server` marker (it needs a real server, root, a mount or the
build cache); no test in `unit/` does. `pytest_collection_modifyitems` below holds both rules.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import psutil
import pytest

from dbsweep.engines import postgres
from dbsweep.engines.base import Instance
from dbsweep.measure.instructions import InstructionCount, instructions_per_op
from dbsweep.measure.session import SessionStep
from dbsweep.placement import Lockstep
from dbsweep.suites.sysbench import Sysbench

from . import sourcebuilds

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent
DBSWEEP = [sys.executable, "-m", "dbsweep"]
# Every test workspace lives under this directory, so leaks are easy to find.
TEST_ROOT = Path("/tmp") / f"dbsweep-tests-{os.getpid()}"
# The directories whose tests need a real server, root, a mount or the build cache.
SERVER_DIRS = ("contract", "e2e")

STUDY = """\
name = "{name}"
engine = "{engine}"
base = "a"
repeats = {repeats}
workspace = "{workspace}"

[suite]
steps = {steps}
tables = {tables}
rows = {rows}
clients = {clients}
read_seconds = {seconds}
write_seconds = {seconds}
warmup_seconds = {warmup}
maintenance_seconds = 0

[[targets]]
name = "a"
source = "{source}"
config = "{config_a}"

[[targets]]
name = "b"
source = "{source}"
config = "{config_b}"
"""


def write_study(directory: Path, name: str = "t", **kw: object) -> Path:
    """A two-target sysbench study of the engine's prebuilt install (`system`): targets a and b differ in
    their config, a is the base."""
    params: dict[str, object] = {
        "name": name,
        "engine": "postgres",
        "repeats": 1,
        "workspace": str(directory / "ws"),
        "tables": 1,
        "rows": 20000,
        "clients": [1],
        "seconds": 2,
        "warmup": 1,
        "config_a": "cx10a_c2r24",
        "config_b": "cx10a_sb1g_c2r24",
        "steps": '["point-query"]',
    }
    params.update(kw)
    params.setdefault("source", sourcebuilds.study_source(str(params["engine"]), Path(str(params["workspace"]))))
    path = directory / f"{name}.toml"
    path.write_text(STUDY.format(**params))
    return path


DBBENCH_STUDY = """\
name = "rx"
engine = "rocksdb"
base = "lru"
workspace = "{workspace}"

[suite]
name = "dbbench"
steps = {steps}
keys = {keys}
clients = {clients}
{suite}

[[targets]]
name = "lru"
source = "system"
config = "lru"

[[targets]]
name = "hcc"
source = "system"
config = "{config}"
"""


def write_dbbench_study(
    directory: Path,
    *,
    workspace: Path | None = None,
    steps: str = '["fillseq", "readrandom"]',
    keys: int = 50000,
    clients: str = "[1]",
    config: str = "hyper_clock",
    suite: str = "",
) -> Path:
    """A two-target dbbench study of Debian's db_bench (`system`), rx.toml in `directory`: targets lru (the base)
    and hcc differ in their config; `suite` adds lines to [suite] (TOML values are given as TOML)."""
    path = directory / "rx.toml"
    text = DBBENCH_STUDY.format(
        workspace=workspace or directory / "ws", steps=steps, keys=keys, clients=clients, config=config, suite=suite
    )
    path.write_text(text)
    return path


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests in contract/ and e2e/ must say they need a server; tests in unit/ must not need one."""
    wrong = []
    for item in items:
        try:
            where = item.path.relative_to(TESTS).parts[0]
        except ValueError:
            continue
        marked = item.get_closest_marker("server") is not None
        if where in SERVER_DIRS and not marked:
            wrong.append(f"{item.nodeid}: in {where}/ but not marked `server` (pytestmark = pytest.mark.server)")
        elif where == "unit" and marked:
            wrong.append(f"{item.nodeid}: marked `server` but in unit/, whose tests need no server")
    if wrong:
        raise pytest.UsageError("tests in the wrong place:\n" + "\n".join(wrong))


@contextlib.contextmanager
def running_instance(
    engine_name: str, home: Path, config_text: str, install_spec: str = "system"
) -> Iterator[Instance]:
    """The engine's prebuilt install, initialised in `home` with `config_text`, running for the block and
    removed after it."""
    from dbsweep.engines.registry import engine_named

    engine = engine_named(engine_name)
    if install_spec == "system" and sourcebuilds.needs_source_build(engine_name):
        install = sourcebuilds.source_install(engine_name)  # no prebuilt package: the tests' source build
    else:
        install = engine.system_install(install_spec)
    instance = engine.instance(install, home, "test", config_text, engine.server_user())
    instance.init()
    try:
        instance.start()
        yield instance
    finally:
        instance.remove()


def worker_cpu() -> Lockstep:
    """The CPU this test worker's in-process counts run on in lockstep: the last for the first worker, the one
    before it for the second, and so on round the CPUs, so two workers counting at once do not share one CPU while
    there are CPUs enough (each count holds its CPU at a fixed priority, and two on one CPU take turns: slower, the
    same count)."""
    cpus = sorted(os.sched_getaffinity(0))
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    index = int(worker) if worker.isdigit() else 0
    return Lockstep({cpus[-1 - index % len(cpus)]})


def count_system_step(
    engine_name: str, config_text: str, home: Path, suite: Sysbench, step: str, repeats: int, amount: int | None = None
) -> InstructionCount:
    """The instruction count of one sysbench step on the engine's prebuilt install, its tables loaded in `home`
    (reused by later counts there); no process under `home` is left running after it."""
    from dbsweep.engines.registry import engine_named

    engine = engine_named(engine_name)
    count = instructions_per_op(
        engine,
        engine.system_install("system"),
        config_text,
        home,
        step=step,
        load=[suite.command(s, 1) for s in suite.setup_steps()],
        plan=suite.instruction_plan(step, 1, amount),
        tables=suite.tables(),
        repeats=repeats,
        cpus=worker_cpu(),
    )
    # Stopped means stopped: the server, every backend and valgrind around each of them.
    assert processes_under(home) == []
    return count


def count_system_reads(
    engine_name: str,
    config_text: str,
    home: Path,
    suite: Sysbench,
    steps: Sequence[tuple[str, int | None] | SessionStep],
    repeats: int = 2,
) -> dict[str, InstructionCount | str]:
    """Reads counted in one session on the engine's prebuilt install, each a sysbench step (step, amount: None
    to probe it) or a plan of its own: step -> its count, or why it has none; no process under `home` is left
    running after it."""
    from dbsweep.engines.registry import engine_named
    from dbsweep.measure import session

    engine = engine_named(engine_name)
    got: dict[str, InstructionCount | str] = {}

    def counted(step: str, count: InstructionCount | None, error: str | None) -> None:
        got[step] = count if count is not None else str(error)

    session.count_reads(
        engine,
        engine.system_install("system"),
        config_text,
        home,
        steps=[
            s if isinstance(s, SessionStep) else SessionStep(s[0], suite.instruction_plan(s[0], 1, s[1])) for s in steps
        ],
        load=[suite.command(s, 1) for s in suite.setup_steps()],
        tables=suite.tables(),
        counted=counted,
        repeats=repeats,
        cpus=worker_cpu(),
    )
    assert processes_under(home) == []  # the server, every backend and valgrind around each
    return got


def processes_under(path: Path) -> list[psutil.Process]:
    """Live processes whose command line mentions `path` (servers, clients)."""
    found = []
    for p in psutil.process_iter(["cmdline", "pid", "status"]):
        if p.info["status"] == psutil.STATUS_ZOMBIE:  # dead, waiting to be reaped by init
            continue
        cmd = " ".join(p.info["cmdline"] or [])
        if str(path) in cmd and p.pid != os.getpid():
            found.append(p)
    return found


# The marks of a module that counts instructions on Debian's Postgres under valgrind.
POSTGRES_UNDER_VALGRIND = [
    pytest.mark.server,
    pytest.mark.skipif(
        not shutil.which("valgrind") or not postgres.system_majors(),
        reason="needs Debian's Postgres and valgrind",
    ),
]


def own_dir(root: Path, prefix: str) -> Iterator[Path]:
    """A directory of a module's own under `root`, for a module-scoped fixture; no process may be left running
    under it at the end."""
    d = root / f"{prefix}-{uuid.uuid4().hex[:8]}"
    d.mkdir(mode=0o755)
    yield d
    left = wait_no_processes(d, timeout=30)
    assert not left, f"processes left behind: {[p.info['cmdline'] for p in left]}"


def wait_no_processes(path: Path, timeout: float = 60) -> list[psutil.Process]:
    deadline = time.monotonic() + timeout
    left = processes_under(path)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = processes_under(path)
    return left


@pytest.fixture(scope="session", autouse=True)
def _test_root() -> Iterator[Path]:
    TEST_ROOT.mkdir(mode=0o755, exist_ok=True)
    TEST_ROOT.chmod(0o755)  # the server user must reach data directories inside
    yield TEST_ROOT
    left = wait_no_processes(TEST_ROOT, timeout=30)
    shutil.rmtree(TEST_ROOT, ignore_errors=True)
    assert not left, f"processes left behind: {[p.info['cmdline'] for p in left]}"


@pytest.fixture
def tmp(_test_root: Path) -> Iterator[Path]:
    """A fresh directory under the test root that the server user can reach; nothing may run in it after. It is
    removed after its test, while the other workers go on: removing every test's data directories at the end of
    the session took a worker 25-50 s after its last test."""
    d = _test_root / uuid.uuid4().hex[:8]
    d.mkdir(mode=0o755)
    yield d
    left = wait_no_processes(d, timeout=30)
    assert not left, f"processes left behind: {[p.info['cmdline'] for p in left]}"
    shutil.rmtree(d, ignore_errors=True)


def dbsweep(
    *args: str | Path, check: bool = True, timeout: float = 600, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`dbsweep ARGS` as a user runs it, from the repository's root; raises unless it exits 0 (`check`)."""
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1", **(env or {})}
    r = subprocess.run(
        [*DBSWEEP, *map(str, args)], capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT, check=False
    )
    if check and r.returncode != 0:
        raise AssertionError(f"dbsweep {args} exited {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}")
    return r


def interruptible() -> None:
    """preexec_fn for a child the test will Ctrl-C: a shell that started the tests in the background
    made SIGINT ignored, and children inherit that; a user's Ctrl-C reaches a foreground dbsweep."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_run(study: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """`dbsweep run STUDY` in the background, its stdout and stderr together."""
    return subprocess.Popen(
        [*DBSWEEP, "run", str(study), *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=interruptible,
        env={**os.environ, **(env or {})},
    )


@contextlib.contextmanager
def running(study: Path, *args: str, env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[str]]:
    """`dbsweep run STUDY` in the background (`start_run`); killed if a check fails before it ends."""
    proc = start_run(study, *args, env=env)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def wait_for(pred: Callable[[], object], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.2)
    raise AssertionError("timed out waiting")


def done_cells(tmp: Path) -> list[tuple[object, ...]]:
    """Every stored cell of the study in `tmp` (workspace tmp/ws): id, target, step, clients, rep, status,
    finished_at, qps."""
    p = tmp / "ws" / "results.db"
    if not p.exists():
        return []
    with sqlite3.connect(p) as db:
        try:
            return db.execute(
                "SELECT c.id, t.name, c.step, c.clients, c.repetition, c.status, c.finished_at, r.qps "
                "FROM cells c JOIN targets t ON t.id = c.target_id "
                "LEFT JOIN step_results r ON r.cell_id = c.id ORDER BY c.id"
            ).fetchall()
        except sqlite3.OperationalError:
            return []


def alive(procs: list[psutil.Process]) -> list[psutil.Process]:
    """Those still running; a zombie is dead already, it only waits for init to reap it."""
    out = []
    for p in procs:
        try:
            if p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.NoSuchProcess:
            continue
    return out


def children_of(proc: subprocess.Popen[str]) -> list[psutil.Process]:
    try:
        return psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def names(procs: list[psutil.Process]) -> set[str]:
    """The names of those still there (short-lived helpers may exit between listing and asking)."""
    found = set()
    for p in procs:
        try:
            found.add(p.name())
        except psutil.NoSuchProcess:
            continue
    return found


def cmdline(p: psutil.Process) -> list[str]:
    """A process's command line; empty once it is gone."""
    try:
        return p.cmdline()
    except psutil.Error:
        return []


def load_client_running(proc: subprocess.Popen[str]) -> bool:
    return "dbsweep-load" in names(alive(children_of(proc)))


def foreign_process(tmp: Path, name: str) -> subprocess.Popen[str]:
    """A process called `name` (a server's name) that is no server of ours, ready; it writes down every signal
    it gets (to tmp/signals). The caller kills it."""
    exe = tmp / "bin" / name
    exe.parent.mkdir()
    exe.symlink_to(sys.executable)
    script = (
        "import signal, sys, time\n"
        "def note(n, f): open(sys.argv[1], 'a').write(str(n) + '\\n')\n"
        "for s in (signal.SIGINT, signal.SIGQUIT, signal.SIGTERM): signal.signal(s, note)\n"
        "print('ready', flush=True)\n"
        "time.sleep(600)\n"
    )
    proc = subprocess.Popen([str(exe), "-c", script, str(tmp / "signals")], stdout=subprocess.PIPE, text=True)
    if proc.stdout is None or proc.stdout.readline().strip() != "ready":
        proc.kill()
        proc.wait()
        raise AssertionError(f"the stand-in process {name!r} did not start")
    return proc


class Recorder:
    """What a build says as it goes: its messages and its progress (fraction, message)."""

    def __init__(self) -> None:
        self.messages: list[str] = []
        self.progress: list[tuple[float, str]] = []

    def log(self, message: str) -> None:
        self.messages.append(message)

    def on_progress(self, fraction: float, message: str) -> None:
        self.progress.append((fraction, message))


def _sigint_ignored() -> None:
    # What bash does to a command it starts in the background of a script.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def interrupt_with_sigint_ignored(
    study: Path, running: Callable[[subprocess.Popen[str]], bool]
) -> tuple[int, str, list[psutil.Process]]:
    """`dbsweep run STUDY` started as a script's background command starts it (SIGINT ignored), sent SIGINT as
    soon as `running(proc)` holds: its exit status, its output and the children it had then."""
    proc = subprocess.Popen(
        [*DBSWEEP, "run", str(study)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=_sigint_ignored,
        env={**os.environ, "COLUMNS": "200"},
    )
    try:
        wait_for(lambda: running(proc) or proc.poll() is not None, timeout=300)
        children = children_of(proc)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, out, children


def counting(proc: subprocess.Popen[str]) -> bool:
    """Whether valgrind runs under `proc` (an instruction count is under way)."""
    return any("valgrind" in " ".join(cmdline(p)) for p in alive(children_of(proc)))


def sigkill_when(args: list[str], ready: Callable[[subprocess.Popen[str]], bool], where: Path, timeout: float) -> None:
    """`dbsweep ARGS`, killed with SIGKILL once `ready(proc)` (or once it ended, which fails the test): its
    servers, clients and valgrind die with it, and nothing runs under `where` afterwards."""
    proc = subprocess.Popen([*DBSWEEP, *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for(lambda: proc.poll() is not None or ready(proc), timeout=timeout)
        children = alive(children_of(proc))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL, proc.stdout.read() if proc.stdout else ""
    wait_for(lambda: not alive(children), timeout=60)
    assert not wait_no_processes(where, timeout=30)


def sigkill_during_count(study: Path, target: str, where: Path) -> None:
    """`dbsweep run STUDY --counts-only --target TARGET`, killed with SIGKILL once valgrind runs: its servers,
    clients and valgrind die with it, nothing runs under `where`, every count stored is whole or a failure that
    says why, and `status` still reads the store."""
    sigkill_when(["run", str(study), "--counts-only", "--target", target], counting, where, timeout=300)
    with sqlite3.connect(where / "ws" / "results.db") as db:
        rows = db.execute("SELECT step, per_event, error FROM instructions").fetchall()
    for step, per_event, error in rows:
        assert error or (per_event and per_event > 0), (step, per_event, error)
    assert "done 0, failed 0, pending 4" in dbsweep("status", study).stdout


@contextlib.contextmanager
def small_disk(where: Path, megabytes: int) -> Iterator[Path]:
    """A tmpfs of `megabytes` at `where`, reachable by the server user, unmounted after the block; the test is
    skipped where none can be mounted."""
    where.mkdir()
    options = f"size={megabytes}M,mode=755"
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a small filesystem here: {r.stderr.strip()}")
    try:
        yield where
    finally:
        wait_no_processes(where, timeout=30)
        subprocess.run(["umount", "--lazy", str(where)], check=False)


def run_on_a_full_disk(study: Path, disk: Path) -> None:
    """`dbsweep run STUDY` with its workspace on `disk`, too small for its data: every cell is stored (the store,
    on the same disk, got its space back) as failed, the first ones naming the full disk, the rest not run; no
    data directory is kept full; nothing is left running."""
    r = dbsweep("run", study, check=False)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "Traceback" not in out
    with sqlite3.connect(disk / "ws" / "results.db") as db:
        stored = db.execute("SELECT status, error FROM cells ORDER BY id").fetchall()
    assert len(stored) == 4 and {st for st, _ in stored} == {"failed"}, stored
    first = [e for _, e in stored if not e.startswith("not run: ")]
    assert first and all(e.startswith(f"the disk holding {disk}/ws/data/") for e in first), first
    assert all(" ran out of space (" in e for e in first), first
    assert not [p for p in (disk / "ws" / "data").rglob("r1") if any(p.iterdir())], "a full data dir was kept"
    assert not wait_no_processes(disk, timeout=30)


def own_configs(tmp: Path, engine: str, shipped: str, **written: str) -> dict[str, str]:
    """A configs directory of the test's own (tmp/configs/ENGINE): the shipped config `shipped` copied, and each
    NAME=TEXT of `written` as a config NAME; the environment that makes dbsweep read it."""
    from dbsweep.engines.registry import engine_named

    suffix = engine_named(engine).config_suffix
    where = tmp / "configs" / engine
    where.mkdir(parents=True, exist_ok=True)
    (where / f"{shipped}{suffix}").write_text((ROOT / "configs" / engine / f"{shipped}{suffix}").read_text())
    for name, text in written.items():
        (where / f"{name}{suffix}").write_text(text)
    return {"DBSWEEP_CONFIGS": str(tmp / "configs")}


def logging_study(
    tmp: Path, monkeypatch: pytest.MonkeyPatch, engine: str, shipped: str, logging: str, extra: str = ""
) -> Path:
    """A two-target study counted by instructions, two counts at once (a CPU each): a runs the shipped config
    (as `plain`), b the same with `logging` appended (as `logged`); `extra` goes into [measure]."""
    from dbsweep.engines.registry import engine_named

    base = (ROOT / "configs" / engine / f"{shipped}{engine_named(engine).config_suffix}").read_text()
    env = own_configs(tmp, engine, shipped, plain=base, logged=base + logging)
    monkeypatch.setenv("DBSWEEP_CONFIGS", env["DBSWEEP_CONFIGS"])
    study = write_study(tmp, engine=engine, rows=2000, seconds=1, warmup=0, config_a="plain", config_b="logged")
    measure = "\n[measure]\ninstructions = true\ninstruction_seconds = 2\ninstruction_pairs = 1\ninstruction_jobs = 2\n"
    study.write_text(study.read_text() + measure + extra)
    return study


def stored_cells(ws: Path) -> list[tuple[str, str, int, str, dict[str, Any]]]:
    """Every stored cell of the workspace `ws` in order: (target, step, clients, status, its summary or {})."""
    db = sqlite3.connect(ws / "results.db")
    rows = db.execute(
        "SELECT t.name, c.step, c.clients, c.status, COALESCE(s.summary, '{}') FROM cells c "
        "JOIN targets t ON t.id = c.target_id LEFT JOIN step_results s ON s.cell_id = c.id ORDER BY c.id"
    ).fetchall()
    db.close()
    return [(t, st, c, status, json.loads(x)) for t, st, c, status, x in rows]
