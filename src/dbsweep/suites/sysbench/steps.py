"""The sysbench microbenchmarks as steps: their table, report groups and named sets.

Names follow the seeds: `<microbenchmark>[.pre|.warm]_range=<N>`. A `.pre` step runs a
read-only microbenchmark before the write-heavy steps (on freshly loaded, vacuumed
tables); the plain name runs it after them. `.warm` steps only warm caches and are
left out of summaries, as are `.pre` steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# Report groups, in the order the seeds print them.
GROUPS = {
    "load": "load",
    "warm": "warm-up steps (not in summaries)",
    "point": "point queries",
    "range-noagg": "range queries without aggregation",
    "range-agg": "range queries with aggregation",
    "write": "writes",
}

# Seed 002's five groups (`groups = "five"`): the point queries split in two, the range queries named by
# part. The seed does not say how it split its point queries; dbsweep splits them by the index the lookup goes
# through: point-1 looks rows up by the primary key, point-2 through the secondary index k. On InnoDB and
# MyRocks the primary key holds the row, so a lookup through k is a second index descent (and the covered or
# not-covered choice only matters there, methodology §1.3): the two paths change apart across versions.
FIVE_GROUPS = {
    "load": "load",
    "warm": "warm-up steps (not in summaries)",
    "point-1": "point queries by the primary key (point-1)",
    "point-2": "point queries through the secondary index (point-2)",
    "range-1": "range queries without aggregation (range-1)",
    "range-2": "range queries with aggregation (range-2)",
    "write": "writes",
}
GROUP_SCHEMES = {
    "four": "point queries, range queries without and with aggregation, writes (the seeds since 2025)",
    "five": "point-1 (by the primary key), point-2 (through the secondary index), range-1, range-2, writes (seed 002)",
}

LOAD_STEP = "load"

Duration = Literal["read", "write", "insert", "scan-warm"]
# The seeds' scan warm-up runs a fixed 60 s, whatever the read duration.
SCAN_WARM_SECONDS = 60


@dataclass(frozen=True)
class StepSpec:
    name: str
    workload: str  # the dbsweep-load workload
    range: int
    group: str
    duration: Duration
    # The number of clients is the number of tables, whatever the study's client counts.
    clients_are_tables: bool = False
    # The postwrite maintenance (VACUUM, CHECKPOINT, wait) runs right after this step.
    maintenance_after: bool = False

    @property
    def is_pre(self) -> bool:
        return self.name.split("_range=")[0].endswith(".pre")

    @property
    def in_summaries(self) -> bool:
        """The seeds' summaries leave out warm-ups and every name containing "pre"."""
        return self.group != "warm" and not self.is_pre


def five_group(spec: StepSpec) -> str:
    """The step's group among FIVE_GROUPS."""
    if spec.group == "point":
        return "point-2" if spec.workload.endswith("-si") else "point-1"
    return {"range-noagg": "range-1", "range-agg": "range-2"}.get(spec.group, spec.group)


def _group(workload: str) -> str:
    if workload.startswith(("update-", "read-write", "write-only")) or workload in ("delete", "insert"):
        return "write"
    if workload.startswith("read-only"):
        return "range-agg"
    if workload.startswith("range-") or workload == "scan":
        return "range-noagg"
    return "point"


def _step(
    workload: str,
    rng: int = 100,
    suffix: str = "",
    duration: Duration = "read",
    clients_are_tables: bool = False,
    maintenance_after: bool = False,
) -> StepSpec:
    group = "warm" if suffix.startswith(".warm") else _group(workload)
    name = f"{workload}{suffix}_range={rng}"
    return StepSpec(name, workload, rng, group, duration, clients_are_tables, maintenance_after)


_READ_POINTS = ["points-covered-pk", "points-notcovered-pk", "points-covered-si", "points-notcovered-si"]
_READ_RANGES = ["range-covered-pk", "range-notcovered-pk", "range-covered-si", "range-notcovered-si"]
_RO_1000 = ["read-only-simple", "read-only-sum", "read-only-order", "read-only-distinct", "read-only-count"]
_UPDATES = ["update-inlist", "update-index", "update-nonindex", "update-one", "update-zipf"]

_ALL: list[StepSpec] = [
    _step("point-query", suffix=".warm", clients_are_tables=True, maintenance_after=True),
    _step("scan", suffix=".warmpre", duration="scan-warm"),
    _step("point-query", suffix=".pre"),
    *[_step("random-points", r, ".pre") for r in (10, 100, 1000)],
    *[_step("read-only", r, ".pre") for r in (10, 100, 10000)],
    *[_step(w, suffix=".pre") for w in _READ_POINTS + _READ_RANGES],
    *[_step(w, duration="write") for w in _UPDATES],
    _step("write-only", 10000),  # the seeds give write-only the read duration
    _step("read-write", 10, duration="write"),
    _step("read-write", 100, duration="write", maintenance_after=True),
    _step("scan", suffix=".warm", duration="scan-warm"),
    _step("scan"),
    *[_step("read-only", r) for r in (10, 100, 10000)],
    *[_step(w, 1000) for w in _RO_1000],
    _step("point-query"),
    *[_step("random-points", r) for r in (10, 100, 1000)],
    _step("hot-points"),
    *[_step(w) for w in _READ_POINTS[:2] + _READ_RANGES[:2]],
    _step("points-covered-si", suffix=".warm"),
    *[_step(w) for w in _READ_POINTS[2:] + _READ_RANGES[2:]],
    _step("delete", duration="write"),
    _step("insert", duration="insert"),
]

