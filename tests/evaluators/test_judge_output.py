"""Output contracts of a user's judge prompt: reading regex, JSON and label answers, missing with
the reason otherwise, the constraint each contract sends, and logprob weighting on one label."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from evalstress.evaluators.base import ScoreRequest
from evalstress.evaluators.judge_output import ContractError, OutputContract
from evalstress.llm.client import ChatResponse
from evalstress.llm.fake_server import FakeServer, Reply
from tests.evaluators.test_judge_prompt import REQ, judge, write

LETTERS = "A=5|B=4|C=3|D=2|E=1"


def contract(output: str, labels: str | None = None,
             scale: tuple[float, float] | None = None) -> OutputContract:
    return OutputContract.parse(output, labels, scale)


@pytest.mark.parametrize("output, labels, answer, value", [
    ("regex:Score = (?P<score>\\d+)/10", None, "Fine.\nScore = 3/10\nScore = 7/10", 7.0),
    ("regex:Grade: (?P<label>[A-E])", LETTERS, "Grade: B (minor slips)", 4.0),
    ("json:score", None, '{"score": 4}', 4.0),
    ("json:reasoning|score", None, 'Here:\n```json\n{"reasoning": "ok", "score": "2"}\n```', 2.0),
    ("json:verdict", "pass=1|fail=0", '{"verdict": "FAIL"}', 0.0),
    ("json:result.score", None, '{"result": {"score": 5}}', 5.0),
    ("labels:" + LETTERS, None, "The text has one slip.\n**Verdict: B.**", 4.0),
    ("labels:PASS=1|FAIL=0", None, "FAIL", 0.0),
    ("number", None, " 3/5 ", 3.0),
    ("rating", None, "Weak start.\nRating: 2", 2.0),
])
def test_contracts_read_their_answers(output: str, labels: str | None, answer: str,
                                      value: float) -> None:
    reading = contract(output, labels, None if labels or "labels" in output else (0, 10)
                       ).read(answer)
    assert reading.value == value, reading.reason


@pytest.mark.parametrize("output, labels, answer, reason", [
    ("regex:Score: (?P<score>\\d+)", None, "I like it.", "no match of the output pattern"),
    ("json:score", None, "Score is four.", "holds no JSON object"),
    ("json:score", None, '{"rating": 4}', "has no field 'score' (fields: rating)"),
    ("json:score", None, '{"score": "high"}', "'high' is not a number"),
    ("json:score", None, '{"score": 9}', "9 is outside the 1-5 scale"),
    ("json:verdict", "pass=1|fail=0", '{"verdict": "maybe"}', "'maybe' is none of the labels"),
    ("labels:" + LETTERS, None, "It reads well.\nI would say good.", "is none of the labels"),
    ("labels:" + LETTERS, None, "", "empty answer"),
    ("number", None, "4, maybe 5", "not a number alone"),
])
def test_what_a_contract_cannot_read_is_missing_with_the_reason(
        output: str, labels: str | None, answer: str, reason: str) -> None:
    reading = contract(output, labels).read(answer)
    assert reading.value is None and reason in reading.reason


@pytest.mark.parametrize("output", ["json:score", "rating"])
def test_an_answer_nested_100_000_deep_is_unreadable_not_a_crash(output: str) -> None:
    """A judge's answer is parsed with the same depth bound as a file: it was a RecursionError
    that ended the whole run with exit 4."""
    deep = '{"a": ' * 100_000 + "1" + "}" * 100_000
    reading = contract(output, None, (0, 10)).read(deep)
    assert reading.value is None and "the answer" in reading.reason


@pytest.mark.parametrize("output, labels, message", [
    ("regex:Score (\\d)", None, "needs a named group"),
    ("regex:(?P<label>[AB])", None, "needs labels="),
    ("regex:((", None, "not a regular expression"),
    ("json:", None, "names the field that holds the score"),
    ("labels:A=5", None, "at least two labels"),
    ("labels:A=5|B=x", None, "maps to 'x', not a number"),
    ("labels:A=1|A=2", None, "given twice"),
    ("number", "A=1|B=2", "reads a number"),
    ("jsn:score", None, "Did you mean 'json'"),
])
def test_bad_contracts_are_refused_with_the_setting_named(output: str, labels: str | None,
                                                          message: str) -> None:
    with pytest.raises(ValueError, match=message):
        contract(output, labels)


def test_labels_set_the_scale_unless_one_is_given() -> None:
    assert contract("labels:PASS=1|FAIL=0").scale == (0.0, 1.0)
    assert contract("labels:" + LETTERS).scale == (1.0, 5.0)
    assert contract("labels:B=4|C=3", scale=(1, 5)).scale == (1, 5)
    with pytest.raises(ContractError, match="fall outside scale=1-5"):
        contract("labels:A=7|B=4", scale=(1, 5))


def test_logprob_weighting_on_a_single_label_token() -> None:
    grade = contract("labels:" + LETTERS)
    answer = ChatResponse("B", [{"token": "B", "logprob": math.log(0.5),
                                 "top": {"B": math.log(0.5), "A": math.log(0.3),
                                         " C": math.log(0.1), "The": math.log(0.1)}}])
    reading = grade.read(answer.text)
    weighted = grade.weighted(answer, reading)
    assert weighted is not None
    # by hand: (4 * .5 + 5 * .3 + 3 * .1) / .9 over the labels; "The" is no label
    assert weighted[0] == pytest.approx(3.8 / 0.9)
    assert weighted[1] == pytest.approx(0.9) and weighted[2] == pytest.approx(0.5 / 0.9)
    split = ChatResponse("PASS", [{"token": "PA", "top": {"PA": -0.1}},
                                  {"token": "SS", "top": {"SS": -0.1}}])
    verdict = contract("labels:PASS=1|FAIL=0")
    assert verdict.weighted(split, verdict.read("PASS")) is None  # a label of two tokens


def test_json_contract_sends_a_schema_and_is_weighted(server: FakeServer, tmp_path: Path) -> None:
    prompt = write(tmp_path, "j.txt", 'Grade {text}. Answer {"reasoning": "...", "score": N}.')
    server.default = Reply('{"reasoning": "clear", "score": 4}',
                           label_probs={"4": 0.6, "5": 0.2, "x": 0.2})
    evaluator = judge(server, tmp_path, prompt=prompt, output="json:reasoning|score",
                      constrain="json")
    [row] = evaluator.score([REQ])
    assert row["overall"].value == pytest.approx((4 * 0.6 + 5 * 0.2) / 0.8)
    schema = server.requests[0]["response_format"]["json_schema"]["schema"]
    assert list(schema["properties"]) == ["reasoning", "score"]
    assert schema["properties"]["score"] == {"type": "integer", "enum": [1, 2, 3, 4, 5]}
    assert schema["properties"]["reasoning"] == {"type": "string"}


def test_labels_contract_sends_a_grammar_of_the_labels(server: FakeServer,
                                                       tmp_path: Path) -> None:
    prompt = write(tmp_path, "g.txt", "Grade {text} with one letter.")
    server.default = Reply("C")
    evaluator = judge(server, tmp_path, prompt=prompt, output="labels:" + LETTERS,
                      constrain="grammar", logprobs=False)
    [row] = evaluator.score([REQ])
    assert row["overall"].value == 3.0 and row["overall"].extra["method"] == "label"
    assert server.requests[0]["grammar"] == 'root ::= score\nscore ::= "A" | "B" | "C" | "D" | "E"\n'


@pytest.mark.parametrize("output, constrain, message", [
    ("regex:S: (?P<score>\\d)", "grammar", "has no grammar; use constrain=off"),
    ("json:score", "grammar", "use constrain=json"),
    ("labels:A=1|B=0", "json", "needs output=json:FIELD"),
])
def test_constraints_that_do_not_fit_the_contract_are_refused(tmp_path: Path, output: str,
                                                              constrain: str, message: str) -> None:
    from evalstress.evaluators.base import create_evaluator

    prompt = write(tmp_path, "c.txt", "Rate {text}.")
    with pytest.raises(ValueError, match=message):
        create_evaluator(f"judge:model=m,cache=false,prompt={prompt},output={output},"
                         f"constrain={constrain}")


def test_unreadable_answers_are_re_asked_then_missing(server: FakeServer, tmp_path: Path) -> None:
    prompt = write(tmp_path, "r.txt", "Grade {text}.")
    server.script.extend([Reply("I think it is fine."), Reply("Verdict: Z"), Reply("Verdict: D")])
    evaluator = judge(server, tmp_path, prompt=prompt, output="labels:" + LETTERS, logprobs=False)
    [row] = evaluator.score([REQ])
    assert row["overall"].value == 2.0 and row["overall"].extra["reasks"] == 2
    assert "none of the labels" in row["overall"].extra["failures"][0]
    server.default = Reply("no idea")
    other = ScoreRequest("Another text.", REQ.source, REQ.references, REQ.task)
    [row] = evaluator.score([other])
    assert row["overall"].value is None
    assert "3 answer(s), none usable" in (row["overall"].reason or "")

