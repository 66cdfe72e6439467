from __future__ import annotations

import json

import pandas as pd
import pytest

from evalstress.analyses.blindspot import BlindspotRow, blindspot
from evalstress.core.records import ORIGINAL, SCORE_COLUMNS


def table(curves: dict[str, list[list[float]]], gold: list[float], *, higher: bool = True,
          evaluator: str = "m") -> pd.DataFrame:
    """curves: perturbation -> per severity, per seed, the score of every example."""
    rows = []
    for i, g in enumerate(gold):
        rows.append({"example_id": f"e{i}", "task": "qa", "perturbation": ORIGINAL, "severity": "",
                     "severity_rank": -1, "seed": -1, "noise_ratio": 0.0, "evaluator": evaluator,
                     "aspect": "a", "score": g, "higher_is_better": higher, "status": "ok",
                     "reason": ""})
    for pert, severities in curves.items():
        for rank, per_seed in enumerate(severities):
            for seed, value in enumerate(per_seed):
                for i in range(len(gold)):
                    rows.append({"example_id": f"e{i}", "task": "qa", "perturbation": pert,
                                 "severity": str(0.1 * (rank + 1)), "severity_rank": rank,
                                 "seed": seed, "noise_ratio": 0.1 * (rank + 1),
                                 "evaluator": evaluator, "aspect": "a", "score": value,
                                 "higher_is_better": higher, "status": "ok", "reason": ""})
    return pd.DataFrame(rows, columns=SCORE_COLUMNS)


def row_for(result, perturbation):  # type: ignore[no-untyped-def]
    return next(r for r in result.rows if r.perturbation == perturbation)


def test_monotone_decrease_passes_and_a_rise_fails() -> None:
    data = table({"good": [[0.8, 0.8], [0.6, 0.6], [0.4, 0.4]],
                  "rises": [[0.8, 0.8], [0.9, 0.9], [0.7, 0.7]],
                  "above": [[1.2, 1.2], [1.1, 1.1], [1.05, 1.05]]}, gold=[1.0, 1.0])
    result = blindspot(data)
    good, rises, above = (row_for(result, p) for p in ("good", "rises", "above"))
    assert good.passed and good.rank_pass and good.monotonic_pass
    assert rises.rank_pass and not rises.monotonic_pass
    assert not above.rank_pass and not above.monotonic_pass  # the first step rises over gold
    assert good.points[1].mean == pytest.approx(0.6)
    assert good.gold == pytest.approx(1.0)


def test_mean_and_std_are_over_seeds() -> None:
    result = blindspot(table({"p": [[0.5, 0.7, 0.9]]}, gold=[1.0]))
    point = result.rows[0].points[0]
    assert point.mean == pytest.approx(0.7)
    assert point.std == pytest.approx(pd.Series([0.5, 0.7, 0.9]).std(ddof=0))
    assert point.n_seeds == 3


def test_lower_is_better_flips_the_direction() -> None:
    data = table({"p": [[1.5], [2.0]]}, gold=[1.0], higher=False)
    assert blindspot(data).rows[0].passed
    data = table({"p": [[0.5], [0.4]]}, gold=[1.0], higher=False)
    assert not blindspot(data).rows[0].rank_pass


def test_tolerance_is_relative_to_gold_and_stated() -> None:
    data = table({"p": [[0.995], [0.9]]}, gold=[1.0])
    assert not blindspot(data, rel_tol=0.01).rows[0].rank_pass  # a 0.5% drop is inside 1%
    assert blindspot(data, rel_tol=0.001).rows[0].rank_pass
    out = blindspot(data, rel_tol=0.01).to_dict()
    assert out["tolerance"]["rel_tol"] == 0.01
    json.dumps(out)


def test_missing_scores_are_excluded_pairwise_and_counted() -> None:
    data = table({"p": [[0.5]]}, gold=[1.0, 0.0])
    data.loc[(data["perturbation"] == "p") & (data["example_id"] == "e1"), ["score", "status"]] = (
        float("nan"), "missing")
    point = blindspot(data).rows[0].points[0]
    assert point.n_missing == 1 and point.n_examples == 1
    assert point.gold == pytest.approx(1.0)  # gold over the same examples only