# What a microbenchmark's statements must do on the loaded tables, for the load client's rows_returned and
# rows_affected: (what zero means, why). Its SELECTs return rows: not scan's, which matches none by design,
# and not those of a workload that only writes. Its writes change rows: an UPDATE of ids the load made, an
# INSERT its row (write-only and read-write put back each row they delete). Not delete's: its random ids
# empty a small table within the warm-up on a fast engine (SQLite: 5,000 rows in well under a second), so a
# measured window that deleted nothing is the method's, not a fault.
RETURNS_ROWS = frozenset(
    {
        "point-query",
        "random-points",
        "hot-points",
        *_READ_POINTS,
        *_READ_RANGES,
        "read-only",
        *_RO_1000,
        "read-write",
    }
)
READ_NONE = ("no query returned a row", "the tables hold none of the rows the step reads")
CHANGES_ROWS: dict[str, tuple[str, str]] = {
    **{w: ("no update changed a row", "the tables hold none of the rows the step updates") for w in _UPDATES},
    "write-only": ("no write changed a row", "the tables hold none of the rows the step writes"),
    "read-write": ("no write changed a row", "the tables hold none of the rows the step writes"),
    "insert": ("no insert added a row", "the server took the inserts without reporting a row added"),
}

STEPS: dict[str, StepSpec] = {s.name: s for s in _ALL}
STEP_NAMES = tuple(s.name for s in _ALL)


def _names(*names: str) -> list[str]:
    for n in names:
        assert n in STEPS, n
    return list(names)


def _current_order(keep: set[str]) -> list[str]:
    return [s.name for s in _ALL if s.name in keep]


_BASE27 = {s.name for s in _ALL if s.in_summaries and s.workload not in _RO_1000}
_WARMUPS = {
    "point-query.warm_range=100",
    "scan.warmpre_range=100",
    "scan.warm_range=100",
    "points-covered-si.warm_range=100",
}

SETS: dict[str, list[str]] = {
    # The seeds' set since 2025-09: 27 base tests + 5 read-only range=1000 variants, with the
    # warm-up steps and the two .pre steps the current scripts still run.
    "set32": _current_order(
        _BASE27
        | {s.name for s in _ALL if s.workload in _RO_1000}
        | _WARMUPS
        | {"point-query.pre_range=100", "range-notcovered-si.pre_range=100"}
    ),
    "base27": _current_order(_BASE27 | _WARMUPS),
    # The 42 of Feb 2023, in that order: every .pre step first, then writes, then reads.
    "all42": _names(
        "point-query.warm_range=100",
        *[s.name for s in _ALL if s.is_pre],
        *[f"{w}_range=100" for w in _UPDATES],
        "write-only_range=10000",
        "read-write_range=10",
        "read-write_range=100",
        "read-only_range=10",
        "read-only_range=100",
        "read-only_range=10000",
        "point-query_range=100",
        "random-points_range=10",
        "random-points_range=100",
        "random-points_range=1000",
        "hot-points_range=100",
        *[f"{w}_range=100" for w in _READ_POINTS + _READ_RANGES],
        "scan_range=100",
        "delete_range=100",
        "insert_range=100",
    ),
    # A handful from each group, for demos and tests.
    "quick": _names(
        "update-index_range=100",
        "update-nonindex_range=100",
        "read-write_range=100",
        "read-only_range=100",
        "read-only-count_range=1000",
        "range-covered-pk_range=100",
        "range-notcovered-si_range=100",
        "point-query_range=100",
        "random-points_range=100",
        "points-covered-si_range=100",
        "insert_range=100",
    ),
}


def _aliases() -> dict[str, str]:
    """Short names without the range: a step's own when it is the only range of its workload
    (`read-only-sum` is `read-only-sum_range=1000`), else the seeds' default, range=100."""
    ranges: dict[str, list[str]] = {}
    for step in _ALL:
        ranges.setdefault(step.name.rsplit("_range=", 1)[0], []).append(step.name)
    out = {short: names[0] for short, names in ranges.items() if len(names) == 1}
    out.update({s.name.removesuffix("_range=100"): s.name for s in _ALL if s.name.endswith("_range=100")})
    return out


ALIASES = _aliases()
