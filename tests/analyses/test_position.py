"""Position bias of a pairwise judge: the swap flip rate above the re-ask flip rate."""

from __future__ import annotations

import pytest
from scipy.stats import binomtest

from evalstress.analyses.position import PairVerdicts, position_test


def test_a_judge_that_always_picks_the_first_text_is_position_biased() -> None:
    pairs = [PairVerdicts("a", "b", "a")] * 40  # a first wins, b first wins, a first again
    result = position_test(pairs)
    assert result.swap_flip_rate == 1.0 and result.reask_flip_rate == 0.0
    assert result.effect == pytest.approx(1.0)
    assert result.outcome == "detects" and result.verdict.startswith("biased toward the position")
    assert result.first_win_share == 1.0
    assert result.mcnemar_p == pytest.approx(binomtest(40, 40).pvalue)


def test_a_consistent_judge_shows_no_position_bias_within_the_tolerance() -> None:
    pairs = [PairVerdicts("a", "a", "a")] * 30 + [PairVerdicts("b", "b", "b")] * 30
    result = position_test(pairs)
    assert result.effect == 0 and result.outcome == "blind"
    assert result.first_win_share == pytest.approx(0.5)  # 60 of 120 verdicts for the first
    assert result.mcnemar_p is None  # no discordant pair


def test_a_judge_as_unstable_when_reasked_is_not_called_position_biased() -> None:
    # a third of the pairs flip under swapping, another third (different pairs) when re-asked
    pairs = ([PairVerdicts("a", "b", "a")] * 10 + [PairVerdicts("a", "a", "b")] * 10
             + [PairVerdicts("a", "a", "a")] * 10)
    result = position_test(pairs)
    assert result.swap_flip_rate == pytest.approx(1 / 3)
    assert result.reask_flip_rate == pytest.approx(1 / 3)
    assert result.effect == pytest.approx(0.0)
    assert result.outcome not in ("detects", "reversed")
    assert result.discordant == (10, 10)
    assert result.mcnemar_p == pytest.approx(1.0)


def test_the_first_position_share_has_its_wilson_interval_and_ties_are_left_out() -> None:
    pairs = [PairVerdicts("a", "tie", "a")] * 5 + [PairVerdicts("b", "b", "b")] * 5
    result = position_test(pairs)
    # the two orders' decisive verdicts (ties and the re-ask left out): 5 with a first, won
    # by the first; 5 with a first won by b; 5 with b first won by b -> 10 of 15
    assert result.decisive == 15
    assert result.first_win_share == pytest.approx(10 / 15)
    ci = binomtest(10, 15).proportion_ci(method="wilson")
    assert result.first_win_low == pytest.approx(ci.low)
    assert result.first_win_high == pytest.approx(ci.high)


def test_unparsable_verdicts_leave_their_pair_out_and_are_counted() -> None:
    pairs = [PairVerdicts("a", None, "a"), *[PairVerdicts("a", "a", "a")] * 12]
    result = position_test(pairs)
    assert result.pairs == 12 and result.unparsable == 1