def _paper_table() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Gold 1, 2, 3 on e0..e2; one severity, one seed: e0 -> 0.5 (ratio 0.2), e1 -> 1.0 (ratio
    0.4), e2 unchanged (skipped)."""
    rows = []
    for i, g in enumerate([1.0, 2.0, 3.0]):
        rows.append({"example_id": f"e{i}", "task": "qa", "perturbation": ORIGINAL,
                     "severity": "", "severity_rank": -1, "seed": -1, "noise_ratio": 0.0,
                     "evaluator": "m", "aspect": "a", "score": g, "higher_is_better": True,
                     "status": "ok", "reason": ""})
    for i, (score, ratio) in enumerate([(0.5, 0.2), (1.0, 0.4)]):
        rows.append({"example_id": f"e{i}", "task": "qa", "perturbation": "p", "severity": "1",
                     "severity_rank": 0, "seed": 0, "noise_ratio": ratio, "evaluator": "m",
                     "aspect": "a", "score": score, "higher_is_better": True, "status": "ok",
                     "reason": ""})
    skips = pd.DataFrame([{"example_id": "e2", "perturbation": "p", "severity": 1.0, "seed": 0,
                           "reason": "nothing to change"}])
    return pd.DataFrame(rows, columns=SCORE_COLUMNS), skips


def test_paper_protocol_averages_over_the_whole_gold_set() -> None:
    data, skips = _paper_table()
    default = row_for(blindspot(data, skips=skips), "p").points[0]
    assert (default.mean, default.gold, default.noise_ratio) == pytest.approx((0.75, 1.5, 0.3))
    result = blindspot(data, skips=skips, protocol="paper")
    point = row_for(result, "p").points[0]
    # (0.5 + 1.0 + 3.0) / 3 against (1 + 2 + 3) / 3; ratio (0.2 + 0.4 + 0) / 3
    assert (point.mean, point.gold, point.noise_ratio) == pytest.approx((1.5, 2.0, 0.2))
    assert point.n_unchanged == 1 and point.n_examples == 3
    # the four-way test pairs the unchanged example too, with a difference of 0: drops of
    # 0.5, 1.0 and 0, mean 0.5 (3 examples: too few to decide, its interval still shown)
    assert point.test is not None and default.test is not None
    assert (point.test["n"], point.test["estimate"]) == (3, pytest.approx(0.5))
    assert (default.test["n"], default.test["estimate"]) == (2, pytest.approx(0.75))
    out = result.to_dict()
    assert out["protocol"] == "paper" and out["strict"] is True and "whole gold set" in \
        out["averaging"]


def test_strict_tests_beside_the_tolerant_ones() -> None:
    # gold 1.0, rel_tol 0.01: a drop of 0.005 passes the strict rank test only; a rise of 0.005
    # between severities passes the tolerant monotonic test only
    data = table({"p": [[0.995], [0.99], [0.995]]}, gold=[1.0])
    tolerant = row_for(blindspot(data), "p")
    strict = row_for(blindspot(data, strict=True), "p")
    for row in (tolerant, strict):
        assert (row.rank_tolerant_pass, row.monotonic_tolerant_pass) == (False, True)
        assert (row.rank_strict_pass, row.monotonic_strict_pass) == (True, False)
        assert row.tolerant_tolerance == pytest.approx(0.01)
    assert (tolerant.rank_pass, tolerant.monotonic_pass, tolerant.tolerance) == \
        (False, True, pytest.approx(0.01))
    assert (strict.rank_pass, strict.monotonic_pass, strict.tolerance) == (True, False, 0.0)
    assert not tolerant.passed and not strict.passed
    assert strict.to_dict()["strict"] is True


def test_paper_protocol_is_strict_unless_told_otherwise() -> None:
    data = table({"p": [[0.995], [0.99]]}, gold=[1.0])
    assert row_for(blindspot(data, protocol="paper"), "p").passed
    assert not row_for(blindspot(data, protocol="paper", strict=False), "p").passed
    with pytest.raises(ValueError, match="protocol"):
        blindspot(data, protocol="exact")


def test_named_kinds_take_the_rank_test_alone() -> None:
    data = table({"p": [[0.5], [0.9]]}, gold=[1.0])
    data.loc[data["perturbation"] == "p", "severity"] = data.loc[
        data["perturbation"] == "p", "severity_rank"].map({0: "answer-yes", 1: "other"})
    row = row_for(blindspot(data), "p")
    assert row.monotonic_applies is False and row.monotonic_pass and row.passed
    graded = row_for(blindspot(table({"p": [[0.5], [0.9]]}, gold=[1.0])), "p")
    assert graded.monotonic_applies and not graded.monotonic_pass


def _miss(data: pd.DataFrame, mask: pd.Series, reason: str = "timeout") -> pd.DataFrame:
    data = data.copy()
    data.loc[mask, "score"] = float("nan")
    data.loc[mask, "status"] = "missing"
    data.loc[mask, "reason"] = reason
    return data


def test_most_scores_missing_is_inconclusive_not_a_verdict() -> None:
    data = table({"t": [[0.8, 0.8], [0.6, 0.6]]}, gold=[1.0, 1.0, 1.0, 1.0])
    # 3 of the 4 examples' variant scores are missing: 12 of 16 variant rows, plus 0 of 4 gold
    data = _miss(data, (data["perturbation"] == "t") & (data["example_id"] != "e0"))
    row = blindspot(data).rows[0]
    assert row.n_scores == 20 and row.n_missing == 12  # 60% > 50%
    assert row.passed and row.verdict == "inconclusive"
    assert "12 of 20 scores are missing" in (row.inconclusive_reason or "")
    assert row.to_dict()["verdict"] == "inconclusive"
    # the same data with the threshold at 70% keeps its verdict
    assert blindspot(data, max_missing=0.7).rows[0].verdict == "pass"


def test_a_perturbation_with_no_score_stays_in_the_results() -> None:
    data = table({"t": [[0.8, 0.8], [0.6, 0.6]], "u": [[0.5, 0.5]]}, gold=[1.0, 1.0])
    data = _miss(data, data["perturbation"] == "t")
    rows = {r.perturbation: r for r in blindspot(data).rows}
    assert rows["t"].verdict == "inconclusive" and rows["t"].points == []
    assert rows["t"].n_empty_severities == 2
    assert json.loads(json.dumps(rows["t"].to_dict()))["gold"] == pytest.approx(1.0)
    assert rows["u"].verdict == "pass"


def test_an_empty_severity_is_counted_in_the_singular() -> None:
    row = BlindspotRow("bleu", "bleu", "negation", True, float("nan"), [], 0.0, False, False,
                       n_scores=4, n_missing=4, n_empty_severities=1)
    assert row.inconclusive_reason == "1 severity has no score at all"
    assert row.verdict == "inconclusive"
