import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalstress.analyses.discernment import (
    combined_ceiling,
    discernment_analysis,
    level_weighted_mean,
)
from evalstress.analyses.stats import discernment, discernment_ceiling

ORIG = [4.0, 5.0, 4.0, 5.0, 3.0, 4.0, 5.0, 4.0, 4.0, 5.0, 3.0, 4.0]
WORSE = [2.0, 3.0, 3.0, 2.0, 2.0, 3.0, 4.0, 2.0, 3.0, 3.0, 1.0, 2.0]
SAME = list(ORIG)


def two_aspects(make_table, variants_fl, variants_coh):
    fl = make_table(ORIG, variants_fl, aspect="fluency")
    coh = make_table(ORIG, variants_coh, aspect="coherence")
    return pd.concat([fl, coh], ignore_index=True)


def test_level_weighting_follows_the_paper_definition():
    avg, weights = level_weighted_mean({"char": [1.0, 3.0], "word": [2.0],
                                        "sentence": [4.0, 4.0, 4.0]})
    assert avg == pytest.approx((2.0 + 2.0 + 4.0) / 3)
    assert weights == pytest.approx({"char": 1 / 6, "word": 1 / 3, "sentence": 1 / 9})
    # every level's units sum to the same total weight
    assert 2 * weights["char"] == pytest.approx(weights["word"]) == pytest.approx(
        3 * weights["sentence"])


def test_unit_p_is_the_papers_combination_of_scipy_wilcoxon(make_table):
    table = two_aspects(make_table, {("spelling-mistake", "minor"): WORSE},
                        {("spelling-mistake", "minor"): SAME})
    result = discernment_analysis(table, by_task=False)
    (unit,) = result.units
    d = np.array(ORIG) - np.array(WORSE)
    p_fl = stats.wilcoxon(d, alternative="greater").pvalue
    tests = {t.aspect: t for t in unit.tests}
    assert tests["fluency"].wilcoxon.pvalue == pytest.approx(p_fl)
    assert tests["coherence"].wilcoxon.all_zero and tests["coherence"].wilcoxon.pvalue == 1.0
    assert unit.p == pytest.approx(1 / (1 / p_fl + 1 / 1.0))
    assert unit.d == pytest.approx(discernment(unit.p))
    # default expert weights: spelling-mistake should move fluency, not coherence (Table 21)
    assert unit.weights == {"fluency": 1.0}
    assert unit.p_ew == pytest.approx(p_fl)
    assert unit.level == "char"


def test_user_expert_weights_per_task(make_table):
    table = two_aspects(make_table, {("typos", "minor"): WORSE}, {("typos", "minor"): WORSE})
    weights = {"summarization": {"typos": {"fluency": 3, "coherence": 1}}}
    (unit,) = discernment_analysis(table, expert_weights=weights).units
    p = unit.tests[0].wilcoxon.pvalue
    assert unit.weight_source == "user"
    assert unit.p_ew == pytest.approx(1 / (0.75 / p + 0.25 / p))
    assert unit.p == pytest.approx(p / 2)


def test_minor_and_major_are_summarised_separately_with_level_weights(make_table):
    variants = {("random-typos", "minor"): SAME, ("random-typos", "major"): WORSE,
                ("fictional-named-entities", "minor"): WORSE,
                ("fictional-named-entities", "major"): WORSE,
                ("reordering", "major"): WORSE}
    table = make_table(ORIG, variants, aspect="fluency")
    result = discernment_analysis(table, by_task=False)
    groups = {s.group: s for s in result.summaries}
    assert set(groups) == {"minor", "major", "all"}
    d = {(u.perturbation, u.severity): u.d for u in result.units}
    assert groups["minor"].d_min == pytest.approx(0.0)
    assert groups["minor"].d_min_at == "random-typos@minor"
    assert groups["minor"].d_avg == pytest.approx(
        (d[("random-typos", "minor")] + d[("fictional-named-entities", "minor")]) / 2)
    expected_all = np.mean([
        np.mean([d[("random-typos", "minor")], d[("random-typos", "major")]]),
        np.mean([d[("fictional-named-entities", "minor")],
                 d[("fictional-named-entities", "major")]]),
        d[("reordering", "major")]])
    assert groups["all"].d_avg == pytest.approx(expected_all)
    assert groups["all"].units_per_level == {"char": 2, "word": 2, "sentence": 1}


