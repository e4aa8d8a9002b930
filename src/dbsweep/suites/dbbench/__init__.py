"""RocksDB's db_bench steps (methodology §6): the job order of `benchmark_compare.sh` with the common flags of
`benchmark.sh` and the settings of the method's wrapper scaled to this machine, in the profiles `byrx` (the
database cached in the block cache, no compression), `iobuf` (IO-bound, buffered, lz4) and `iodir` (IO-bound,
O_DIRECT). db_bench is the engine's own client: the engine names it (`Access.program`), this suite builds its
command line and reads its output (`tool`, `output`)."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import Field

from dbsweep import machine
from dbsweep.engines.base import Access
from dbsweep.loadclient import StepOutput
from dbsweep.measure.instructions import CountPlan
from dbsweep.measure.integrity import Expectation, Nonzero
from dbsweep.suites.base import Connections, Duration, Found, PositiveInt, Progress, Suite, SuiteSettings
from dbsweep.suites.dbbench import tool
from dbsweep.suites.dbbench.steps import (
    FINDS,
    GROUPS,
    JOBS,
    LOAD,
    READ_STEPS,
    SEED_REPORTED,
    SETS,
    SETUP,
    STEP_NAMES,
    WARMUP,
    WHILE_WRITING,
    canonical,
)

if TYPE_CHECKING:
    from dbsweep.loadclient import Client

# Rough rates of this VM for preflight's estimate (db_bench 7.8.3, 2 vCPUs).
FILLSEQ_KEYS_PER_S = 300_000
OVERWRITE_KEYS_PER_S = 60_000
MAINTENANCE_S = 30.0
# readtocache under valgrind (6.11.4, 4M keys: 186-199k keys/s).
WARMUP_KEYS_PER_S = 190_000
# benchmark_compare.sh's settle step reads among this many keys: its work is beside the point, its time is not.
SETTLE_KEYS = 100
MB = 1024 * 1024
# The memtables of every step (benchmark.sh's): up to this many of this size, beside the block cache.
MEMTABLE_BYTES = 16 * MB
MEMTABLES = 8


class DbbenchSettings(SuiteSettings):
    name: Literal["dbbench"] = "dbbench"
    profile: Literal["byrx", "iobuf", "iodir"] = "byrx"
    keys: PositiveInt = 1_000_000  # NUM_KEYS
    key_size: PositiveInt = 20
    value_size: PositiveInt = 400
    read_seconds: PositiveInt = 65  # DURATION_RO
    write_seconds: PositiveInt = 65  # DURATION_RW
    settle_seconds: Annotated[int, Field(ge=1)] = 300
    write_rate_mb: Annotated[float, Field(gt=0)] = 2.0  # MB_WRITE_PER_SEC of the while-writing steps' writer
    # The block cache; unset: 60 % of RAM for byrx (the wrapper's share), a tenth of the data for the IO-bound.
    cache_mb: PositiveInt | None = None
    # MAX_BACKGROUND_JOBS; unset: the core count.
    background_jobs: PositiveInt | None = None
    # benchmark_compare.sh always sets DB_BENCH_NO_SYNC=1: writes do not fsync.
    sync: bool = False


def _ram_mb() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // MB


class Dbbench(Suite):
    name: ClassVar[str] = "dbbench"
    settings_model = DbbenchSettings
    groups = GROUPS
    default_set = "seed"
    kinds: ClassVar[tuple[str, ...]] = ("tool",)
    report_series = True  # the throughput-over-time table reads the per-second samples
    summary_columns: ClassVar[tuple[str, ...]] = (
        "mb_sec",
        "lsm_sz_gb",
        "c_wgb",
        "w_amp",
        "c_mbps",
        "stall_pct",
        "nstall",
        "u_cpu",
        "s_cpu",
        "rss_kb",
    )
    settings: DbbenchSettings

    @classmethod
    def step_names(cls) -> tuple[str, ...]:
        return STEP_NAMES

    @classmethod
    def sets(cls) -> dict[str, list[str]]:
        return SETS

    @classmethod
    def canonical(cls, name: str) -> str | None:
        return canonical(name)

    def setup_steps(self) -> tuple[str, ...]:
        return SETUP

    def clients(self, step: str) -> list[int]:
        job = JOBS[step]
        if job.one_thread:
            return [1]
        if step == "overwritesome":  # it shapes the database once; the method's count is per thread
            return [self.settings.clients[0]]
        return list(self.settings.clients)

    def group_of(self, step: str) -> str:
        return JOBS[step].group

    def in_summaries(self, step: str) -> bool:
        if JOBS[step].timing == "settle":
            return False
        return self.settings.steps != "seed" or step in SEED_REPORTED

    def ops_name(self, step: str) -> str:
        return "ops"

    def step_label(self, step: str, clients: int) -> str:
        return JOBS[step].label(clients, self.settings.value_size)

    # ---- the command line

    @property
    def cached(self) -> bool:
        """Whether the profile keeps the database in the block cache (byrx) rather than reading it from files."""
        return self.settings.profile == "byrx"

    def cache_mb(self) -> int:
        s = self.settings
        if s.cache_mb is not None:
            return s.cache_mb
        if self.cached:
            return _ram_mb() * 60 // 100
        return max(64, self.data_bytes() // MB // 10)

    def common_flags(self) -> list[str]:
        """The flags of every step (benchmark.sh's, with the wrapper's sizes), so every step opens the database
        alike."""
        s = self.settings
        io_bound = not self.cached
        flags = [
            f"--key_size={s.key_size}",
            f"--value_size={s.value_size}",
            "--block_size=8192",
            f"--cache_size={self.cache_mb() * MB}",
            "--cache_index_and_filter_blocks=1",
            f"--compression_type={'lz4' if io_bound else 'none'}",
            "--compression_ratio=0.5",
            "--bytes_per_sync=1048576",
            f"--write_buffer_size={MEMTABLE_BYTES}",
            f"--target_file_size_base={16 * MB}",
            f"--max_bytes_for_level_base={64 * MB}",
            "--max_bytes_for_level_multiplier=8",
            f"--max_background_jobs={s.background_jobs or os.cpu_count() or 2}",
            "--verify_checksum=1",
            "--bloom_bits=10",
            "--open_files=-1",
            "--memtablerep=skip_list",
            "--histogram=1",
            "--report_interval_seconds=1",
            "--stats_interval_seconds=20",
            "--stats_per_interval=1",
            "--num_levels=8",
            "--level_compaction_dynamic_level_bytes=true",
            "--pin_l0_filter_and_index_blocks_in_cache=1",
            f"--max_write_buffer_number={MEMTABLES}",
            "--level0_file_num_compaction_trigger=4",
            "--level0_slowdown_writes_trigger=20",
            "--level0_stop_writes_trigger=30",
            "--merge_operator=put",
            f"--sync={1 if s.sync else 0}",
            f"--seed={s.seed}",
        ]
        if io_bound:
            flags.append("--min_level_to_compress=3")
        if s.profile == "iodir":
            flags += ["--use_direct_reads=true", "--use_direct_io_for_flush_and_compaction=true"]
        return flags

    def _threads(self, step: str, clients: int) -> int:
        return 1 if JOBS[step].one_thread else clients

    def _writes_per_thread(self, clients: int) -> int:
        return max(1, self.settings.keys // clients // 10)

    def command(self, step: str, clients: int) -> list[str]:
        s = self.settings
        job = JOBS[step]
        threads = self._threads(step, clients)
        cmd = [f"--benchmarks={job.benchmarks},stats", *self.common_flags(), *job.flags, f"--threads={threads}"]
        if job.timing == "settle":
            cmd += [f"--num={SETTLE_KEYS}", f"--duration={s.settle_seconds}"]
        else:
            cmd.append(f"--num={s.keys}")
        if job.timing in ("read", "write"):
            cmd.append(f"--duration={s.read_seconds if job.timing == 'read' else s.write_seconds}")
        if step == "overwritesome":
            cmd.append(f"--writes={self._writes_per_thread(threads)}")
        if job.writer:
            cmd.append(f"--benchmark_write_rate_limit={int(s.write_rate_mb * MB)}")
        return cmd

    def run(
        self,
        step: str,
        command: Sequence[str],
        conn: Access,
        log: Path,
        on_second: Callable[[dict[str, Any]], None] | None = None,
        *,
        cpus: frozenset[int] | None = None,
        on_start: Callable[[int], None] | None = None,
        on_summary: Callable[[], None] | None = None,
    ) -> StepOutput:
        return tool.run(
            command,
            conn,
            log,
            on_second,
            step=step,
            result_of=JOBS[step].result,
            cpus=cpus,
            on_start=on_start,
            on_summary=on_summary,
        )

    def client(self) -> Client:
        return tool.run

    # ---- the instruction pass

    def instruction_steps(self) -> dict[str, tuple[str, int]]:
        """The method's read steps, whatever the set: one thread reading the loaded database, its work set by
        --reads alone. The while-writing steps are left out: their writer is paced by the clock, so what a run
        executes would follow how fast valgrind let it go."""
        return {st: (st, 0) for st in READ_STEPS}

    def instruction_plan(self, step: str, seconds: int, amount: int | None = None) -> CountPlan:
        return CountPlan(
            functools.partial(self._counted, step),
            short=amount,
            probe=functools.partial(self.instruction_command, step, seconds),
        )

    def instruction_warmup_seconds(self) -> float:
        return self.settings.keys / WARMUP_KEYS_PER_S if self.cached else 0.0

    def instruction_command(self, step: str, seconds: int) -> list[str]:
        """One thread of `step` for `seconds`, without the periodic reports, whose count would follow the clock,
        and without the latency histogram, whose printing grows with how widely the latencies spread.

        On the cached profile the run first reads the whole database into the block cache, as the timed steps
        find it: a fresh db_bench starts with an empty cache, so without it nearly every counted read would
        load and checksum a block. The short and the long run warm alike, so their difference is warm reads."""
        quiet = {
            "--report_interval_seconds": "0",
            "--stats_interval_seconds": "0",
            "--histogram": "0",
            "--duration": str(seconds),
        }
        cmd = [a for a in self.command(step, 1) if a.partition("=")[0] not in quiet]
        if self.cached:
            cmd = [f"--benchmarks={WARMUP},{a.partition('=')[2]}" if a.startswith("--benchmarks=") else a for a in cmd]
        return cmd + [f"{k}={v}" for k, v in quiet.items()]

    def _counted(self, step: str, reads: int) -> list[str]:
        # --duration 0: the run ends when its --reads are done (a key of a multiread batch is a read).
        return [*self.instruction_command(step, 0), f"--reads={reads}"]

    def expectation(self, step: str) -> Expectation:
        s = self.settings
        job = JOBS[step]
        if job.timing == "sized":
            if step == "fillseq":
                work = s.keys
            else:
                threads = self.clients(step)[0]
                work = self._writes_per_thread(threads) * threads
            return Expectation(seconds=None, steady=False, work=("operations", work))
        seconds = {"read": s.read_seconds, "write": s.write_seconds, "settle": s.settle_seconds}[job.timing]
        # A read that finds no key is fast: a step on an empty database looks healthy by every other measure.
        kind = FINDS.get(job.result)
        why = f"the database holds none of the keys the step reads ({LOAD} loads them)"
        found = (Nonzero("found", f"no {kind} found a key", why),) if kind else ()
        # Write stalls are RocksDB's own behaviour (stall% measures them), not a disturbance.
        return Expectation(seconds=seconds, steady=job.timing == "read", nonzero=found)

    def loads(self, step: str) -> bool:
        return step == LOAD

    def needs_loaded(self, step: str) -> str | None:
        """Every step but the load opens the database it made (--use_existing_db=1): on an empty one the reads
        find nothing and the overwrites only insert."""
        if step == LOAD:
            return None
        return "reads the database" if JOBS[step].result in FINDS else "overwrites keys of the database"

    def tables(self) -> list[str]:
        return []

    def maintenance_points(self) -> set[str]:
        """The method's flush_mt_l0 runs once, before the first while-writing step (or overwriteandwait)."""
        for step in self.steps():
            if step in (*WHILE_WRITING, "overwriteandwait"):
                return {step}
        return set()

    def maintenance_budget(self) -> float:
        return float(self.settings.maintenance_seconds or 600)

    def progress(self, step: str) -> Progress:
        job = JOBS[step]
        s = self.settings
        if job.timing == "sized":
            total = s.keys if step == "fillseq" else s.keys // 10
            return Progress(total, "rows")
        return Progress({"read": s.read_seconds, "write": s.write_seconds, "settle": s.settle_seconds}[job.timing], "s")

    def cell_seconds(self, step: str) -> float:
        job = JOBS[step]
        s = self.settings
        if step == "fillseq":
            return s.keys / FILLSEQ_KEYS_PER_S
        if step == "overwritesome":
            return s.keys / 10 / OVERWRITE_KEYS_PER_S
        extra = MAINTENANCE_S if step == "overwriteandwait" else 0.0
        return {"read": s.read_seconds, "write": s.write_seconds, "settle": s.settle_seconds}[job.timing] + extra

    def describe(self) -> str:
        s = self.settings
        return (
            f"{len(self.steps())} db_bench steps, profile {s.profile}, "
            f"{s.keys:,} keys of {s.key_size}+{s.value_size} B, "
            f"threads {list(s.clients)}"
        )

    # ---- preflight

    def size_problems(self) -> list[Found]:
        """The block cache and the memtables against this machine's memory, the background jobs against the threads
        it can start."""
        s = self.settings
        out: list[Found] = []
        memory = machine.memory()
        memtables = MEMTABLE_BYTES * MEMTABLES
        need = self.cache_mb() * MB + memtables
        if s.cache_mb is not None and need > memory.value:
            most = max(0, memory.value - memtables) // MB
            out.append(
                (
                    "suite.cache_mb",
                    f"a block cache of {s.cache_mb:,} MB with the memtables ({memtables // MB} MB) would take about "
                    f"{machine.shown_bytes(need)}, more than this machine's memory "
                    f"({machine.shown_bytes(memory.value)}, {memory.where}); cache_mb may be at most {most:,} here",
                )
            )
        free = machine.tasks()
        if s.background_jobs is not None and s.background_jobs > free.value:
            out.append(
                (
                    "suite.background_jobs",
                    f"{s.background_jobs:,} background jobs are threads RocksDB starts, more than this machine can "
                    f"start now ({free.value:,}: {free.where})",
                )
            )
        return out

    def connections(self) -> list[Connections]:
        return []

    def duration(self) -> Duration:
        setup = sum(self.cell_seconds(st) for st in self.steps() if st in SETUP)
        steps = sum(self.cell_seconds(st) * len(self.clients(st)) for st in self.steps() if st not in SETUP)
        return Duration(
            setup=setup, steps=steps, maintenance_each=MAINTENANCE_S, maintenances=len(self.maintenance_points())
        )

    def data_bytes(self) -> int:
        return self.settings.keys * (self.settings.key_size + self.settings.value_size)

    def sized(self, data_bytes: int) -> SuiteSettings | None:
        s = self.settings
        if "keys" in s.model_fields_set:
            return None
        return s.model_copy(update={"keys": max(10_000, data_bytes // (s.key_size + s.value_size))})

    report_module = "report"  # its tables: `report.tables(data, suite)`

    def report_note(self) -> str:
        return "db_bench's ops/s: reads/s of the while-writing steps (the writer is rate-limited), keys/s of the loads"
