"""The sanity gate on hand-made score tables: a constant evaluator, one that ranks originals
below their damage, one whose scores are mostly missing. Expected values are worked out by
hand below (Wilson intervals from the closed formula, z = 1.959964)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from evalstress.card.assemble import read_table
from evalstress.card.gate import rank_check, sanity_gate

Z = 1.959964


def wilson_by_hand(k: int, n: int) -> tuple[float, float]:
    p = k / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    return centre - half, centre + half


def row(example: str, perturbation: str, severity: str, rank: int, score: float | None,
        reason: str = "", seed: int = 0) -> dict:
    return {"example_id": example, "perturbation": perturbation, "severity": severity,
            "severity_rank": rank, "seed": seed, "aspect": "overall", "score": score,
            "higher_is_better": True, "status": "ok" if score is not None else "missing",
            "reason": reason}


def table(originals: dict[str, float], variants: dict[tuple[str, str, str, int], float]
          ) -> pd.DataFrame:
    rows = [row(e, "original", "", -1, s) for e, s in originals.items()]
    rows += [row(e, p, sev, rank, s) for (e, p, sev, rank), s in variants.items()]
    return pd.DataFrame(rows)


def test_a_constant_evaluator_is_degenerate_and_not_trusted() -> None:
    # 4 examples, 2 perturbations x 2 severities: 4 originals + 16 variants, every score 1.0
    examples = ["a", "b", "c", "d"]
    frame = table({e: 1.0 for e in examples},
                  {(e, p, s, r): 1.0 for e in examples for p in ("drop", "swap")
                   for s, r in (("0.1", 0), ("0.5", 1))})
    gate = sanity_gate([frame], frame)
    spread = gate.spread[0]
    assert (spread.modal.value, spread.modal.count, spread.modal.scored) == (1.0, 20, 20)
    assert spread.degenerate and gate.degenerate and not gate.trusted
    assert gate.verdict == "fail"
    # ties are not "above": 0 of 8 (4 examples x 2 perturbations at their top severity)
    assert (gate.ranking.above, gate.ranking.pairs) == (0, 8)
    # every example wins 0 of its 2 pairs: every resample of the examples has share 0
    assert gate.ranking.interval == (0.0, 0.0) and gate.ranking.examples == 4
    said = gate.to_dict()
    # the pairs-as-independent Wilson interval, written beside it for comparison
    assert said["ranking"]["pairs_ci_high"] == pytest.approx(Z * Z / (8 + Z * Z), abs=1e-4)
    assert said["ranking"]["n"] == 4
    assert said["trusted"] is False and said["reasons"][0].startswith("degenerate: aspect "
                                                                      "overall gave 1 for 20")


def test_one_value_on_19_of_20_scores_is_degenerate_and_on_18_is_not() -> None:
    scores = [3.0] * 19 + [4.0]
    frame = pd.DataFrame([row(str(i), "original", "", -1, s) for i, s in enumerate(scores)])
    assert sanity_gate([frame], None).degenerate  # 19 / 20 = 95%
    frame.loc[0, "score"] = 2.0
    assert not sanity_gate([frame], None).degenerate  # 18 / 20 = 90%


def test_an_evaluator_that_prefers_damage_fails_the_ranking_check() -> None:
    # 10 examples, 2 perturbations; the top severity scores above the original except for
    # example e0 under "drop": 1 of 20 pairs has the original above
    examples = [f"e{i}" for i in range(10)]
    variants = {}
    for i, e in enumerate(examples):
        for p in ("drop", "swap"):
            variants[(e, p, "0.1", 0)] = 0.4 + i / 100
            variants[(e, p, "0.9", 1)] = 0.1 if (e, p) == ("e0", "drop") else 0.9 + i / 100
    frame = table({e: 0.5 + i / 100 for i, e in enumerate(examples)}, variants)
    check = rank_check(frame)
    assert check is not None and (check.above, check.pairs) == (1, 20)
    assert check.share == pytest.approx(0.05)
    # resampling the 10 examples: e0 (1 of its 2 pairs won) is drawn k ~ Binomial(10, 0.1)
    # times, the share is k / 20; P(k <= 2) = 0.930, P(k <= 3) = 0.987, so the 97.5th
    # percentile is k = 3: the interval is 0 to 3/20
    low, high = check.interval
    assert (low, high) == pytest.approx((0.0, 3 / 20))
    assert check.examples == 10
    assert check.to_dict()["pairs_ci_low"] == pytest.approx(wilson_by_hand(1, 20)[0], abs=1e-4)
    assert check.verdict == "fail"
    gate = sanity_gate([frame], frame)
    assert gate.trusted and gate.verdict == "warn"  # it varies and answers: a warning
    assert any(r.startswith("ranking fail") for r in gate.reasons())
    per = {(r.perturbation, r.severity): (r.above, r.pairs) for r in check.rows}
    assert per == {("drop", "0.9"): (1, 10), ("swap", "0.9"): (0, 10)}


def test_seeds_of_the_top_severity_are_averaged_before_the_comparison() -> None:
    rows = [row("a", "original", "", -1, 0.5),
            row("a", "drop", "0.9", 1, 0.2, seed=0), row("a", "drop", "0.9", 1, 0.7, seed=1)]
    check = rank_check(pd.DataFrame(rows))  # mean 0.45 < 0.5: the original is above
    assert check is not None and (check.above, check.pairs) == (1, 1)


def test_mostly_missing_scores_are_counted_with_the_commonest_reason() -> None:
    rows = [row(f"e{i}", "original", "", -1, 0.5 + i / 10) for i in range(2)]
    rows += [row(f"m{i}", "original", "", -1, None, "timeout") for i in range(5)]
    rows += [row(f"u{i}", "original", "", -1, None, "unparsable") for i in range(3)]
    gate = sanity_gate([pd.DataFrame(rows)], None)
    missing = gate.missing
    assert (missing.rows, missing.missing, missing.top_reason) == (10, 8, "timeout")
    assert missing.share == pytest.approx(0.8) and missing.mostly_missing
    assert not gate.trusted and not gate.degenerate  # two distinct values among two scores
    assert any(r.startswith("mostly missing: 8 of 10 scores missing (80%)")
               for r in gate.reasons())
    assert "the blind-spot run did not finish" in gate.notes[0]


def test_the_spread_shows_the_share_of_the_declared_range_it_covers() -> None:
    frame = pd.DataFrame([row("a", "original", "", -1, 1.6), row("b", "original", "", -1, 1.9)])
    spread = sanity_gate([frame], None, declared={"overall": (1.0, 5.0)}).spread[0]
    assert (spread.low, spread.high) == (1.6, 1.9)
    assert spread.range_share == pytest.approx(0.3 / 4.0)


def test_a_judge_that_writes_one_label_in_its_run_files_is_degenerate(tmp_path: Path) -> None:
    """The gate reads the answers from the run's own scores.parquet: the shipped 135M judge
    wrote "1" to every text while its expected ratings varied between 1.4 and 2.0."""
    rows = [row(f"e{i}", "original", "", -1, 1.4 + i / 50) for i in range(12)]
    rows += [row(f"e{i}", "drop", "0.9", 1, 1.5 + i / 40) for i in range(12)]
    frame = pd.DataFrame([{**r, "answer": "1"} for r in rows])
    run = tmp_path / "run"
    run.mkdir()
    frame.to_parquet(run / "scores.parquet")
    read = read_table(run)
    assert read is not None
    gate = sanity_gate([read], read)
    assert gate.degenerate and not gate.trusted and gate.verdict == "fail"
    (spread,) = gate.spread
    assert spread.by == "answer" and spread.modal.scored == 24
    # a run written before score rows carried answers: its scores vary, so it is no judge of
    # one label
    frame.drop(columns="answer").to_parquet(run / "scores.parquet")
    older = read_table(run)
    assert older is not None and not sanity_gate([older], older).degenerate


def two_aspect_table(wins: list[tuple[bool, bool]]) -> pd.DataFrame:
    """One perturbation, two aspects; example i's original beats its damage on aspect a or b
    as wins[i] says (ties never happen)."""
    rows = []
    for i, pair in enumerate(wins):
        for aspect, won in zip(("a", "b"), pair, strict=True):
            for record in (row(f"e{i}", "original", "", -1, 0.5),
                           row(f"e{i}", "drop", "0.9", 1, 0.4 if won else 0.6)):
                rows.append({**record, "aspect": aspect})
    return pd.DataFrame(rows)


def test_the_ranking_interval_resamples_examples_not_pairs() -> None:
    from scipy import stats

    # 20 examples, 2 aspects that agree perfectly within each example: 14 examples win both
    # pairs, 6 lose both. 28 of 40 pairs, but only 20 independent draws: the share over
    # resampled examples is Binomial(20, 0.7) / 20, whose 95% quantiles are 10/20 and 17/20
    agree = rank_check(two_aspect_table([(True, True)] * 14 + [(False, False)] * 6))
    assert agree is not None and (agree.above, agree.pairs, agree.examples) == (28, 40, 20)
    low, high = agree.interval
    assert low == pytest.approx(stats.binom.ppf(0.025, 20, 0.7) / 20, abs=0.05 + 1e-9)
    assert high == pytest.approx(stats.binom.ppf(0.975, 20, 0.7) / 20, abs=0.05 + 1e-9)
    naive_low, naive_high = wilson_by_hand(28, 40)
    assert high - low > naive_high - naive_low + 0.05  # wider than 40 pairs as independent
    # the same 28 of 40 pairs spread so every example wins 1 or 2 (8 win both, 12 one):
    # examples differ less, the interval is narrower than when the aspects agree
    spread = rank_check(two_aspect_table([(True, True)] * 8 + [(True, False)] * 12))
    assert spread is not None and (spread.above, spread.pairs) == (28, 40)
    s_low, s_high = spread.interval
    assert s_high - s_low < high - low
    # the verdict follows the example interval: it reaches 0.5 when aspects agree
    assert agree.verdict == ("unclear" if low <= 0.5 else "pass")


def test_the_ranking_interval_is_seeded_and_needs_two_examples() -> None:
    frame = two_aspect_table([(True, True)] * 14 + [(False, False)] * 6)
    assert rank_check(frame).interval == rank_check(frame).interval  # type: ignore[union-attr]
    assert "seed 1" in rank_check(frame, seed=1).to_dict()["ci_method"]  # type: ignore[union-attr]
    one = rank_check(two_aspect_table([(True, True)]))
    assert one is not None and one.interval == (None, None) and one.verdict == "unclear"
