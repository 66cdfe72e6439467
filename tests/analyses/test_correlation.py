import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalstress.analyses.correlation import human_correlation, tau_b_rows


def frames(seed=0, docs=8, systems=6, missing=()):
    rng = np.random.default_rng(seed)
    human = rng.uniform(1, 5, (docs, systems))
    metric = human + rng.normal(0, 1, (docs, systems))
    for d, s in missing:
        metric[d, s] = np.nan
    rows_h, rows_m = [], []
    for d in range(docs):
        for s in range(systems):
            rows_h.append({"doc_id": f"d{d}", "system_id": f"s{s}", "coherence": human[d, s]})
            rows_m.append({"doc_id": f"d{d}", "system_id": f"s{s}", "evaluator": "m",
                           "aspect": "m", "score": metric[d, s]})
    return pd.DataFrame(rows_m), pd.DataFrame(rows_h), metric, human


def values(result):
    return {(r.level, r.method): r for r in result.rows}


@pytest.mark.parametrize("method,fn", [("pearson", stats.pearsonr),
                                       ("spearman", stats.spearmanr),
                                       ("kendall", stats.kendalltau)])
def test_levels_match_scipy(method, fn):
    scores, human, metric, hum = frames()
    res = values(human_correlation(scores, human, n_boot=200))
    assert res[("segment-global", method)].value == pytest.approx(
        fn(metric.ravel(), hum.ravel()).statistic)
    assert res[("system", method)].value == pytest.approx(
        fn(metric.mean(axis=0), hum.mean(axis=0)).statistic)
    assert res[("segment-doc", method)].value == pytest.approx(
        np.mean([fn(metric[i], hum[i]).statistic for i in range(metric.shape[0])]))


def test_missing_pairs_are_excluded_and_counted_and_cis_are_seeded():
    scores, human, metric, hum = frames(missing=[(0, 1), (3, 2)])
    result = human_correlation(scores, human, n_boot=300, seed=7)
    row = values(result)[("segment-global", "pearson")]
    keep = np.isfinite(metric)
    assert row.n == 46 and row.n_missing == 2
    assert row.value == pytest.approx(stats.pearsonr(metric[keep], hum[keep]).statistic)
    assert row.ci_low < row.value < row.ci_high
    again = human_correlation(scores, human, n_boot=300, seed=7)
    assert values(again)[("system", "kendall")].ci_low == values(result)[("system",
                                                                          "kendall")].ci_low
    data = result.to_dict()
    assert json.loads(json.dumps(data, allow_nan=False)) == data
    assert data["matrix"]["labels"] == ["coherence", "m/m"]


def test_tau_b_rows_equal_scipy_with_ties_and_constant_rows() -> None:
    rng = np.random.default_rng(3)
    x = rng.integers(0, 4, (40, 16)).astype(float)  # many ties, as 1-5 expert means have
    y = rng.normal(size=(40, 16))
    y[:, 5] = y[:, 6]
    x[7] = 2.0  # a constant row: undefined
    got = tau_b_rows(x, y)
    for row in range(40):
        want = stats.kendalltau(x[row], y[row]).statistic
        if np.isnan(want):
            assert np.isnan(got[row])
        else:
            assert got[row] == pytest.approx(want)
