"""The description-type comparison on synthetic score tables."""

from __future__ import annotations

import pandas as pd
import pytest
from scipy import stats

from evalstress.analyses.description_types import description_types, judge_levels
from tests.analyses.conftest import table_from

ORIG = [5.0, 5.0, 4.0, 5.0, 4.0, 5.0, 4.0, 5.0]
DROP = [2.0, 3.0, 2.0, 2.0, 3.0, 2.0, 2.0, 3.0]
NOISY = [4.0, 5.0, 3.0, 5.0, 4.0, 4.0, 4.0, 5.0]


def _judge(label: str, coherence: list[float], fluency: list[float]) -> pd.DataFrame:
    # sentence-exchange should move coherence and leave fluency alone (paper 000, Table 21)
    parts = [table_from(ORIG, {("sentence-exchange", "1"): coherence}, evaluator=label,
                        aspect="coherence"),
             table_from(ORIG, {("sentence-exchange", "1"): fluency}, evaluator=label,
                        aspect="fluency")]
    return pd.concat(parts, ignore_index=True)


def test_levels_side_by_side_with_hand_checked_numbers() -> None:
    table = pd.concat([_judge("j-list", DROP, ORIG), _judge("j-term", NOISY, DROP)],
                      ignore_index=True)
    result = description_types(table, {"j-term": "term", "j-list": "list"}, n_boot=50)
    assert result.levels == ["list", "term"]
    rows = {r.level: r for r in result.rows}
    # list: coherence drops by 2.25 on average and passes; fluency does not move
    assert rows["list"].directional.mean == pytest.approx(sum(
        o - d for o, d in zip(ORIG, DROP, strict=True)) / 8)
    assert rows["list"].directional_pass_rate == 1.0 and rows["list"].confusion_rate == 0.0
    # term: coherence barely moves (fails), fluency drops (confusion)
    assert rows["term"].directional_pass_rate == 0.0 and rows["term"].confusion_rate == 1.0
    # the level correlation is Pearson over (text, aspect) scores, originals included
    both = table.pivot_table(index=["example_id", "perturbation", "severity", "seed", "aspect"],
                             columns="evaluator", values="score")
    expected = stats.pearsonr(both["j-list"], both["j-term"]).statistic
    assert result.correlation[0][1] == pytest.approx(expected)
    assert result.pairs[0][1] == 32  # 8 examples x (original + variant) x 2 aspects


def test_judges_are_found_in_the_signatures_and_must_be_one_judge() -> None:
    sig = {"judge:level=term": {"params": {"model": "m", "level": "term"}},
           "judge:level=list": {"params": {"model": "m", "level": "list"}},
           "rouge": {"params": {}}}
    assert judge_levels(sig) == {"judge:level=term": "term", "judge:level=list": "list"}
    sig["judge:level=list"]["params"]["model"] = "other"
    with pytest.raises(ValueError, match="differ in more than the level"):
        judge_levels(sig)


def test_one_level_is_not_a_comparison() -> None:
    with pytest.raises(ValueError, match="two or more"):
        description_types(_judge("j", DROP, ORIG), {"j": "term"})
