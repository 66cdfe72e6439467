"""The judge evaluator against the fake server: scores, parsing, re-asks, forms, pairwise."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalstress.cli import app
from evalstress.core.data import builtin_corpus
from evalstress.engine.runner import run
from evalstress.engine.scoring import open_cache
from evalstress.evaluators.base import ScoreRequest, create_evaluator
from evalstress.evaluators.judge import parse_scale, position_bias
from evalstress.llm.fake_server import FakeServer, Reply
from evalstress.suites import custom_suite
from tests.evaluators.fake_judges import fake_judge as judge

REQ = ScoreRequest("The cat sat on the mat.", "A cat sat on a mat all day.", ("A cat sat.",),
                   "summarization")


def test_logprob_weighted_expected_score(server: FakeServer, tmp_path: Path) -> None:
    server.default = Reply("Looks fine. Rating: 4", label_probs={"4": 0.5, "5": 0.2, "So": 0.3})
    [row] = judge(server, tmp_path, aspect="fluency").score([REQ])
    score = row["fluency"]
    # (4 * 0.5 + 5 * 0.2) / 0.7 over the valid labels; 0.3 of the mass was not a label
    assert score.value == pytest.approx(3.0 / 0.7)
    assert score.extra["label_mass"] == pytest.approx(0.7)
    assert score.extra["method"] == "logprobs"
    assert server.requests[0]["logprobs"] is True and server.requests[0]["top_logprobs"] == 10


def test_last_rating_is_used_without_logprobs(server: FakeServer, tmp_path: Path) -> None:
    server.default = Reply("A Rating: 2 would be harsh.\nRating: 3")
    [row] = judge(server, tmp_path, logprobs=False).score([REQ])
    assert row["overall"].value == 3.0 and row["overall"].extra["method"] == "rating"
    assert "logprobs" not in server.requests[0]


def test_unparsable_answers_are_missing_and_re_asked_a_bounded_number_of_times(
        server: FakeServer, tmp_path: Path) -> None:
    server.default = Reply("I would rather not say.")
    [row] = judge(server, tmp_path, max_reasks=2).score([REQ])
    score = row["overall"]
    assert score.value is None and "no rating in the answer" in (score.reason or "")
    assert score.extra["n_unparsable"] == 3 and score.extra["reasks"] == 2
    assert server.calls == 3
    assert [r["seed"] for r in server.requests] == [0, 1, 2]  # new sample index each time


def test_a_re_ask_can_rescue_the_score(server: FakeServer, tmp_path: Path) -> None:
    server.script.extend([Reply("Rating: 9"), Reply("Rating: 5")])
    [row] = judge(server, tmp_path, logprobs=False).score([REQ])
    assert row["overall"].value == 5.0
    assert row["overall"].extra["reasks"] == 1
    assert "outside the 1-5 scale" in row["overall"].extra["failures"][0]


def test_samples_are_aggregated(server: FakeServer, tmp_path: Path) -> None:
    ratings = itertools.cycle(["Rating: 3", "Rating: 4", "Rating: 4"])
    server.responder = lambda request: Reply(next(ratings))
    [row] = judge(server, tmp_path, n=3, logprobs=False, aggregate="median").score([REQ])
    assert row["overall"].value == 4.0 and row["overall"].extra["n_valid"] == 3
    assert {r["temperature"] for r in server.requests} == {1.0}
    assert len({r["seed"] for r in server.requests}) == 3


def test_endpoint_failure_is_missing_with_reason(server: FakeServer, tmp_path: Path) -> None:
    server.default = Reply(status=401, error="invalid api key")
    [row] = judge(server, tmp_path).score([REQ])
    assert row["overall"].value is None
    assert "request failed" in (row["overall"].reason or "")
    assert "invalid api key" in (row["overall"].reason or "")
    assert server.calls == 1  # neither retried nor re-asked


@pytest.mark.parametrize("form, marker", [
    ("score-only", "rating only"), ("rate-explain", "Rating: N"),
    ("analyze-rate", "analyse"), ("g-eval", "Evaluation steps"), ("rubric", "[RESULT]")])
def test_forms_ask_for_their_format_and_parse_it(server: FakeServer, tmp_path: Path,
                                                 form: str, marker: str) -> None:
    server.default = Reply({"score-only": "4", "rubric": "Feedback: good. [RESULT] 4"}
                           .get(form, "Thoughts. Rating: 4"))
    evaluator = judge(server, tmp_path, form=form, logprobs=False)
    [row] = evaluator.score([REQ])
    assert row["overall"].value == 4.0
    assert marker in server.requests[0]["messages"][1]["content"]


def test_source_reference_and_criteria_levels_shape_the_prompt(server: FakeServer,
                                                               tmp_path: Path) -> None:
    with_ref = judge(server, tmp_path, with_reference=True, aspect="fluency", level="detailed")
    text = with_ref.messages(REQ, "fluency")[1]["content"]
    assert REQ.source in text and REQ.references[0] in text and "Look for" in text
    bare = judge(server, tmp_path, with_source=False, aspect="fluency", level="term-only")
    text = bare.messages(REQ, "fluency")[1]["content"]
    assert REQ.source not in text and "Criterion:\nFluency\n" in text
    empty = judge(server, tmp_path, aspect="fluency", level="empty")
    assert "none given" in empty.messages(REQ, "fluency")[1]["content"]
    hundred = judge(server, tmp_path, scale="0-100", level="list")
    assert "- 100:" in hundred.messages(REQ, "overall")[1]["content"]


def test_scale_0_100_uses_the_rating_not_logprobs(server: FakeServer, tmp_path: Path) -> None:
    server.default = Reply("Rating: 85", label_probs={"8": 0.9, "9": 0.1})
    [row] = judge(server, tmp_path, scale="0-100").score([REQ])
    assert row["overall"].value == 85.0 and row["overall"].extra["method"] == "rating"


def test_bad_parameters_are_named() -> None:
    with pytest.raises(ValueError, match="form"):
        create_evaluator("judge:model=m,form=vibes")
    with pytest.raises(ValueError, match="no criterion for aspect"):
        create_evaluator("judge:model=m,aspect=tastiness")
    with pytest.raises(ValueError, match="scale"):
        parse_scale("five")


def test_pairwise_both_orders_measure_position_bias(server: FakeServer, tmp_path: Path) -> None:
    server.default = Reply("Text 1 reads better.\nVerdict: 1")
    evaluator = judge(server, tmp_path, aspect="fluency")
    other = ScoreRequest("Cat the on sat mat.", REQ.source, REQ.references, REQ.task)
    results = evaluator.compare([REQ, REQ], [other, other])
    assert [(r.ab, r.ba) for r in results] == [("a", "b"), ("a", "b")]
    bias = position_bias(results)
    assert bias["first_position_win_rate"] == 1.0 and bias["consistency"] == 0.0
    assert server.calls == 2  # two distinct prompts; the repeated pair came from the cache
    firsts = [r["messages"][1]["content"] for r in server.requests]
    assert any(f.index(REQ.text) < f.index(other.text) for f in firsts)
    assert any(f.index(other.text) < f.index(REQ.text) for f in firsts)


def test_runner_judges_each_original_once_and_reruns_for_free(server: FakeServer,
                                                              tmp_path: Path) -> None:
    examples = builtin_corpus()[:3]
    suite = custom_suite(["truncation", "token-drop"], seeds=2)
    evaluator = judge(server, tmp_path, aspect="fluency")
    cache = open_cache(tmp_path / "scores.sqlite")
    result = run(examples, suite, [evaluator], cache=cache)
    distinct = len({v.text for v in result.plan.variants} | {e.hypothesis for e in examples})
    assert server.calls == distinct
    assert (result.table["status"] == "ok").all()
    originals = result.table[result.table["perturbation"] == "original"]
    assert len(originals) == 3
    fresh = judge(server, tmp_path, aspect="fluency")
    run(examples, suite, [fresh], cache=None)  # score cache off: the response cache answers
    assert server.calls == distinct and fresh.usage.cache_hits == distinct


def test_cli_dry_run_counts_calls_without_calling(server: FakeServer, tmp_path: Path) -> None:
    data = Path(__file__).resolve().parents[2] / "src/evalstress/corpus/sample.jsonl"
    spec = f"judge:model=fake,base_url={server.base_url},aspect=fluency coherence"
    args = ["run", str(data), "--limit", "2", "-p", "truncation", "--seeds", "1", "-e", spec,
            "--cache-dir", str(tmp_path), "--out", str(tmp_path / "run")]
    outcome = CliRunner().invoke(app, [*args, "--dry-run"])
    assert outcome.exit_code == 0, outcome.output
    assert server.calls == 0
    # 2 originals + their truncation variants (5 severities), 2 aspects each
    assert "24" in outcome.output
    outcome = CliRunner().invoke(app, [*args, "--quiet"])
    assert outcome.exit_code == 0, outcome.output
    assert server.calls == 24
    stats = CliRunner().invoke(app, ["cache", "stats", "--cache-dir", str(tmp_path)])
    assert "llm.sqlite" in stats.output and "24" in stats.output


def test_preset_paper_000_judges_as_that_paper(server: FakeServer, tmp_path: Path) -> None:
    """Paper 000 (appendix C.2, sec. 5): analyse then rate 1-5 with the detailed criteria,
    temperature 1, 10 samples averaged. Ten answers rating 1, 2, ..., 5, 1, 2, ... average 3.0."""
    ratings = itertools.cycle(["Analysis: short.\nRating: 1", "Analysis: ok.\nRating: 2",
                               "Analysis: fine.\nRating: 3", "Analysis: good.\nRating: 4",
                               "Analysis: great.\nRating: 5"])
    server.responder = lambda request: Reply(next(ratings))
    made = judge(server, tmp_path, preset="paper-000", aspect="fluency", logprobs=False)
    [row] = made.score([REQ])
    assert row["fluency"].value == pytest.approx(3.0) and row["fluency"].extra["n_valid"] == 10
    assert server.calls == 10 and {r["temperature"] for r in server.requests} == {1.0}
    prompt = server.requests[0]["messages"][-1]["content"]
    assert made.criteria["fluency"].text("detailed", (1, 5)) in prompt
    assert "analyse the text" in prompt.lower()
    # a setting the spec gives wins over the preset's
    cheaper = judge(server, tmp_path, preset="paper-000", n=3, cache=False)
    assert (cheaper.n, cheaper.form, cheaper.criteria_level) == (3, "analyze-rate", "detailed")


def test_preset_paper_003_scores_five_times_at_temperature_zero(server: FakeServer,
                                                                tmp_path: Path) -> None:
    """Paper 003 (sec. 4.1, appendix E): G-Eval with steps the judge writes, temperature 0, each
    text scored 5 times and averaged: ratings 2, 3, 3, 4, 4 average 3.2."""
    ratings = iter(["Rating: 2", "Rating: 3", "Rating: 3", "Rating: 4", "Rating: 4"])

    def reply(request: dict[str, Any]) -> Reply:
        if "evaluation steps" in request["messages"][-1]["content"].lower() and \
                "Rating" not in request["messages"][-1]["content"]:
            return Reply("<steps>\n1. Read the text.\n2. Weigh its faults.\n</steps>")
        return Reply(next(ratings))

    server.responder = reply
    made = judge(server, tmp_path, preset="paper-003", aspect="coherence", logprobs=False)
    assert made.form == "g-eval" and made.auto_steps is not None
    [row] = made.score([REQ])
    assert row["coherence"].value == pytest.approx(3.2)
    judged = [r for r in server.requests if "Read the text." in r["messages"][-1]["content"]]
    assert len(judged) == 5 and {r["temperature"] for r in judged} == {0.0}


def test_an_unknown_preset_suggests_the_known_one(server: FakeServer, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"'preset' = 'paper-00': expected one of paper-000"):
        judge(server, tmp_path, preset="paper-00")
