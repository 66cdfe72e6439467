"""Agreement with human raters: tau-b against scipy, ordinal alpha against the krippendorff
package and a hand computation, intervals that draw items whole, Holm over the aspects, pairs
with Wilson intervals, and the raters among themselves."""

from __future__ import annotations

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalstress.analyses.agreement import (
    ONE_SCORE,
    agreement,
    ordinal_alpha,
    preference_accuracy,
    tau_b,
)


def codes_of(values: np.ndarray) -> np.ndarray:
    return np.where(np.isfinite(values), values, -1).astype(np.int64)[None]


def test_ordinal_alpha_by_hand_on_three_coders_and_four_units() -> None:
    # coders A 1 2 3 3, B 1 2 2 3, C 1 3 3 3. Coincidences: o11 = 3, o22 = 1, o23 = o32 = 2,
    # o33 = 4; n1 = 3, n2 = 3, n3 = 6, n = 12. Ordinal distances: d12 = (6/2)^2 = 9,
    # d23 = (9/2)^2 = 20.25, d13 = (12 - 9/2)^2 = 56.25. Observed: 4 x 20.25 = 81; expected:
    # 2 (3*3*9 + 3*6*20.25 + 3*6*56.25) = 2916; alpha = 1 - 11 * 81 / 2916 = 25/36.
    table = np.array([[1, 2, 3, 3], [1, 2, 2, 3], [1, 3, 3, 3]], dtype=float)
    assert ordinal_alpha(codes_of(table.T))[0] == pytest.approx(25 / 36)
    assert krippendorff.alpha(reliability_data=table,
                              level_of_measurement="ordinal") == pytest.approx(25 / 36)


def test_ordinal_alpha_equals_the_package_with_gaps_and_repeated_units() -> None:
    rng = np.random.default_rng(7)
    for _ in range(25):
        units, coders = int(rng.integers(4, 40)), int(rng.integers(2, 5))
        values = rng.integers(0, 6, (units, coders)).astype(float)
        values[rng.random((units, coders)) < 0.2] = np.nan
        if np.unique(values[np.isfinite(values)]).size < 2:
            continue
        reference = krippendorff.alpha(reliability_data=values.T,
                                       level_of_measurement="ordinal")
        assert ordinal_alpha(codes_of(values))[0] == pytest.approx(reference)
        # a resample that draws a unit twice is the data with that unit written twice
        times = rng.integers(0, 3, units)
        repeated = np.repeat(values, times, axis=0)
        if np.unique(repeated[np.isfinite(repeated)]).size < 2:
            continue
        assert ordinal_alpha(codes_of(values), times[None].astype(float))[0] == pytest.approx(
            krippendorff.alpha(reliability_data=repeated.T, level_of_measurement="ordinal"))


def test_tau_b_equals_scipy_with_ties_and_missing_values() -> None:
    rng = np.random.default_rng(3)
    x = rng.integers(0, 4, (30, 12)).astype(float)
    y = rng.integers(0, 4, (30, 12)).astype(float)
    x[rng.random(x.shape) < 0.15] = np.nan
    got = tau_b(x, y)
    for row, (a, b) in enumerate(zip(x, y, strict=True)):
        expected = stats.kendalltau(a, b, variant="b", nan_policy="omit").statistic
        assert got[row] == pytest.approx(expected, nan_ok=True)


def grid_frames(metric: np.ndarray, human: dict[str, np.ndarray]
                ) -> tuple[pd.DataFrame, pd.DataFrame]:
    docs, systems = metric.shape
    cells = [(f"d{d:03d}", f"s{s:03d}") for d in range(docs) for s in range(systems)]
    scores = pd.DataFrame({"doc_id": [c[0] for c in cells], "system_id": [c[1] for c in cells],
                           "evaluator": "m", "aspect": "score", "score": metric.ravel()})
    frame = pd.DataFrame({"doc_id": [c[0] for c in cells],
                          "system_id": [c[1] for c in cells],
                          **{h: v.ravel() for h, v in human.items()}})
    return scores, frame