def test_a_single_degree_unit_counts_in_the_minor_and_the_major_group(make_table):
    # paper 003's QA: characters minor and major, the random answer at one degree only; both
    # groups then span the character and the sentence level
    variants = {("random-typos", "minor"): SAME, ("random-typos", "major"): WORSE,
                ("random-answer", "default"): WORSE}
    result = discernment_analysis(make_table(ORIG, variants, aspect="fluency"), by_task=False)
    groups = {s.group: s for s in result.summaries}
    d = {(u.perturbation, u.severity): u.d for u in result.units}
    assert set(groups) == {"minor", "major", "all"}
    for group in ("minor", "major"):
        assert groups[group].units_per_level == {"char": 1, "sentence": 1}
        assert groups[group].d_avg == pytest.approx(
            (d[("random-typos", group)] + d[("random-answer", "default")]) / 2)
    assert groups["minor"].d_min_at == "random-typos@minor"


def test_missing_scores_are_excluded_pairwise_and_counted(make_table):
    worse = list(WORSE)
    worse[3] = None
    originals = list(ORIG)
    originals[5] = None
    table = make_table(originals, {("typos", "minor"): worse})
    (unit,) = discernment_analysis(table).units
    test = unit.tests[0]
    assert test.n == 10 and test.n_missing == 2
    keep = [i for i in range(12) if i not in (3, 5)]
    d = np.array(ORIG)[keep] - np.array(WORSE)[keep]
    assert test.wilcoxon.pvalue == pytest.approx(
        stats.wilcoxon(d, alternative="greater").pvalue)


def test_seeds_are_averaged_per_example_and_lower_is_better_flips_sign(make_table):
    per_seed = [[w - 1, w + 1] for w in WORSE]  # mean over the two seeds = WORSE
    flipped = make_table([-x for x in ORIG], {("typos", "minor"): [[-a, -b] for a, b in per_seed]},
                         higher=False)
    (unit,) = discernment_analysis(flipped).units
    assert unit.tests[0].n == 12 and unit.tests[0].n_seeds == 2
    d = np.array(ORIG) - np.array(WORSE)
    assert unit.tests[0].wilcoxon.pvalue == pytest.approx(
        stats.wilcoxon(d, alternative="greater").pvalue)


def test_unknown_level_and_undefined_ew_are_reported(make_table):
    table = make_table(ORIG, {("my-own-noise", "0.1"): WORSE}, evaluator="bleu", aspect="bleu")
    result = discernment_analysis(table, hmp=True)
    (unit,) = result.units
    assert unit.level is None and unit.d_ew is None and "D^EW undefined" in unit.note
    assert unit.p_hmp is not None
    assert any("no level known" in n for n in result.notes)
    assert result.summaries[0].n_excluded == 1
    with_level = discernment_analysis(table, level_map={"my-own-noise": "word"},
                                      aspect_map={"bleu": "overall"})
    assert with_level.units[0].level == "word"


def test_json_round_trip(make_table):
    table = two_aspects(make_table, {("typos", "minor"): WORSE}, {("typos", "minor"): SAME})
    data = discernment_analysis(table, hmp=True).to_dict()
    assert json.loads(json.dumps(data, allow_nan=False)) == data
    assert data["threshold"] == 1.0


# --- expert weights as data (criteria/expert_weights.yaml, files, aliases) --------------------


def _aspects_table(make_table, pert, scores_by_aspect, task="summarization"):
    parts = [make_table(ORIG, {(pert, "minor"): scores}, aspect=aspect)
             for aspect, scores in scores_by_aspect.items()]
    table = pd.concat(parts, ignore_index=True)
    table["task"] = task
    return table


def _p(scores):
    return stats.wilcoxon(np.array(ORIG) - np.array(scores), alternative="greater").pvalue


