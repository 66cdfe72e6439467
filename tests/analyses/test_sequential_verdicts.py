"""The sequential design of the four-way verdicts: a test stops once its repeated interval
settles it, a hopeless one by futility, an undecided one stays planned; a bias placebo stays
while any arm of its probe is open."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from scipy import stats

from evalstress.analyses.sequential_verdicts import VerdictDesign, settle_chance
from evalstress.core.records import ORIGINAL

EVALUATOR, ASPECT = "judge(x)", "overall"


def table(rows: list[dict[str, Any]]) -> pa.Table:
    base = {"task": "summarization", "seed": 0, "evaluator": EVALUATOR, "aspect": ASPECT,
            "status": "ok", "higher_is_better": True}
    return pa.Table.from_pylist([{**base, **row} for row in rows])


def look(ids: range, units: dict[tuple[str, str], Any], original: Any) -> pa.Table:
    """One batch: each example's original and, per unit, the variant's score as
    units[unit](example index, original score)."""
    rows = []
    for i in ids:
        score = float(original(i))
        rows.append({"example_id": f"e{i}", "perturbation": ORIGINAL, "severity": "0",
                     "score": score})
        for (name, severity), make in units.items():
            rows.append({"example_id": f"e{i}", "perturbation": name, "severity": severity,
                         "score": float(make(i, score))})
    return table(rows)


def test_a_clear_drop_and_an_exact_null_stop_at_the_first_look_a_noisy_test_does_not() -> None:
    rng = np.random.default_rng(1)
    noise = rng.normal(0, 1.0, 40)
    design = VerdictDesign(40, looks=4, interim_alpha=0.01, futility=0.0)
    units = {("truncation", "0.5"): lambda i, s: s - 2.0 - 0.1 * noise[i],
             ("case", "1"): lambda i, s: s,
             ("noise", "1"): lambda i, s: s + noise[i]}
    assert design.stopped() is None  # the first batch plans every unit
    design.observe(look(range(10), units, lambda i: 3 + 0.5 * (i % 3)))
    assert design.stopped() == {("truncation", "0.5"), ("case", "1")}
    record = design.to_dict()
    tests = {u["perturbation"]: u["tests"][0] for u in record["units"]}
    assert tests["truncation"]["verdict"] == "detects"
    assert tests["case"]["verdict"] == "blind"
    assert tests["noise"]["verdict"] is None  # still open
    # this look's level: the O'Brien-Fleming spending of 0.01 at t = 10/40, over 3 tests
    spent = 2 - 2 * stats.norm.cdf(stats.norm.ppf(1 - 0.01 / 2) / np.sqrt(0.25))
    assert tests["truncation"]["level"] == pytest.approx(1 - spent / 3, rel=1e-9)
    # the tolerance: 0.2 x the spread of the originals seen (3, 3.5, 4 repeating)
    originals = [3 + 0.5 * (i % 3) for i in range(10)]
    assert tests["case"]["delta"] == pytest.approx(0.2 * np.std(originals, ddof=1))
    # the next batch plans only the open unit: its texts are counted, the others' are not
    design.observe(look(range(10, 20), {("noise", "1"): units[("noise", "1")]},
                   lambda i: 3 + 0.5 * (i % 3)))
    assert design.cost()["texts"] == 10 * 4 + 10 * 2


def test_futility_leaves_a_test_no_n_can_settle_inconclusive() -> None:
    rng = np.random.default_rng(2)
    noise = rng.normal(0, 5.0, 40)  # far wider than the tolerance, centred on it
    design = VerdictDesign(40, looks=4, futility=0.10)
    design.observe(look(range(10), {("noise", "1"): lambda i, s: s - 0.1 + noise[i]},
                        lambda i: 3 + 0.5 * (i % 3)))
    test = design.to_dict()["units"][0]["tests"][0]
    assert test["verdict"] == "inconclusive" and test["reason"] == "futility"
    assert test["settle_chance"] < 0.10
    assert design.stopped() == {("noise", "1")}


def test_settle_chance_by_hand() -> None:
    # estimate 0.5, se 0.1 on 10 of 40 examples, tolerance 0.2, alpha 0.05: the final mean is
    # normal(0.5, 0.1 * sqrt(10 * 30) / 40); the final half-width 1.96 * 0.1 * sqrt(10/40)
    spread = 0.1 * np.sqrt(300) / 40
    half = stats.norm.ppf(0.975) * 0.1 * 0.5
    expected = (stats.norm.sf(0.2 + half, 0.5, spread) + stats.norm.cdf(-0.2 - half, 0.5, spread)
                + stats.norm.cdf(0.2 - half, 0.5, spread)
                - stats.norm.cdf(-0.2 + half, 0.5, spread))
    assert settle_chance(0.5, 0.1, 10, 40, 0.2, 0.05) == pytest.approx(expected, rel=1e-9)
    assert settle_chance(0.0, 0.0, 10, 40, 0.2, 0.05) == 1.0  # no spread: blind for sure


def test_a_bias_placebo_stays_planned_while_an_arm_of_its_probe_is_open() -> None:
    rng = np.random.default_rng(3)
    noise = rng.normal(0, 1.0, 40)
    design = VerdictDesign(40, kind="bias", looks=4, futility=0.0)
    units = {("authority", "placebo"): lambda i, s: s,
             ("authority", "probe"): lambda i, s: s + 2.0,  # favours the text by 2 points
             ("authority", "other"): lambda i, s: s + noise[i]}
    design.observe(look(range(10), units, lambda i: 3 + 0.5 * (i % 3)))
    assert design.stopped() == {("authority", "probe")}
    tests = {u["severity"]: u["tests"] for u in design.to_dict()["units"]}
    assert tests["placebo"] == []  # no test of its own
    assert tests["probe"][0]["verdict"] == "detects"
    assert tests["probe"][0]["estimate"] == pytest.approx(2.0)  # above the placebo
    design.observe(look(range(10, 20), {("authority", "placebo"): units[("authority", "placebo")],
                                        ("authority", "other"): lambda i, s: s},
                        lambda i: 3 + 0.5 * (i % 3)))
    # still open after look 2: the other arm's mean pulled towards 0 but not settled, or
    # settled blind with its placebo then gone too
    stopped = design.stopped() or frozenset()
    assert (("authority", "placebo") in stopped) == (("authority", "other") in stopped)


def test_a_design_is_checked_when_made() -> None:
    with pytest.raises(ValueError, match="blindspot or bias or criteria"):
        VerdictDesign(10, kind="discernment")
    with pytest.raises(ValueError, match="interim_alpha"):
        VerdictDesign(10, interim_alpha=0)


def test_a_declared_tolerance_is_the_final_analysis_s() -> None:
    design = VerdictDesign(40, tolerance={f"{EVALUATOR}/{ASPECT}": 0.5, "other": 9.0})
    assert design.delta((EVALUATOR, ASPECT)) == 0.5
    assert VerdictDesign(40, tolerance=0.25).delta((EVALUATOR, ASPECT)) == 0.25


def test_the_tolerance_comes_from_every_original_before_the_first_look() -> None:
    # 39 originals near 3 and one extreme one (30) that the first look's ten do not hold; a
    # unit drops every example by exactly 0.5
    original = [3.0 + 0.1 * (i % 5) for i in range(39)] + [30.0]
    design = VerdictDesign(40, looks=4, futility=0.0)
    assert design.originals_first and not VerdictDesign(40, kind="bias").originals_first
    design.observe_originals(table([{"example_id": f"e{i}", "perturbation": ORIGINAL,
                                     "severity": "0", "score": s}
                                    for i, s in enumerate(original)]))
    # no look yet: nothing is stopped, and the originals are counted as texts once
    assert design.stopped() is None and design.cost()["texts"] == 40
    design.observe(look(range(10), {("truncation", "0.5"): lambda i, s: s - 0.5},
                        lambda i: original[i]))
    test = design.to_dict()["units"][0]["tests"][0]
    # 0.2 x the sd of all 40 originals (numpy), 0.85: the 0.5 drop lies inside it. Read off
    # the ten originals seen (sd 0.15, tolerance 0.03), the same drop would "detect"
    assert test["delta"] == pytest.approx(0.2 * np.std(original, ddof=1))
    assert test["verdict"] == "blind"
    assert design.cost()["texts"] == 40 + 10  # the look's originals were counted before


def test_the_runner_s_tapering_last_chunks_are_looks_that_still_decide() -> None:
    """57 examples in chunks of 10 end in tapering chunks (the runner's: 10, 10, 10, 10, 3, 4,
    4, 2, 2, 1, 1): every one but the last is a look of its own. A unit whose perturbation
    only applies from the 36th example on has its 10 examples at the sixth look (47 seen) and
    settles there, instead of being scored to the end."""
    noise = np.random.default_rng(9).normal(0, 3.0, 57)
    design = VerdictDesign(57, looks=6, futility=0.0)
    bounds = [0, 10, 20, 30, 40, 43, 47, 51, 53, 55, 56, 57]
    late = ("tense", "1")
    for start, stop in itertools.pairwise(bounds):
        rows = look(range(start, stop), {("noise", "1"): lambda i, s: s + noise[i]},
                    lambda i: 3 + 0.5 * (i % 3))
        ids = range(max(start, 35), stop)
        if ids:
            extra = look(ids, {late: lambda i, s: s}, lambda i: 3 + 0.5 * (i % 3))
            rows = pa.concat_tables([rows, extra])
        design.observe(rows)
    record = design.to_dict()
    units = {(u["perturbation"], u["severity"]): u for u in record["units"]}
    assert units[late]["stopped"] == {"look": 6, "examples_seen": 47}
    assert units[late]["tests"][0]["verdict"] == "blind"
    # the sixth look's level: the spending from 43 to 47 of 57 examples, over the two tests
    spent = [2 - 2 * stats.norm.cdf(stats.norm.ppf(1 - 0.01 / 2) / np.sqrt(n / 57))
             for n in (43, 47)]
    assert record["looks_taken"][5]["level"] == pytest.approx((spent[1] - spent[0]) / 2)
    assert record["looks_taken"][-1]["level"] is None  # the last look is the exhaustive one
