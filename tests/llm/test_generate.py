"""The shared text generator: spec parsing, sampling keys, cache reuse and failures as values."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalstress.llm.client import ChatResponse, LLMError
from evalstress.llm.extract import extract_answer
from evalstress.llm.fake_server import FakeServer, Reply
from evalstress.llm.generate import GenerationJob, TextGenerator


def _job(text: str, sample: int = 0) -> GenerationJob:
    return GenerationJob.of([{"role": "user", "content": text}], sample)


def test_spec_parsing_and_unknown_keys() -> None:
    gen = TextGenerator.from_spec("model=m,base_url=http://127.0.0.1:9/v1,temperature=0.2")
    assert gen.model == "m" and gen.temperature == 0.2
    assert TextGenerator.from_spec("gpt-x,base_url=http://127.0.0.1:9/v1").model == "gpt-x"
    with pytest.raises(ValueError, match="Did you mean 'temperature'"):
        TextGenerator.from_spec("model=m,tempreature=0.2")
    with pytest.raises(ValueError, match="needs model"):
        TextGenerator.from_spec({"base_url": "http://127.0.0.1:9/v1"})


def test_sample_index_moves_the_seed_and_the_key() -> None:
    gen = TextGenerator("m", "http://127.0.0.1:9/v1", seed=10, cache=False)
    assert gen.params(0)["seed"] == 10 and gen.params(3)["seed"] == 13
    assert gen.key(_job("a", 0)) != gen.key(_job("a", 1))
    assert gen.key(_job("a", 0)) == gen.key(_job("a", 0))


def test_generate_many_caches_and_rerun_makes_no_call(tmp_path: Path) -> None:
    with FakeServer(default=Reply("<text>rewritten</text>")) as server:
        spec = f"model=m,base_url={server.base_url},cache={tmp_path}/llm.sqlite"
        gen = TextGenerator.from_spec(spec)
        jobs = [_job("one"), _job("two"), _job("one", 1), _job("one")]
        first = gen.generate_many(jobs)
        assert all(isinstance(r, ChatResponse) for r in first)
        assert server.calls == 3  # the repeated job shares the first one's call
        gen.close()
        again = TextGenerator.from_spec(spec)
        second = again.generate_many(jobs)
        assert server.calls == 3
        assert [r.text for r in second if isinstance(r, ChatResponse)] == ["<text>rewritten</text>"] * 4
        assert again.usage.calls == 0 and again.usage.cache_hits == 4
        assert again.estimate(jobs)["calls"] == 0


def test_failures_come_back_as_values(tmp_path: Path) -> None:
    with FakeServer(default=Reply(status=400, error="bad request")) as server:
        gen = TextGenerator("m", server.base_url, cache=False, max_attempts=1)
        [result] = gen.generate_many([_job("x")])
        assert isinstance(result, LLMError) and result.status == 400


@pytest.mark.parametrize(("answer", "text", "reason"), [
    ("<text>The cat sat.</text>", "The cat sat.", ""),
    ("Sure! <text>draft</text> and finally <text>  final  </text>", "final", ""),
    ("Sure, here is the rewritten text:\nThe dog ran.", "The dog ran.", ""),
    ("```\nThe dog ran.\n```", "The dog ran.", ""),
    ("\"Quoted answer.\"", "Quoted answer.", ""),
    ("I'm sorry, but I can't help with that.", None, "refusal"),
    ("<text>I cannot rewrite this text.</text>", None, "refusal"),
    ("<text>   </text>", None, "empty"),
    ("<text>cut off in the mid", None, "not closed"),
    ("", None, "empty answer"),
])
def test_extract_answer(answer: str, text: str | None, reason: str) -> None:
    got = extract_answer(answer)
    assert got.text == text
    assert reason in got.reason


def test_extract_answer_can_require_the_tag() -> None:
    got = extract_answer("The dog ran.", require_tag=True)
    assert got.text is None and "no <text> block" in got.reason


def test_extract_answer_can_take_an_unclosed_block_the_model_ended() -> None:
    assert extract_answer("<text>\nThe dog ran.", allow_unclosed=True).text == "The dog ran."
    assert extract_answer("<text>\nThe dog ran.").text is None
    assert extract_answer("<text>I'm sorry, I can't", allow_unclosed=True).text is None
