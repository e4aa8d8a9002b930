"""Bisection: the search for the first commit where a study's steps changed, between a good and a bad commit.

The search is pure: it holds the commits in order (good first, bad last) and what each probe was found to be,
and answers which commits to probe next and where the search stands. The measuring is `verdicts.probes`'.

A probe is `good` when every bisected step is `same` as the good commit and differs from the bad one as good
differs from bad; `bad` when the reverse holds; otherwise `unsure`, and an unsure probe is never taken as
either: the search stops there and reports the range it narrowed to, with why. A commit that does not build
is `skipped`: the search probes its neighbours instead, and a culprit it cannot separate from skipped commits
is reported as the range that holds them.

With several CPUs the counts of several probes run at once, so each round probes `width` commits spread
evenly over the range (Pinpoint tests several midpoints at once too); a round of `width` probes leaves about
1 / (width + 1) of the range.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from dbsweep.verdicts import stats

Outcome = Literal["good", "bad", "unsure", "skipped"]
State = Literal["searching", "found", "ambiguous", "stuck"]


@dataclass(frozen=True)
class Side:
    """One verdict of a pair: its ratio (target / base), and the interval (QPS) or the floor (counts) behind it."""

    verdict: str
    ratio: float | None = None
    low: float | None = None
    high: float | None = None
    floor: float | None = None  # counts: the smallest change the verdict reports


@dataclass(frozen=True)
class StepJudgement:
    """One bisected step of a probe: its figure against the good commit's and the bad commit's."""

    step: str
    good: Side  # the probe against good (good as the base)
    bad: Side  # bad against the probe (the probe as the base)

    @property
    def against_good(self) -> str:
        return self.good.verdict

    @property
    def against_bad(self) -> str:
        return self.bad.verdict


def classify(change: Mapping[str, str], judged: Sequence[StepJudgement]) -> tuple[Outcome, str]:
    """A probe's outcome from its steps: `change` is each step's verdict of bad against good (the change the
    search looks for). Returns the outcome and, for `unsure`, why."""
    sides: set[str] = set()
    reasons: list[str] = []
    for j in judged:
        want = change[j.step]
        if j.against_good == "same" and j.against_bad == want:
            sides.add("good")
        elif j.against_good == want and j.against_bad == "same":
            sides.add("bad")
        else:
            sides.add("unsure")
            reasons.append(_between(j, want))
    if sides == {"good"}:
        return "good", ""
    if sides == {"bad"}:
        return "bad", ""
    if "unsure" not in sides:
        return (
            "unsure",
            "some steps are as at the good commit and some as at the bad one: more than one commit "
            "changed them; bisect the steps one at a time",
        )
    return "unsure", "; ".join(reasons)


def _between(j: StepJudgement, want: str) -> str:
    if j.against_good == want and j.against_bad == want:
        return f"{j.step} is between good and bad: part of the change came before this commit, part after"
    if "unsure" in (j.against_good, j.against_bad):
        return f"{j.step}: the verdicts could not decide ({j.against_good} against good, {j.against_bad} to bad)"
    return f"{j.step} moved otherwise than from good to bad ({j.against_good} against good, {j.against_bad} to bad)"


@dataclass
class Search:
    """The commits from good (index 0) to bad (the last), and what is known of each."""

    commits: Sequence[str]
    known: dict[str, Outcome] = field(default_factory=dict)
    why: dict[str, str] = field(default_factory=dict)  # commit -> why it is unsure or skipped

    def __post_init__(self) -> None:
        if len(self.commits) < 2:
            raise ValueError("a bisection needs a good and a bad commit")
        self.known.setdefault(self.commits[0], "good")
        self.known.setdefault(self.commits[-1], "bad")

    def record(self, commit: str, outcome: Outcome, why: str = "") -> None:
        self.known[commit] = outcome
        if why:
            self.why[commit] = why

    @property
    def bounds(self) -> tuple[int, int]:
        """(last good, first bad) as indices: the culprit lies in (lo, hi]. A good commit after a bad one is
        a contradiction the caller hears of through `contradiction`; the bounds keep the first bad."""
        hi = next(i for i, c in enumerate(self.commits) if self.known.get(c) == "bad")
        lo = max(i for i, c in enumerate(self.commits[:hi]) if self.known.get(c) == "good")
        return lo, hi

    @property
    def contradiction(self) -> str | None:
        """A commit found good after one found bad: the steps went back, so the change is not one commit's."""
        hi = self.bounds[1]
        later = [c for c in self.commits[hi + 1 :] if self.known.get(c) == "good"]
        if later:
            return (
                f"{later[0][:12]} is good again after {self.commits[hi][:12]} was bad: the steps changed back, "
                "so no one commit explains the change"
            )
        return None

    def candidates(self) -> list[int]:
        """Indices strictly inside the range that are not yet probed (skipped commits are probed no more)."""
        lo, hi = self.bounds
        return [i for i in range(lo + 1, hi) if self.commits[i] not in self.known]

    def unsure_inside(self) -> list[str]:
        lo, hi = self.bounds
        return [c for c in self.commits[lo + 1 : hi] if self.known.get(c) == "unsure"]

    @property
    def state(self) -> State:
        if self.unsure_inside() or self.contradiction:
            return "stuck"
        if self.candidates():
            return "searching"
        lo, hi = self.bounds
        return "found" if hi == lo + 1 else "ambiguous"

    def next_probes(self, width: int = 1) -> list[str]:
        """Up to `width` commits to probe at once, spread evenly over the range (the midpoint when one)."""
        if self.state != "searching":
            return []
        lo, hi = self.bounds
        free = self.candidates()
        chosen: list[int] = []
        for j in range(1, min(width, len(free)) + 1):
            want = lo + (hi - lo) * j / (min(width, len(free)) + 1)
            # The nearest commit not yet chosen (a skipped commit's neighbour stands in for it).
            best = min((i for i in free if i not in chosen), key=lambda i: (abs(i - want), i))
            chosen.append(best)
        return [self.commits[i] for i in sorted(chosen)]

    def probes_to_go(self, width: int = 1) -> int:
        """An estimate of the probes still to run: each round of `width` leaves 1 / (width + 1) of the range."""
        n = len(self.candidates())
        if n == 0 or self.state != "searching":
            return 0
        return math.ceil(math.log(n + 1, width + 1)) * width if width > 1 else math.ceil(math.log2(n + 1))

    @property
    def culprit(self) -> str | None:
        return self.commits[self.bounds[1]] if self.state == "found" else None

    @property
    def parent(self) -> str | None:
        return self.commits[self.bounds[0]] if self.state == "found" else None

    def left(self) -> list[str]:
        """The commits that may still be the culprit: (last good, first bad]."""
        lo, hi = self.bounds
        return list(self.commits[lo + 1 : hi + 1])

    def explain(self) -> str:
        """Where the search stands, in a sentence."""
        lo, hi = self.bounds
        span = f"{self.commits[lo][:12]}..{self.commits[hi][:12]} ({hi - lo} commits)"
        match self.state:
            case "found":
                return f"the first bad commit is {self.commits[hi][:12]}"
            case "searching":
                return f"the culprit is in {span}"
            case "ambiguous":
                skipped = [c[:12] for c in self.commits[lo + 1 : hi]]
                return (
                    f"the culprit is one of {span}: {', '.join(skipped)} did not build, so the search cannot "
                    "separate them"
                )
            case "stuck":
                if reason := self.contradiction:
                    return f"stopped in {span}: {reason}"
                c = self.unsure_inside()[0]
                return (
                    f"stopped in {span}: {c[:12]} is unsure ({self.why.get(c, 'undecided')}), and an unsure "
                    "probe is never taken as good or bad"
                )
        raise AssertionError(self.state)


def confirm(verdicts: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """The steps the bisection follows: those whose verdict of bad against good is decided and not `same`; and
    the others, which it drops (said by the caller)."""
    changed = {s: v for s, v in verdicts.items() if stats.decided(v) and v != "same"}
    return changed, [s for s in verdicts if s not in changed]
