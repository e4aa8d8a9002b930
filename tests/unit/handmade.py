"""Hand-made results stores for the report tests: no run, every number chosen (unit/test_report.py; the HTML
page of the Insert Benchmark's in a browser: e2e/test_report.py)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hdrh.histogram import HdrHistogram

from dbsweep.report import data
from dbsweep.results.model import CellKey, CellResult
from dbsweep.results.store import Store, now
from dbsweep.study import load_study

HAND = """\
name = "hand"
engine = "postgres"
base = "a"
repeats = 3
workspace = "{ws}"

[suite]
steps = ["point-query", "random-points_range=10", "hot-points", "point-query.pre", "range-covered-pk", "scan",
         "update-index", "delete"]
rows = 1000

[[targets]]
name = "a"
config = "cx10a_c2r24"

[[targets]]
name = "b"
config = "cx10a_sb1g_c2r24"
"""

# rQPS of b per step, chosen to sit on the colour thresholds.
RATIOS = {
    "point-query_range=100": 0.95,
    "random-points_range=10": 0.96,
    "hot-points_range=100": 1.05,
    "point-query.pre_range=100": 0.50,  # left out of the summaries
    "range-covered-pk_range=100": 1.01,
    "scan_range=100": 1.20,
    "update-index_range=100": 0.90,
    "delete_range=100": 1.00,
}


def summary(rate: float, **extra: Any) -> dict[str, Any]:
    return {
        "ops_name": "queries",
        "operations": int(rate * 10),
        "events": int(rate * 10),
        "seconds": 10.0,
        "rate": rate,
        "tps": rate,
        "latency_us": {"p50": 100, "p95": 200, "p99": 400, "max": 900, "mean": 120},
        **extra,
    }


def new_store(study_path: Path, toml: str) -> Store:
    study = load_study(study_path)
    store = Store(study.workspace_dir / "results.db")
    sid = store.study_id(study.title, str(study_path))
    run_id = store.new_run(sid, study.measurement_key(), toml)
    assert run_id == 1
    return store


def add_target(store: Store, name: str, config: str) -> int:
    return store.ensure_target(1, name, "postgres", {"source": "system", "variant": "def", "config": config})


def provenance(name: str, config: str, diff: str) -> dict[str, Any]:
    return {
        "dbsweep_version": "0.1.0",
        "host": {"cpu_model": "Test CPU", "cpus_logical": 2, "memory_bytes": 2**31, "kernel": "6.1"},
        "engine": {"server_version": "15.18", "cflags": "-O2", "source_identity": "pkg 15.18", "cc": "gcc"},
        "target": {"name": name, "source": "system", "variant": "def"},
        "config": {"name": config, "diff": diff},
        "cpu_placement": {"placement": "split", "server_cpus": [0], "client_cpus": [1], "host_cpus": [0, 1]},
    }


@contextlib.contextmanager
def hand_made(tmp_path: Path, extra: tuple[str, ...] = ()) -> Iterator[tuple[data.ReportData, Store]]:
    """Two targets, eight sysbench steps, three repetitions; b's rQPS is RATIOS, its cpu/o 1.2 x a's. Each of
    `extra` is a target measured as b is."""
    toml = HAND.format(ws=tmp_path / "ws") + "".join(
        f'\n[[targets]]\nname = "{x}"\nconfig = "cx10a_sb1g_c2r24"\n' for x in extra
    )
    path = tmp_path / "hand.toml"
    path.write_text(toml)
    store = new_store(path, toml)
    names = ("a", "b", *extra)
    ids = {t: add_target(store, t, "cx10a_c2r24" if t == "a" else "cx10a_sb1g_c2r24") for t in names}
    diffs = {t: "shared_buffers=8GB\n" if t == "a" else "shared_buffers=1GB\n" for t in names}
    for rep in (1, 2, 3):
        for t in names if rep % 2 else names[::-1]:
            for step, ratio in RATIOS.items():
                qps = 1000.0 * (ratio if t != "a" else 1.0)
                per_op: dict[str, float | None] = {
                    "cpu/o": 10.0 * (1.2 if t != "a" else 1.0),
                    "zeta/o": 1.0,
                    "alpha/o": 2.0,
                }
                store.write_cell(
                    1,
                    ids[t],
                    CellResult(
                        CellKey(t, step, 1, rep),
                        "done",
                        now(),
                        now(),
                        summary=summary(qps),
                        per_op=per_op if step != "delete_range=100" else None,
                        provenance=provenance(t, "cx10a_c2r24" if t == "a" else "cx10a_sb1g_c2r24", diffs[t]),
                    ),
                )
    yield data.gather(load_study(path), store, 1, series=True), store
    store.close()


IBENCH = """\
name = "ib"
engine = "postgres"
base = "a"
workspace = "{ws}"

[suite]
name = "ibench"
profile = "quick"

