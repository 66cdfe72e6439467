"""Putting victim and gold scores on the 0-100 scale that paper 004's thresholds assume.

An evaluator's scale comes, in this order, from the user (`--range NAME=LO:HI`), from the
evaluator itself (a `score_range` attribute, which plugins may set), from the ranges declared
here for the built-in evaluators, or, when none is known (BERTScore, TER, perplexities), from
the minimum and maximum of the originals' scores in the attack set. The choice is recorded with
the attack. Lower-is-better scores are flipped so that 100 is always the best; values outside
the range are clipped and counted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalstress.evaluators.base import Evaluator

#: Declared ranges of built-in evaluators (same for all their aspects).
DECLARED: Mapping[str, tuple[float, float]] = {
    "bleu": (0.0, 100.0), "chrf": (0.0, 100.0), "rouge": (0.0, 1.0), "boolean-qa": (0.0, 1.0),
}


@dataclass(frozen=True)
class Scale:
    """A linear map of raw scores onto 0-100 (100 = best), with where it came from."""

    low: float
    high: float
    higher_is_better: bool = True
    how: str = "declared"  # declared | given | min-max

    def __post_init__(self) -> None:
        if not self.high > self.low:
            raise ValueError(f"a score range needs high > low, got {self.low}:{self.high}")

    def unclipped(self, raw: float) -> float:
        share = (raw - self.low) / (self.high - self.low)
        return 100.0 * (share if self.higher_is_better else 1.0 - share)

    def __call__(self, raw: float) -> float:
        return min(100.0, max(0.0, self.unclipped(raw)))

    def clips(self, raw: float) -> bool:
        return not 0.0 <= self.unclipped(raw) <= 100.0

    def to_dict(self) -> dict[str, Any]:
        return {"low": self.low, "high": self.high, "higher_is_better": self.higher_is_better,
                "how": self.how}


def parse_range(text: str) -> tuple[float, float]:
    """`LO:HI` (also `LO-HI` for non-negative numbers) -> (lo, hi)."""
    value = str(text).strip()
    for sep in (":", ".."):
        if sep in value:
            low, _, high = value.partition(sep)
            break
    else:
        low, sep, high = value.partition("-")
        if not sep:
            raise ValueError(f"range '{text}' must look like LO:HI, e.g. 0.5:1")
    try:
        return float(low), float(high)
    except ValueError:
        raise ValueError(f"range '{text}' must look like LO:HI, e.g. 0.5:1") from None


def known_range(evaluator: Evaluator, aspect: str) -> tuple[float, float] | None:
    """The evaluator's own declared range, if it has one."""
    own = getattr(evaluator, "score_range", None)
    if callable(own):
        own = own(aspect)
    if own is not None:
        low, high = own
        return float(low), float(high)
    scale = getattr(evaluator, "scale", None)  # LLM judges: the rating scale they ask for
    if evaluator.name == "judge" and isinstance(scale, tuple):
        return float(scale[0]), float(scale[1])
    return DECLARED.get(evaluator.name)


def choose_scale(evaluator: Evaluator, aspect: str, originals: Sequence[float], *,
                 given: tuple[float, float] | None = None, label: str = "") -> Scale:
    """The 0-100 map of one evaluator aspect: given, declared, else min-max over `originals`."""
    better = evaluator.higher_is_better(aspect)
    if given is not None:
        return Scale(given[0], given[1], better, "given")
    declared = known_range(evaluator, aspect)
    if declared is not None:
        return Scale(declared[0], declared[1], better, "declared")
    values = sorted(set(float(v) for v in originals))
    if len(values) < 2 or values[-1] - values[0] <= 1e-6 * max(1.0, abs(values[-1])):
        raise ValueError(
            f"{label or evaluator.label}: no declared score range, and min-max over the "
            f"originals needs them to differ (got {len(values)} distinct value(s); with "
            f"--reference original every original scores itself alike); give one with "
            f"--range {evaluator.name}=LO:HI")
    return Scale(values[0], values[-1], better, "min-max")
