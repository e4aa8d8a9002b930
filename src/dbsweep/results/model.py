"""What a run produces, as typed records: a step's result (parsed once from the load client's summary
envelope), a cell's key, and what a finished cell writes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from dbsweep.errors import StepError


class _Record(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class EndedEarly(_Record):
    """The load client lost connections during the step: how many, when the first (seconds from the step's
    start) and why."""

    connections_lost: int
    at_s: float
    reason: str


class Latency(_Record):
    """The main operation's response times in µs."""

    min: float = 0
    mean: float = 0
    p50: float = 0
    p90: float = 0
    p95: float = 0
    p99: float = 0
    p999: float = 0
    max: float = 0


class StepResult(_Record):
    """One step's result, whatever the suite: what it did (operations, and what they are), for how long, at
    what rate; its latency and histogram, errors by kind, the client's own cost, whether it ended early, and
    the suite's own figures in `detail`."""

    suite: str
    step: str
    ops_name: str
    operations: int
    events: int
    seconds: float
    rate: float
    tps: float
    latency_us: Latency = Latency()
    histogram: str | None = None
    errors: dict[str, int] = {}
    error_count: int = 0
    error_samples: list[str] = []
    client_cpu_user_s: float = 0.0
    client_cpu_sys_s: float = 0.0
    client_max_rss_kb: int = 0
    ended_early: EndedEarly | None = None
    detail: dict[str, Any] = {}

    @classmethod
    def from_envelope(cls, line: dict[str, Any]) -> StepResult:
        """The load client's summary line, checked; a malformed one is the step's failure, said plainly."""
        try:
            return cls.model_validate(line)
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(x) for x in first["loc"])
            raise StepError(f"the load client's summary is not what dbsweep reads: {where}: {first['msg']}") from None

    def flat(self) -> dict[str, Any]:
        """The result as the store keeps it (and reports read it): the suite's figures beside the common ones,
        in one object, as every stored summary has been."""
        common = self.model_dump(exclude={"detail"}, mode="json")
        return {**self.detail, **common}


@dataclass(frozen=True)
class StoredCell:
    """A done cell as the store gives it back: its key, its headline numbers, its id."""

    target: str
    step: str
    clients: int
    repetition: int
    qps: float  # the step's rate, whatever it counts (ops_name)
    tps: float
    operations: int
    seconds: float
    errors: int
    p50_us: float | None
    p99_us: float | None
    ops_name: str
    cell_id: int


@dataclass(frozen=True)
class StoredCanary:
    """The canary timed before a round of a run (`dbsweep.measure.canary`): the round (repetition) it opened,
    when, the work done and the wall and CPU seconds it took."""

    repetition: int
    measured_at: str
    iterations: int
    seconds: float
    cpu_seconds: float

    @property
    def rate(self) -> float:
        """Iterations per second of wall time."""
        return self.iterations / self.seconds if self.seconds > 0 else 0.0


@dataclass(frozen=True)
class CellKey:
    target: str
    step: str
    clients: int
    repetition: int

    def __str__(self) -> str:
        return f"{self.target} {self.step} c{self.clients} r{self.repetition}"


@dataclass
class CellResult:
    """What a finished cell writes, in one transaction."""

    key: CellKey
    status: str
    started_at: str
    finished_at: str
    error: str | None = None
    summary: dict[str, Any] | None = None
    seconds_lines: list[dict[str, Any]] | None = None
    build: dict[str, Any] | None = None
    provenance: dict[str, Any] | None = None
    measures: dict[str, Any] | None = None
    per_op: dict[str, float | None] | None = None
    host_samples: list[dict[str, Any]] | None = None
    server_stats: dict[str, Any] | None = None
    histograms: dict[str, str] | None = None  # kind -> HDR V2 deflate base64 (Insert Benchmark: per operation)
