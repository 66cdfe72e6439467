"""`--protocol paper` against our default on searches scripted by hand, one detail at a time
where paper 004's released code (`optimizer_base.py`, `optimizer_palm.py`) and appendix A.2
differ from our choices: what ends a search for want of candidates, the victim-only start, the
strict thresholds of eq. 3, the prompt, ties in the top-k and the rounding of S."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from evalstress.engine.scoring import open_cache
from evalstress.llm.fake_server import FakeServer, Reply
from evalstress.llm.generate import TextGenerator
from evalstress.studies.attack.methods import AdvEvalMethod, AdvEvalVictimMethod
from evalstress.studies.attack.objective import AttackParams, search_feedback, succeeded
from evalstress.studies.attack.prompt import build_messages
from evalstress.studies.attack.protocol import resolve
from evalstress.studies.attack.run import Attacker
from evalstress.studies.attack.scoring import (
    FRESH_SEED_SHIFT,
    Gold,
    Victim,
    fresh_gold_evaluator,
    gold_evaluator,
)
from evalstress.studies.attack.trajectory import Candidate, Trajectory

from .conftest import (
    GENERATOR_SYSTEM,
    ORIGINAL,
    TableVictim,
    example,
    generator_spec,
    judge_spec,
    judged_text,
)

EARLY = "The bridge will be rebuilt from May."
WIN = "Twelve million euros buy the harbour a new bridge from May."


def params(protocol: str, **extra: Any) -> AttackParams:
    """The paper's stop rule and patience under both protocols, so only `protocol` differs."""
    base = {"stop_rule": "highest-feedback", "patience": 1, "gold_samples": 1,
            "candidates": 1, "protocol": protocol}
    return AttackParams(**{**base, **extra})


def run_one(server: Any, victim: dict[str, float], chosen: AttackParams, *,
            method: Any = None, directions: tuple[str, ...] = ("good",),
            examples: int = 1) -> list[Any]:
    return make_attacker(server, victim, chosen, method=method, directions=directions,
                         examples=examples).run()


def make_attacker(server: Any, victim: dict[str, float], chosen: AttackParams, *,
                  method: Any = None, directions: tuple[str, ...] = ("good",),
                  examples: int = 1) -> Attacker:
    cache = open_cache()
    gold = Gold([gold_evaluator(judge_spec(server), 1)], cache=cache)
    method = method or AdvEvalMethod(TextGenerator.from_spec(generator_spec(server)))
    pool = [example(0), example(1, "Shops fear the closure of the bridge.")][:examples]
    attacker = Attacker(pool,
                        [Victim(TableVictim(victim), cache=cache)], gold, [method],
                        list(directions), chosen)  # type: ignore[arg-type]
    return attacker


def test_a_repeat_is_no_reason_to_give_up_under_the_paper_protocol(
        scripted: Callable[..., Any]) -> None:
    # one candidate an iteration (the sample index is the iteration): 1 writes EARLY, 2 repeats
    # it, 3 writes WIN. Direction good, S = gold - victim. By hand: original 60 - 35 = 25,
    # EARLY 60 - 50 = 10, WIN 90 - 5 = 85 > 80 (stop) and 90 > 70 with a gap of 85 >= 40.
    answers = {1: EARLY, 2: EARLY, 3: WIN}
    gold = {ORIGINAL: 60.0, EARLY: 60.0, WIN: 90.0}
    victim = {ORIGINAL: 35.0, EARLY: 50.0, WIN: 5.0}
    server, _ = scripted(lambda seed: f"<text>{answers.get(seed, EARLY)}</text>",
                         lambda text: gold.get(text, 50.0))
    [ours] = run_one(server, victim, params("default"))
    # ours: iteration 2 brought nothing new, patience 1 is spent; the best is the original
    assert (ours.stop, ours.iterations, ours.feedback, ours.success) == (
        "no-candidates", 2, 25.0, False)
    [paper] = run_one(server, victim, params("paper"))
    # the code gives up only when the generator returns no text: it goes on and wins
    assert (paper.stop, paper.iterations, paper.text) == ("threshold", 3, WIN)
    assert (paper.gold, paper.victim_score, paper.feedback, paper.success) == (
        90.0, 5.0, 85.0, True)
    assert paper.rejections == {"duplicate": 1}


