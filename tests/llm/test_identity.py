"""Cache keys name a local server by the model it serves, never by its port."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from evalstress.evaluators.base import ScoreRequest, create_evaluator
from evalstress.llm import identity
from evalstress.llm.cache import ResponseCache
from evalstress.llm.client import LLMClient
from evalstress.llm.fake_server import FakeServer, Reply

MESSAGES = [{"role": "user", "content": "Rate this."}]
PARAMS = {"temperature": 0.0, "max_tokens": 8}


@pytest.mark.parametrize(("url", "loopback"), [
    ("http://127.0.0.1:8080/v1", True), ("http://localhost:1234/v1", True),
    ("http://[::1]:9000/v1", True), ("http://127.3.2.1/v1", True), ("http://0.0.0.0:80/v1", True),
    ("https://api.openai.com/v1", False), ("http://10.0.0.5:8000/v1", False),
    ("http://my-gpu-box:8000/v1", False),
])
def test_loopback_addresses(url: str, loopback: bool) -> None:
    assert identity.is_loopback(url) is loopback


def test_two_fake_servers_on_different_ports_share_cached_answers(tmp_path: Path) -> None:
    request = ScoreRequest("The cat sat on the mat.", "A cat sat on a mat.", (), "summarization")
    cache = tmp_path / "llm.sqlite"
    with FakeServer(default=Reply("Rating: 4")) as first, \
            FakeServer(default=Reply("Rating: 1")) as second:
        assert first.port != second.port
        spec = "judge:model=fake,aspect=fluency,form=rate-explain,cache={},base_url={}"
        judge_a = create_evaluator(spec.format(cache, first.base_url))
        [row] = judge_a.score([request])
        judge_a.close()
        judge_b = create_evaluator(spec.format(cache, second.base_url))
        [again] = judge_b.score([request])
        assert row["fluency"].value == again["fluency"].value == 4.0  # the first server's answer
        assert first.calls == 1 and second.calls == 0
        assert judge_a.signature() == judge_b.signature()  # the score cache is shared too
        assert judge_a.client.identity == judge_b.client.identity == "loopback:model:fake"


def test_a_remote_url_stays_in_the_key() -> None:
    a = LLMClient("https://api.example.com/v1", "m")
    b = LLMClient("https://other.example.com/v1", "m")
    assert a.identity == "https://api.example.com/v1"
    assert a.key(MESSAGES, PARAMS, 0) != b.key(MESSAGES, PARAMS, 0)


def test_a_served_file_path_is_named_by_the_file_hash(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    weights = tmp_path / "model.gguf"
    weights.write_bytes(b"not really weights")
    digest = hashlib.sha256(b"not really weights").hexdigest()
    monkeypatch.setattr(identity, "served_models",
                        lambda url, key_env: [identity.ServedModel(str(weights))])
    one = LLMClient("http://127.0.0.1:5001/v1", "anything")
    two = LLMClient("http://localhost:5002/v1", "anything")
    assert one.identity == two.identity == f"loopback:file-sha256:{digest}"
    assert one.key(MESSAGES, PARAMS, 0) == two.key(MESSAGES, PARAMS, 0)
    weights.write_bytes(b"other weights")  # replaced file, same path: a new identity
    assert LLMClient("http://127.0.0.1:5001/v1", "anything").identity != one.identity


def test_a_file_hash_the_server_lists_names_the_model_whatever_its_id(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # `evalstress serve` lists its file's name and sha256, never the file's path
    digest = hashlib.sha256(b"weights").hexdigest()
    listed = {"SmolLM2.gguf": [identity.ServedModel("SmolLM2.gguf", digest)],
              "renamed": [identity.ServedModel("renamed", digest)],
              "not a hash": [identity.ServedModel("SmolLM2.gguf", "../etc/passwd")]}
    names = {}
    for case, models in listed.items():
        monkeypatch.setattr(identity, "served_models", lambda url, key_env, m=models: m)
        names[case] = LLMClient("http://127.0.0.1:5001/v1", "anything").identity
    assert names["SmolLM2.gguf"] == names["renamed"] == f"loopback:file-sha256:{digest}"
    assert names["not a hash"] == "loopback:model:SmolLM2.gguf"


def test_several_served_models_are_told_apart_by_the_model_name(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(identity, "served_models", lambda url, key_env: [
        identity.ServedModel("small"), identity.ServedModel("large")])
    small = LLMClient("http://127.0.0.1:5001/v1", "small")
    large = LLMClient("http://127.0.0.1:5001/v1", "large")
    assert small.identity == "loopback:model:small" and large.identity == "loopback:model:large"


def test_an_unreachable_local_server_falls_back_to_the_model_name(
        capsys: pytest.CaptureFixture[str]) -> None:
    with FakeServer() as server:
        url = server.base_url
    client = LLMClient(url, "my-model")
    assert client.identity == "loopback:name:my-model"
    assert "could not ask" in capsys.readouterr().err
    # stable for the client's life: asked once
    assert client.key(MESSAGES, PARAMS, 0) == client.key(MESSAGES, PARAMS, 0)


def test_cache_entries_written_through_one_port_are_found_through_another(
        tmp_path: Path) -> None:
    import asyncio

    cache = ResponseCache(tmp_path / "llm.sqlite")
    with FakeServer(default=Reply("first")) as a, FakeServer(default=Reply("second")) as b:
        for server in (a, b):
            client = LLMClient(server.base_url, "fake", cache=cache)

            async def ask(client: LLMClient = client) -> str:
                try:
                    return (await client.chat(MESSAGES, PARAMS, 0)).text
                finally:
                    await client.aclose()

            assert asyncio.run(ask()) == "first"
        assert a.calls == 1 and b.calls == 0


def test_a_server_that_lists_no_models_is_said_once_in_one_clean_line(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """It was a Python UserWarning (the file path and source line of the call), printed each
    time the judge was built: three times in a card."""
    def no_listing(url: str, key_env: str) -> list[identity.ServedModel]:
        raise OSError("HTTP Error 404: Not Found")

    monkeypatch.setattr(identity, "served_models", no_listing)
    url = "http://127.0.0.1:5077/v1"
    for _ in range(3):  # the card's plan and two methods, each building the judge
        assert LLMClient(url, "quiet-model").identity == "loopback:name:quiet-model"
    lines = capsys.readouterr().err.splitlines()
    assert lines == [f"warning: could not ask {url} which model it serves (HTTP Error 404: Not "
                     "Found); its answers are cached under the model name 'quiet-model' alone"]
