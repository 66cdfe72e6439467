"""Putting victim and gold scores on the 0-100 scale that paper 004's thresholds assume.

An evaluator's scale comes, in this order, from:
1. the user: `--range NAME=LO:HI` (`given`);
2. a reference set the user names for it: `--scale-reference NAME=FILE` (`reference`: the
   low and high percentiles, 5 and 95 by default, of the evaluator's scores of that file's
   examples; the file's hash and the percentiles are recorded);
   (under `--protocol paper`, a victim that paper 004's code attacks takes the code's own map
   here instead of 3-5: `paper_scales`, `paper-code`);
3. the evaluator's own range (`Evaluator.score_range`: BLEU 0-100, ROUGE and probabilities 0-1,
   cosines -1-1, a judge's rating scale; plugins declare theirs the same way) (`declared`);
4. a reference set named for every victim without a declared range: `--scale-reference FILE`
   (unbounded scores: perplexities, log-likelihoods, COMET, BLEURT, TER) (`reference`);
5. else the minimum and maximum of the attacked originals' scores (`min-max`). That scale
   depends on which examples were attacked, so one victim's ASR changes with the attack set;
   the report warns wherever it was used.

Lower-is-better scores are flipped so that 100 is always the best; values outside the range are
clipped and counted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from evalstress.core.data import Example
from evalstress.evaluators.base import Evaluator

#: The scales whose ends come from the attacked examples themselves.
DATA_DEPENDENT = ("min-max",)
DEFAULT_PERCENTILES = (5.0, 95.0)


@dataclass(frozen=True)
class Scale:
    """A linear map of raw scores onto 0-100 (100 = best), with where it came from."""

    low: float
    high: float
    higher_is_better: bool = True
    how: str = "declared"  # given | reference | declared | min-max
    detail: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if not self.high > self.low:
            raise ValueError(f"a score range needs high > low, got {self.low}:{self.high}")

    @property
    def data_dependent(self) -> bool:
        return self.how in DATA_DEPENDENT

    def unclipped(self, raw: float) -> float:
        share = (raw - self.low) / (self.high - self.low)
        return 100.0 * (share if self.higher_is_better else 1.0 - share)

    def __call__(self, raw: float) -> float:
        return min(100.0, max(0.0, self.unclipped(raw)))

    def clips(self, raw: float) -> bool:
        """Outside the range by more than rounding (sentence BLEU of a copy is 100 + 4e-14)."""
        return not -1e-9 <= self.unclipped(raw) <= 100.0 + 1e-9

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"low": self.low, "high": self.high,
                               "higher_is_better": self.higher_is_better, "how": self.how,
                               "data_dependent": self.data_dependent}
        if self.detail:
            out.update(self.detail)
        return out


@dataclass(frozen=True)
class ScaleReference:
    """A set of examples whose scores fix a scale: their low and high percentiles. Named by the
    user and kept the same across attacks, it makes a victim's 0-100 scale (and so its ASR) one
    thing whatever examples are attacked."""

    path: Path
    examples: tuple[Example, ...]
    percentiles: tuple[float, float] = DEFAULT_PERCENTILES

    def __post_init__(self) -> None:
        low, high = self.percentiles
        if not 0 <= low < high <= 100:
            raise ValueError(f"scale percentiles must satisfy 0 <= low < high <= 100, got "
                             f"{low}:{high}")

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.path.read_bytes()).hexdigest()

    def scale(self, evaluator: Evaluator, aspect: str, values: Sequence[float], *,
              label: str = "") -> Scale:
        """The scale of `values` (the evaluator's scores of this set's examples)."""
        clean = [float(v) for v in values]
        if len(set(clean)) < 2:
            raise ValueError(f"{label or evaluator.label}: the scale reference {self.path} gave "
                             f"{len(set(clean))} distinct score(s); a scale needs them to differ")
        low, high = (float(v) for v in np.percentile(clean, self.percentiles))
        if not high > low:
            raise ValueError(f"{label or evaluator.label}: the {self.percentiles[0]:g}th and "
                             f"{self.percentiles[1]:g}th percentiles of {self.path} are equal; "
                             "widen --scale-percentiles")
        return Scale(low, high, evaluator.higher_is_better(aspect), "reference",
                     {"reference": {"file": str(self.path), "sha256": self.sha256,
                                    "examples": len(self.examples), "scored": len(clean),
                                    "percentiles": list(self.percentiles)}})


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
    """The range the evaluator declares for this aspect (`Evaluator.score_range`), if any; an
    object that is no `Evaluator` may declare one as a `score_range` tuple."""
    own = getattr(evaluator, "score_range", None)
    if callable(own):
        own = own(aspect)
    if own is None:
        return None
    low, high = own
    return float(low), float(high)


def choose_scale(evaluator: Evaluator, aspect: str, originals: Sequence[float], *,
                 given: tuple[float, float] | None = None, reference: Scale | None = None,
                 label: str = "") -> Scale:
    """The 0-100 map of one evaluator aspect: given, else the scale of a reference set (which
    the caller computes only where one applies: named for this evaluator, or shared and the
    evaluator declares no range), else declared, else min-max over `originals`."""
    better = evaluator.higher_is_better(aspect)
    if given is not None:
        return Scale(given[0], given[1], better, "given")
    if reference is not None:
        return reference
    declared = known_range(evaluator, aspect)
    if declared is not None:
        return Scale(declared[0], declared[1], better, "declared")
    values = sorted(set(float(v) for v in originals))
    if len(values) < 2 or values[-1] - values[0] <= 1e-6 * max(1.0, abs(values[-1])):
        raise ValueError(
            f"{label or evaluator.label}: no declared score range, and min-max over the "
            f"originals needs them to differ (got {len(values)} distinct value(s); with "
            f"--reference original every original scores itself alike); give one with "
            f"--range {evaluator.name}=LO:HI or --scale-reference FILE")
    return Scale(values[0], values[-1], better, "min-max",
                 {"originals": len(originals)})