def test_no_parseable_text_still_ends_a_paper_search(scripted: Callable[..., Any]) -> None:
    server, _ = scripted(lambda seed: "I'm sorry, I can't." if seed == 2 else
                         f"<text>{EARLY}</text>", lambda text: 60.0)
    [record] = run_one(server, {ORIGINAL: 35.0, EARLY: 50.0}, params("paper"))
    assert (record.stop, record.iterations, record.rejections) == (
        "no-candidates", 2, {"refusal": 1})


def test_the_victim_only_search_starts_at_random_only_towards_bad(
        scripted: Callable[..., Any]) -> None:
    # sec. 4.6: a random start "to avoid direct termination with initial input", for the bad
    # direction; towards good the paper protocol starts from the original
    server, _ = scripted(lambda seed: f"<text>{EARLY}</text>", lambda text: 50.0)
    generator = TextGenerator.from_spec(generator_spec(server))

    def starts(protocol: str, method: AdvEvalVictimMethod) -> dict[str, str]:
        records = run_one(server, {}, params(protocol, max_iterations=1), method=method,
                          directions=("good", "bad"), examples=2)
        return {r.direction: r.start for r in records if r.example_id == "ex-0"}

    assert starts("default", AdvEvalVictimMethod(generator)) == {
        "good": "random:ex-1", "bad": "random:ex-1"}
    assert starts("paper", AdvEvalVictimMethod(generator)) == {
        "good": "original", "bad": "random:ex-1"}
    # a start the method spec names wins over the protocol
    assert starts("paper", AdvEvalVictimMethod(generator, start="random")) == {
        "good": "random:ex-1", "bad": "random:ex-1"}


@pytest.mark.parametrize(("direction", "gold", "victim", "ours", "paper"), [
    ("good", 70.0, 20.0, True, False),   # "exceeding 70": 70 itself is not enough
    ("good", 70.5, 20.0, True, True),
    ("bad", 30.0, 80.0, True, False),    # "below 30": 30 itself is not enough
    ("bad", 29.5, 80.0, True, True),
    ("good", 90.0, 50.0, True, True),    # the gap of delta 40 is met at 40 under both
])
def test_eq_3_is_strict_at_the_thresholds_under_the_paper_protocol(
        direction: str, gold: float, victim: float, ours: bool, paper: bool) -> None:
    assert succeeded(direction, gold, victim, AttackParams()) is ours  # type: ignore[arg-type]
    assert succeeded(direction, gold, victim,  # type: ignore[arg-type]
                     AttackParams(protocol="paper")) is paper


def test_a_gold_of_exactly_70_is_no_paper_success(scripted: Callable[..., Any]) -> None:
    # iteration 1 writes EARLY: gold 70, victim 20, S = 50 -> eq. 3 holds with >=, not with >
    server, _ = scripted(lambda seed: f"<text>{EARLY}</text>",
                         lambda text: 70.0 if text == EARLY else 60.0)
    victim = {ORIGINAL: 50.0, EARLY: 20.0}
    ours_attack = make_attacker(server, victim, params("default", max_iterations=1))
    paper_attack = make_attacker(server, victim, params("paper", max_iterations=1))
    [ours], [paper] = ours_attack.run(), paper_attack.run()
    assert (ours.text, ours.gold, ours.success) == (EARLY, 70.0, True)
    assert (paper.text, paper.gold, paper.success) == (EARLY, 70.0, False)
    # the report's note states the comparison that ran
    assert "gold >= tau+" in ours_attack.result([ours]).notes[0]
    assert "gold > tau+" in paper_attack.result([paper]).notes[0]


def user_prompt(task_example: Any, paper: bool) -> str:
    history = [Candidate(task_example.hypothesis, 0, 50, 50, 0.0, False)]
    return build_messages(task_example, history, paper=paper)[1]["content"]