[[targets]]
name = "a"
config = "cx10a_c2r24"

[[targets]]
name = "b"
config = "cx10a_sb1g_c2r24"
"""


def hdr(values: list[int]) -> str:
    h = HdrHistogram(1, 60_000_000, 3)
    for v in values:
        h.record_value(v)
    encoded = h.encode()
    return encoded.decode() if isinstance(encoded, bytes) else str(encoded)


@contextlib.contextmanager
def ibench_made(tmp_path: Path) -> Iterator[data.ReportData]:
    """Two targets through the ten Insert Benchmark steps, one repetition: a meets every SLA with the client's own
    buckets in its summaries, b misses them (90 % of the rate) and has only HDR histograms."""
    toml = IBENCH.format(ws=tmp_path / "ws")
    path = tmp_path / "ib.toml"
    path.write_text(toml)
    store = new_store(path, toml)
    ids = {"a": add_target(store, "a", "cx10a_c2r24"), "b": add_target(store, "b", "cx10a_sb1g_c2r24")}
    buckets = {"le_256us": 90, "le_1ms": 9, "le_4ms": 1}
    for t in ("a", "b"):
        for step in load_study(path).steps():
            rw = step.startswith("q")
            rate = 1000.0 if t == "a" else 800.0
            target = int(step[2:]) if rw else None
            achieved = None if target is None else (target if t == "a" else 0.9 * target)
            extra: dict[str, Any] = {
                "ips": rate,
                "dps": rate / 2,
                "target_rate": target,
                "achieved_rate": achieved,
                "sla_ok": None if target is None else achieved is not None and achieved >= 0.95 * target,
            }
            hist: dict[str, str] | None = None
            if t == "a":  # the client's own buckets in the summary
                extra["latency"] = {
                    "insert": {"max_us": 3000, "buckets": buckets},
                    "query": {"max_us": 700, "buckets": buckets},
                }
            else:  # only HDR histograms: the report decodes them
                hist = {"insert": hdr([100, 300, 300, 5000]), "query": hdr([50, 60])}
            # The load client's per-second lines of an ibench step: the main operation, then each one's rate.
            lines = [
                {
                    "t": s,
                    "phase": "measure",
                    "ops": int(rate),
                    "errors": 0,
                    "max_us": 1000 * s,
                    "i_ips": rate + s,
                    "i_dps": rate / 2,
                    "i_qps": 100.0 * s,
                    "max_i_us": 1000 * s,
                    "max_d_us": 500,
                    "max_q_us": 200,
                }
                for s in range(1, 6)
            ]
            store.write_cell(
                1,
                ids[t],
                CellResult(
                    CellKey(t, step, 1, 1),
                    "done",
                    now(),
                    now(),
                    summary=summary(rate, **extra),
                    seconds_lines=lines,
                    histograms=hist,
                ),
            )
    yield data.gather(load_study(path), store, 1, series=True)
    store.close()


# A real run of studies/sqlite-quick.toml (one repetition, instructions counted): its cells and stored counts.
SQLITE_RUN = Path(__file__).parent / "data" / "counts" / "sqlite-quick-run1.json"


def real_run() -> dict[str, Any]:
    """The fixture as stored: `study` (TOML), `cells` (summary, per-second lines, costs) and `counts` (what
    `Store.write_instructions` was given)."""
    return dict(json.loads(SQLITE_RUN.read_text()))


def real_store(
    tmp_path: Path, alter: Callable[[str, str, dict[str, Any]], dict[str, Any]] | None = None
) -> tuple[Path, Store]:
    """The real run written into a fresh store under `tmp_path`, each stored count first passed through
    `alter(target, step, data)` when given; returns the study file and the store."""
    run = real_run()
    path = tmp_path / "sqlite-quick.toml"
    toml = run["study"].replace("[suite]", f'workspace = "{tmp_path / "ws"}"\n\n[suite]', 1)
    path.write_text(toml)
    store = new_store(path, toml)
    ids: dict[str, int] = {}
    for t in dict.fromkeys(c["target"] for c in run["cells"]):
        config = "wal_normal" if t == "wal" else "rollback"
        ids[t] = store.ensure_target(1, t, "sqlite", {"source": "system", "variant": "def", "config": config})
    for c in run["cells"]:
        store.write_cell(
            1,
            ids[c["target"]],
            CellResult(
                CellKey(c["target"], c["step"], c["clients"], c["repetition"]),
                "done",
                now(),
                now(),
                summary=c["summary"],
                seconds_lines=c["seconds"],
                per_op=c["per_op"],
                measures=c["measures"],
            ),
        )
    for c in run["counts"]:
        d = alter(c["target"], c["step"], dict(c["data"])) if alter else c["data"]
        store.write_instructions(1, ids[c["target"]], c["step"], d, c["error"])
    return path, store
