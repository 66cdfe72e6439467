"""The blind-spot rows' four-way verdicts, on score tables whose answers follow by hand."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pytest

import evalstress
from evalstress.analyses.blindspot import blindspot
from evalstress.analyses.blindspot_stats import outcome_text
from evalstress.core.records import ORIGINAL, SCORE_COLUMNS
from evalstress.core.strict import ConfigError, UnknownNameError
from evalstress.evaluators.base import ScoreRequest

SCHEMA = json.loads((Path(__file__).parents[2] / "docs" / "results.schema.json")
                    .read_text(encoding="utf-8"))


def table(gold: list[float], curves: dict[str, list[list[list[float]]]], *,
          higher: bool = True, levels: list[str] | None = None) -> pd.DataFrame:
    """curves: perturbation -> per severity, per seed, each example's score; `levels` names
    the severities (default 0.1, 0.2, ... as floats)."""
    base = {"task": "qa", "evaluator": "m", "aspect": "a", "higher_is_better": higher,
            "status": "ok", "reason": ""}
    rows = [{**base, "example_id": f"e{i}", "perturbation": ORIGINAL, "severity": "",
             "severity_rank": -1, "seed": -1, "noise_ratio": 0.0, "score": g}
            for i, g in enumerate(gold)]
    for pert, severities in curves.items():
        for rank, per_seed in enumerate(severities):
            for seed, scores in enumerate(per_seed):
                rows.extend({**base, "example_id": f"e{i}", "perturbation": pert,
                             "severity": levels[rank] if levels else str(0.1 * (rank + 1)),
                             "severity_rank": rank,
                             "seed": seed, "noise_ratio": 0.1 * (rank + 1), "score": s}
                            for i, s in enumerate(scores))
    return pd.DataFrame(rows, columns=SCORE_COLUMNS)


GOLD = [40.0, 50.0, 60.0, 45.0, 55.0, 35.0, 65.0, 50.0, 42.0, 58.0]


def shifted(by: float) -> list[float]:
    return [g + by for g in GOLD]


def row_of(result, name):  # type: ignore[no-untyped-def]
    return next(r for r in result.rows if r.perturbation == name)


def test_constant_shifts_detect_blind_and_reverse() -> None:
    data = table(GOLD, {"drops": [[shifted(-5)]], "still": [[shifted(0)]],
                        "rises": [[shifted(+5)]]})
    result = blindspot(data, tolerance=1.0)
    drops, still, rises = (row_of(result, n) for n in ("drops", "still", "rises"))
    # every example moves by exactly the shift: each interval is the point itself
    assert (drops.points[0].test["low"], drops.points[0].test["high"]) == (5.0, 5.0)
    assert (drops.outcome, still.outcome, rises.outcome) == ("detects", "blind", "reversed")
    # paper 002's strict verdict and the tolerant one stay beside it
    assert not still.rank_strict_pass and not still.rank_tolerant_pass
    assert not rises.rank_pass and drops.rank_pass
    # a 5-point drop of a mean of 50 is -10%, but resampled examples of other scores move
    # the ratio: the interval holds -10% and stays inside -5/35 .. -5/65
    relative = drops.points[0].relative
    assert relative["change"] == pytest.approx(-0.1)
    assert -5 / 35 <= relative["low"] < -0.1 < relative["high"] <= -5 / 65
    # a constant ratio: every resample gives it
    scaled = blindspot(table(GOLD, {"p": [[[0.9 * g for g in GOLD]]]})).rows[0]
    assert scaled.points[0].relative == pytest.approx({"change": -0.1, "low": -0.1,
                                                       "high": -0.1})


def test_a_sequential_rows_tolerance_comes_from_every_original_of_the_run() -> None:
    """A row that stopped before the one extreme original (a sequential design) keeps the
    tolerance the exhaustive row has: `tolerance_over="run"` reads the spread of every
    original the run scored, `row` only of the examples the row has variants of."""
    gold = [*GOLD, 400.0]  # e10: a rare extreme original, as negated perplexity has
    data = table(gold, {"p": [[shifted(-1)]]})  # the row's variants: e0..e9 only
    by_row = row_of(blindspot(data), "p").delta
    by_run = row_of(blindspot(data, tolerance_over="run"), "p").delta
    assert by_row == pytest.approx(0.2 * float(np.std(GOLD, ddof=1)))
    assert by_run == pytest.approx(0.2 * float(np.std(gold, ddof=1)))  # about 23 against 1.9
    with pytest.raises(UnknownNameError, match="tolerance_over"):
        blindspot(data, tolerance_over="rows")


def test_the_default_tolerance_is_a_fifth_of_the_originals_spread() -> None:
    result = blindspot(table(GOLD, {"p": [[shifted(-1)]]}))
    row = result.rows[0]
    assert row.delta == pytest.approx(0.2 * float(np.std(GOLD, ddof=1)))  # 0.2 x 9.59 = 1.92
    # a 1-point drop lies inside +-1.92 at every resample: blind, though it drops 2%
    assert row.outcome == "blind" and row.rank_tolerant_pass
    assert blindspot(table(GOLD, {"p": [[shifted(-1)]]}), tol_share=0.05).rows[0].outcome \
        == "detects"  # 0.05 x 9.59 = 0.48 < 1


def test_seeds_are_averaged_inside_their_example() -> None:
    # seed 0 drops 2, seed 1 drops 4: every example drops 3; 10 pairs, not 20
    result = blindspot(table(GOLD, {"p": [[shifted(-2), shifted(-4)]]}), tolerance=1.0)
    test = result.rows[0].points[0].test
    assert (test["low"], test["high"], test["n"]) == (3.0, 3.0, 10)


def test_lower_is_better_orients_the_difference() -> None:
    result = blindspot(table(GOLD, {"up": [[shifted(+5)]]}, higher=False), tolerance=1.0)
    assert result.rows[0].outcome == "detects"  # a higher error rate is worse


def test_a_noisy_rise_between_severities_is_not_a_monotonic_failure() -> None:
    rng = np.random.default_rng(0)
    gold = list(rng.uniform(40, 60, 12))
    light = [g - 10 for g in gold]
    # the heavier severity scores 1 point better on average, with a spread of 10 points
    noise = rng.normal(0, 10, 12)
    heavy = [v + 1 + n - noise.mean() for v, n in zip(light, noise, strict=True)]
    row = blindspot(table(gold, {"p": [[light], [heavy]]}), tolerance=0.5).rows[0]
    assert not row.monotonic_tolerant_pass  # the old test: the means rise by 1 > 0.5
    assert row.monotonic_outcome == "no significant rise"
    step = row.steps[0]
    assert step["low"] < 0.5 < step["high"] and step["verdict"] == "inconclusive"
    # a clean 5-point rise on every example is a failure
    clean = blindspot(table(gold, {"p": [[light], [[v + 5 for v in light]]]}),
                      tolerance=0.5).rows[0]
    assert clean.monotonic_outcome == "rises"


def test_an_undecided_row_says_how_many_examples_would_settle_it() -> None:
    rng = np.random.default_rng(4)
    drops = rng.normal(2.0, 3.0, 10)  # mean near 2, spread 3: 10 examples cannot tell
    row = blindspot(table(GOLD, {"p": [[[g - d for g, d in zip(GOLD, drops, strict=True)]]]}),
                    tolerance=1.0).rows[0]
    test = row.points[0].test
    assert test is not None
    assert row.outcome == "inconclusive" and test["low"] < 1.0 < test["high"]
    half, room = (test["high"] - test["low"]) / 2, abs(test["estimate"] - 1.0)
    assert row.n_to_settle == int(np.ceil(10 * (half / room) ** 2))


def test_a_row_blind_only_at_light_damage_is_blind_up_to_that_severity() -> None:
    # each example moves by exactly the shift, so every interval is the shift itself: 0 lies
    # inside +-1 (blind), a 5-point drop beyond it (detects)
    levels = ["0.1", "0.3", "0.5"]
    data = table(GOLD, {"light-only": [[shifted(0)], [shifted(-5)], [shifted(-5)]],
                        "everywhere": [[shifted(0)], [shifted(0)], [shifted(0)]],
                        "heavy-only": [[shifted(-5)], [shifted(-5)], [shifted(0)]],
                        "gap": [[shifted(0)], [shifted(-1)], [shifted(-5)]]},
                 levels=levels)
    result = blindspot(data, tolerance=1.0)
    light, every, heavy, gap = (row_of(result, n) for n in
                                ("light-only", "everywhere", "heavy-only", "gap"))
    assert [p.test["verdict"] for p in light.points] == ["blind", "detects", "detects"]
    assert (light.outcome, light.blind_up_to, light.detects_from) == ("partly blind", "0.1",
                                                                      "0.3")
    assert outcome_text(light.to_dict()) == "blind up to 0.1 (detects from 0.3)"
    assert (every.outcome, every.blind_up_to, every.detects_from) == ("blind", None, None)
    assert outcome_text(every.to_dict()) == "blind"
    # the heaviest damage decides a headline blind spot, whatever the lighter ones do
    assert heavy.outcome == "blind"
    # a 1-point drop sits on the tolerance: undecided at 0.3, so detection starts at 0.5
    assert [p.test["verdict"] for p in gap.points] == ["blind", "inconclusive", "detects"]
    assert (gap.outcome, gap.blind_up_to, gap.detects_from) == ("partly blind", "0.1", "0.5")
    defs = {"$defs": SCHEMA["$defs"]}
    jsonschema.validate({**result.to_dict(), **defs}, {**SCHEMA["$defs"]["blindspot"], **defs})


def test_a_partly_blind_row_with_undecided_heavier_damage_says_so() -> None:
    rng = np.random.default_rng(4)
    drops = rng.normal(2.0, 3.0, 10)  # mean near 2, spread 3: 10 examples cannot tell
    noisy = [g - d for g, d in zip(GOLD, drops, strict=True)]
    row = blindspot(table(GOLD, {"p": [[shifted(0)], [noisy]]}, levels=["0.1", "0.5"]),
                    tolerance=1.0).rows[0]
    assert [p.test["verdict"] for p in row.points] == ["blind", "inconclusive"]
    assert (row.outcome, row.blind_up_to, row.detects_from) == ("partly blind", "0.1", None)
    assert outcome_text(row.to_dict()) == "blind up to 0.1 (undecided above)"


def test_a_reversal_at_any_severity_and_named_kinds_keep_their_rule() -> None:
    data = table(GOLD, {"p": [[shifted(0)], [shifted(+5)], [shifted(-5)]]},
                 levels=["0.1", "0.3", "0.5"])
    assert blindspot(data, tolerance=1.0).rows[0].outcome == "reversed"
    # severities that name kinds have no heaviest one: a blind kind is a blind spot
    kinds = table(GOLD, {"k": [[shifted(0)], [shifted(-5)]]}, levels=["begin", "end"])
    assert blindspot(kinds, tolerance=1.0).rows[0].outcome == "blind"


def test_settings_are_checked() -> None:
    data = table(GOLD, {"p": [[shifted(-1)]]})
    with pytest.raises(UnknownNameError, match="Did you mean 'holm'"):
        blindspot(data, correction="hol")
    with pytest.raises(ValueError, match="above 0"):
        blindspot(data, tolerance={"m": 0.0})
    assert blindspot(data, tolerance={"m/a": 3.0}).rows[0].delta_rule == "declared (m/a)"
    with pytest.raises(UnknownNameError, match="Did you mean 'm/a'"):
        blindspot(data, tolerance={"m/b": 3.0})


def test_the_result_matches_the_schema_and_names_its_rules() -> None:
    result = blindspot(table(GOLD, {"p": [[shifted(-5)], [shifted(-1)]]}), correction="holm",
                       n_boot=500).to_dict()
    defs = {"$defs": SCHEMA["$defs"]}
    jsonschema.validate({**result, **defs}, {**SCHEMA["$defs"]["blindspot"], **defs})
    stats = result["statistics"]
    assert (stats["correction"], stats["n_tests"]) == ("holm", 3)  # 2 severities + 1 step
    # three tests, Holm: the first step needs p <= 0.05/3, which 500 resamples reach
    assert stats["alpha_eff"] in (pytest.approx(0.05 / 3), 0.025, 0.05)


def words(request: ScoreRequest) -> float:
    return float(len(request.text.split()))


def check_summeval(data: Path, cache: Path) -> None:
    """Word counts of SummEval highlights: switching sentences keeps every word (blind, the
    interval exactly 0), cutting the text loses words (detects, by the mean words lost)."""
    result = evalstress.stress(data / "summeval.jsonl", {"words": words},
                               perturbations=["sentence-switching", "truncation"], seeds=2, limit=20,
                               mapping=["hypothesis=highlight"], task="summarization",
                               options={"correction": "holm", "tolerance": {"words": 1.0},
                                        "n_boot": 4000}, cache_dir=cache, progress=False)
    rows = {r["perturbation"]: r for r in result.analyses["blindspot"].to_dict()["rows"]}
    swap, cut = rows["sentence-switching"], rows["truncation"]
    assert swap["outcome"] == "blind" and swap["delta_rule"] == "declared (words)"
    assert all((p["test"]["low"], p["test"]["high"]) == (0.0, 0.0) for p in swap["points"])
    assert cut["outcome"] == "detects"
    # the words lost at the heaviest cut, per example averaged over its seeds, from the texts
    variants = result.variants()
    heaviest = max(cut["points"], key=lambda p: float(p["severity"]))
    chosen = variants[(variants["perturbation"] == "truncation")
                      & (variants["severity"].astype(float) == float(heaviest["severity"]))]
    originals = {e.id: len(e.hypothesis.split()) for e in result.run.plan.examples}
    lost = (chosen.assign(lost=[originals[e] - len(t.split()) for e, t in
                                zip(chosen["example_id"], chosen["text"], strict=True)])
            .groupby("example_id")["lost"].mean())
    assert heaviest["test"]["estimate"] == pytest.approx(lost.mean())
    assert heaviest["test"]["n"] == len(lost)


@pytest.mark.slow
def test_real_summeval_word_counts(shared_data: Path, tmp_path: Path) -> None:
    check_summeval(shared_data, tmp_path / "cache")


def test_the_options_reach_the_analysis_through_the_run_settings(tmp_path: Path) -> None:
    result = evalstress.stress(None, {"words": words}, perturbations=["truncation"], seeds=1,
                               limit=3, options={"correction": "holm", "tolerance": 2.0,
                                                 "n_boot": 500, "alpha": 0.1},
                               cache_dir=tmp_path / "cache", progress=False)
    stats = result.analyses["blindspot"].to_dict()["statistics"]
    assert (stats["correction"], stats["n_boot"], stats["alpha"]) == ("holm", 500, 0.1)
    assert result.analyses["blindspot"].rows[0].delta_rule == "declared (*)"
    with pytest.raises(ConfigError, match="Did you mean 'correction'"):
        evalstress.stress(None, {"words": words}, perturbations=["truncation"], seeds=1,
                          limit=3, options={"corection": "holm"}, progress=False)


def test_holm_says_when_the_resamples_cannot_reach_its_first_step() -> None:
    # 10 severities: 10 tests + 9 steps = 19; Holm's first step needs p <= 0.05 / 19 = 0.0026,
    # below the smallest p of 200 resamples, 2 / 201 = 0.00995
    data = table(GOLD, {"p": [[shifted(-5)] for _ in range(10)]})
    result = blindspot(data, correction="holm", n_boot=200, tolerance=1.0)
    (note,) = result.notes
    assert "Holm over 19 tests" in note and "at least 760" in note  # 2 x 19 / 0.05
    assert result.rows[0].outcome == "inconclusive"  # nothing can be claimed
    assert blindspot(data, correction="bh", n_boot=200, tolerance=1.0).rows[0].outcome == \
        "detects"  # BH: all 10 severity tests share the threshold 10 x 0.05 / 19