def test_builtin_weights_are_the_files_votes_normalised(make_table):
    # summarization char-deletion: fluency 9 votes, coherence 1 (criteria/expert_weights.yaml)
    half = WORSE[:6] + ORIG[6:]
    table = _aspects_table(make_table, "char-deletion",
                           {"fluency": WORSE, "coherence": half, "informativeness": SAME})
    (unit,) = discernment_analysis(table, expert_weights="builtin").units
    assert unit.weights == pytest.approx({"fluency": 0.9, "coherence": 0.1})
    assert unit.p_ew == pytest.approx(1 / (0.9 / _p(WORSE) + 0.1 / _p(half)))
    assert unit.weight_source.startswith("builtin")


def test_weight_names_reach_the_judges_aspects_through_aliases(make_table):
    # story random-ending: consistency 6, coherence 4; the judge calls consistency
    # "faithfulness" (alias of criteria/expectations.yaml)
    table = _aspects_table(make_table, "random-ending",
                           {"faithfulness": WORSE, "coherence": WORSE, "fluency": SAME},
                           task="story")
    (unit,) = discernment_analysis(table, expert_weights="builtin").units
    assert unit.weights == pytest.approx({"faithfulness": 0.6, "coherence": 0.4})
    # translation word-span-deletion: accuracy 7, fluency 3; "accuracy" reaches "adequacy"
    # through the weights file's own alias
    table = _aspects_table(make_table, "word-span-deletion",
                           {"adequacy": WORSE, "fluency": SAME}, task="translation")
    (unit,) = discernment_analysis(table, expert_weights="builtin").units
    assert unit.weights == pytest.approx({"adequacy": 0.7, "fluency": 0.3})
    assert unit.p_ew == pytest.approx(1 / (0.7 / _p(WORSE) + 0.3 / 1.0))


def test_dialogue_reads_the_summarization_rows(make_table):
    table = _aspects_table(make_table, "sentence-reordering",
                           {"coherence": WORSE, "fluency": SAME}, task="dialogue")
    (unit,) = discernment_analysis(table, expert_weights="builtin").units
    assert unit.weights == pytest.approx({"coherence": 0.9, "fluency": 0.1})


def test_weights_from_a_yaml_file_and_errors_that_name_the_field(make_table, tmp_path):
    path = tmp_path / "weights.yaml"
    path.write_text("tasks:\n  summarization:\n    char-typo: {fluency: 1, coherence: 3}\n",
                    encoding="utf-8")
    table = _aspects_table(make_table, "char-typo", {"fluency": WORSE, "coherence": WORSE})
    (unit,) = discernment_analysis(table, expert_weights=str(path)).units
    assert unit.weights == pytest.approx({"fluency": 0.25, "coherence": 0.75})
    assert unit.weight_source == f"file: {path}"
    path.write_text("tasks:\n  sumarization:\n    char-typo: {fluency: 1}\n", encoding="utf-8")
    with pytest.raises(ValueError, match="did you mean 'summarization'"):
        discernment_analysis(table, expert_weights=str(path))
    path.write_text("tasks:\n  summarization:\n    char-typo: {fluency: lots}\n",
                    encoding="utf-8")
    with pytest.raises(ValueError, match=r"summarization\.char-typo"):
        discernment_analysis(table, expert_weights=str(path))
    with pytest.raises(ValueError, match="neither 'builtin' nor a YAML file"):
        discernment_analysis(table, expert_weights="no-such-file.yaml")


#: Paper 003, Table 1: the perturbations of each task, rule-based and LLM-written.
TABLE1 = {
    "summarization": {"char-deletion", "char-typo", "fictional-named-entities",
                      "grammatical-errors", "sentence-reordering", "rewriting-and-insertion"},
    "story": {"char-deletion", "char-typo", "fictional-named-entities", "grammatical-errors",
              "random-ending", "wrong-ending"},
    "qa": {"char-deletion", "char-typo", "fictional-named-entities", "grammatical-errors",
           "random-answer"},
    "translation": {"char-deletion", "char-typo", "word-span-deletion",
                    "fictional-named-entities", "grammatical-errors"},
}