def test_the_paper_prompts_ask_what_the_released_code_asks() -> None:
    summary = example()
    assert user_prompt(summary, True).startswith(
        "Your task is to write a factually consistent summary of the document. Keep it to at "
        "most 3 sentences and 40 words.")
    assert "factually consistent" not in user_prompt(summary, False)
    dialogue = replace(summary, task="dialogue-response", hypothesis="Here it is.",
                       source="A: Could you bring the menu?\nB: Of course.\nA: The wine list?")
    question = replace(summary, task="question-generation", hypothesis="When was the vote?",
                       source="The council voted on Monday.\nAnswer: Monday")
    for task_example in (dialogue, question):
        # the code sets no length for a dialogue response or a question; ours does
        assert "words" in user_prompt(task_example, False)
        assert "words" not in user_prompt(task_example, True)
    talk = replace(summary, task="dialogue")  # a conversation's summary: 2 sentences, 30 words
    assert "at most 2 sentences and 30 words" in user_prompt(talk, True)


def test_a_paper_search_sends_the_paper_prompt(scripted: Callable[..., Any]) -> None:
    server, script = scripted(lambda seed: f"<text>{EARLY}</text>", lambda text: 60.0)
    run_one(server, {}, params("paper", max_iterations=1))
    [sent] = script.generations()
    assert "write a factually consistent summary" in sent["messages"][-1]["content"]


def test_the_paper_top_k_keeps_the_later_of_equal_scores() -> None:
    # the code sorts ascending (stable: equal scores stay in order of arrival) and shows the
    # last k, so of three equal scores it shows the second and third, the third last
    t = Trajectory([Candidate(name, 1, 50.0, 50.0, 7.0, False)
                    for name in ("first", "second", "third")])
    assert [c.text for c in t.top(2, later_ties=True)] == ["second", "third"]
    assert [c.text for c in t.top(2)] == ["second", "first"]


def test_a_paper_search_shows_the_latest_of_equal_scores(scripted: Callable[..., Any]) -> None:
    # the top 1 only; iteration 1 (samples 2, 3) writes EARLY and WIN; gold 60 and victim 50
    # for every text, so the original and both candidates have S = 10. Iteration 2's prompt
    # shows the original under ours (the earliest of equals) and WIN under the paper's.
    answers = {2: EARLY, 3: WIN}
    server, script = scripted(lambda seed: f"<text>{answers.get(seed, f'Draft {seed}.')}</text>",
                              lambda text: 60.0)
    shown = {}
    for protocol in ("default", "paper"):
        run_one(server, {}, params(protocol, candidates=2, max_iterations=2, trajectory=1))
        prompt = [b for b in script.generations() if b["seed"] == 4][-1]["messages"][-1]
        shown[protocol] = prompt["content"].split("Text:\n", 1)[1].split("\nScore:", 1)[0]
    assert shown == {"default": ORIGINAL, "paper": WIN}


def test_the_paper_protocol_rounds_s_to_one_decimal(scripted: Callable[..., Any]) -> None:
    assert search_feedback("good", 75.26, 20.0, AttackParams(protocol="paper")) == 55.3
    assert search_feedback("good", 75.26, 20.0, AttackParams()) == pytest.approx(55.26)
    # two candidates of iteration 1 (samples 2 and 3), gold 60: S = 60 - 19.96 = 40.04 and
    # 60 - 19.99 = 40.01; rounded both are 40.0, and the later of equals is returned
    near, later = "The bridge reopens in a year.", "The bridge closes in May."
    answers = {2: near, 3: later}
    server, _ = scripted(lambda seed: f"<text>{answers.get(seed, EARLY)}</text>",
                         lambda text: 60.0)
    victim = {ORIGINAL: 50.0, near: 19.96, later: 19.99}
    [ours] = run_one(server, victim, params("default", candidates=2, max_iterations=1))
    [paper] = run_one(server, victim, params("paper", candidates=2, max_iterations=1))
    assert (ours.text, ours.feedback) == (near, pytest.approx(40.04))
    assert (paper.text, paper.feedback) == (later, 40.0)


def test_the_protocol_is_a_checked_parameter() -> None:
    with pytest.raises(ValueError, match="Did you mean 'paper'"):
        AttackParams(protocol="papr")
    assert AttackParams(protocol="paper").to_dict()["protocol"] == "paper"


