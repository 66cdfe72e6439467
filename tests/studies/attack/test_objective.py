"""Paper 004 eq. 2 (feedback S) and eq. 3 (success) on hand-computed cases."""

from __future__ import annotations

import pytest

from evalstress.studies.attack.objective import (
    AttackParams,
    feedback,
    parse_directions,
    succeeded,
    victim_target,
)

PAPER = AttackParams()


@pytest.mark.parametrize(("direction", "gold", "victim", "lam", "expected"), [
    ("good", 80.0, 30.0, 1.0, 50.0),     # 1*80 - 30
    ("good", 80.0, 30.0, 0.5, 10.0),     # 0.5*80 - 30
    ("good", 40.0, 90.0, 1.0, -50.0),
    ("bad", 20.0, 75.0, 1.0, 55.0),      # 75 - 1*20
    ("bad", 20.0, 75.0, 2.0, 35.0),      # 75 - 2*20
    ("bad", 60.0, 10.0, 1.0, -50.0),
])
def test_feedback_is_eq_2(direction: str, gold: float, victim: float, lam: float,
                          expected: float) -> None:
    assert feedback(direction, gold, victim, lam) == pytest.approx(expected)  # type: ignore[arg-type]


@pytest.mark.parametrize(("direction", "gold", "victim", "expected"), [
    ("good", 70.0, 30.0, True),    # both bounds met exactly
    ("good", 69.9, 0.0, False),    # gold below tau+ 70
    ("good", 90.0, 50.5, False),   # gap 39.5 < delta 40
    ("good", 95.0, 55.0, True),    # gap 40
    ("bad", 30.0, 70.0, True),     # gold at tau- 30, gap 40
    ("bad", 30.1, 100.0, False),   # gold above tau-
    ("bad", 10.0, 49.9, False),    # gap 39.9
    ("bad", 0.0, 40.0, True),
])
def test_success_is_eq_3_with_paper_thresholds(direction: str, gold: float, victim: float,
                                               expected: bool) -> None:
    assert succeeded(direction, gold, victim, PAPER) is expected  # type: ignore[arg-type]


def test_thresholds_are_options() -> None:
    strict = AttackParams(tau_plus=90, tau_minus=10, delta=60)
    assert not succeeded("good", 80, 10, strict) and succeeded("good", 90, 30, strict)
    assert not succeeded("bad", 20, 90, strict) and succeeded("bad", 10, 70, strict)
    assert victim_target("good", PAPER) == 30 and victim_target("bad", PAPER) == 70
    assert victim_target("good", strict) == 30 and victim_target("bad", strict) == 70


def test_params_from_options_and_errors() -> None:
    params = AttackParams.from_options({"lambda": 0.5, "budget": 50})
    assert params.lam == 0.5 and params.budget == 50
    assert params.to_dict()["lambda"] == 0.5 and "lam" not in params.to_dict()
    with pytest.raises(ValueError, match="did you mean 'budget'"):
        AttackParams.from_options({"budgte": 3})
    with pytest.raises(ValueError, match="budget must be at least 1"):
        AttackParams(budget=0)
    with pytest.raises(ValueError, match="tau_plus"):
        AttackParams(tau_plus=120)
    assert parse_directions("both") == ("good", "bad")
    with pytest.raises(ValueError, match="good, bad or both"):
        parse_directions("up")


def test_contract_params_block_has_the_paper_defaults() -> None:
    block = PAPER.to_dict()
    assert {k: block[k] for k in ("tau_plus", "tau_minus", "delta", "lambda", "budget",
                                  "candidates", "trajectory", "max_iterations",
                                  "gold_samples")} == {
        "tau_plus": 70, "tau_minus": 30, "delta": 40, "lambda": 1.0, "budget": None,
        "candidates": 8, "trajectory": 10, "max_iterations": 30, "gold_samples": 8}
    # no budget given: paper 004's 300 queries, which appendix-j may size up (test_greedy.py)
    assert PAPER.victim_budget == 300 and AttackParams(budget=30).victim_budget == 30
