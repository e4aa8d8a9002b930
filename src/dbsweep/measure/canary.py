"""The canary: a fixed amount of pure CPU work, timed before each round of a run, so the machine's drift
between rounds shows as a change of its rate (iterations per second).

The work is a fixed number of xorshift steps in a fresh Python child (`python -I` of this very file: the
standard library only, no dbsweep import), so the rate depends on the CPU the child gets and nothing the
parent holds (its threads, its heap, its imports). The child times the loop alone, on its wall clock
and its CPU clock: wall time well above CPU time means the child waited for a CPU (another process, or a
hypervisor's steal).

Run as a script, it prints one JSON line: `{"iterations", "seconds", "cpu_seconds", "checksum"}`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

# About 0.3 s on a 2020s server core: cheap enough before every round, long enough that a timer tick or
# an interrupt is lost in it.
ITERATIONS = 800_000
_MASK = (1 << 64) - 1
_SEED = 0x9E3779B97F4A7C15
_TIMEOUT_S = 60.0


class CanaryError(Exception):
    """The canary's child did not give a result."""


@dataclass(frozen=True, slots=True)
class CanaryRun:
    """One timing of the canary: the work done, the wall and CPU seconds it took, and the loop's result (the
    same for the same number of iterations, so the work is known to have been done)."""

    iterations: int
    seconds: float
    cpu_seconds: float
    checksum: int

    @property
    def rate(self) -> float:
        """Iterations per second of wall time."""
        return self.iterations / self.seconds if self.seconds > 0 else 0.0


def spin(iterations: int) -> int:
    """The work: xorshift64 steps, integer arithmetic only, no memory beyond a few objects."""
    x = _SEED
    for _ in range(iterations):
        x ^= (x << 13) & _MASK
        x ^= x >> 7
        x ^= (x << 17) & _MASK
    return x


def timed(iterations: int) -> CanaryRun:
    """`spin` timed in this process."""
    wall, cpu = time.perf_counter(), time.process_time()
    checksum = spin(iterations)
    return CanaryRun(iterations, time.perf_counter() - wall, time.process_time() - cpu, checksum)


def run(iterations: int = ITERATIONS, cpus: frozenset[int] | None = None) -> CanaryRun:
    """The canary in a child process (pinned to `cpus` when given); raises CanaryError when it fails."""
    from dbsweep import procs  # here, not at the top: the child runs this file without dbsweep

    proc = procs.spawn(
        [sys.executable, "-I", str(Path(__file__).resolve()), str(iterations)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cpus=cpus,
    )
    try:
        out, err = proc.communicate(timeout=_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        procs.terminate(proc)
        raise CanaryError(f"the canary took more than {_TIMEOUT_S:.0f} s") from None
    procs.forget(proc)
    if proc.returncode != 0:
        last = (err.strip().splitlines() or ["no message"])[-1]
        raise CanaryError(f"the canary exited with status {proc.returncode}: {last}")
    try:
        d = json.loads(out)
        result = CanaryRun(int(d["iterations"]), float(d["seconds"]), float(d["cpu_seconds"]), int(d["checksum"]))
    except (ValueError, KeyError, TypeError) as e:
        raise CanaryError(f"the canary's output is not what dbsweep reads: {e}") from None
    if result.iterations != iterations or result.seconds <= 0:
        raise CanaryError(f"the canary did {result.iterations} iterations in {result.seconds} s")
    return result


def main(argv: list[str]) -> None:
    r = timed(int(argv[1]) if len(argv) > 1 else ITERATIONS)
    print(
        json.dumps(
            {"iterations": r.iterations, "seconds": r.seconds, "cpu_seconds": r.cpu_seconds, "checksum": r.checksum}
        )
    )


if __name__ == "__main__":
    main(sys.argv)
