"""ASR table: Wilson intervals by hand, queries per success, examples a method could not
attack, and the exact shape of analyses.adversarial (`$defs/adversarial` in
docs/results.schema.json)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from rich.console import Console

from evalstress.analyses.adversarial import AdversarialResult, asr_table, wilson
from evalstress.report.terminal import asr_terminal_table


def hand_wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


@pytest.mark.parametrize(("k", "n"), [(7, 20), (0, 20), (20, 20), (1, 3)])
def test_wilson_matches_the_formula(k: int, n: int) -> None:
    low, high = wilson(k, n)
    expected = hand_wilson(k, n)
    assert low == pytest.approx(max(0.0, expected[0]), abs=1e-9)
    assert high == pytest.approx(min(1.0, expected[1]), abs=1e-9)
    assert wilson(0, 0) == (None, None)


def rec(victim: str, direction: str, method: str, success: bool, queries: int,
        stop: str = "iterations", **extra: Any) -> dict[str, Any]:
    return {"example_id": extra.get("example_id", "e"), "victim": victim,
            "direction": direction, "method": method, "success": success, "queries": queries,
            "stop": stop, "original": "o", "text": "t", "gold": 80.0, "victim_score": 10.0,
            "gold_original": 75.0, "victim_original": 40.0, "iterations": 2}


def test_rows_per_victim_direction_method() -> None:
    records = [rec("rougeL", "good", "adveval", True, 9), rec("rougeL", "good", "adveval", False,
                                                              300),
               rec("rougeL", "good", "adveval", True, 33), rec("bleu", "good", "adveval", False,
                                                               300),
               rec("rougeL", "bad", "rule:jumble", False, 0, stop="not-applicable"),
               rec("rougeL", "bad", "rule:jumble", True, 4)]
    rows = {(r.victim, r.direction, r.method): r for r in asr_table(records)}
    adv = rows[("rougeL", "good", "adveval")]
    assert (adv.attempts, adv.successes) == (3, 2) and adv.asr == pytest.approx(2 / 3)
    assert adv.queries_per_success == pytest.approx(21.0)  # (9 + 33) / 2
    assert adv.mean_queries == pytest.approx(114.0)  # (9 + 300 + 33) / 3
    assert (adv.ci_low, adv.ci_high) == pytest.approx(hand_wilson(2, 3))
    bleu = rows[("bleu", "good", "adveval")]
    assert bleu.asr == 0 and bleu.queries_per_success is None
    jumble = rows[("rougeL", "bad", "rule:jumble")]
    assert (jumble.attempts, jumble.not_run, jumble.successes) == (1, 1, 1)
    assert list(rows) == [("rougeL", "good", "adveval"), ("bleu", "good", "adveval"),
                          ("rougeL", "bad", "rule:jumble")]


def test_asr_over_all_examples_counts_the_ones_a_rule_could_not_attack() -> None:
    # a rule given 4 examples: it applies to 2 (one success), cannot apply to 1, and the gold
    # could not score the last original. Applicable: 1 of 2; all: 1 of 4.
    records = [rec("bleu", "bad", "rule:question-word-change", True, 5),
               rec("bleu", "bad", "rule:question-word-change", False, 12),
               rec("bleu", "bad", "rule:question-word-change", False, 0, stop="not-applicable"),
               rec("bleu", "bad", "rule:question-word-change", False, 1,
                   stop="original-unscored")]
    [row] = asr_table(records)
    assert (row.attempts, row.successes, row.asr) == (2, 1, 0.5)
    assert (row.attempts_all, row.not_run, row.asr_all) == (4, 2, 0.25)
    assert (row.ci_low_all, row.ci_high_all) == pytest.approx(hand_wilson(1, 4))
    console = Console(record=True, width=200)
    console.print(asr_terminal_table(AdversarialResult.from_records(records, {})))
    shown = console.export_text()
    assert "50.0" in shown and "25.0" in shown and "(+2 n/a)" in shown


def test_result_has_the_contract_shape() -> None:
    records = [rec("rougeL", "good", "adveval", True, 9), rec("rougeL", "good", "adveval", False,
                                                              40)]
    params = {"tau_plus": 70, "tau_minus": 30, "delta": 40, "lambda": 1.0, "budget": 300,
              "candidates": 8, "trajectory": 10, "max_iterations": 30, "gold_samples": 8}
    data = AdversarialResult.from_records(records, params, info={"examples": 1}).to_dict()
    assert data["params"] == params
    assert set(data["asr"][0]) >= {"victim", "direction", "method", "attempts", "successes",
                                   "asr", "ci_low", "ci_high", "queries_per_success",
                                   "mean_queries"}
    assert data["successes"] == [{"example_id": "e", "victim": "rougeL", "direction": "good",
                                  "method": "adveval", "original": "o", "text": "t",
                                  "gold": 80.0, "victim_score": 10.0, "gold_original": 75.0,
                                  "victim_original": 40.0, "iterations": 2, "queries": 9}]
    assert data["examples"] == 1
    console = Console(record=True, width=160)
    console.print(asr_terminal_table(AdversarialResult.from_records(records, params)))
    shown = console.export_text()
    assert "50.0" in shown and "rougeL" in shown


@pytest.mark.slow
def test_a_suite_can_name_the_adversarial_analysis(tmp_path: Any) -> None:

    from evalstress.analyses.registry import StudyContext, analysis_names, run_analyses
    from evalstress.core.data import Example
    from evalstress.engine.runner import run
    from evalstress.evaluators.base import create_evaluator
    from evalstress.job import StressJob, run_job
    from evalstress.llm.fake_server import FakeServer, Reply
    from evalstress.suites import Suite

    assert "adversarial" in analysis_names()
    examples = [Example(f"e{i}", "summarization", "The mayor opened the new library today.",
                        hypothesis, ("The mayor opened the library.",))
                for i, hypothesis in enumerate(["The mayor opened a library.",
                                                "A new library was opened by the mayor today."])]
    suite = Suite.from_dict({"name": "s", "perturbations": ["truncation"], "seeds": [0],
                             "analyses": ["adversarial"], "options": {"attack": {
                                 "gold": "judge:model=g,base_url=URL", "methods": ["rules"],
                                 "budget": 5, "gold_samples": 1}}})
    out = tmp_path / "run"
    with FakeServer(default=Reply("70")) as server:
        suite.options["attack"] = {**suite.options["attack"],
                                   "gold": f"judge:model=g,base_url={server.base_url}"}
        done = run_job(StressJob(examples, suite, [create_evaluator("rouge:types=rougeL")],
                                 out=out, cache_dir=tmp_path / "cache", workers=1))
    data = done.analyses["adversarial"].to_dict()
    assert data["params"]["budget"] == 5
    # the victim is the run's evaluator, under the label its score table has
    assert {r["victim"] for r in data["asr"]} == set(done.run.table["evaluator"])
    # attacks.jsonl moves with the run into --out (it was written beside it, then lost when the
    # run directory replaced the folder)
    lines = (out / "attacks.jsonl").read_text().splitlines()
    assert len(lines) == 2 * 8  # two examples, eight rules, each in its own direction
    result = run(examples, suite, [create_evaluator("rouge:types=rougeL")])
    with pytest.raises(ValueError, match="scores texts itself: run it in a job"):
        run_analyses(["adversarial"], result, dict(suite.options))
    study = StudyContext(None, None, True, tmp_path)
    with pytest.raises(ValueError, match="needs a gold judge"):
        run_analyses(["adversarial"], result, {}, study)
    with pytest.raises(ValueError, match="did you mean 'budget'"):
        run_analyses(["adversarial"], result, {"attack": {"gold": "judge:model=g,base_url=x",
                                                          "budgte": 3}}, study)
