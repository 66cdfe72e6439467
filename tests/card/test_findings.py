"""Headline findings written from a hand-made results mapping (the shape card.json holds)."""

from __future__ import annotations

import re
from typing import Any

from evalstress.card.findings import (
    can_reach,
    discernment_findings,
    headline_findings,
    minor_above_major,
)

TRUSTED = {"trusted": True}


def change(severity: str, rank: int, relative: float, low: float, high: float,
           n: int = 12) -> dict[str, Any]:
    return {"severity": severity, "severity_rank": rank, "n": n, "change": relative * 10,
            "relative_change": relative, "relative_ci_low": low, "relative_ci_high": high}


def blindspot_section() -> dict[str, Any]:
    rows = [
        # equivalence shown at both severities: a blind spot
        {"aspect": "bleu", "perturbation": "sentence-switching", "verdict": "fail",
         "rank_pass": False, "monotonic_pass": True, "higher_is_better": True,
         "outcome": "blind", "monotonic_outcome": "no significant rise",
         "severities": [four_way("1", 0, "blind", 20.0, 19.9, -0.1, 0.3, delta=1.0),
                        four_way("4", 1, "blind", 20.0, 19.8, -0.2, 0.5, delta=1.0)]},
        # ranks below the original but rises again significantly at the heavier severity
        {"aspect": "bleu", "perturbation": "repetition", "verdict": "fail", "rank_pass": True,
         "monotonic_pass": False, "higher_is_better": True, "outcome": "detects",
         "monotonic_outcome": "rises",
         "steps": [{"from": "10", "to": "30", "verdict": "detects", "estimate": 2.0,
                    "low": 1.5, "high": 2.5, "level": 0.965, "delta": 1.0, "n": 57}],
         "severities": [four_way("10", 0, "detects", 20.0, 12.0, 7.0, 9.0, delta=1.0),
                        four_way("30", 1, "detects", 20.0, 14.0, 5.0, 7.0, delta=1.0)]},
        {"aspect": "bleu", "perturbation": "truncation", "verdict": "pass", "rank_pass": True,
         "monotonic_pass": True, "higher_is_better": True, "outcome": "detects",
         "monotonic_outcome": "no significant rise",
         "severities": [four_way("0.5", 0, "detects", 20.0, 12.0, 7.0, 9.0, delta=1.0)]}]
    return {"status": "run", "files": {"results": "runs/blindspot/results.json"},
            "results": {"rows": rows}}


def discernment_section() -> dict[str, Any]:
    def unit(task: str, name: str, severity: str, level: str, d: float, relative: float,
             n: int = 12) -> dict[str, Any]:
        return {"aspect": "bleu", "task": task, "perturbation": name, "severity": severity,
                "level": level, "d": d, "pvalue": 0.05 ** d, "n": n,
                "relative_change": relative, "relative_ci_low": relative - 0.01,
                "relative_ci_high": relative + 0.01}

    return {"status": "run", "files": {}, "results": {"threshold": 1.0, "units": [
        unit("story", "char-typo", "minor", "char", 2.5, 0.20),
        unit("story", "wrong-ending", "major", "sentence", 1.4, 0.05),
        unit("story", "char-typo", "major", "char", 1.2, 0.06),
        unit("dialogue", "sentence-reordering", "major", "sentence", 0.3, 0.008),
        # too few pairs for any evaluator to reach D = 1: never a finding
        unit("qa", "random-answer", "major", "sentence", 0.1, 0.0, n=3)]}}


def criteria_section() -> dict[str, Any]:
    item = {"aspect": "fluency", "quality_aspect": "fluency", "perturbation": "sentence-exchange",
            "severity": "2", "intended": "coherence", "test": "invariance", "change": 0.8,
            "ci_low": 0.5, "ci_high": 1.1, "rank_biserial": 0.7, "passed": False}
    return {"status": "run", "files": {}, "results": {"mode": "confusion",
                                                      "confusion": {"items": [item]}}}


