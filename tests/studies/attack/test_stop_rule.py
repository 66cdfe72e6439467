"""Paper 004's stop-and-return rule against ours, on a search scripted by hand.

Sec. 3.2 of the paper: the search ends when the feedback S passes the threshold or the
iterations run out, and returns the highest-S text; eq. 3 is judged on that text. Our
`first-success` rule stops at the first text meeting eq. 3. The script below is the case where
the two disagree: a success at S = 45 in iteration 1, then a failure at S = 60 in iteration 2.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evalstress.engine.scoring import open_cache
from evalstress.llm.generate import TextGenerator
from evalstress.studies.attack.methods import AdvEvalMethod
from evalstress.studies.attack.objective import AttackParams
from evalstress.studies.attack.protocol import resolve
from evalstress.studies.attack.run import Attacker
from evalstress.studies.attack.scoring import Gold, Victim, gold_evaluator
from evalstress.studies.attack.trajectory import Candidate, Trajectory

from .conftest import ORIGINAL, TableVictim, example, generator_spec, judge_spec

SAFE = "The harbour bridge is to be rebuilt from May."  # iteration 1, sample 8
BOLD = "Twelve million euros will rebuild the harbour bridge."  # iteration 2, sample 16

# direction good, lambda 1: S = gold - victim; success: gold >= 70 and gold - victim >= 40
GOLD = {ORIGINAL: 60.0, SAFE: 75.0, BOLD: 65.0}  # anything else: 60
VICTIM = {ORIGINAL: 50.0, SAFE: 30.0, BOLD: 5.0}  # anything else: 50
# by hand: original S = 10 (no success); SAFE S = 45, success (75 >= 70, gap 45 >= 40);
# BOLD S = 60, no success (65 < 70); fillers S = 10; the threshold 80 is never passed


def write(seed: int) -> str:
    text = {8: SAFE, 16: BOLD}.get(seed, f"The bridge will be rebuilt, draft {seed}.")
    return f"<text>{text}</text>"


def attack(server: Any, rule: str) -> Attacker:
    cache = open_cache()
    params = AttackParams(max_iterations=2, gold_samples=1, stop_rule=rule)
    gold = Gold([gold_evaluator(judge_spec(server), 1)], cache=cache)
    method = AdvEvalMethod(TextGenerator.from_spec(generator_spec(server)))
    return Attacker([example()], [Victim(TableVictim(VICTIM), cache=cache)], gold,
                    [method], ["good"], params)  # type: ignore[list-item]


def test_the_two_rules_give_different_verdicts(scripted: Callable[..., Any],
                                               tmp_path: Path) -> None:
    server, _ = scripted(write, lambda text: GOLD.get(text, 60.0))
    ours = attack(server, "first-success")
    [first] = ours.run(tmp_path / "ours" / "attacks.jsonl")
    assert (first.stop, first.iterations, first.text, first.success) == (
        "success", 1, SAFE, True)
    assert (first.gold, first.victim_score, first.feedback) == (75.0, 30.0, 45.0)
    paper = attack(server, "highest-feedback")
    [last] = paper.run(tmp_path / "paper" / "attacks.jsonl")
    # the paper's search goes on to iteration 2 and returns BOLD, the highest S, which fails
    assert (last.stop, last.iterations, last.text, last.success) == (
        "iterations", 2, BOLD, False)
    assert (last.gold, last.victim_score, last.feedback) == (65.0, 5.0, 60.0)
    assert any(c["text"] == SAFE and c["success"] for c in last.trajectory)
    # ASR over this one example: 1 under ours, 0 under the paper's
    assert ours.result([first]).asr[0].asr == 1.0
    assert paper.result([last]).asr[0].asr == 0.0
    # the rule that ran is in attacks.jsonl and the result results.json holds
    for name, attacker, record in (("ours", ours, first), ("paper", paper, last)):
        [line] = (tmp_path / name / "attacks.jsonl").read_text().splitlines()
        assert json.loads(line)["stop_rule"] == attacker.params.stop_rule
        block = attacker.result([record]).to_dict()  # results.json's analyses.adversarial
        assert block["params"]["stop_rule"] == attacker.params.stop_rule
        assert block["stop_rules"] == {"adveval": [attacker.params.stop_rule]}


def cand(text: str, s: float, success: bool = False) -> Candidate:
    return Candidate(text, 1, 50.0, 50.0, s, success)


def test_highest_feedback_returns_the_latest_of_equal_scores() -> None:
    # the released code sorts ascending (stable) and takes the last: the latest of equals
    t = Trajectory([cand("orig", 10), cand("win", 45, success=True), cand("a", 60),
                    cand("b", 60)])
    assert t.best("highest-feedback").text == "b"  # type: ignore[union-attr]
    assert t.best("first-success").text == "win"  # type: ignore[union-attr]


def test_an_unknown_stop_rule_is_refused() -> None:
    with pytest.raises(ValueError, match="Did you mean 'highest-feedback'"):
        AttackParams(stop_rule="highest-feedbak")


def test_the_paper_protocol_fills_what_the_user_left_out() -> None:
    default = resolve(None, generator="model=g,base_url=http://x/v1")
    assert (default.protocol, default.stop_rule, default.reference, default.patience) == (
        "default", "first-success", "example", 3)
    assert default.generator == "model=g,base_url=http://x/v1"
    paper = resolve("paper", generator="model=g,base_url=http://x/v1")
    assert (paper.stop_rule, paper.reference, paper.patience) == (
        "highest-feedback", "original", 1)
    assert paper.generator == {"model": "g", "base_url": "http://x/v1", "temperature": 1.0,
                               "max_tokens": 512}
    mine = resolve("paper", stop_rule="first-success", patience=4,
                   generator="g,temperature=0.2")
    assert (mine.stop_rule, mine.patience) == ("first-success", 4)
    assert mine.generator == {"model": "g", "temperature": 0.2, "max_tokens": 512}
    with pytest.raises(ValueError, match="Did you mean 'paper'"):
        resolve("papers")
