"""Constrained judging over HTTP (fake server): grammar / JSON schema sent, label logprobs scored,
SummEval aspect names, short labels."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalstress.cli import app
from evalstress.criteria import load_criteria
from evalstress.evaluators.base import create_evaluator
from evalstress.evaluators.judge import find_rating
from evalstress.llm.fake_server import FakeServer, Reply
from tests.evaluators.test_judge import REQ, judge


def test_grammar_constrained_score_from_scripted_label_logprobs(server: FakeServer,
                                                                tmp_path: Path) -> None:
    probs = {"1": 0.10, "2": 0.10, "3": 0.40, "4": 0.10, "5": 0.05, "The": 0.25}
    server.default = Reply("3", label_probs=probs)
    [row] = judge(server, tmp_path, form="score-only", constrain="grammar",
                  aspect="fluency").score([REQ])
    score = row["fluency"]
    # by hand: valid mass 0.75; expected (1*.1 + 2*.1 + 3*.4 + 4*.1 + 5*.05) / .75 = 2.15 / .75
    assert score.value == pytest.approx(2.15 / 0.75)
    assert score.extra["label_mass"] == pytest.approx(0.75)
    assert score.extra["confidence"] == pytest.approx(0.40 / 0.75)
    assert score.extra["method"] == "logprobs"
    grammar = server.requests[0]["grammar"]
    assert re.findall(r'"(\d+)"', grammar.split("rating ::=")[1]) == ["1", "2", "3", "4", "5"]
    assert grammar.startswith("root ::= rating")
    assert "response_format" not in server.requests[0]


def test_grammar_for_explained_forms_ends_in_a_rating_of_the_scale() -> None:
    from evalstress.evaluators.judge_constraints import gbnf

    text = gbnf("analyze-rate", (0, 10), 512)
    assert '"Rating: " rating' in text
    assert sorted(int(v) for v in re.findall(r'"(\d+)"', text.split("rating ::=")[1])) == list(
        range(0, 11))
    assert gbnf("rubric", (1, 5), 512).startswith('root ::= "Feedback: "')


def test_json_constrained_answer_is_parsed_and_weighted(server: FakeServer,
                                                        tmp_path: Path) -> None:
    server.default = Reply('{"analysis": "reads well; score: 2 would be harsh", "rating": 4}',
                           label_probs={"4": 0.6, "5": 0.2, "x": 0.2})
    evaluator = judge(server, tmp_path, form="analyze-rate", constrain="json", aspect="fluency")
    [row] = evaluator.score([REQ])
    assert row["fluency"].value == pytest.approx((4 * 0.6 + 5 * 0.2) / 0.8)
    sent = server.requests[0]
    schema = sent["response_format"]["json_schema"]["schema"]
    assert sent["response_format"]["type"] == "json_schema"
    assert list(schema["properties"]) == ["analysis", "rating"]
    assert schema["properties"]["rating"]["enum"] == [1, 2, 3, 4, 5]
    assert "Answer with JSON only" in sent["messages"][1]["content"]


def test_json_rating_ignores_numbers_inside_the_free_text() -> None:
    answer = json.dumps({"explanation": "Rating: 1 is too low", "rating": 3})
    found = find_rating(answer)
    assert found is not None and found[0] == "3"
    assert answer[found[1]] == "3"
    assert find_rating('{"result": 5, "feedback": "fine"}') == ("5", 11)


def test_without_a_constraint_nothing_extra_is_sent(server: FakeServer, tmp_path: Path) -> None:
    server.default = Reply("Rating: 4")
    judge(server, tmp_path, logprobs=False).score([REQ])
    assert "grammar" not in server.requests[0] and "response_format" not in server.requests[0]


def test_summeval_aspect_names_use_the_aliased_criteria(server: FakeServer,
                                                        tmp_path: Path) -> None:
    server.default = Reply("Rating: 4")
    evaluator = judge(server, tmp_path, aspect="coherence consistency fluency relevance",
                      logprobs=False)
    [row] = evaluator.score([REQ])
    assert set(row) == {"coherence", "consistency", "fluency", "relevance"}
    assert all(s.value == 4.0 for s in row.values())
    criteria = load_criteria()
    prompts = {r["messages"][1]["content"] for r in server.requests}
    for criterion in ("faithfulness", "informativeness", "coherence", "fluency"):
        text = criteria[criterion].text("default", (1, 5))
        assert sum(text in p for p in prompts) == 1, criterion


def test_name_sets_a_short_label_that_does_not_touch_the_cache(server: FakeServer,
                                                               tmp_path: Path) -> None:
    named = judge(server, tmp_path, name="small-judge", aspect="fluency")
    plain = judge(server, tmp_path, aspect="fluency")
    assert named.label == "small-judge"
    assert plain.label == "judge(fake)"  # the model, not the endpoint or the aspect
    assert named.cache_namespace == plain.cache_namespace
    mapped = create_evaluator({"evaluator": "rouge", "name": "R"})
    assert mapped.label == "R" and mapped.aspects == ("rouge1", "rouge2", "rougeL")
    assert create_evaluator({"name": "rouge"}).label == "rouge"


def test_cli_refuses_two_evaluators_with_one_label(tmp_path: Path) -> None:
    outcome = CliRunner().invoke(app, ["run", "--limit", "1", "-e", "bleu:name=x", "-e",
                                       "rouge:name=x", "--out", str(tmp_path / "run"), "--quiet",
                                       str(Path(__file__).parents[2] /
                                           "src/evalstress/corpus/sample.jsonl")])
    assert outcome.exit_code == 2
    assert "share the label x" in outcome.output
    assert not (tmp_path / "run").exists()  # refused before any work


def test_cli_labels_appear_in_the_score_table(tmp_path: Path) -> None:
    import pandas as pd

    out = tmp_path / "run"
    outcome = CliRunner().invoke(app, ["run", "--limit", "2", "-p", "truncation", "--seeds", "1",
                                       "-e", "rouge:name=R", "-e", "bleu:name=B", "--out",
                                       str(out), "--quiet", "--cache-dir", str(tmp_path),
                                       str(Path(__file__).parents[2] /
                                           "src/evalstress/corpus/sample.jsonl")])
    assert outcome.exit_code == 0, outcome.output
    table = pd.read_parquet(out / "scores.parquet")
    assert set(table["evaluator"]) == {"R", "B"}


@pytest.mark.parametrize(("spec", "message"), [
    ("judge:model=local,base_url=http://127.0.0.1:1/v1", "drop base_url"),
    ("judge:model=m,n_ctx=2048", "n_ctx applies to model=local"),
    ("judge:model=m,constrain=regex", "'constrain' = 'regex': expected one of auto, off"),
    ("judge:model=m,aspect=tastiness", "an alias"),
    ("judge:model=missing-file.gguf", "does not exist"),
])
def test_bad_local_and_constraint_settings_are_named(spec: str, message: str) -> None:
    with pytest.raises((ValueError, FileNotFoundError), match=message):
        create_evaluator(spec)


def test_expected_score_uses_only_the_valid_labels() -> None:
    from evalstress.evaluators.judge import expected_from_logprobs
    from evalstress.llm.client import ChatResponse

    top = {"2": math.log(0.2), " 2": math.log(0.1), "4": math.log(0.3), "7": math.log(0.3)}
    response = ChatResponse("2", [{"token": "2", "logprob": math.log(0.3), "top": top}])
    expected = expected_from_logprobs(response, 0, "2", (1, 5))
    assert expected is not None
    value, mass, confidence = expected
    # "2" and " 2" are one label (0.3); "7" is off the scale: (2*.3 + 4*.3) / .6 = 3
    assert value == pytest.approx(3.0) and mass == pytest.approx(0.6)
    assert confidence == pytest.approx(0.5)
