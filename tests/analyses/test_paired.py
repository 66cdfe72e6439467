"""Paired differences: a variant that scores exactly as its original under every seed differs by
exactly zero, even where the seeds' mean is one unit in the last place off."""

from __future__ import annotations

import numpy as np
import pandas as pd

from evalstress.analyses.confusion import criteria_confusion
from evalstress.analyses.paired import exact_zeros, paired_sets


def test_equal_seed_scores_give_a_zero_difference_not_rounding(make_table) -> None:  # type: ignore[no-untyped-def]
    # the mean of three scores of 0.1 is 0.10000000000000002 in floating point
    assert np.mean([0.1, 0.1, 0.1]) != 0.1
    table = make_table([0.1] * 12, {("sentence-exchange", "1"): [[0.1, 0.1, 0.1]] * 12},
                       aspect="grammaticality")
    (paired,) = paired_sets(table)
    assert paired.n_seeds == 3
    assert np.array_equal(paired.differences, np.zeros(12))
    # grammaticality should stay under an exchange of sentences: unmoved, it passes (rounding
    # of one sign on all 12 examples would read as a significant, complete shift)
    (item,) = criteria_confusion(pd.DataFrame(table)).items
    assert item.test == "invariance" and item.passed is True and item.pvalue == 1.0


def test_a_real_change_is_kept_however_small_the_score() -> None:
    originals = np.array([1e-6, 5.0, -300.0, 0.0])
    variants = np.array([0.9e-6, 5.0 - 1e-9, -300.0 + 3e-13, 0.0])
    differences = originals - variants
    kept = exact_zeros(differences, originals, variants)
    # a change of 1e-7 on a score of 1e-6, and of 1e-9 on 5, are changes; 3e-13 on 300 is
    # rounding (1e-15 of the score)
    assert kept[0] == differences[0] and kept[1] == differences[1]
    assert kept[2] == 0.0 and kept[3] == 0.0
