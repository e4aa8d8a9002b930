"""How much a load client costs the host: dbsweep-load against sysbench and pgbench on the same work.

One Postgres 15 (Debian's), one sbtest table loaded once. For each round the clients run
interleaved (the order alternates every round), at 1 and 2 client threads:
  dbsweep-load point-query        vs  sysbench oltp_point_select   vs  pgbench -M prepared (same SELECT)
  dbsweep-load read-only, range 100  vs  sysbench oltp_read_only --range_size=100
  dbsweep-load update-nonindex    vs  sysbench oltp_update_non_index
Client CPU is the client process's own user+system time (from wait4), divided by the queries it ran.
Prints medians over the rounds; no assertions (this is a measurement, not a test).

    .venv/bin/python bench/client_overhead.py --rounds 3 --seconds 20
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from dbsweep import loadclient, paths, procs
from dbsweep.engines import postgres

ROWS = 100_000

WORKLOADS = {
    # name: (dbsweep-load workload, extra args, sysbench test, sysbench extra args)
    "point-query": ("point-query", [], "oltp_point_select", []),
    "read-only_range=100": ("read-only", ["--range", "100"], "oltp_read_only", ["--range_size=100"]),
    "update-nonindex": ("update-nonindex", [], "oltp_update_non_index", []),
}


@dataclass
class Sample:
    qps: float
    cpu_us_per_query: float
    max_rss_mb: float


def _run(cmd: list[str], env: dict[str, str]) -> tuple[str, float, float]:
    """Runs a client to completion; returns its output, CPU seconds (from wait4) and peak RSS in MB
    (sampled: wait4's maxrss would report the size of the Python that forked it)."""
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
    return out, ru.ru_utime + ru.ru_stime, peak / 2**20


TRANSPORT = "tcp"


def _host(server: postgres.Server) -> str:
    """Every tool reaches the server the same way: loopback TCP, or the server's Unix socket."""
    return str(server.socket_dir) if TRANSPORT == "unix" else "127.0.0.1"


def dbsweep_load(server: postgres.Server, workload: str, extra: list[str], clients: int, secs: int) -> Sample:
    env = {**os.environ, "DBSWEEP_PGPASSWORD": server.password}
    cmd = [
        str(paths.load_binary()),
        "run",
        workload,
        "--rows",
        str(ROWS),
        "--clients",
        str(clients),
        "--seconds",
        str(secs),
        "--warmup",
        "0",
        "--host",
        _host(server),
        "--port",
        str(server.port),
        *extra,
    ]
    out, cpu, rss = _run(cmd, env)
    summary = [line for line in out.splitlines() if '"type":"summary"' in line][-1]
    queries = int(re.search(r'"queries":(\d+)', summary).group(1))  # type: ignore[union-attr]
    seconds = float(re.search(r'"seconds":([\d.]+)', summary).group(1))  # type: ignore[union-attr]
    return Sample(queries / seconds, cpu * 1e6 / queries, rss)


def sysbench(server: postgres.Server, test: str, extra: list[str], clients: int, secs: int) -> Sample:
    cmd = [
        "sysbench",
        test,
        "--db-driver=pgsql",
        f"--pgsql-host={_host(server)}",
        f"--pgsql-port={server.port}",
        f"--pgsql-user={postgres.DB_USER}",
        f"--pgsql-password={server.password}",
        f"--pgsql-db={postgres.DB_NAME}",
        "--tables=1",
        f"--table-size={ROWS}",
        f"--threads={clients}",
        f"--time={secs}",
        "--events=0",
        "--rand-type=uniform",
        *extra,
        "run",
    ]
    out, cpu, rss = _run(cmd, dict(os.environ))
    m = re.search(r"queries:\s+(\d+)\s+\(([\d.]+) per sec", out)
    assert m, out
    return Sample(float(m.group(2)), cpu * 1e6 / int(m.group(1)), rss)


def pgbench(server: postgres.Server, clients: int, secs: int, script: Path) -> Sample:
    env = {**os.environ, "PGPASSWORD": server.password}
    cmd = [
        "pgbench",
        "-h",
        _host(server),
        "-p",
        str(server.port),
        "-U",
        postgres.DB_USER,
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
        postgres.DB_NAME,
    ]
    out, cpu, rss = _run(cmd, env)
    n = int(re.search(r"number of transactions actually processed: (\d+)", out).group(1))  # type: ignore[union-attr]
    tps = float(re.search(r"tps = ([\d.]+)", out).group(1))  # type: ignore[union-attr]
    return Sample(tps, cpu * 1e6 / n, rss)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--clients", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--transport", choices=["tcp", "unix"], default="tcp", help="how all clients connect")
    args = ap.parse_args()
    global TRANSPORT
    TRANSPORT = args.transport
    for tool in ("sysbench", "pgbench"):
        if shutil.which(tool) is None:
            raise SystemExit(
                f"{tool} is not installed (apt-get install {tool if tool == 'sysbench' else 'postgresql-contrib'})"
            )
    home = Path(tempfile.mkdtemp(prefix="dbsweep-bench-", dir="/tmp"))
    home.chmod(0o755)
    conf = (paths.configs_root() / "postgres" / "cx10a_c2r24.conf").read_text()
    server = postgres.Server(
        postgres.system_install("system"), home / "srv", "cx10a_c2r24", conf, user=postgres.server_user()
    )
    script = home / "point.sql"
    script.write_text(f"\\set id random(1, {ROWS})\nSELECT c FROM sbtest1 WHERE id=:id;\n")
    script.chmod(0o644)
    results: dict[tuple[str, str, int], list[Sample]] = {}
    try:
        with procs.cleanup_on_exit():
            server.init()
            server.start()
            conn = loadclient.connection_to(server)
            loadclient.run(["prepare", "--rows", str(ROWS)], conn, home / "prepare.log")
            for rnd in range(args.rounds):
                for name, (wl, extra, sb_test, sb_extra) in WORKLOADS.items():
                    for clients in args.clients:
                        runs = [
                            ("dbsweep-load", functools.partial(dbsweep_load, server, wl, extra, clients, args.seconds)),
                            ("sysbench", functools.partial(sysbench, server, sb_test, sb_extra, clients, args.seconds)),
                        ]
                        if name == "point-query":
                            runs.append(("pgbench", functools.partial(pgbench, server, clients, args.seconds, script)))
                        if rnd % 2:
                            runs.reverse()
                        for tool, fn in runs:
                            s = fn()
                            results.setdefault((name, tool, clients), []).append(s)
                            print(
                                f"round {rnd + 1} {name:22} c{clients} {tool:12} QPS {s.qps:9.0f}  "
                                f"client CPU {s.cpu_us_per_query:6.2f} us/query  RSS {s.max_rss_mb:5.1f} MB",
                                flush=True,
                            )
                            time.sleep(1)
    finally:
        server.remove()
        shutil.rmtree(home, ignore_errors=True)
    print(f"\nmedians over {args.rounds} rounds of {args.seconds} s, transport {args.transport}:")
    print(
        f"{'workload':22} {'clients':>7} {'tool':12} {'QPS':>9} {'CPU us/q':>9} {'RSS MB':>7} {'QPS vs sb':>9} "
        f"{'CPU vs sb':>9}"
    )
    for (name, tool, clients), samples in sorted(results.items()):
        qps = statistics.median(s.qps for s in samples)
        cpu = statistics.median(s.cpu_us_per_query for s in samples)
        rss = max(s.max_rss_mb for s in samples)
        sb = results[(name, "sysbench", clients)]
        sb_qps = statistics.median(s.qps for s in sb)
        sb_cpu = statistics.median(s.cpu_us_per_query for s in sb)
        print(
            f"{name:22} {clients:7} {tool:12} {qps:9.0f} {cpu:9.2f} {rss:7.1f} {qps / sb_qps:9.2f} {cpu / sb_cpu:9.2f}"
        )


if __name__ == "__main__":
    main()
