"""How much a load client costs the host: dbsweep-load against sysbench (and, on Postgres, pgbench) on the
same work.

One server from Debian's packages (`--engine postgres`: Postgres 15 with cx10a_c2r24; `--engine mariadb`:
MariaDB 10.11 with InnoDB, cz12a_c2r24), one sbtest table loaded once. For each round the clients run
interleaved (the order alternates every round), at 1 and 2 client threads:
  dbsweep-load point-query        vs  sysbench oltp_point_select   vs  pgbench -M prepared (same SELECT)
  dbsweep-load read-only, range 100  vs  sysbench oltp_read_only --range_size=100
  dbsweep-load update-nonindex    vs  sysbench oltp_update_non_index
Client CPU is the client process's own user+system time (from wait4), divided by the queries it ran.
On Postgres it also runs bench/floor_client.c (compiled here against libpq): the cheapest closed-loop
client, which sends pre-built requests and only finds each reply's end. Its CPU per query is the floor
that the kernel's loopback send/receive and wake-ups put under any client of this machine.
On MariaDB it also runs bench/mysql_crate_client (built here with cargo): point-query and update-nonindex
through the `mysql` crate's prepared statements, the well-kept crate dbsweep-load's own MySQL driver was
weighed against ("CPU vs load" is a tool's client CPU per query over dbsweep-load's).
Prints medians over the rounds, with paired 95 % intervals (rounds as pairs) for the ratios to
sysbench and to the floor; no assertions (this is a measurement, not a test).

    .venv/bin/python bench/client_overhead.py --rounds 3 --seconds 20
    .venv/bin/python bench/client_overhead.py --engine mariadb --rounds 3 --seconds 20
    .venv/bin/python bench/client_overhead.py --engine mariadb --instructions --seconds 16 --clients 1
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil

from dbsweep import loadclient, paths, procs
from dbsweep.engines.base import Access, Instance
from dbsweep.engines.registry import engine_named
from dbsweep.verdicts import stats

ROWS = 100_000

WORKLOADS = {
    # name: (dbsweep-load workload, extra args, sysbench test, sysbench extra args, floor workload)
    "point-query": ("point-query", [], "oltp_point_select", [], "point"),
    "read-only_range=100": ("read-only", ["--range", "100"], "oltp_read_only", ["--range_size=100"], "read-only"),
    "update-nonindex": ("update-nonindex", [], "oltp_update_non_index", [], "update"),
}


@dataclass
class Usage:
    """What wait4 says the client cost: CPU seconds (user, system) and context switches."""

    user: float
    sys: float
    vcsw: int
    ivcsw: int
    instructions: int | None = None
    """The client's user-space instructions, when it ran under cachegrind (--instructions)."""


@dataclass
class Sample:
    queries: int
    instructions: int | None
    qps: float
    cpu_us_per_query: float
    max_rss_mb: float
    sys_share: float
    """The share of the client's CPU spent in the kernel."""
    cs_per_query: float
    """Voluntary plus involuntary context switches of the client, per query."""


# (workload, clients, seconds) -> each tool's name and its run
Tools = Callable[[str, int, int], list[tuple[str, Callable[[], Sample]]]]


def _sample(qps: float, queries: int, usage: Usage, rss: float) -> Sample:
    cpu = usage.user + usage.sys
    return Sample(
        queries,
        usage.instructions,
        qps,
        cpu * 1e6 / queries,
        rss,
        usage.sys / cpu if cpu else 0.0,
        (usage.vcsw + usage.ivcsw) / queries,
    )


def _run(cmd: list[str], env: dict[str, str]) -> tuple[str, Usage, float]:
    """Runs a client to completion; returns its output, its usage (from wait4) and peak RSS in MB
    (sampled: wait4's maxrss would report the size of the Python that forked it). Under --instructions the
    client runs under cachegrind, and the usage carries the instructions it counted."""
    if COUNT:
        cmd = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null", *cmd]
    with tempfile.TemporaryFile(mode="w+") as out_file:
        proc = subprocess.Popen(cmd, stdout=out_file, stderr=subprocess.STDOUT, env=env, text=True)
        ps = psutil.Process(proc.pid)
        peak = 0
        while True:
            pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            with contextlib.suppress(psutil.Error):
                peak = max(peak, ps.memory_info().rss)
            time.sleep(0.2)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out_file.seek(0)
        out = out_file.read()
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed ({proc.returncode}):\n{out[-2000:]}")
    usage = Usage(ru.ru_utime, ru.ru_stime, ru.ru_nvcsw, ru.ru_nivcsw)
    if COUNT:
        m = re.search(r"I\s+refs:\s+([\d,]+)", out)
        assert m, out[-2000:]
        usage.instructions = int(m.group(1).replace(",", ""))
    return out, usage, peak / 2**20