def test_the_builtin_file_covers_every_unit_of_the_dhp_suites():
    from evalstress.analyses.discernment import load_expert_weights
    from evalstress.suites import load_suite

    loaded = load_expert_weights("builtin")
    for task, perturbations in TABLE1.items():
        assert set(loaded.table[task]) >= perturbations, task
        for name in ("dhp", "dhp-full"):
            assert {plan.name for plan, _, _ in load_suite(name).units(task)} <= perturbations
        for votes in loaded.table[task].values():
            assert sum(votes.values()) == 10  # ten votes per problem, as in the survey


def test_a_unit_without_expert_weights_is_named_and_marked(make_table):
    """Truncation is no DHP perturbation: the built-in weights have no row for it, so its D^EW
    falls back to the default weights (paper 000's matrix: truncation should move
    informativeness, Table 21) and the analysis says so."""
    from evalstress.report.terminal import discernment_tables

    table = _aspects_table(make_table, "truncation",
                           {"informativeness": WORSE, "fluency": SAME})
    table = pd.concat([table, _aspects_table(make_table, "char-typo",
                                             {"informativeness": SAME, "fluency": WORSE}),
                       _aspects_table(make_table, "char-deletion",
                                      {"informativeness": SAME, "fluency": SAME})])
    result = discernment_analysis(table, expert_weights="builtin")
    by = {u.perturbation: u for u in result.units}
    assert by["truncation"].weight_source.startswith("default")
    assert by["char-typo"].weight_source.startswith("builtin")
    assert any("no expert weights for truncation (summarization)" in n for n in result.notes)
    assert not any("char-typo" in n for n in result.notes)
    units = discernment_tables(result)[1]
    column = {c.header: list(c.cells) for c in units.columns}
    cells, perts = column["D^EW"], column["perturbation"]
    assert cells[perts.index("truncation")].endswith("*")
    assert not cells[perts.index("char-typo")].endswith("*")
    # a judge that moves nothing: p^EW = 1, D^EW = log_0.05(1) = 0 (shown without a sign)
    assert cells[perts.index("char-deletion")] == "[red]0.00[/]"
    assert "default weights" in str(units.caption)


# --- D^EW of evaluators whose scores name no task metric (BLEU, ROUGE, an overall judge) ------


def _p(worse):
    return stats.wilcoxon(np.array(ORIG) - np.array(worse), alternative="greater").pvalue


def test_a_one_score_metric_takes_the_whole_expert_weight_so_d_ew_equals_d(make_table):
    """The built-in weights for char-typo name fluency and coherence; BLEU's one score stands
    for overall quality, which covers both, so all the weight is BLEU's: p^EW = p, as paper 003
    finds for its one-metric QA task (D^EW was undefined for every lexical metric)."""
    table = make_table(ORIG, {("char-typo", "minor"): WORSE}, evaluator="bleu", aspect="bleu")
    (unit,) = discernment_analysis(table, expert_weights="builtin").units
    assert unit.weights == pytest.approx({"bleu": 1.0})
    assert unit.p == pytest.approx(_p(WORSE)) and unit.p_ew == pytest.approx(_p(WORSE))
    assert unit.d_ew == pytest.approx(discernment(_p(WORSE))) and unit.d_ew is not None


def test_several_overall_scores_share_the_weight_equally(make_table):
    slightly = [o - 0.5 if i % 3 else o for i, o in enumerate(ORIG)]
    table = pd.concat([make_table(ORIG, {("char-deletion", "major"): worse}, evaluator="rouge",
                                  aspect=aspect)
                       for aspect, worse in (("rouge1", WORSE), ("rouge2", slightly),
                                             ("rougeL", SAME))], ignore_index=True)
    (unit,) = discernment_analysis(table, expert_weights="builtin").units
    assert unit.weights == pytest.approx({"rouge1": 1 / 3, "rouge2": 1 / 3, "rougeL": 1 / 3})
    p1, p2, p_l = _p(WORSE), _p(slightly), 1.0  # rougeL never moves: p = 1
    assert unit.p_ew == pytest.approx(1 / ((1 / 3) / p1 + (1 / 3) / p2 + (1 / 3) / p_l))


