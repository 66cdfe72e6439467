"""The AdvEval loop against a fake generator and gold judge: success, budget accounting, the
trajectory in the prompt, rejected candidates, and resuming after a kill with no repeated call."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from evalstress.engine.scoring import open_cache
from evalstress.llm.generate import TextGenerator
from evalstress.studies.attack.base import AttackSetup
from evalstress.studies.attack.methods import AdvEvalMethod, AdvEvalVictimMethod
from evalstress.studies.attack.objective import AttackParams
from evalstress.studies.attack.run import Attacker
from evalstress.studies.attack.scoring import Gold, Victim, gold_evaluator

from .conftest import ORIGINAL, SOURCE, TableVictim, example, generator_spec, judge_spec


def attacker(server: Any, victim: TableVictim, params: AttackParams, *, direction: str = "good",
             examples: int = 1) -> Attacker:
    cache = open_cache()
    gold = Gold([gold_evaluator(judge_spec(server), params.gold_samples)], cache=cache)
    method = AdvEvalMethod(TextGenerator.from_spec(generator_spec(server)))
    return Attacker([example(i) for i in range(examples)], [Victim(victim, cache=cache)], gold,
                    [method], [direction], params)  # type: ignore[list-item]


def cand(seed: int) -> str:
    return f"<text>The bridge will be rebuilt, version {seed}.</text>"


def test_scripted_success_stops_at_once(scripted: Callable[..., Any]) -> None:
    # original: gold 80, victim 60 -> S = 20, no success (gap 20 < 40)
    # iteration 1 writes samples 8..15; sample 13 gets victim 20: gold 75 - 20 = 55 -> success
    server, script = scripted(cand, lambda text: 80 if text == ORIGINAL else 75)
    table = {ORIGINAL: 60.0, "The bridge will be rebuilt, version 13.": 20.0}
    params = AttackParams(gold_samples=2)
    run = attacker(server, TableVictim(table), params)
    [record] = run.run()
    assert record.success and record.stop == "success"
    assert record.text == "The bridge will be rebuilt, version 13."
    assert (record.gold, record.victim_score, record.feedback) == (75.0, 20.0, 55.0)
    assert (record.gold_original, record.victim_original) == (80.0, 60.0)
    assert record.iterations == 1 and record.queries == 9  # the original + 8 candidates
    assert len(script.generations()) == 8
    assert [c["iteration"] for c in record.trajectory] == [0] + [1] * 8


def test_budget_counts_victim_queries_and_cuts_the_last_batch(
        scripted: Callable[..., Any]) -> None:
    server, _ = scripted(cand, lambda text: 60)  # never a success, S = 10 < threshold
    victim = TableVictim(default=50.0)
    params = AttackParams(budget=11, gold_samples=1)
    [record] = attacker(server, victim, params).run()
    assert record.stop == "budget" and record.queries == 11 and not record.success
    assert record.iterations == 2 and len(record.trajectory) == 11
    assert len(victim.seen) == 11 and len(set(victim.seen)) == 11
    assert record.gold_queries == 11  # texts beyond the budget never reach the gold either


def test_prompt_shows_the_top_ten_in_ascending_order(scripted: Callable[..., Any]) -> None:
    server, script = scripted(cand, lambda text: 60)

    def victim_score(text: str) -> float:
        found = re.search(r"version (\d+)", text)
        return 50.0 if found is None else float(int(found[1]) * 7 % 23)

    params = AttackParams(max_iterations=3, gold_samples=1, stop_threshold=None, delta=100)
    [record] = attacker(server, TableVictim(victim_score), params).run()
    assert record.stop == "iterations" and len(record.trajectory) == 1 + 3 * 8
    third = [b for b in script.generations() if 24 <= b["seed"] < 32]
    prompt = third[0]["messages"][-1]["content"]
    shown = [float(s) for s in re.findall(r"Score: (-?\d+\.\d)", prompt)]
    # after two iterations: 17 candidates; S = 60 - victim; the ten best, ascending
    feedbacks = sorted((c["feedback"] for c in record.trajectory
                        if c["iteration"] <= 2), reverse=True)[:10]
    assert shown == sorted(feedbacks) and len(shown) == 10
    assert SOURCE in prompt and "<text>" in prompt


def test_unusable_answers_are_counted_not_scored(scripted: Callable[..., Any]) -> None:
    answers = {8: f"<text>{SOURCE}</text>", 9: "I'm sorry, I cannot help with that.",
               10: "<text></text>", 11: f"<text>{ORIGINAL}</text>", 12: "<text>cut off"}
    server, _ = scripted(lambda seed: answers.get(seed, cand(seed)), lambda text: 60)
    params = AttackParams(max_iterations=1, gold_samples=1)
    [record] = attacker(server, TableVictim(), params).run()
    assert record.rejections == {"copy-of-source": 1, "refusal": 1, "empty": 1,
                                 "duplicate": 1, "cut-off": 1}
    assert len(record.trajectory) == 1 + 3 and record.queries == 4


def test_unparsable_gold_drops_the_candidate(scripted: Callable[..., Any]) -> None:
    server, _ = scripted(cand, lambda text: 60 if text == ORIGINAL else "no idea")
    params = AttackParams(max_iterations=2, gold_samples=1, patience=3)
    [record] = attacker(server, TableVictim(), params).run()
    assert record.rejections["gold-missing"] == 16 and record.queries == 1
    assert record.stop == "iterations"


def test_no_usable_candidate_stops_after_patience(scripted: Callable[..., Any]) -> None:
    server, _ = scripted(lambda seed: "I'm sorry, I can't.", lambda text: 60)
    params = AttackParams(patience=2, gold_samples=1)
    [record] = attacker(server, TableVictim(), params).run()
    assert record.stop == "no-candidates" and record.iterations == 2
    assert record.rejections == {"refusal": 16}


def test_killed_attack_resumes_without_repeating_a_call(scripted: Callable[..., Any]) -> None:
    def victim_score(text: str) -> float:
        found = re.search(r"version (\d+)", text)
        return 60.0 if found is None else 35.0 - int(found[1]) % 5

    server, script = scripted(cand, lambda text: 70)
    params = AttackParams(max_iterations=4, gold_samples=3, stop_threshold=None)
    with pytest.raises(KeyboardInterrupt):  # dies scoring the victim in iteration 3, example 1
        attacker(server, TableVictim(victim_score, kill_on_batch=8), params, examples=2).run()
    calls_before = server.calls
    assert calls_before > 0
    resumed = attacker(server, TableVictim(victim_score), params, examples=2)
    records = resumed.run()
    keys = script.keys()
    assert len(keys) == len(set(keys)), "a request was sent twice"
    assert server.calls > calls_before
    again = attacker(server, TableVictim(victim_score), params, examples=2).run()
    assert server.calls == len(keys)  # the third run is served from the caches
    strip = [{k: v for k, v in r.to_dict().items() if k != "seconds"} for r in records]
    assert strip == [{k: v for k, v in r.to_dict().items() if k != "seconds"} for r in again]


def test_setup_budget_is_per_attack(scripted: Callable[..., Any]) -> None:
    server, _ = scripted(cand, lambda text: 60)
    cache = open_cache()
    victim = Victim(TableVictim(), cache=cache)
    victim.calibrate([example()])
    gold = Gold([gold_evaluator(judge_spec(server), 1)], cache=cache)
    gold.calibrate([example()])
    first = AttackSetup(example(), victim, gold, "good", AttackParams(budget=3))
    assert [m.value for m in first.victim_scores(["a", "b", "c", "d"])] == [50.0] * 3
    assert first.budget.exhausted and first.victim_scores(["e"]) == []
    second = AttackSetup(example(), victim, gold, "good", AttackParams(budget=3))
    assert second.budget.used == 0


def test_victim_only_search_ends_on_the_victim_and_the_gold_judges_its_answer(
        scripted: Callable[..., Any]) -> None:
    # paper 004, Table 8: the search guided by the victim alone, from another example's text.
    # Direction bad; victim-only S = victim. Iteration 1: LOUD gets victim 85 (S = 85 > 80: the
    # search stops at once) but gold 60; QUIET gets victim 75 and gold 10. By hand:
    # victim-only returns LOUD: gold 60 > tau- 30, a failure. The gold-guided search (paper
    # rule) sees S = 85 - 60 = 25 and 75 - 10 = 65, returns QUIET: 10 <= 30 and 65 >= 40.
    loud, quiet = "The bridge is already open again.", "The mayor cancelled the whole project."
    answers = {8: f"<text>{loud}</text>", 9: f"<text>{quiet}</text>"}
    gold = {loud: 60.0, quiet: 10.0}
    victim_table = {loud: 85.0, quiet: 75.0}
    server, script = scripted(lambda seed: answers.get(seed, cand(seed)),
                              lambda text: gold.get(text, 50.0))
    cache = open_cache()
    params = AttackParams(gold_samples=1, max_iterations=1, stop_rule="highest-feedback")
    generator = TextGenerator.from_spec(generator_spec(server))
    examples = [example(0), example(1, "Shops fear the closure of the bridge.")]

    def attack(method: Any) -> Any:
        judge = Gold([gold_evaluator(judge_spec(server), 1)], cache=cache)
        victim = Victim(TableVictim(victim_table, default=20.0), cache=cache)
        return Attacker(examples, [victim], judge, [method], ["bad"], params).run()

    asked = len(script.bodies) - len(script.generations())
    records = attack(AdvEvalVictimMethod(generator))
    judged = len(script.bodies) - len(script.generations()) - asked
    assert judged == len(records) == 2  # the gold saw each search's returned text only
    only = records[0]
    assert only.method == "adveval-victim" and only.start == "random:ex-1"
    assert (only.stop, only.text, only.gold, only.victim_score) == ("threshold", loud, 60.0, 85.0)
    assert not only.success and only.stop_rule == "highest-feedback" and only.gold_queries == 1
    assert [c["gold"] for c in only.trajectory[:-1]] == [None] * (len(only.trajectory) - 1)
    full = attack(AdvEvalMethod(generator))[0]
    assert (full.text, full.gold, full.victim_score, full.success) == (quiet, 10.0, 75.0, True)