TRANSPORT = "tcp"
COUNT = False  # --instructions: every client runs under cachegrind
# The config each engine's server runs with.
CONFIGS = {"postgres": "cx10a_c2r24", "mariadb": "cz12a_c2r24"}


@dataclass(frozen=True)
class Endpoint:
    """Where every tool connects: what dbsweep-load is given, read back for the other tools."""

    engine: str
    host: str  # 127.0.0.1, or the Unix socket (Postgres: its directory; MariaDB: the socket file)
    port: int
    user: str
    dbname: str
    password: str
    access: Access


def endpoint(engine: str, server: Instance) -> Endpoint:
    """Every tool reaches the server the same way: loopback TCP, or the server's Unix socket."""
    access = server.access(via_socket=TRANSPORT == "unix")
    args = dict(zip(access.args[::2], access.args[1::2], strict=True))  # option, value pairs
    return Endpoint(
        engine,
        args["--host"],
        int(args["--port"]),
        args["--user"],
        args["--dbname"],
        access.env["DBSWEEP_PASSWORD"],
        access,
    )


def dbsweep_load(ep: Endpoint, workload: str, extra: list[str], clients: int, secs: int) -> Sample:
    env = {**os.environ, **ep.access.env}
    cmd = [
        str(paths.load_binary()),
        "sysbench",
        workload,
        "--rows",
        str(ROWS),
        "--clients",
        str(clients),
        "--seconds",
        str(secs),
        "--warmup",
        "0",
        *ep.access.args,
        *extra,
    ]
    out, usage, rss = _run(cmd, env)
    summary = json.loads([line for line in out.splitlines() if '"type":"summary"' in line][-1])
    assert summary["ops_name"] == "queries", summary
    queries = int(summary["operations"])
    return _sample(queries / float(summary["seconds"]), queries, usage, rss)


def _sysbench_driver(ep: Endpoint) -> list[str]:
    if ep.engine == "mariadb":
        where = [f"--mysql-socket={ep.host}"] if ep.host.startswith("/") else [f"--mysql-host={ep.host}"]
        return [
            "--db-driver=mysql",
            *where,
            f"--mysql-port={ep.port}",
            f"--mysql-user={ep.user}",
            f"--mysql-password={ep.password}",
            f"--mysql-db={ep.dbname}",
        ]
    return [
        "--db-driver=pgsql",
        f"--pgsql-host={ep.host}",
        f"--pgsql-port={ep.port}",
        f"--pgsql-user={ep.user}",
        f"--pgsql-password={ep.password}",
        f"--pgsql-db={ep.dbname}",
    ]


def sysbench(ep: Endpoint, test: str, extra: list[str], clients: int, secs: int) -> Sample:
    cmd = [
        "sysbench",
        test,
        *_sysbench_driver(ep),
        "--tables=1",
        f"--table-size={ROWS}",
        f"--threads={clients}",
        f"--time={secs}",
        "--events=0",
        "--rand-type=uniform",
        *extra,
        "run",
    ]
    out, usage, rss = _run(cmd, dict(os.environ))
    m = re.search(r"queries:\s+(\d+)\s+\(([\d.]+) per sec", out)
    assert m, out
    return _sample(float(m.group(2)), int(m.group(1)), usage, rss)


def pgbench(ep: Endpoint, clients: int, secs: int, script: Path) -> Sample:
    env = {**os.environ, "PGPASSWORD": ep.password}
    cmd = [
        "pgbench",
        "-h",
        ep.host,
        "-p",
        str(ep.port),
        "-U",
        ep.user,
        "-n",
        "-M",
        "prepared",
        "-f",
        str(script),
        "-c",
        str(clients),
        "-j",
        str(clients),
        "-T",
        str(secs),
        ep.dbname,
    ]
    out, usage, rss = _run(cmd, env)
    n = int(re.search(r"number of transactions actually processed: (\d+)", out).group(1))  # type: ignore[union-attr]
    tps = float(re.search(r"tps = ([\d.]+)", out).group(1))  # type: ignore[union-attr]
    return _sample(tps, n, usage, rss)


def build_floor(home: Path) -> Path:
    """Compiles the floor client; it needs gcc and libpq's headers (libpq-dev)."""
    try:
        flags = subprocess.run(
            ["pkg-config", "--cflags", "--libs", "libpq"], check=True, capture_output=True, text=True
        ).stdout.split()
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit("the floor client needs pkg-config and libpq's headers (apt-get install libpq-dev)") from e
    binary = home / "floor_client"
    source = Path(__file__).with_name("floor_client.c")
    subprocess.run(["gcc", "-O2", "-pthread", "-o", str(binary), str(source), *flags], check=True)
    return binary


