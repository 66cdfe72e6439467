import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalstress.analyses.confusion import criteria_confusion
from evalstress.analyses.expectations import expectation_for
from evalstress.criteria import expectations

ORIG = [4.0, 5.0, 4.0, 5.0, 3.0, 4.0, 5.0, 4.0, 4.0, 5.0, 3.0, 4.0]
WORSE = [2.0, 3.0, 3.0, 2.0, 2.0, 3.0, 4.0, 2.0, 3.0, 3.0, 1.0, 2.0]


def test_table21_split_matches_the_paper():
    rows = expectations()
    assert len(rows) == 18
    cells = sum(len(r.expected) for r in rows.values())
    disputed = sum(len(r.disputed) for r in rows.values())
    assert (cells - disputed) / cells == pytest.approx(0.944, abs=1e-3)  # paper's match rate
    assert rows["000:negation"].disputed == {"non-hallucination"}
    assert "fluency" not in rows["000:repetition"].should_move | rows["000:repetition"].should_stay
    assert rows["000:hypernym"].should_move == {"informativeness", "adequacy", "overall"}


def test_metadata_fallback_uses_damages_with_ancestors_and_preserves():
    row = expectation_for("token-drop")
    assert row is not None and row.source == "metadata"
    assert {"fluency", "grammaticality", "readability", "overall"} <= row.should_move
    assert "non-hallucination" in row.should_stay
    assert expectation_for("no-such-perturbation") is None


def test_directional_pass_and_invariance_fail(make_table):
    fl = make_table(ORIG, {("spelling-mistake", "minor"): WORSE}, aspect="fluency")
    fa = make_table(ORIG, {("spelling-mistake", "minor"): WORSE}, aspect="faithfulness")
    result = criteria_confusion(pd.concat([fl, fa], ignore_index=True))
    items = {i.aspect: i for i in result.items}
    assert items["fluency"].test == "directional" and items["fluency"].passed is True
    assert items["faithfulness"].test == "invariance" and items["faithfulness"].passed is False
    d = np.array(ORIG) - np.array(WORSE)
    assert items["faithfulness"].pvalue == pytest.approx(stats.wilcoxon(d).pvalue)
    assert items["fluency"].change == pytest.approx(d.mean())
    assert items["fluency"].ci_low < d.mean() < items["fluency"].ci_high
    (summary,) = result.summaries
    assert summary.miss_rate == 0.0 and summary.confusion_rate == 1.0


def test_unchanged_scores_miss_directional_and_pass_invariance(make_table):
    fl = make_table(ORIG, {("spelling-mistake", "minor"): ORIG}, aspect="fluency")
    fa = make_table(ORIG, {("spelling-mistake", "minor"): ORIG}, aspect="faithfulness")
    result = criteria_confusion(pd.concat([fl, fa], ignore_index=True))
    items = {i.aspect: i for i in result.items}
    assert items["fluency"].passed is False and items["fluency"].pvalue == 1.0
    assert items["faithfulness"].passed is True


def test_unmapped_metric_aspects_need_a_map(make_table):
    table = make_table(ORIG, {("hypernym", "minor"): WORSE}, evaluator="bleu", aspect="bleu")
    assert criteria_confusion(table).items == []
    mapped = criteria_confusion(table, aspect_map={"bleu": "informativeness"})
    assert mapped.items[0].test == "directional"
    with pytest.raises(ValueError, match="not an aspect"):
        criteria_confusion(table, aspect_map={"bleu": "beauty"})


def test_inter_aspect_matrix_and_json(make_table):
    fl = make_table(ORIG, {("negation", "minor"): WORSE}, aspect="fluency")
    fa = make_table([o + 0.5 for o in ORIG], {("negation", "minor"): WORSE}, aspect="consistency")
    human = pd.DataFrame({"fluency": [1, 2, 3], "coherence": [2, 2, 4]})
    result = criteria_confusion(pd.concat([fl, fa], ignore_index=True), human=human)
    judge = result.matrices[0]
    assert judge.labels == ["consistency", "fluency"] and judge.values[0][0] == 1.0
    assert result.matrices[1].name == "human"
    data = result.to_dict()
    assert json.loads(json.dumps(data, allow_nan=False)) == data


def test_a_sequential_run_s_matrices_take_the_examples_every_unit_scored(make_table):
    """A unit that stopped after the first 6 examples leaves the others with fewer units: over
    all texts the matrix would weigh the open unit more; `matrices_over="common"` takes only
    the 6 examples with a text of every unit (their originals and all their variants)."""
    rng = np.random.default_rng(8)
    f_orig, c_orig = rng.normal(4, 1, 12), rng.normal(4, 1, 12)
    f_open, c_open = rng.normal(3, 1, 12), rng.normal(3, 1, 12)
    f_stop, c_stop = rng.normal(2, 1, 6), rng.normal(4, 1, 6)
    table = pd.concat([
        make_table(list(f_orig), {("spelling-mistake", "0.1"): list(f_open),
                                  ("word-exchange", "1"): list(f_stop)}, aspect="fluency"),
        make_table(list(c_orig), {("spelling-mistake", "0.1"): list(c_open),
                                  ("word-exchange", "1"): list(c_stop)}, aspect="coherence"),
    ], ignore_index=True)
    every, = criteria_confusion(table).matrices
    common, = criteria_confusion(table, matrices_over="common").matrices
    fluency = np.concatenate([f_orig[:6], f_open[:6], f_stop])
    coherence = np.concatenate([c_orig[:6], c_open[:6], c_stop])
    assert common.n == 18 and every.n == 30
    assert common.values[0][1] == pytest.approx(stats.pearsonr(coherence, fluency).statistic)
    all_f = np.concatenate([f_orig, f_open, f_stop])
    all_c = np.concatenate([c_orig, c_open, c_stop])
    assert every.values[0][1] == pytest.approx(stats.pearsonr(all_c, all_f).statistic)
    with pytest.raises(ValueError, match="Did you mean 'common'"):
        criteria_confusion(table, matrices_over="comon")
