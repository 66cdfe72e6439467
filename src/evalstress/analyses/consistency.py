"""How consistent a judge is with itself: the same request asked k times, and the same request
with its criterion reworded. Pure functions of the ratings; the card's consistency method
(`card.consistency`) asks for them.

- Repeats, per aspect: the share of items whose k answers are all identical (their texts as
  written, where known, else their ratings), with its Wilson interval (`core.proportions`),
  and the mean within-item standard deviation (ddof 1) of the ratings with a percentile
  bootstrap interval that resamples items. Items with fewer than k usable ratings are left
  out and counted. `delta`, the tolerance of the blind-spot rule (0.2 x the SD of the first
  answers' ratings across items), says how much spread matters: a spread whose interval lies
  below it is a trace, not a finding.
- Rewording, per aspect and rewording: the paired shift (reworded minus as written) of each
  item's rating, read as a four-way verdict (`analyses.verdicts`: an interval over items
  against a tolerance of 0.2 x the SD of the as-written ratings, corrected together with
  Benjamini-Hochberg over every aspect and rewording): "moves up" or "moves down" (the
  interval lies beyond the tolerance), "stable" (inside it), else inconclusive with the items
  that would settle it.
- Verdicts between wordings: which blind-spot verdicts (aspect, perturbation) differ between
  the run as written and a reworded run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from evalstress.analyses.stats import mean_ci
from evalstress.analyses.verdicts import bootstrap_means, decide_all, default_tolerance
from evalstress.core.proportions import wilson

#: the bootstrap's resamples and seed (those of the blind-spot verdicts)
N_BOOT = 2000
SEED = 0
#: two ratings are identical when they differ by less than this (logprob-weighted ratings are
#: real numbers written through JSON)
SAME = 1e-9
#: the words of a wording shift's four-way verdict (`analyses.verdicts.VERDICTS`)
SHIFT_WORDS = {"detects": "moves up", "reversed": "moves down", "blind": "stable",
               "inconclusive": "inconclusive"}


def repeat_row(aspect: str, ratings: Sequence[Sequence[float | None]], k: int,
               texts: Sequence[Sequence[str | None]] | None = None) -> dict[str, Any]:
    """One aspect's repeat figures from each item's ratings (k asked, None: no usable one).
    `texts`: each item's k answers as written, where known: two answers are identical when
    their texts are (a logprob-weighted rating can move by a trace while the answer stays the
    same); an item whose texts are not all known is compared by its ratings."""
    kept = [i for i, r in enumerate(ratings)
            if len(r) >= k and all(v is not None and np.isfinite(v) for v in r[:k])]
    complete = [np.asarray(ratings[i][:k], dtype=float) for i in kept]
    written = [list(texts[i][:k]) if texts is not None and i < len(texts) else []
               for i in kept]
    by_text = [len(w) == k and all(t is not None for t in w) for w in written]
    identical = sum(1 for r, w, known in zip(complete, written, by_text, strict=True)
                    if (len(set(w)) == 1 if known else float(r.max() - r.min()) < SAME))
    low, high = wilson(identical, len(complete))
    spreads = [float(r.std(ddof=1)) for r in complete] if k > 1 else []
    sd_low, sd_high = mean_ci(spreads, n_boot=N_BOOT, seed=SEED) if spreads else (None, None)
    return {"aspect": aspect, "k": k, "items": len(complete),
            "left_out": len(ratings) - len(complete), "identical": identical,
            "compared_by_text": sum(by_text),
            "identical_ratings": sum(1 for r in complete if float(r.max() - r.min()) < SAME),
            "identical_share": identical / len(complete) if complete else None,
            "identical_low": low, "identical_high": high,
            "mean_sd": float(np.mean(spreads)) if spreads else None,
            "sd_low": sd_low, "sd_high": sd_high,
            "delta": default_tolerance([r[0] for r in complete]) if complete else None}


def shift_rows(written: Mapping[str, Sequence[float | None]],
               reworded: Mapping[int, Mapping[str, Sequence[float | None]]],
               *, alpha: float = 0.05) -> tuple[list[dict[str, Any]], float]:
    """Each (aspect, rewording)'s paired shift over items with its corrected verdict, and
    alpha_eff. `written[aspect]` and `reworded[variant][aspect]` hold one rating per item, in
    the same order (None: no usable rating; such an item leaves that pair out)."""
    tests: list[tuple[str, int, np.ndarray, float]] = []
    for variant, table in sorted(reworded.items()):
        for aspect, base in written.items():
            pairs = [(b, o) for b, o in zip(base, table.get(aspect, []), strict=False)
                     if b is not None and o is not None]
            base_values = np.asarray([b for b, _ in pairs], dtype=float)
            shifts = np.asarray([o - b for b, o in pairs], dtype=float)
            tests.append((aspect, variant, shifts, default_tolerance(base_values)))
    if not tests:
        return [], alpha
    boots = [bootstrap_means(t[2], n_boot=N_BOOT, seed=SEED) for t in tests]
    verdicts, alpha_eff = decide_all(boots, [t[3] for t in tests], alpha=alpha,
                                     correction="bh")
    rows = [{"aspect": aspect, "variant": variant, "n": int(shifts.size),
             "shift": verdict.estimate, "low": verdict.low, "high": verdict.high,
             "level": verdict.level, "delta": delta, "outcome": SHIFT_WORDS[verdict.verdict],
             "n_to_settle": verdict.n_to_settle, "reason": verdict.reason}
            for (aspect, variant, shifts, delta), verdict in zip(tests, verdicts, strict=True)]
    return rows, alpha_eff


def verdict_changes(written: Mapping[tuple[str, str], str],
                    reworded: Mapping[tuple[str, str], str]) -> list[dict[str, Any]]:
    """The (aspect, perturbation) blind-spot verdicts that differ between two wordings; only
    the tests both runs decided on are compared (`compared` counts them)."""
    return [{"aspect": aspect, "perturbation": name, "written": outcome,
             "reworded": reworded[(aspect, name)]}
            for (aspect, name), outcome in sorted(written.items())
            if (aspect, name) in reworded and reworded[(aspect, name)] != outcome]
