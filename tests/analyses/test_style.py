import json

from evalstress.analyses.style import response_style


def test_discrete_judge_scores_are_counted_per_value(make_table):
    table = make_table([5, 5, 4, 5], {("typos", "minor"): [3, 5, 4, None]})
    (row,) = response_style(table).rows
    assert row.discrete and row.edges == [3.0, 4.0, 5.0]
    assert row.original.counts == [0, 1, 3] and row.original.mean == 4.75
    assert row.perturbed.counts == [1, 1, 1] and row.perturbed.n_missing == 1
    assert row.by_perturbation["typos"].n == 3
    data = response_style(table).to_dict()
    assert json.loads(json.dumps(data, allow_nan=False)) == data


def test_continuous_scores_share_bins(make_table):
    table = make_table([i / 10 for i in range(20)], {("typos", "minor"): [0.05] * 20},
                       evaluator="bleu", aspect="bleu")
    (row,) = response_style(table, bins=4).rows
    assert not row.discrete and len(row.edges) == 5
    assert sum(row.original.counts) == 20 and row.perturbed.counts == [20, 0, 0, 0]