def floor(binary: Path, ep: Endpoint, workload: str, clients: int, secs: int) -> Sample:
    env = {
        **os.environ,
        "PGHOST": ep.host,
        "PGPORT": str(ep.port),
        "PGUSER": ep.user,
        "PGPASSWORD": ep.password,
        "PGDATABASE": ep.dbname,
    }
    out, usage, rss = _run([str(binary), workload, str(clients), str(secs), str(ROWS)], env)
    m = re.search(r"queries (\d+) seconds ([\d.]+)", out)
    assert m, out
    return _sample(int(m.group(1)) / float(m.group(2)), int(m.group(1)), usage, rss)


CRATE_CLIENT = Path(__file__).with_name("mysql_crate_client")
CRATE_WORKLOADS = {"point-query", "update-nonindex"}


def build_crate_client() -> Path:
    """Builds the mysql-crate client (release, locked to its Cargo.lock)."""
    cargo = shutil.which("cargo") or str(Path.home() / ".cargo/bin/cargo")
    manifest = CRATE_CLIENT / "Cargo.toml"
    subprocess.run([cargo, "build", "--release", "--locked", "--quiet", "--manifest-path", str(manifest)], check=True)
    return CRATE_CLIENT / "target/release/mysql-crate-client"


def crate_client(binary: Path, ep: Endpoint, workload: str, clients: int, secs: int) -> Sample:
    env = {**os.environ, "DBSWEEP_PASSWORD": ep.password}
    cmd = [str(binary), workload, str(clients), str(secs), str(ROWS), ep.host, str(ep.port), ep.user, ep.dbname]
    out, usage, rss = _run(cmd, env)
    m = re.search(r"queries (\d+) seconds ([\d.]+)", out)
    assert m, out
    return _sample(int(m.group(1)) / float(m.group(2)), int(m.group(1)), usage, rss)


def _vs(samples: list[Sample], ref: list[Sample], value: str) -> str:
    """The median ratio of `value` to the reference tool's, with its paired 95 % interval."""
    ours = [float(getattr(s, value)) for s in samples]
    theirs = [float(getattr(s, value)) for s in ref]
    n = min(len(ours), len(theirs))
    ci = stats.ratio_ci(theirs[:n], ours[:n], pairs=list(range(n)))
    if ci.low is None or ci.high is None:
        return f"{ci.ratio:.2f}"
    return f"{ci.ratio:.2f} ({ci.low:.2f}-{ci.high:.2f})"