def test_item_and_system_level_values_match_scipy_and_the_package() -> None:
    rng = np.random.default_rng(11)
    human = rng.integers(1, 6, (24, 5)).astype(float)
    metric = human + rng.normal(0, 1.5, human.shape)
    scores, frame = grid_frames(metric, {"coherence": human})
    result = agreement(scores, frame, n_boot=300, seed=4)
    rows = {(r.level, r.statistic): r for r in result.rows}
    per_item = [stats.kendalltau(m, h).statistic for m, h in zip(metric, human, strict=True)]
    assert rows[("item", "tau_b")].value == pytest.approx(np.nanmean(per_item))
    within = np.stack([stats.rankdata(metric, axis=1), stats.rankdata(human, axis=1)])
    assert rows[("item", "alpha")].value == pytest.approx(krippendorff.alpha(
        reliability_data=within.reshape(2, -1), level_of_measurement="ordinal"))
    means = metric.mean(axis=0), human.mean(axis=0)
    assert rows[("system", "tau_b")].value == pytest.approx(stats.kendalltau(*means).statistic)
    assert rows[("system", "alpha")].value == pytest.approx(krippendorff.alpha(
        reliability_data=np.stack([stats.rankdata(m) for m in means]),
        level_of_measurement="ordinal"))
    assert rows[("item", "tau_b")].n == 24 and rows[("system", "tau_b")].n == 5
    assert result.items == 24 and result.systems == 5
    # the system level draws items and recomputes the means: the same draws by hand
    draws = np.random.default_rng(4).integers(0, 24, (300, 24))
    boot = [stats.kendalltau(metric[d].mean(0), human[d].mean(0)).statistic for d in draws]
    low, high = np.nanpercentile(boot, [2.5, 97.5])
    assert (rows[("system", "tau_b")].ci_low, rows[("system", "tau_b")].ci_high) == (
        pytest.approx(low), pytest.approx(high))


def test_holm_corrects_over_the_aspects_instead_of_taking_the_best() -> None:
    rng = np.random.default_rng(5)
    noise = {f"aspect{k}": rng.integers(1, 6, (30, 4)).astype(float) for k in range(4)}
    scores, frame = grid_frames(rng.normal(size=(30, 4)), noise)
    result = agreement(scores, frame, n_boot=400)
    item = [r for r in result.rows if r.level == "item" and r.statistic == "tau_b"]
    assert len(item) == 4
    for row in item:  # nothing rejected: each test at 0.05 / 4, its interval wider than 95%
        assert row.verdict == "inconclusive"
        assert row.conf == pytest.approx(1 - 0.05 / 4)
        assert row.low <= row.ci_low and row.high >= row.ci_high
        assert row.n_to_settle is None or row.n_to_settle >= 10


def test_a_strong_agreement_is_called_with_its_corrected_interval() -> None:
    rng = np.random.default_rng(8)
    human = rng.integers(1, 6, (40, 6)).astype(float)
    scores, frame = grid_frames(human * 10 + rng.normal(0, 0.1, human.shape),
                                {"relevance": human})
    rows = agreement(scores, frame, n_boot=400).rows
    assert all(r.verdict == "agrees" and r.low > 0 for r in rows)


def test_pairs_are_derived_within_items_with_ties_left_out() -> None:
    human = np.array([[1.0, 2.0, 2.0], [3.0, 1.0, 2.0]])
    metric = np.array([[0.1, 0.5, 0.2], [0.3, 0.3, 0.9]])
    scores, frame = grid_frames(metric, {"fluency": human})
    pair = agreement(scores, frame, n_boot=50).pairs[0]
    # item 1: (1,2) agrees, (1,3) agrees, (2,3) human tie; item 2: (1,2) evaluator tie,
    # (1,3) disagrees, (2,3) agrees -> 5 pairs, 3 agree, 1 evaluator tie
    assert (pair.pairs, pair.agree, pair.evaluator_ties) == (5, 3, 1)
    low, high = stats.binomtest(3, 5).proportion_ci(method="wilson")
    assert (pair.ci_low, pair.ci_high) == (pytest.approx(low), pytest.approx(high))
    # drawing items: only 2 items, each resample's share is 2/2, 1/3 or 3/5 (both drawn)
    assert {pair.item_low, pair.item_high} <= {2 / 2, 1 / 3, 3 / 5}


def test_explicit_preferences_count_the_chosen_output_scored_higher() -> None:
    row = preference_accuracy([0.9, 0.4, 0.7, 0.5], [0.2, 0.6, 0.7, 0.1])
    assert (row.pairs, row.agree, row.evaluator_ties, row.accuracy) == (4, 2, 1, 0.5)