def test_a_weight_without_its_own_aspect_goes_to_the_aspect_that_covers_it(make_table):
    """sentence-reordering: coherence 9, fluency 1 (built-in). A judge scoring fluency and
    overall: fluency keeps its 0.1, coherence's 0.9 climbs the aspect tree (coherence ->
    readability -> overall) to the judge's overall score."""
    table = pd.concat([make_table(ORIG, {("sentence-reordering", "major"): SAME},
                                  aspect="fluency"),
                       make_table(ORIG, {("sentence-reordering", "major"): WORSE},
                                  aspect="overall")], ignore_index=True)
    (unit,) = discernment_analysis(table, expert_weights="builtin").units
    assert unit.weights == pytest.approx({"fluency": 0.1, "overall": 0.9})
    assert unit.p_ew == pytest.approx(1 / (0.1 / 1.0 + 0.9 / _p(WORSE)))


def test_a_weight_no_scored_aspect_covers_leaves_d_ew_undefined_and_says_so(make_table):
    """random-answer weighs answer-quality (overall); a judge scoring fluency alone does not
    cover overall quality: no weight falls on it, and the notes name the unit."""
    table = make_table(ORIG, {("random-answer", "major"): WORSE})
    table["task"] = "qa"
    result = discernment_analysis(table, expert_weights="builtin")
    (unit,) = result.units
    assert unit.weights == {} and unit.p_ew is None and unit.d_ew is None
    assert any(n.startswith("D^EW undefined for judge on random-answer:") for n in result.notes)


def test_each_test_and_unit_shows_the_ceiling_of_d_its_n_allows(make_table):
    table = two_aspects(make_table, {("spelling-mistake", "minor"): WORSE},
                        {("spelling-mistake", "minor"): SAME})
    result = discernment_analysis(table, by_task=False)
    (unit,) = result.units
    # 12 pairs per aspect: 12 ln 2 / ln 20 = 2.7765
    assert [t.d_ceiling for t in unit.tests] == pytest.approx([2.7765] * 2, abs=1e-4)
    # two aspects each at p = 2^-12 combine (paper 003) to p = 1 / (2 * 2^12) = 2^-13:
    # 13 ln 2 / ln 20 = 3.0079
    assert unit.d_ceiling == pytest.approx(3.0079, abs=1e-4)
    assert unit.d <= unit.d_ceiling
    said = result.to_dict()
    assert said["units"][0]["d_ceiling"] == pytest.approx(unit.d_ceiling)
    assert said["units"][0]["tests"][0]["d_ceiling"] == pytest.approx(discernment_ceiling(12))
    assert said["alpha"] == 0.05 and "2^-n" in said["method"]["ceiling"]


def test_the_combined_ceiling_survives_sizes_whose_power_of_two_overflows():
    # 2000 pairs: 2^2000 overflows a float; (2000 ln 2 + ln 2) / ln 20 = 2001 ln 2 / ln 20
    assert combined_ceiling([2000, 2000]) == pytest.approx(discernment_ceiling(2001))
    # three aspects of 3 pairs: (3 ln 2 + ln 3) / ln 20 = (2.0794 + 1.0986) / 2.9957 = 1.0608
    assert combined_ceiling([3, 3, 3]) == pytest.approx(1.0608, abs=1e-4)
    assert combined_ceiling([]) is None


def test_d_avg_and_d_min_leave_out_units_of_too_few_examples(make_table):
    # a unit with 3 scored examples (ceiling 3 ln 2 / ln 20 = 0.69) cannot reach D = 1 whatever
    # the evaluator does: it is counted apart, not pulled into the task's average and minimum
    few = list(WORSE[:3]) + [None] * 9
    variants = {("random-typos", "major"): WORSE, ("reordering", "major"): few}
    result = discernment_analysis(make_table(ORIG, variants, aspect="fluency"), by_task=False)
    d = {u.perturbation: u.d for u in result.units}
    assert d["reordering"] < d["random-typos"]  # it would have been the minimum
    (summary,) = [s for s in result.summaries if s.group == "all"]
    assert summary.n_too_few == 1 and summary.n_units == 1
    assert summary.d_min == pytest.approx(d["random-typos"])
    assert summary.d_avg == pytest.approx(d["random-typos"])
    assert summary.d_min_at == "random-typos@major"
