"""What the load client's options can hold: the integer types of its command line, for every suite's
preflight checks (the study says the largest value allowed rather than the client failing mid-run)."""

from __future__ import annotations

from dbsweep.suites.base import Found, SuiteSettings

I32_MAX = 2**31 - 1
U32_MAX = 2**32 - 1
I64_MAX = 2**63 - 1
U64_MAX = 2**64 - 1
I32 = "a signed 32-bit integer (i32)"
U32 = "an unsigned 32-bit integer (u32)"
U64 = "an unsigned 64-bit integer (u64)"
# The load client ends a step at `start + Duration::from_secs(warmup + seconds)` on its monotonic clock, whose
# seconds since boot are a signed 64-bit integer: the sum must fit beside the uptime (a century is left for it).
CLOCK_SECONDS_MAX = I64_MAX - 100 * 365 * 24 * 3600


def too_big(field: str, value: int, limit: int, option: str, kind: str) -> Found:
    return (
        field,
        f"{value} is more than the load client takes: its {option} is {kind}; the largest allowed value is {limit}",
    )


def common(s: SuiteSettings) -> list[Found]:
    """The options every suite passes: the seed and the client counts."""
    out: list[Found] = []
    if not 0 <= s.seed <= U64_MAX:
        out.append(
            (
                "suite.seed",
                f"{s.seed} is not a seed the load client takes ({U64}); allowed: 0 to {U64_MAX}",
            )
        )
    for j, c in enumerate(s.clients):
        if c > U32_MAX:
            out.append(too_big(f"suite.clients[{j}]", c, U32_MAX, "--clients", U32))
    return out


def clock(field: str, seconds: int, warmup: int) -> list[Found]:
    """A step's seconds plus its warm-up must fit the load client's clock."""
    if warmup + seconds <= CLOCK_SECONDS_MAX:
        return []
    return [
        (
            field,
            f"{seconds} plus warmup_seconds ({warmup}) is more than the load client's clock can count to (signed "
            f"64-bit seconds since boot); the largest allowed value is {max(1, CLOCK_SECONDS_MAX - warmup)}",
        )
    ]
