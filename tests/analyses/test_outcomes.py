from evalstress.analyses.outcomes import min_pairs, outcomes, tally


def wilcoxon(n, p):
    return {"n": n, "n_zero": 0, "pvalue": p}


def results(**analyses):
    return {"evaluators": {"rep": {"meant_for": ["repetition"]}, "bleu": {"meant_for": None}},
            "suite": {"perturbations": {"truncation": {"family": "fluency"},
                                        "repetition": {"family": "probe"}}},
            "analyses": analyses}


def test_fewest_pairs_that_can_reach_significance():
    # exact signed-rank test: the smallest one-sided p with n pairs is 2^-n (hand: 2^-4 = 0.0625
    # > 0.05, 2^-5 = 0.03125 <= 0.05); two-sided doubles it (2^-5 * 2 = 0.0625 > 0.05)
    assert min_pairs("greater") == 5
    assert min_pairs("two-sided") == 6
    assert min_pairs("greater", alpha=0.01) == 7  # 2^-7 = 0.0078


def blind_row(evaluator, perturbation, passed, verdict=None):
    row = {"evaluator": evaluator, "aspect": evaluator, "perturbation": perturbation,
           "higher_is_better": True, "gold": 10.0, "rank_pass": passed,
           "monotonic_pass": passed, "passed": passed, "tolerance": 0.1,
           "points": [{"noise_ratio": 0.5, "mean": 8.0, "n_examples": 4}]}
    if verdict:
        row["verdict"] = verdict
        row["inconclusive_reason"] = "7 of 10 scores are missing"
    return row


def test_blindspot_verdicts_effects_and_not_applicable():
    found = outcomes(results(blindspot={"rows": [
        blind_row("bleu", "truncation", True), blind_row("rep", "truncation", False),
        blind_row("rep", "repetition", True), blind_row("bleu", "repetition", False,
                                                         "inconclusive")]}))
    by = {(o.evaluator, o.test): o for o in found}
    assert by[("bleu", "truncation")].verdict == "pass"
    assert by[("bleu", "truncation")].effect == 20.0  # (10 - 8) / 10 = 20% of gold lost
    assert by[("rep", "truncation")].verdict == "not-applicable"
    assert "would be: fail" in by[("rep", "truncation")].detail
    assert by[("rep", "repetition")].verdict == "pass"
    assert by[("bleu", "repetition")].verdict == "inconclusive"
    assert tally(found) == {"pass": 2, "fail": 0, "inconclusive": 1, "not-applicable": 1}


def unit(n, d, p):
    return {"evaluator": "judge", "perturbation": "typos", "severity": "minor",
            "tests": [{"aspect": "fluency", "n": n, "wilcoxon": wilcoxon(n, p)},
                      {"aspect": "coherence", "n": n, "wilcoxon": wilcoxon(n, p)}],
            "p": p, "d": d}


def test_discernment_with_three_pairs_is_inconclusive():
    # two aspects, n = 3: smallest combined p = 1 / (2^3 + 2^3) = 0.0625 > 0.05
    small = outcomes({"analyses": {"discernment": {"units": [unit(3, 0.9, 0.0625)]}}})[0]
    assert small.verdict == "inconclusive" and "0.0625" in small.detail
    # n = 4: 1 / (16 + 16) = 0.03125 <= 0.05, so the verdict stands
    enough = outcomes({"analyses": {"discernment": {"units": [unit(4, 0.9, 0.0625)]}}})[0]
    assert enough.verdict == "fail"
    strong = outcomes({"analyses": {"discernment": {"units": [unit(12, 2.4, 0.0008)]}}})[0]
    assert strong.verdict == "pass" and strong.effect == 2.4


def test_identical_scores_over_enough_pairs_are_a_fail_not_inconclusive():
    flat = unit(15, 0.23, 0.5)
    for t in flat["tests"]:
        t["wilcoxon"]["n_zero"] = 15
    assert outcomes({"analyses": {"discernment": {"units": [flat]}}})[0].verdict == "fail"


def item(test, n, passed, r=0.5):
    return {"evaluator": "judge", "aspect": "fluency", "quality_aspect": "fluency",
            "perturbation": "typos", "severity": "minor", "test": test, "n": n,
            "passed": passed, "rank_biserial": r, "change": 0.4, "pvalue": 0.01}


def test_confusion_with_two_pairs_is_inconclusive_even_when_it_passed():
    data = {"thresholds": {"alpha": 0.05}, "items": [
        item("invariance", 2, True), item("directional", 2, False),
        item("directional", 8, True, 0.8), item("invariance", 8, False, 0.9),
        item("none", 8, None)]}
    verdicts = [o.verdict for o in outcomes({"analyses": {"criteria-confusion": data}})]
    assert verdicts == ["inconclusive", "inconclusive", "pass", "fail"]