def fresh_responder(bodies: list[dict[str, Any]]) -> Any:
    """The generator writes WIN; the gold rates WIN 90 on the search's samples and 65 on fresh
    ones (a seed moved by FRESH_SEED_SHIFT), anything else 60."""
    def respond(body: dict[str, Any]) -> Reply:
        bodies.append(body)
        if body["messages"][0]["content"] == GENERATOR_SYSTEM:
            return Reply(f"<text>{WIN}</text>")
        if judged_text(body) != WIN:
            return Reply("60")
        return Reply("65" if int(body["seed"]) >= FRESH_SEED_SHIFT else "90")

    return respond


def test_the_returned_text_is_judged_on_fresh_gold_samples() -> None:
    # direction good, one iteration: WIN has search gold 90 and victim 5, S = 85 > 80, an
    # eq. 3 success (90 > 70, gap 85). Asked again on fresh samples the gold says 65 < 70:
    # judged on those, as the released code's evaluate() does, the attack fails.
    bodies: list[dict[str, Any]] = []
    with FakeServer(responder=fresh_responder(bodies)) as server:
        victim = {ORIGINAL: 35.0, WIN: 5.0}
        [kept] = run_one(server, victim, params("paper", max_iterations=1))
        assert (kept.text, kept.gold, kept.feedback, kept.success) == (WIN, 90.0, 85.0, True)
        cache = open_cache()
        fresh = Gold([fresh_gold_evaluator(judge_spec(server), 1)], cache=cache)
        attacker = Attacker(
            [example()], [Victim(TableVictim(victim), cache=cache)],
            Gold([gold_evaluator(judge_spec(server), 1)], cache=cache),
            [AdvEvalMethod(TextGenerator.from_spec(generator_spec(server)))], ["good"],
            params("paper", max_iterations=1, rescore_final=True), fresh_gold=fresh)
        [record] = attacker.run()
    assert (record.stop, record.text, record.victim_score) == ("threshold", WIN, 5.0)
    assert (record.gold, record.feedback, record.success) == (65.0, 60.0, False)
    assert record.extra["rescored"] == {"search_gold": 90.0, "search_success": True,
                                        "gold": 65.0}
    assert record.trajectory[-1]["note"] == "rated again on fresh gold samples"
    asked = sorted(int(b["seed"]) for b in bodies
                   if b["messages"][0]["content"] != GENERATOR_SYSTEM and judged_text(b) == WIN)
    # one fresh sample; the search's sample (seed 0) the second run read from the response cache
    assert asked == [0, FRESH_SEED_SHIFT]
    with pytest.raises(ValueError, match="rescore_final needs a fresh gold"):
        make_attacker(server, victim, params("paper", rescore_final=True))


def test_the_paper_protocol_rescores_unless_told_not_to() -> None:
    assert not resolve(None).rescore_final and resolve("paper").rescore_final
    assert not resolve("paper", rescore_final=False).rescore_final
    assert resolve(None, rescore_final=True).rescore_final


def test_a_gold_that_is_no_judge_rescores_with_the_search_gold_itself() -> None:
    """Fresh samples change only a judge's ratings (its seed moves); a metric gold would give
    the same score again, so the rescoring reuses the search's instance (a BERTScore or COMET
    gold would otherwise load its model twice). Each evaluator is closed once."""
    from evalstress.studies.attack.setup import build_attacker, close

    closed: list[int] = []
    attacker = build_attacker([example()], victims=["bleu"], gold=["chrf"], methods=["rules"],
                              params=params("paper", rescore_final=True))
    assert attacker.fresh_gold is not None
    [search], [fresh] = attacker.gold.members, attacker.fresh_gold.members
    assert fresh.evaluator is search.evaluator
    search.evaluator.close = lambda: closed.append(1)  # type: ignore[method-assign]
    close(attacker)
    assert closed == [1]
    with FakeServer(responder=lambda body: Reply("50")) as server:
        judged = build_attacker([example()], victims=["bleu"], gold=[judge_spec(server)],
                                methods=["rules"], params=params("paper", rescore_final=True))
        assert judged.fresh_gold is not None
        [search], [fresh] = judged.gold.members, judged.fresh_gold.members
        assert fresh.evaluator is not search.evaluator
        assert (fresh.evaluator.params["seed"] - search.evaluator.params["seed"]
                == FRESH_SEED_SHIFT)
        close(judged)
