"""Position bias of a pairwise judge: does its verdict follow the order the texts are shown in?

Each pair is judged three times: a first (ab), b first (ba), and a first again (the re-ask,
the placebo: the same request asked twice). Per pair, two flips:

- swap flip: the verdict's winner changes when the order is swapped (ab names a, ba names b,
  or the other way round, or one of them is a tie and the other not);
- re-ask flip: the verdict changes when the same order is asked again.

The effect is the swap flip rate above the re-ask flip rate, the two paired on the same pairs:
a judge that merely answers at random flips under re-asking as often as under swapping and is
not called position-biased. Its interval is a percentile bootstrap that resamples PAIRS, and
its verdict is the four-way verdict of `analyses.verdicts` with a tolerance in flip-rate
points; McNemar's exact test on the discordant pairs (swap flip only against re-ask flip only)
is reported beside it. The first-position win share (of the decisive verdicts, those for the
text shown first) comes with its Wilson interval: 0.5 when the slot does not matter.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from evalstress.analyses.verdicts import N_BOOT, bootstrap_means, decide_all
from evalstress.core.proportions import wilson

#: the default tolerance of the flip-rate difference: 5 points of flip rate
FLIP_TOLERANCE = 0.05
WORDING = {"detects": "biased toward the position: verdicts flip with the order beyond re-asking",
           "reversed": "flips less under swapping than when re-asked",
           "blind": "no position bias beyond re-asking within ±{delta:.0%}",
           "inconclusive": "inconclusive"}


@dataclass(frozen=True)
class PairVerdicts:
    """One pair's verdicts: 'a', 'b', 'tie' or None (unparsable)."""

    ab: str | None
    ba: str | None
    again: str | None  # a shown first, asked again


@dataclass
class PositionResult:
    pairs: int  # pairs whose three verdicts all parsed
    unparsable: int
    swap_flip_rate: float | None
    reask_flip_rate: float | None
    effect: float | None  # swap - re-ask flip rate
    low: float | None
    high: float | None
    level: float
    tolerance: float
    outcome: str
    verdict: str
    mcnemar_p: float | None  # exact, on the discordant pairs
    discordant: tuple[int, int]  # (swap flip only, re-ask flip only)
    first_win_share: float | None
    first_win_low: float | None
    first_win_high: float | None
    decisive: int  # verdicts of the two orders that named a winner (the re-ask left out,
    # so each text is shown first as often as second)
    n_to_settle: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "discordant": list(self.discordant)}


def position_test(pairs: Sequence[PairVerdicts], *, tolerance: float = FLIP_TOLERANCE,
                  alpha: float = 0.05, n_boot: int = N_BOOT, seed: int = 0) -> PositionResult:
    """The position test over `pairs` (see the module docstring); one test, so no correction."""
    from scipy.stats import binomtest

    usable = [p for p in pairs if None not in (p.ab, p.ba, p.again)]
    swap = np.array([p.ab != p.ba for p in usable], dtype=float)
    reask = np.array([p.ab != p.again for p in usable], dtype=float)
    boot = bootstrap_means(swap - reask, n_boot=n_boot, seed=seed)
    (found,), _ = decide_all([boot], [tolerance], alpha=alpha, correction="none")
    only_swap = int(np.sum((swap == 1) & (reask == 0)))
    only_reask = int(np.sum((swap == 0) & (reask == 1)))
    discordant = only_swap + only_reask
    mcnemar = float(binomtest(only_swap, discordant).pvalue) if discordant else None
    shown_first = [(v, first) for p in usable
                   for v, first in ((p.ab, "a"), (p.ba, "b")) if v != "tie"]
    wins = sum(v == first for v, first in shown_first)
    low, high = wilson(wins, len(shown_first))
    said = WORDING[found.verdict].format(delta=tolerance)
    if found.verdict == "inconclusive" and found.n_to_settle is not None:
        said += f" ({found.n_to_settle} pairs would settle it)"
    return PositionResult(
        len(usable), len(pairs) - len(usable),
        float(swap.mean()) if usable else None, float(reask.mean()) if usable else None,
        found.estimate, found.low, found.high, found.level, tolerance, found.verdict, said,
        mcnemar, (only_swap, only_reask),
        wins / len(shown_first) if shown_first else None, low, high, len(shown_first),
        found.n_to_settle)