def test_raters_among_themselves_under_the_same_rule() -> None:
    rng = np.random.default_rng(2)
    raters = rng.integers(1, 6, (20, 4, 3)).astype(float)
    mean = raters.mean(axis=2)
    scores, frame = grid_frames(mean + rng.normal(0, 1, mean.shape), {"coherence": mean})
    long = pd.DataFrame([{"doc_id": f"d{d:03d}", "system_id": f"s{s:03d}", "human": "coherence",
                          "rater": r, "rating": raters[d, s, r]}
                         for d in range(20) for s in range(4) for r in range(3)])
    result = agreement(scores, frame, long, n_boot=200)
    rows = {(r.level, r.statistic): r for r in result.human_human}
    within = np.stack([stats.rankdata(raters[:, :, r], axis=1) for r in range(3)])
    # a rater who ties all outputs of an item ranks nothing there (missing for krippendorff)
    within[np.ptp(raters, axis=1).T[..., None].repeat(4, axis=2) == 0] = np.nan
    within = within.reshape(3, -1)
    assert rows[("item", "alpha")].value == pytest.approx(
        krippendorff.alpha(reliability_data=within, level_of_measurement="ordinal"))
    pair_taus = [np.nanmean([stats.kendalltau(raters[d, :, a], raters[d, :, b]).statistic
                             for a, b in ((0, 1), (0, 2), (1, 2))]) for d in range(20)]
    assert rows[("item", "tau_b")].value == pytest.approx(np.nanmean(pair_taus))
    assert result.human_human_note == ""
    assert agreement(scores, frame, n_boot=50).human_human_note == ONE_SCORE


def test_one_output_per_item_ranks_across_the_items() -> None:
    rng = np.random.default_rng(9)
    human = rng.integers(1, 6, (30, 1)).astype(float)
    metric = human + rng.normal(0, 1, human.shape)
    scores, frame = grid_frames(metric, {"overall": human})
    result = agreement(scores, frame, n_boot=200)
    rows = {(r.level, r.statistic): r for r in result.rows}
    assert set(rows) == {("item", "tau_b"), ("item", "alpha")}
    assert rows[("item", "tau_b")].value == pytest.approx(
        stats.kendalltau(metric[:, 0], human[:, 0]).statistic)
    assert rows[("item", "alpha")].value == pytest.approx(krippendorff.alpha(
        reliability_data=np.stack([stats.rankdata(metric[:, 0]), stats.rankdata(human[:, 0])]),
        level_of_measurement="ordinal"))
    assert result.systems == 0
    assert result.pairs == [] and result.notes[0].startswith("no pairs: each item has one")


def test_humans_who_tie_every_output_give_no_alpha_not_a_spurious_one() -> None:
    rng = np.random.default_rng(4)
    metric = rng.normal(size=(30, 4))
    scores, frame = grid_frames(metric, {"fluency": np.full((30, 4), 3.0)})
    rows = agreement(scores, frame, n_boot=100).rows
    # tau-b is undefined where one side is constant; alpha on its ranks is no different
    assert all(r.value is None and r.verdict == "inconclusive" for r in rows)
    half = np.full((30, 4), 3.0)
    half[:15] = rng.integers(1, 6, (15, 4))
    scores, frame = grid_frames(metric, {"fluency": half})
    item = next(r for r in agreement(scores, frame, n_boot=100).rows
                if (r.level, r.statistic) == ("item", "alpha"))
    within = np.stack([stats.rankdata(metric[:15], axis=1), stats.rankdata(half[:15], axis=1)])
    keep = np.repeat(np.ptp(half[:15], axis=1) > 0, 4)  # items the humans do not tie wholly
    assert item.value == pytest.approx(krippendorff.alpha(
        reliability_data=within.reshape(2, -1)[:, keep], level_of_measurement="ordinal"))


def test_alpha_of_items_whose_humans_tie_every_output_is_undefined_not_an_error() -> None:
    """Four items whose raters gave each item's outputs one score: no item ranks anything,
    so alpha (like tau-b) is undefined there rather than an error."""
    codes = np.full((3, 4, 2), -1)  # every unit's values missing after the ties are left out
    assert np.isnan(ordinal_alpha(codes)).all()