def adversarial_section() -> dict[str, Any]:
    rows = [{"victim": "bleu", "direction": "good", "method": "rule:typos", "attempts": 10,
             "successes": 3, "asr": 0.3, "ci_low": 0.108, "ci_high": 0.603},
            {"victim": "bleu", "direction": "bad", "method": "rule:typos", "attempts": 10,
             "successes": 0, "asr": 0.0, "ci_low": 0.0, "ci_high": 0.278}]
    return {"status": "run", "files": {}, "results": {"asr": rows, "example": None}}


class Examples:
    """Stands in for the run directories: records what each finding asked for."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, ...]] = []

    def __call__(self, method: str, aspect: str, perturbation: str, severity: str,
                 pick: str, task: str | None = None) -> dict[str, Any]:
        self.asked.append((method, aspect, perturbation, severity, pick)
                          + ((task,) if task else ()))
        return {"example_id": f"{perturbation}@{severity}@{pick}", "pick": pick,
                "severity": severity}


def sections() -> dict[str, dict[str, Any]]:
    return {"blindspot": blindspot_section(), "discernment": discernment_section(),
            "criteria": criteria_section(), "adversarial": adversarial_section(),
            "correlation": {"status": "not run", "reason": "no human scores"}}


def test_reversals_then_blind_spots_then_weak_discernment_each_on_its_rows() -> None:
    examples = Examples()
    found = headline_findings(sections(), TRUSTED, examples)
    assert len(found) == 5
    assert [(f.rank, f.kind) for f in found] == [
        (2, "blind spot"), (3, "weak discernment"), (4, "confusion"), (4, "fooled"),
        (5, "non-monotonic")]
    blind = found[0]
    assert blind.text.startswith("Blind to sentence-switching on bleu at severity 4: the "
                                 "score moves from 20 to 19.8")
    assert "equivalence shown" in blind.text
    assert blind.rows[0]["perturbation"] == "sentence-switching"
    assert (blind.interval["low"], blind.interval["high"]) == (-0.2, 0.5)
    # the typical example at the severity the finding cites, the extreme one beside it
    assert blind.example == {"example_id": "sentence-switching@4@typical", "pick": "typical",
                             "severity": "4"}
    assert blind.extreme is not None and blind.extreme["pick"] == "extreme"
    assert blind.at == {"aspect": "bleu", "perturbation": "sentence-switching", "severity": "4"}
    assert blind.evidence == ["runs/blindspot/results.json"]
    confusion = found[2]
    assert confusion.text.startswith("Confuses fluency with coherence")
    assert ("criteria", "fluency", "sentence-exchange", "2", "typical") in examples.asked
    weak = found[1]
    assert "sentence-reordering (major)" in weak.text and "D = 0.30" in weak.text
    # a finding about dialogue shows a dialogue example, not the first summary's
    assert ("discernment", "bleu", "sentence-reordering", "major", "typical", "dialogue") \
        in examples.asked
    assert "random-answer" not in " ".join(f.text for f in found)  # 3 pairs: no finding
    fooled = found[3]
    assert "3 of 10 searches (30%, 95% CI 11%-60%)" in fooled.text
    assert fooled.interval["unit"] == "rate"
    assert all(pick != "least" for *_, pick in (a[:5] for a in examples.asked))


def test_one_verdict_on_several_aspects_is_one_finding_naming_each() -> None:
    section = blindspot_section()
    first = section["results"]["rows"][0]
    section["results"]["rows"] = [first, {**first, "aspect": "recall"}]
    (blind,) = headline_findings({"blindspot": section}, TRUSTED, Examples())
    assert blind.text.startswith("Blind to sentence-switching on bleu and recall: bleu: at "
                                 "severity 4 the score moves from 20 to 19.8")
    assert "; recall: at severity 4" in blind.text
    assert [r["aspect"] for r in blind.rows] == ["bleu", "recall"]


def test_at_most_two_findings_per_method_and_inversions_are_found() -> None:
    only_dhp = {"discernment": discernment_section()}
    found = headline_findings(only_dhp, TRUSTED, Examples())
    assert [f.kind for f in found] == ["weak discernment", "minor above major"]
    inverted = found[1]
    # char-typo minor (20%, CI 19% to 21%) against char-typo major (6%, CI 5% to 7%): one
    # perturbation, task and aspect; wrong-ending (5%) is another method and takes no part
    assert inverted.text.startswith("Drops more on minor than on major char-typo on story "
                                    "(bleu)")
    assert "at minor the score" in inverted.text and "at major the score" in inverted.text
    assert "-20.0% of the original score" in inverted.text
    assert "-6.0% of the original score" in inverted.text
    assert "wrong-ending" not in inverted.text
    assert [r["severity"] for r in inverted.rows] == ["minor", "major"]


def dhp_units(*rows: tuple[str, str, str, str, float, float, float, int]
              ) -> list[dict[str, Any]]:
    """(task, perturbation, severity, aspect, D, CI low, CI high, n) -> card units."""
    return [{"task": t, "perturbation": p, "severity": sev, "aspect": a, "level": "char",
             "d": d, "pvalue": 0.05 ** d, "n": n, "relative_change": (lo + hi) / 2,
             "relative_ci_low": lo, "relative_ci_high": hi}
            for t, p, sev, a, d, lo, hi, n in rows]


def test_minor_is_compared_with_major_only_within_one_method_task_and_aspect() -> None:
    units = dhp_units(
        ("qa", "typo", "minor", "f", 2.0, 0.30, 0.40, 12),
        ("qa", "typo", "major", "f", 2.0, 0.10, 0.20, 12),  # apart: a finding
        ("qa", "typo", "major", "p", 2.0, 0.00, 0.05, 12),  # another aspect: no pair with f
        ("qa", "swap", "minor", "f", 2.0, 0.30, 0.40, 12),
        ("qa", "swap", "major", "f", 2.0, 0.25, 0.35, 12),  # intervals overlap: no finding
        ("qa", "drop", "major", "f", 2.0, 0.00, 0.01, 12),  # another method: no pair at all
        ("story", "typo", "major", "f", 2.0, 0.00, 0.01, 12),  # another task
        ("dialogue", "cut", "minor", "f", 0.6, 0.30, 0.40, 3),  # 3 examples: cannot reach D = 1
        ("dialogue", "cut", "major", "f", 0.6, 0.00, 0.01, 12))
    pairs = minor_above_major(units)
    assert [(a["task"], a["perturbation"], a["aspect"], b["severity"]) for a, b in pairs] == [
        ("qa", "typo", "f", "major")]


def test_units_too_few_to_reach_d_1_are_no_finding_and_the_ceiling_is_quoted() -> None:
    # 4 examples: D <= 4 ln 2 / ln 20 = 0.93, never 1; 5 examples: up to 1.16
    four = dhp_units(("qa", "typo", "minor", "f", 0.2, 0.0, 0.01, 4))
    section = {"status": "run", "files": {}, "results": {"threshold": 1.0, "units": four}}
    assert discernment_findings(section, Examples()) == []
    five = dhp_units(("qa", "typo", "minor", "f", 0.2, 0.0, 0.01, 5))
    section["results"]["units"] = five
    (weak,) = discernment_findings(section, Examples())
    assert "D = 0.20, below 1, where its 5 examples allow up to 1.16" in weak.text
    assert "(f)" in weak.text  # the aspect is named
    # a committed card may carry d_ceiling; it is what the rule reads
    assert can_reach({"n": 12, "d_ceiling": 0.5}) is False and can_reach({"n": 5})


def test_an_untrusted_evaluator_gets_no_finding() -> None:
    assert headline_findings(sections(), {"trusted": False}, Examples()) == []


def test_when_every_perturbation_is_ranked_below_the_original_that_is_the_finding() -> None:
    section = blindspot_section()
    section["results"]["rows"] = section["results"]["rows"][2:]  # truncation alone, a pass
    found = headline_findings({"blindspot": section}, TRUSTED, Examples())
    assert [(f.rank, f.kind) for f in found] == [(6, "holds")]
    assert "the score moves from 20 to 12" in found[0].text


def profile_row(quality: str, attack: str, gold: float, mean: float, low: float, high: float,
                *, higher: bool = True, relative: bool = True) -> dict[str, Any]:
    """A sensitivity-profile row: low/high bound the oriented change (positive = worse)."""
    drop = (gold - mean) / gold if higher else (mean - gold) / gold
    return {"aspect": "bleu" if higher else "ter", "quality_aspect": quality, "probed": True,
            "perturbations": [attack], "gold": gold, "mean": mean, "higher_is_better": higher,
            "change": (gold - mean) if higher else (mean - gold), "ci_low": low, "ci_high": high,
            "relative_change": drop if relative else None,
            "relative_ci_low": low / gold if relative else None,
            "relative_ci_high": high / gold if relative else None}


def sensitivity(*rows: dict[str, Any]) -> dict[str, Any]:
    return {"status": "run", "files": {}, "results": {
        "mode": "sensitivity", "sensitivity": {"aspects": [
            *rows, {"aspect": "bleu", "quality_aspect": "simplicity", "probed": False,
                    "perturbations": []}]}}}


def test_moves_least_only_where_its_interval_lies_below_every_other() -> None:
    examples = Examples()
    apart = sensitivity(profile_row("coherence", "sentence-exchange@2", 20.0, 19.9, -0.2, 0.4),
                        profile_row("grammaticality", "word-exchange@3", 20.0, 10.0, 9.0, 11.0))
    (found,) = headline_findings({"criteria": apart}, TRUSTED, examples)
    assert found.kind == "sensitivity" and found.rank == 5
    assert found.text.startswith("Moves least when coherence is damaged: under "
                                 "sentence-exchange@2, bleu falls from 20 to 19.9")
    assert "-50.0% of the original score" in found.text  # grammaticality, in its direction
    assert examples.asked[0] == ("criteria", "bleu", "sentence-exchange", "2", "typical")
    close = sensitivity(profile_row("coherence", "sentence-exchange@2", 20.0, 19.0, 0.5, 1.5),
                        profile_row("grammaticality", "word-exchange@3", 20.0, 18.5, 1.0, 2.0))
    (found,) = headline_findings({"criteria": close}, TRUSTED, Examples())
    assert "Moves least" not in found.text
    assert "the intervals do not settle that it moves least" in found.text


def test_a_score_that_rewards_damage_is_a_reversal_in_its_own_direction_and_units() -> None:
    # TER (lower is better) falls from 88.0 to 73.6 when content is cut: it rates the cut text
    # better; the interval of the change lies wholly on the better side
    cut = profile_row("informativeness", "sentence-deletion@2", 88.0, 73.6, -16.1, -12.9,
                      higher=False)
    typos = profile_row("grammaticality", "spelling-mistake@0.4", 88.0, 100.0, 10.0, 14.0,
                        higher=False)
    found = headline_findings({"criteria": sensitivity(cut, typos)}, TRUSTED, Examples())
    assert found[0].kind == "reversed" and found[0].rank == 1
    assert found[0].text.startswith("Rates text better when its informativeness is damaged: "
                                    "under sentence-deletion@2, ter falls from 88 to 73.6 "
                                    "(lower is better; 95% CI of the change -16.1 to -12.9; "
                                    "-16.4% of the original score")


def test_a_score_without_a_meaningful_zero_gets_no_percentage() -> None:
    rows = [profile_row("coherence", "sentence-exchange@2", -20.0, -20.1, -0.2, 0.4,
                        relative=False),
            profile_row("grammaticality", "word-exchange@3", -20.0, -60.0, 30.0, 50.0,
                        relative=False)]
    (found,) = headline_findings({"criteria": sensitivity(*rows)}, TRUSTED, Examples())
    said = re.sub(r"[\d.]+% (CI|interval)", "", found.text)  # the levels of intervals
    assert "%" not in said and "from -20 to -20.1" in found.text


def four_way(severity: str, rank: int, verdict: str, gold: float, mean: float, low: float,
           high: float, *, delta: float = 3.2, need: int | None = None,
           relative: dict[str, float] | None = None) -> dict[str, Any]:
    """A severity with its four-way test (low/high: the oriented drop, positive = worse)."""
    return {**change(severity, rank, 0.0, 0.0, 0.0), "gold": gold, "mean": mean,
            "test": {"verdict": verdict, "estimate": (low + high) / 2, "low": low, "high": high,
                     "level": 0.965, "delta": delta, "n": 57, "pvalue": 0.001,
                     "n_to_settle": need, "mde": 2.5}, "relative": relative}


def four_way_section() -> dict[str, Any]:
    rows = [
        # TER (lower is better) falls when content is cut: it rates the cut text better
        {"aspect": "ter", "perturbation": "truncation", "verdict": "fail", "rank_pass": False,
         "monotonic_pass": True, "higher_is_better": False, "outcome": "reversed",
         "monotonic_outcome": "no significant rise", "n_to_settle": None,
         "severities": [four_way("0.5", 0, "reversed", 88.0, 73.6, -16.1, -12.9,
                               relative={"change": -0.164, "low": -0.18, "high": -0.147})]},
        {"aspect": "ter", "perturbation": "sentence-switching", "verdict": "fail",
         "rank_pass": False, "monotonic_pass": True, "higher_is_better": False,
         "outcome": "blind", "monotonic_outcome": "no significant rise",
         "severities": [four_way("1", 0, "blind", 88.0, 88.1, -0.5, 0.3),
                        four_way("4", 1, "blind", 88.0, 88.2, -0.9, 0.4)]},
        # the old tolerant rank test failed; the interval cannot tell
        {"aspect": "ter", "perturbation": "noised-punctuation", "verdict": "fail",
         "rank_pass": False, "monotonic_pass": True, "higher_is_better": False,
         "outcome": "inconclusive", "monotonic_outcome": "no significant rise",
         "n_to_settle": 240,
         "severities": [four_way("1.0", 0, "inconclusive", 88.0, 90.0, 0.5, 3.5, need=240)]}]
    return {"status": "run", "files": {"results": "runs/blindspot/results.json"},
            "results": {"rows": rows}}


def test_four_way_findings_speak_in_the_metric_s_direction_and_never_beyond_the_interval(
        ) -> None:
    found = headline_findings({"blindspot": four_way_section()}, TRUSTED, Examples())
    assert [(f.rank, f.kind) for f in found] == [(1, "reversed"), (2, "blind spot")]
    reversed_, blind = found
    assert reversed_.text.startswith("Rates truncation-damaged text better on ter: at severity "
                                     "0.5 the score falls from 88 to 73.6 (lower is better; "
                                     "the change -16.1 to -12.9, 96.5% interval, beyond the "
                                     "tolerance \u00b13.2 on 57 examples; -16.4%")
    assert (reversed_.interval["low"], reversed_.interval["level"]) == (-16.1, 0.965)
    # the heaviest severity equivalence is shown at; "blind" only with equivalence shown
    assert blind.text.startswith("Blind to sentence-switching on ter at severity 4: the score "
                                 "moves from 88 to 88.2")
    assert "inside the tolerance" in blind.text and "equivalence shown" in blind.text
    only_undecided = four_way_section()
    only_undecided["results"]["rows"] = only_undecided["results"]["rows"][2:]
    (undecided,) = headline_findings({"blindspot": only_undecided}, TRUSTED, Examples())
    assert undecided.kind == "inconclusive" and "Blind" not in undecided.text
    assert "about 240 examples would settle it" in undecided.text
    assert "tells apart only a change of 2.5 or more" in undecided.text  # its power
    assert "straddling the tolerance" in undecided.text


def test_a_significant_rise_between_severities_is_a_finding_and_a_noisy_one_is_not() -> None:
    section = four_way_section()
    row = {"aspect": "bleu", "perturbation": "repetition", "verdict": "fail", "rank_pass": True,
           "monotonic_pass": False, "higher_is_better": True, "outcome": "detects",
           "monotonic_outcome": "rises",
           "steps": [{"from": "10", "to": "30", "verdict": "detects", "estimate": 2.0,
                      "low": 1.5, "high": 2.5, "level": 0.965, "delta": 1.0, "n": 57}],
           "severities": [four_way("10", 0, "detects", 20.0, 12.0, 7.0, 9.0, delta=1.0),
                          four_way("30", 1, "detects", 20.0, 14.0, 5.0, 7.0, delta=1.0)]}
    section["results"]["rows"] = [row]
    (rises,) = headline_findings({"blindspot": section}, TRUSTED, Examples())
    assert rises.kind == "non-monotonic" and "from severity 10 to 30" in rises.text
    row["monotonic_outcome"] = "no significant rise"
    row["steps"][0]["verdict"] = "inconclusive"
    (holds,) = headline_findings({"blindspot": section}, TRUSTED, Examples())
    assert holds.kind == "holds" and "beyond the tolerance at every severity" in holds.text


def test_a_score_that_never_moves_reads_plus_zero_not_minus_zero() -> None:
    section = four_way_section()
    row = section["results"]["rows"][1]
    row["higher_is_better"] = True
    row["severities"] = [four_way("4", 0, "blind", 0.528, 0.528, 0.0, 0.0, delta=0.02)]
    section["results"]["rows"] = [row]
    (blind,) = headline_findings({"blindspot": section}, TRUSTED, Examples())
    assert "the change +0 to +0, 96.5% interval, inside the tolerance \u00b10.02" in blind.text
    assert "moves from 0.528 to 0.528 (" in blind.text  # no digits hunted for a difference


def test_an_unmoved_score_stays_and_close_scores_get_the_digits_that_tell_them_apart() -> None:
    still = profile_row("coherence", "sentence-exchange@2", 0.529, 0.529, -1.59e-17, 1.13e-18)
    close = profile_row("grammaticality", "word-exchange@3", 49.0, 48.96, 0.01, 0.07)
    (found,) = headline_findings({"criteria": sensitivity(still, close)}, TRUSTED, Examples())
    assert "rouge" not in found.text and "bleu stays at 0.529 (95% CI of the change +0 to +0" \
        in found.text
    assert "bleu falls from 49 to 48.96" in found.text
    tiny = profile_row("coherence", "sentence-exchange@2", 20.0, 19.9, -0.2, 0.004)
    (found,) = headline_findings({"criteria": sensitivity(tiny, close)}, TRUSTED, Examples())
    assert "-0.0%" not in found.text and "+0.0%" in found.text  # 0.004 / 20 rounds to 0


def partly_row(aspect: str, perturbation: str, detects_from: str | None) -> dict[str, Any]:
    """Blind at 0.1 (equivalence shown), then detects at 0.3 and 0.5 (or undecided at 0.5)."""
    heavy = "detects" if detects_from else "inconclusive"
    return {"aspect": aspect, "perturbation": perturbation, "verdict": "fail",
            "rank_pass": False, "monotonic_pass": True, "higher_is_better": True,
            "outcome": "partly blind", "blind_up_to": "0.1", "detects_from": detects_from,
            "monotonic_outcome": "no significant rise",
            "severities": [four_way("0.1", 0, "blind", 20.0, 19.9, -0.2, 0.4, delta=1.0),
                           four_way("0.3", 1, "detects", 20.0, 15.0, 4.0, 6.0, delta=1.0),
                           four_way("0.5", 2, heavy, 20.0, 12.0, 0.5, 9.0, delta=1.0)]}


def test_a_row_blind_only_at_light_damage_is_a_finding_of_its_own_below_blind_spots() -> None:
    section = blindspot_section()
    rows = section["results"]["rows"]
    rows[:] = [partly_row("bleu", "stopword-removal", "0.3"), rows[0]]
    found = headline_findings({"blindspot": section}, TRUSTED, Examples())
    # the full blind spot (heaviest severity blind) reads first, though it is listed second
    assert [(f.rank, f.kind) for f in found] == [(2, "blind spot"), (2, "partly blind")]
    partly = found[1]
    assert partly.text.startswith("Blind to stopword-removal on bleu up to severity 0.1 only "
                                  "(detects from 0.3): at severity 0.1 the score moves from "
                                  "20 to 19.9")
    assert partly.text.endswith("equivalence shown there, not at heavier damage.")
    # it cites the light severity, its interval and its example
    assert partly.at == {"aspect": "bleu", "perturbation": "stopword-removal",
                         "severity": "0.1"}
    assert (partly.interval["low"], partly.interval["high"]) == (-0.2, 0.4)
    assert partly.example is not None and partly.example["severity"] == "0.1"
    # heavier damage undecided: said so, not "detects"
    rows[:] = [partly_row("bleu", "truncation", None), partly_row("rouge", "truncation", None)]
    (both,) = headline_findings({"blindspot": section}, TRUSTED, Examples())
    assert both.text.startswith("Blind to truncation at light severities only, on bleu and "
                                "rouge: bleu: up to severity 0.1 (undecided above it), at "
                                "severity 0.1 the score moves")
    assert "detects" not in both.text
