"""The dbbench suite's jobs: the order of RocksDB's `tools/benchmark_compare.sh` (methodology §6), each as the
db_bench benchmarks it runs, its flags, what times it, and the name the method's reports print."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Timing = Literal["sized", "read", "write", "settle"]


@dataclass(frozen=True)
class Job:
    name: str  # the step's name in a study and the store
    benchmarks: str  # db_bench's --benchmarks, without the trailing `stats`
    result: str  # the benchmark whose result line is the step's
    flags: tuple[str, ...]
    timing: Timing  # what bounds it: its work, the read or write duration, or the settle duration
    group: str
    one_thread: bool = False  # always one thread, whatever the study's clients
    writer: bool = False  # with the rate-limited background writer
    sync_suffix: bool = False  # the method prints `.s0` (no fsync) after the threads

    def label(self, clients: int, value_size: int) -> str:
        """The name the method's reports print: fillseq.wal_disabled.v400, readwhilewriting.t1,
        overwriteandwait.t1.s0."""
        if self.name == "fillseq":
            return f"fillseq.wal_disabled.v{value_size}"
        return f"{self.name}.t{clients}" + (".s0" if self.sync_suffix else "")


_SEEK = ("--seek_nexts=10",)
JOBS: dict[str, Job] = {
    j.name: j
    for j in (
        Job(
            "fillseq",
            "fillseq",
            "fillseq",
            ("--use_existing_db=0", "--disable_wal=1", "--allow_concurrent_memtable_write=false"),
            "sized",
            "load",
            one_thread=True,
        ),
        # A fixed run whose purpose is to let the load's compaction finish (benchmark_compare.sh: 300 s on 100
        # keys, one thread); recorded, not summarised.
        Job(
            "revrange",
            "seekrandom",
            "seekrandom",
            ("--use_existing_db=1", "--reverse_iterator=true", *_SEEK),
            "settle",
            "settle",
            one_thread=True,
        ),
        Job("readrandom", "readrandom", "readrandom", ("--use_existing_db=1",), "read", "reads"),
        Job(
            "fwdrange",
            "seekrandom",
            "seekrandom",
            ("--use_existing_db=1", "--reverse_iterator=false", *_SEEK),
            "read",
            "reads",
        ),
        Job(
            "multireadrandom",
            "multireadrandom",
            "multireadrandom",
            ("--use_existing_db=1", "--multiread_batched", "--batch_size=10"),
            "read",
            "reads",
        ),
        Job("overwritesome", "overwrite", "overwrite", ("--use_existing_db=1",), "sized", "writes", sync_suffix=True),
        Job(
            "revrangewhilewriting",
            "seekrandomwhilewriting",
            "seekrandomwhilewriting",
            ("--use_existing_db=1", "--reverse_iterator=true", *_SEEK),
            "write",
            "whilewriting",
            writer=True,
        ),
        Job(
            "fwdrangewhilewriting",
            "seekrandomwhilewriting",
            "seekrandomwhilewriting",
            ("--use_existing_db=1", "--reverse_iterator=false", *_SEEK),
            "write",
            "whilewriting",
            writer=True,
        ),
        Job(
            "readwhilewriting",
            "readwhilewriting",
            "readwhilewriting",
            ("--use_existing_db=1",),
            "write",
            "whilewriting",
            writer=True,
        ),
        Job(
            "overwriteandwait",
            "overwrite,waitforcompaction",
            "overwrite",
            ("--use_existing_db=1",),
            "write",
            "writes",
            sync_suffix=True,
        ),
    )
}
STEP_NAMES = tuple(JOBS)
# The write steps of the method's write phase (the `flush_mt_l0` maintenance runs before the first).
# The reads of a loaded database, one thread each: what the instruction pass counts.
READ_STEPS = ("readrandom", "fwdrange", "multireadrandom")
WHILE_WRITING = ("revrangewhilewriting", "fwdrangewhilewriting", "readwhilewriting")
SEED_REPORTED = ("fillseq", *WHILE_WRITING, "overwriteandwait")
SETS: dict[str, list[str]] = {
    "all": list(STEP_NAMES),
    # The five the seed reports, with the jobs that shape the database before them in the method's order.
    "seed": ["fillseq", "revrange", "overwritesome", *WHILE_WRITING, "overwriteandwait"],
    "quick": ["fillseq", "readrandom", "fwdrange", "overwritesome", "readwhilewriting", "overwriteandwait"],
}
GROUPS = {
    "load": "load",
    "settle": "compaction settling (not summarised)",
    "reads": "reads",
    "whilewriting": "reads while writing",
    "writes": "writes",
}
SETUP = ("fillseq", "overwritesome")
# The step that loads the database from nothing; every other step works on what it loaded.
LOAD = "fillseq"
# The benchmarks whose result line says how many of their reads found a key ("(N of M found)"), by what a
# read is.
FINDS = {
    "readrandom": "read",
    "multireadrandom": "read",
    "readwhilewriting": "read",
    "seekrandom": "seek",
    "seekrandomwhilewriting": "seek",
}
# Reads every key once, in order, into the block cache, whatever --reads says (every db_bench since 6.x has it):
# it puts a counted run of a cached profile where the timed steps spend their time, on blocks in the cache.
WARMUP = "readtocache"


# Benchmarks a step runs without when its db_bench lacks them: the method runs overwriteandwait "if the binary
# supports waitforcompaction; otherwise overwrite", and without `stats` only the LSM columns are missing.
OPTIONAL = ("waitforcompaction", "stats")


def fitted(names: list[str], known: frozenset[str]) -> tuple[list[str], list[str]]:
    """The benchmarks of `names` that a db_bench knowing `known` runs (empty: all), and those it leaves out. A
    benchmark a step cannot do without is an error, naming it."""
    if not known:
        return names, []
    missing = [n for n in names if n not in known]
    needed = [n for n in missing if n not in OPTIONAL]
    if needed:
        raise ValueError(f"this db_bench has no {', '.join(needed)} benchmark, which the step runs")
    return [n for n in names if n in known], missing


def canonical(name: str) -> str | None:
    """A step as a study may write it, or as the method prints it (readwhilewriting.t1, overwriteandwait.t1.s0,
    fillseq.wal_disabled.v400)."""
    if name in JOBS:
        return name
    head = name.split(".", 1)[0]
    return head if head in JOBS and head != name else None
