"""G-Eval with judge-written evaluation steps (Auto-CoT), against the fake server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalstress.evaluators.base import ScoreRequest, create_evaluator
from evalstress.evaluators.geval import parse_steps
from evalstress.evaluators.judge import JudgeEvaluator
from evalstress.llm.fake_server import FakeServer, Reply

STEPS_ANSWER = ("Here are the steps.\n<steps>\n1. Read the article and note its main events.\n"
                "2. Check that each sentence of the summary follows from the one before.\n"
                "3. Look for jumps, gaps and repeated content.\n"
                "4. Give a whole-number rating from 1 to 5.\n</steps>")

REQUESTS = [ScoreRequest("The ferry left at dawn. It reached the island by noon.",
                         "A long article about a ferry.", (), "summarization"),
            ScoreRequest("The ferry reached the island. It left at dawn.",
                         "A long article about a ferry.", (), "summarization"),
            ScoreRequest("Maria bought bread.", "Story start.", (), "story")]


def _is_writer(request: dict[str, Any]) -> bool:
    return "<steps>" in request["messages"][-1]["content"]


def responder(writer_answer: str = STEPS_ANSWER, rating: str = "Rating: 4"):  # type: ignore[no-untyped-def]
    def answer(request: dict[str, Any]) -> Reply:
        return Reply(writer_answer if _is_writer(request) else rating)
    return answer


def judge(server: FakeServer, cache: Path, **params: Any) -> JudgeEvaluator:
    spec = {"model": "fake", "base_url": server.base_url, "backoff": 0.01, "cache": cache,
            "form": "g-eval", "steps": "auto", "aspect": "coherence fluency", "logprobs": False,
            **params}
    made = create_evaluator("judge:" + ",".join(f"{k}={v}" for k, v in spec.items()))
    assert isinstance(made, JudgeEvaluator)
    return made


def test_steps_are_written_once_per_task_and_aspect_then_shown_in_every_judgment(
        server: FakeServer, tmp_path: Path) -> None:
    server.responder = responder()
    rows = judge(server, tmp_path / "llm.sqlite").score(REQUESTS)
    writers = [r for r in server.requests if _is_writer(r)]
    # two tasks x two aspects: four step-writing requests, not one per text
    assert len(writers) == 4
    assert {r["temperature"] for r in writers} == {0.0}
    judgments = [r for r in server.requests if not _is_writer(r)]
    assert len(judgments) == 3 * 2
    prompt = judgments[0]["messages"][-1]["content"]
    assert "Evaluation steps:\n1. Read the article and note its main events." in prompt
    assert "4. Give a whole-number rating from 1 to 5." in prompt
    assert "Rating: N" in prompt and "no explanation" in prompt
    assert all(row[a].value == 4.0 for row in rows for a in ("coherence", "fluency"))


def test_a_second_run_makes_no_call_at_all(server: FakeServer, tmp_path: Path) -> None:
    server.responder = responder()
    cache = tmp_path / "llm.sqlite"
    first = judge(server, cache).score(REQUESTS)
    assert server.calls == 4 + 6
    server.reset_counters()
    second_judge = judge(server, cache)
    assert second_judge.estimate(REQUESTS)["calls"] == 0
    second = second_judge.score(REQUESTS)
    assert server.calls == 0
    assert [{a: s.value for a, s in r.items()} for r in second] == [
        {a: s.value for a, s in r.items()} for r in first]


def test_dry_run_estimate_counts_the_step_writing_calls(server: FakeServer,
                                                        tmp_path: Path) -> None:
    made = judge(server, tmp_path / "llm.sqlite")
    # 4 step-writing calls (2 tasks x 2 aspects) + 6 judgments; nothing is sent
    assert made.estimate(REQUESTS)["calls"] == 10
    assert server.calls == 0


def test_unusable_steps_are_re_asked_then_every_judgment_is_missing_with_the_reason(
        server: FakeServer, tmp_path: Path) -> None:
    server.responder = responder(writer_answer="I think a rater should just read it.")
    rows = judge(server, tmp_path / "llm.sqlite", aspect="coherence",
                 max_reasks=1).score(REQUESTS[:2])
    writers = [r for r in server.requests if _is_writer(r)]
    assert [r["seed"] for r in writers] == [0, 1]  # one ask + one re-ask with a new sample
    assert not [r for r in server.requests if not _is_writer(r)]  # no judgment sent
    for row in rows:
        score = row["coherence"]
        assert score.value is None
        assert "no evaluation steps for 'coherence' on summarization" in (score.reason or "")
        assert "fewer than 2 numbered steps" in (score.reason or "")


def test_a_re_ask_can_rescue_the_steps(server: FakeServer, tmp_path: Path) -> None:
    answers = iter(["No steps here.", STEPS_ANSWER])

    def answer(request: dict[str, Any]) -> Reply:
        return Reply(next(answers)) if _is_writer(request) else Reply("Rating: 2")

    server.responder = answer
    [row] = judge(server, tmp_path / "llm.sqlite", aspect="coherence").score(REQUESTS[:1])
    assert row["coherence"].value == 2.0


def test_steps_auto_needs_the_g_eval_form_and_known_modes(server: FakeServer,
                                                          tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="form=g-eval"):
        judge(server, tmp_path / "a.sqlite", form="analyze-rate")
    with pytest.raises(ValueError, match="generic, auto"):
        judge(server, tmp_path / "b.sqlite", steps="automatic")


def test_auto_steps_change_the_signature_but_generic_keeps_the_old_one(
        server: FakeServer, tmp_path: Path) -> None:
    auto = judge(server, tmp_path / "a.sqlite")
    generic = judge(server, tmp_path / "b.sqlite", steps="generic")
    spec = f"judge:model=fake,base_url={server.base_url},form=g-eval,aspect=coherence fluency," \
           f"logprobs=False,cache={tmp_path / 'c.sqlite'}"
    before = create_evaluator(spec)  # a judge spec written before `steps` existed
    assert auto.signature() != generic.signature()
    assert generic.signature() == before.signature()
    assert auto.params["steps"] == "auto" and "steps" not in generic.params


@pytest.mark.parametrize(("answer", "expected"), [
    ("<steps>\n1. Read.\n2) Check order.\n3 - Rate it.\n</steps>",
     ["Read.", "Check order.", "Rate it."]),
    ("Step 1: Read the text.\nStep 2: Rate it.", ["Read the text.", "Rate it."]),
    ("1. Only one step.", None),
    ("<steps>1. Read.\n2. Rate.", None),  # the block never closes: cut off
])
def test_parse_steps(answer: str, expected: list[str] | None) -> None:
    steps, reason = parse_steps(answer)
    assert steps == expected
    assert (reason == "") == (expected is not None)