def count_instructions(args: argparse.Namespace, tools: Tools) -> None:
    """Each client's user-space instructions per query, under cachegrind: a short and a long run of each,
    and the difference of their counts over the difference of their queries, so start-up and connection
    set-up drop out. Deterministic where QPS is not; the kernel's share of a client's cost is not in it."""
    short = max(1, args.seconds // 4)
    print(f"instructions per query (cachegrind, user space): runs of {short} s and {args.seconds} s, differenced")
    print(f"{'workload':20} {'c':>1} {'tool':12} {'queries':>15} {'instr/query':>11} {'vs load':>7}")
    for wname in args.workloads:
        for clients in args.clients:
            per_query: dict[str, float] = {}
            for (tool, run_short), (_, run_long) in zip(
                tools(wname, clients, short), tools(wname, clients, args.seconds), strict=True
            ):
                a, b = run_short(), run_long()
                assert a.instructions is not None and b.instructions is not None
                per_query[tool] = (b.instructions - a.instructions) / (b.queries - a.queries)
                ratio = per_query[tool] / per_query["dbsweep-load"]
                print(
                    f"{wname:20} {clients:1} {tool:12} {a.queries:>7}/{b.queries:<7} {per_query[tool]:11,.0f} "
                    f"{ratio:7.2f}",
                    flush=True,
                )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--clients", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--workloads", nargs="+", choices=sorted(WORKLOADS), default=list(WORKLOADS))
    ap.add_argument("--transport", choices=["tcp", "unix"], default="tcp", help="how all clients connect")
    ap.add_argument("--engine", choices=sorted(CONFIGS), default="postgres", help="the server, from Debian's packages")
    ap.add_argument(
        "--instructions",
        action="store_true",
        help="count each client's user-space instructions per query under cachegrind instead of timing rounds",
    )
    args = ap.parse_args()
    global TRANSPORT, COUNT
    TRANSPORT = args.transport
    COUNT = args.instructions
    postgres = args.engine == "postgres"
    for tool in ("sysbench", "pgbench") if postgres else ("sysbench",):
        if shutil.which(tool) is None:
            raise SystemExit(
                f"{tool} is not installed (apt-get install {tool if tool == 'sysbench' else 'postgresql-contrib'})"
            )
    home = Path(tempfile.mkdtemp(prefix="dbsweep-bench-", dir="/tmp"))
    home.chmod(0o755)
    engine = engine_named(args.engine)
    name = CONFIGS[args.engine]
    conf = (paths.configs_root() / engine.name / f"{name}{engine.config_suffix}").read_text()
    server = engine.instance(engine.system_install("system"), home / "srv", name, conf, user=engine.server_user())
    script = home / "point.sql"
    script.write_text(f"\\set id random(1, {ROWS})\nSELECT c FROM sbtest1 WHERE id=:id;\n")
    script.chmod(0o644)
    floor_binary = build_floor(home) if postgres else None
    crate_binary = None if postgres else build_crate_client()
    results: dict[tuple[str, str, int], list[Sample]] = {}
    try:
        with procs.cleanup_on_exit():
            server.init()
            server.start()
            ep = endpoint(engine.name, server)
            loadclient.run(["sysbench", "prepare", "--rows", str(ROWS)], ep.access, home / "prepare.log")

            def tools(wname: str, clients: int, secs: int) -> list[tuple[str, Callable[[], Sample]]]:
                wl, extra, sb_test, sb_extra, floor_wl = WORKLOADS[wname]
                runs: list[tuple[str, Callable[[], Sample]]] = [
                    ("dbsweep-load", functools.partial(dbsweep_load, ep, wl, extra, clients, secs)),
                    ("sysbench", functools.partial(sysbench, ep, sb_test, sb_extra, clients, secs)),
                ]
                if floor_binary is not None:
                    runs.append(("floor", functools.partial(floor, floor_binary, ep, floor_wl, clients, secs)))
                if crate_binary is not None and wname in CRATE_WORKLOADS:
                    runs.append(
                        ("mysql crate", functools.partial(crate_client, crate_binary, ep, wname, clients, secs))
                    )
                if postgres and wname == "point-query":
                    runs.append(("pgbench", functools.partial(pgbench, ep, clients, secs, script)))
                return runs

            if COUNT:
                count_instructions(args, tools)
                return
            for rnd in range(args.rounds):
                for wname in args.workloads:
                    for clients in args.clients:
                        runs = tools(wname, clients, args.seconds)
                        if rnd % 2:
                            runs.reverse()
                        for tool, fn in runs:
                            s = fn()
                            results.setdefault((wname, tool, clients), []).append(s)
                            print(
                                f"round {rnd + 1} {wname:22} c{clients} {tool:12} QPS {s.qps:9.0f}  "
                                f"client CPU {s.cpu_us_per_query:6.2f} us/query ({s.sys_share:4.0%} sys, "
                                f"{s.cs_per_query:4.2f} cs/query)  RSS {s.max_rss_mb:5.1f} MB",
                                flush=True,
                            )
                            time.sleep(1)
    finally:
        server.remove()
        shutil.rmtree(home, ignore_errors=True)
    print(
        f"\nmedians over {args.rounds} rounds of {args.seconds} s, transport {args.transport}; "
        "ratios with paired 95 % CIs:"
    )
    print(
        f"{'workload':20} {'c':>1} {'tool':12} {'QPS':>7} {'CPU us/q':>8} {'sys':>4} {'cs/q':>4} {'RSS MB':>6} "
        f"{'QPS vs sysbench':>17} {'CPU vs sysbench':>17} {'CPU vs floor':>17} {'CPU vs load':>17}"
    )
    for (wname, tool, clients), samples in sorted(results.items()):
        qps = statistics.median(s.qps for s in samples)
        cpu = statistics.median(s.cpu_us_per_query for s in samples)
        sys_share = statistics.median(s.sys_share for s in samples)
        cs = statistics.median(s.cs_per_query for s in samples)
        rss = max(s.max_rss_mb for s in samples)
        sb = results[(wname, "sysbench", clients)]
        fl = results.get((wname, "floor", clients))
        ld = results[(wname, "dbsweep-load", clients)]
        print(
            f"{wname:20} {clients:1} {tool:12} {qps:7.0f} {cpu:8.2f} {sys_share:4.0%} {cs:4.2f} {rss:6.1f} "
            f"{_vs(samples, sb, 'qps'):>17} {_vs(samples, sb, 'cpu_us_per_query'):>17} "
            f"{_vs(samples, fl, 'cpu_us_per_query') if fl else '-':>17} "
            f"{_vs(samples, ld, 'cpu_us_per_query') if tool != 'dbsweep-load' else '-':>17}"
        )


if __name__ == "__main__":
    main()
