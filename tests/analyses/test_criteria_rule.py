"""The criteria method's sequential rule: a clear directional pass settles at the first look, a
zero-effect invariance item once a change it may have missed is unlikely, an item with a moderate
effect stays open, an item without a test settles at once; the interval, the significance
threshold and futility's projection by hand against scipy; a settled item's verdict is the
final analysis's on the same examples."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from scipy import stats

from evalstress.analyses.confusion import criteria_confusion
from evalstress.analyses.criteria_rule import (
    bootstrap_rank_biserial,
    decide_item,
    effect_chance,
    nonzero_needed,
    significant_r,
)
from evalstress.analyses.sequential_verdicts import VerdictDesign
from evalstress.analyses.stats import rank_biserial, resample_index
from evalstress.core.records import ORIGINAL

EVALUATOR = "judge(x)"
#: under spelling-mistake (criteria/expectations.yaml, Table 21) overall should move
#: (directional), coherence should stay (invariance); "bleu" maps to no quality aspect
DIRECTIONAL, INVARIANCE, UNTESTED = "overall", "coherence", "bleu"


def look(ids: range, units: dict[Any, Any]) -> pa.Table:
    """One batch of spelling-mistake: per aspect (or (aspect, severity); severity 0.1 when not
    given), each example's original score 3 + (i % 4) / 2 and its variant's,
    units[key](example index, original score)."""
    rows = []
    for i in ids:
        originals = set()
        for key, make in units.items():
            aspect, severity = key if isinstance(key, tuple) else (key, "0.1")
            score = 3 + (i % 4) / 2
            base = {"task": "summarization", "seed": 0, "evaluator": EVALUATOR, "aspect": aspect,
                    "status": "ok", "higher_is_better": True, "example_id": f"e{i}"}
            if aspect not in originals:
                originals.add(aspect)
                rows.append({**base, "perturbation": ORIGINAL, "severity": "0",
                             "severity_rank": 0, "score": score})
            rows.append({**base, "perturbation": "spelling-mistake", "severity": severity,
                         "severity_rank": 1, "score": float(make(i, score))})
    return pa.Table.from_pylist(rows)


def decisions(design: VerdictDesign) -> dict[str, dict[str, Any]]:
    return {t["aspect"]: t for unit in design.to_dict()["units"] for t in unit["tests"]}


def test_a_clear_pass_settles_at_the_first_look_a_still_aspect_once_a_change_is_unlikely(
        ) -> None:
    design = VerdictDesign(60, kind="criteria", looks=6)
    units = {DIRECTIONAL: lambda i, s: s - 1 - i / 10, INVARIANCE: lambda i, s: s,
             UNTESTED: lambda i, s: s - 1}
    design.observe(look(range(10), units))
    tests = decisions(design)
    assert tests[DIRECTIONAL]["verdict"] == "pass" and tests[DIRECTIONAL]["reason"] == "settled"
    assert tests[UNTESTED]["reason"] == "no test" and tests[UNTESTED]["verdict"] is None
    # the look's level: O'Brien-Fleming's spending of 0.01 at t = 10/60, split over the two
    # tested items (the aspect without a test claims nothing)
    spent = 2 - 2 * stats.norm.cdf(stats.norm.ppf(1 - 0.01 / 2) / np.sqrt(10 / 60))
    assert tests[DIRECTIONAL]["level"] == pytest.approx(1 - spent / 2, rel=1e-12)
    # ten distinct positive differences: the exact one-sided p is 2^-10
    assert tests[DIRECTIONAL]["pvalue"] == pytest.approx(2.0 ** -10)
    # no change in 10 examples still leaves room for a change in 1 of 10 later ones: open
    assert tests[INVARIANCE]["verdict"] is None
    design.observe(look(range(10, 20), {INVARIANCE: units[INVARIANCE]}))
    still = decisions(design)[INVARIANCE]
    assert still["verdict"] == "pass" and still["reason"] == "futility"
    # the chance that the 40 examples left hold the 6 changes a two-sided test needs, the
    # share that changes given 0 of 20 (uniform prior): beta-binomial(40, 1, 21) at 6 or more
    assert still["effect_chance"] == pytest.approx(stats.betabinom.sf(5, 40, 1, 21))
    assert still["effect_chance"] < 0.10 < stats.betabinom.sf(5, 50, 1, 11)


def test_a_moderate_effect_stays_open_and_a_missed_damage_fails() -> None:
    rng = np.random.default_rng(4)
    moderate = rng.normal(0.35, 1.0, 60)  # a shift of about a third of its spread: r near 0.3
    design = VerdictDesign(60, kind="criteria", looks=6)
    design.observe(look(range(20), {(DIRECTIONAL, "0.1"): lambda i, s: s - moderate[i],
                                    (DIRECTIONAL, "0.2"): lambda i, s: s + 1 + i / 10}))
    by_unit = {u["severity"]: u["tests"][0] for u in design.to_dict()["units"]}
    assert by_unit["0.1"]["verdict"] is None  # still open
    r = rank_biserial(moderate[:20])
    assert r is not None and 0.1 < r < 0.6
    # the variant scored better on every example: the interval of r lies below min_effect
    assert by_unit["0.2"]["verdict"] == "fail" and by_unit["0.2"]["reason"] == "settled"
    assert design.stopped() == {("spelling-mistake", "0.2")}


def test_the_bootstrap_of_r_is_rank_biserial_of_each_resample() -> None:
    d = np.array([0.0, 0.0, 1.5, -0.5, 2.0, 2.0, 0.25, -3.0, 0.0, 1.0, 0.75, 0.5])
    got = bootstrap_rank_biserial(d, n_boot=300, seed=[7, 1])
    index = resample_index(np.random.default_rng([7, 1]), d.size, 300)
    expected = [rank_biserial(d[row]) or 0.0 for row in index]
    assert got == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("two_sided", [False, True])
def test_r_written_as_the_signed_rank_z_matches_scipy(two_sided: bool) -> None:
    d = np.random.default_rng(5).normal(0.6, 1.0, 40)  # distinct, no zeros: no tie correction
    alternative = "two-sided" if two_sided else "greater"
    p = stats.wilcoxon(d, alternative=alternative, method="asymptotic", correction=False).pvalue
    z = stats.norm.isf(p / 2 if two_sided else p)
    r = rank_biserial(d)
    assert r is not None and r > 0
    # significant_r at the level scipy gives this sample is the sample's own r
    assert significant_r(40, p, two_sided) == pytest.approx(r, rel=1e-9)
    assert z == pytest.approx(r * np.sqrt(3 * 40 * 41 / (2 * 81)), rel=1e-9)
    # four nonzero differences cannot reach 0.05 one-sided (2^-4); five can
    assert significant_r(4, 0.05, False) == float("inf")
    assert significant_r(5, 0.05, False) < 1


def test_the_fewest_nonzero_differences_that_can_reach_alpha_match_scipy() -> None:
    for two_sided, needed in ((False, 5), (True, 6)):
        alternative = "two-sided" if two_sided else "greater"
        assert nonzero_needed(0.05, two_sided) == needed
        # all of one sign, distinct: the exact p of `needed` changes is under 0.05, one fewer not
        for k, below in ((needed, True), (needed - 1, False)):
            p = stats.wilcoxon(np.arange(1.0, k + 1), alternative=alternative,
                               method="exact").pvalue
            assert (p < 0.05) == below, (two_sided, k, p)


def test_effect_chance_by_hand() -> None:
    # r 0.2, se 0.15 on 20 of 60 examples, all nonzero: the final r is normal(0.2, spread);
    # E needs r >= max(0.3, the r significant at 0.05 one-sided on 60 nonzero differences)
    spread = 0.15 * np.sqrt(20 * 40) / 60
    threshold = max(0.3, stats.norm.ppf(0.95) / np.sqrt(3 * 60 * 61 / (2 * 121)))
    expected = stats.norm.sf(threshold, 0.2, spread)
    assert effect_chance("directional", 0.2, 0.15, 20, 20, 60, 0.05, 0.3) == pytest.approx(
        expected, rel=1e-9)
    two = stats.norm.sf(0.3, 0.2, spread) + stats.norm.cdf(-0.3, 0.2, spread)
    assert effect_chance("invariance", 0.2, 0.15, 20, 20, 60, 0.05, 0.3) == pytest.approx(
        two, rel=1e-9)
    # 2 nonzero differences of 20 project to 6 of 60: significance needs r above 0.3 then
    assert effect_chance("directional", 1.0, 0.0, 20, 2, 60, 0.05, 0.3) == 1.0
    assert effect_chance("directional", 1.0, 0.0, 20, 1, 60, 0.05, 0.3) == 0.0  # 3: no reach


@pytest.mark.parametrize(("aspect", "shift", "verdict"), [
    (DIRECTIONAL, 2.0, "pass"), (DIRECTIONAL, -2.0, "fail"),
    (INVARIANCE, 2.0, "fail"), (INVARIANCE, 0.0, "pass")])
def test_a_settled_item_gets_the_same_verdict_from_the_final_analysis(
        aspect: str, shift: float, verdict: str) -> None:
    drop = shift * np.random.default_rng(6).uniform(0.8, 1.2, 10)
    test = "directional" if aspect == DIRECTIONAL else "invariance"
    decision = decide_item(drop, test, level=1e-6, total=20, alpha=0.05, min_effect=0.3,
                           futility=0.1, n_boot=2000, seed=0)
    assert decision is not None and decision["verdict"] == verdict
    rows = look(range(10), {aspect: lambda i, s: s - drop[i]})
    item = criteria_confusion(pd.DataFrame(rows.to_pylist())).items[0]
    assert item.test == test and item.n == 10
    assert item.passed == (verdict == "pass")
