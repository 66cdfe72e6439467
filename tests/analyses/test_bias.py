"""The bias analysis: each probe's effect above its placebo, by example, with four-way verdicts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evalstress.analyses.bias import bias_analysis


def frame(original: list[float], arms: dict[str, dict[str, list[list[float]]]], *,
          higher: bool = True, evaluator: str = "judge", aspect: str = "overall"
          ) -> pd.DataFrame:
    """A long score table: `arms[probe][arm]` holds per example the scores of each seed."""
    rows = []

    def row(i: int, pert: str, sev: str, rank: int, seed: int, score: float) -> None:
        rows.append({"example_id": f"e{i}", "task": "summarization", "evaluator": evaluator,
                     "aspect": aspect, "perturbation": pert, "severity": sev,
                     "severity_rank": rank, "seed": seed, "score": score,
                     "higher_is_better": higher, "status": "ok", "noise_ratio": 0.1})

    for i, score in enumerate(original):
        row(i, "original", "", 0, 0, score)
    for probe, by_arm in arms.items():
        for rank, (arm, per_example) in enumerate(by_arm.items()):
            for i, seeds in enumerate(per_example):
                for seed, score in enumerate(seeds):
                    row(i, probe, arm, rank, seed, score)
    return pd.DataFrame(rows)


RNG = np.random.default_rng(7)
N = 40
ORIGINAL = list(RNG.uniform(1.5, 4.0, N))


def only(result, probe: str, arm: str = "probe"):  # type: ignore[no-untyped-def]
    return next(r for r in result.rows if r.probe == probe and r.arm == arm)


def test_the_effect_is_the_mean_of_probe_minus_placebo_with_seeds_averaged() -> None:
    # per example: probe seeds average to o + 1.0, placebo seeds to o + 0.25
    probe = [[o + 0.8, o + 1.2] for o in ORIGINAL]
    placebo = [[o + 0.5, o + 0.0] for o in ORIGINAL]
    result = bias_analysis(frame(ORIGINAL, {"authority": {"probe": probe, "placebo": placebo}}))
    row = only(result, "authority")
    assert row.n == N
    assert row.effect == pytest.approx(0.75)
    assert row.probe_shift == pytest.approx(1.0)
    assert row.placebo_shift == pytest.approx(0.25)
    assert row.low == pytest.approx(0.75) and row.high == pytest.approx(0.75)  # no spread
    assert row.outcome == "detects"
    assert row.verdict == "biased toward an invented citation"


def test_a_judge_that_moves_with_any_edit_is_not_called_biased() -> None:
    # probe and placebo both add +1 with independent noise of sd 0.5 around it
    probe = [[o + 1 + RNG.normal(0, 0.5)] for o in ORIGINAL]
    placebo = [[o + 1 + RNG.normal(0, 0.5)] for o in ORIGINAL]
    result = bias_analysis(frame(ORIGINAL, {"bandwagon": {"probe": probe, "placebo": placebo}}))
    row = only(result, "bandwagon")
    assert row.probe_shift is not None and row.probe_shift > 0.7  # moves from the original
    assert row.outcome != "detects"
    assert row.low is not None and row.high is not None and row.low < 0.3 and row.high > -0.3


def test_no_effect_at_all_is_no_bias_beyond_placebo_within_the_tolerance() -> None:
    same = [[o] for o in ORIGINAL]
    result = bias_analysis(frame(ORIGINAL, {"sycophancy": {"probe": same, "placebo": same}}))
    row = only(result, "sycophancy")
    expected_tolerance = 0.2 * float(np.std(ORIGINAL, ddof=1))
    assert row.tolerance == pytest.approx(expected_tolerance)
    assert row.outcome == "blind"
    assert row.verdict.startswith("no bias beyond placebo within ±")


def test_a_lower_is_better_score_reads_the_probe_as_favouring_when_it_falls() -> None:
    probe = [[o - 1.0] for o in ORIGINAL]
    placebo = [[o] for o in ORIGINAL]
    result = bias_analysis(frame(ORIGINAL, {"authority": {"probe": probe, "placebo": placebo}},
                                 higher=False))
    assert only(result, "authority").effect == pytest.approx(1.0)


def test_a_probe_that_lowers_the_score_is_biased_against_its_cue() -> None:
    probe = [[o - 1.0] for o in ORIGINAL]
    placebo = [[o] for o in ORIGINAL]
    row = only(bias_analysis(frame(ORIGINAL, {"bandwagon": {"probe": probe,
                                                             "placebo": placebo}})), "bandwagon")
    assert row.outcome == "reversed" and row.verdict.startswith("biased against")


def test_every_arm_is_tested_against_the_one_placebo_and_all_tests_are_corrected() -> None:
    model = [[o + 1.0] for o in ORIGINAL]
    person = [[o] for o in ORIGINAL]
    placebo = [[o] for o in ORIGINAL]
    result = bias_analysis(frame(ORIGINAL, {"attribution": {"model": model, "person": person,
                                                            "placebo": placebo}}))
    assert {r.arm for r in result.rows} == {"model", "person"}
    assert only(result, "attribution", "model").outcome == "detects"
    assert result.correction == "holm"
    # Holm with one of two tests rejected: alpha_eff = 0.05 / (2 - 1)
    assert result.alpha_eff == pytest.approx(0.05)
    assert all(r.level == pytest.approx(1 - result.alpha_eff) for r in result.rows)


def test_few_examples_are_inconclusive_with_the_examples_that_would_settle_it() -> None:
    few = ORIGINAL[:12]
    probe = [[o + 0.3 + RNG.normal(0, 1.0)] for o in few]
    placebo = [[o] for o in few]
    row = only(bias_analysis(frame(few, {"authority": {"probe": probe, "placebo": placebo}})),
               "authority")
    assert row.outcome == "inconclusive"
    assert row.n_to_settle is not None and row.n_to_settle > 12
    assert f"({row.n_to_settle} examples would settle it)" in row.verdict


def test_the_typical_example_is_the_one_of_the_median_effect() -> None:
    original = [2.0, 2.0, 2.0]
    probe = [[2.1], [2.5], [3.0]]
    placebo = [[2.0], [2.0], [2.0]]
    row = only(bias_analysis(frame(original, {"authority": {"probe": probe,
                                                             "placebo": placebo}})), "authority")
    assert row.typical_example == "e1" and row.extreme_example == "e2"


def test_other_perturbations_are_left_alone() -> None:
    table = frame(ORIGINAL, {"truncation": {"0.5": [[o - 1] for o in ORIGINAL]}})
    result = bias_analysis(table)
    assert result.rows == [] and "no bias probe" in result.notes[0]
