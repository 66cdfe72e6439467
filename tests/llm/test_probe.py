"""An endpoint is asked once, before any work, whether it can answer: a missing or refused key,
a server that is not there and a model it does not serve are one line each."""

from __future__ import annotations

import warnings

import pytest

from evalstress.llm.client import LLMClient
from evalstress.llm.fake_server import FakeServer
from evalstress.llm.probe import EndpointError, check_client, check_endpoint, serves


def closed_port_url() -> str:
    with FakeServer() as server:
        return server.base_url  # nothing listens there once the server is closed


def test_the_openai_api_without_a_key_is_refused_before_any_request(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(EndpointError) as failed:
        # no network is needed: the host is known to need a key
        check_endpoint("https://api.openai.com/v1", "gpt-4o-mini", "OPENAI_API_KEY",
                       who="judge(gpt-4o-mini)", timeout=0.001)
    assert str(failed.value) == (
        "judge(gpt-4o-mini): https://api.openai.com/v1 needs an API key: set $OPENAI_API_KEY "
        "(or name the variable that holds it with api_key_env=NAME)")


def test_a_server_that_wants_a_key_it_was_not_given_is_named_with_the_variable(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROBE_TEST_KEY", raising=False)
    with FakeServer(api_key="right") as server:
        with pytest.raises(EndpointError) as failed:
            check_endpoint(server.base_url, "fake", "PROBE_TEST_KEY", who="judge(fake)")
        assert (server.listings, server.calls) == (1, 0)
    assert "asks for an API key (HTTP 401): set $PROBE_TEST_KEY" in str(failed.value)


def test_a_refused_key_is_named_by_its_variable_never_by_its_value(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROBE_TEST_KEY", "sk-wrong-123456789")
    with FakeServer(api_key="right") as server:
        with pytest.raises(EndpointError) as failed:
            check_endpoint(server.base_url, "fake", "PROBE_TEST_KEY", who="judge(fake)")
        assert (server.listings, server.calls) == (1, 0)
    said = str(failed.value)
    assert "refused the API key in $PROBE_TEST_KEY (HTTP 401)" in said
    assert "sk-wrong" not in said


def test_a_closed_port_is_connection_refused_without_a_python_warning() -> None:
    url = closed_port_url()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails the test
        with pytest.raises(EndpointError) as failed:
            check_endpoint(url, "m", "OPENAI_API_KEY", who="judge(m)")
    assert str(failed.value).startswith(f"judge(m): connection refused by {url}")


def test_a_model_the_server_does_not_list_is_refused_with_the_names_it_lists() -> None:
    with FakeServer(models=("llama-3-8b", "qwen-2-7b")) as server:
        with pytest.raises(EndpointError) as failed:
            check_endpoint(server.base_url, "gpt-4o", "OPENAI_API_KEY", who="judge(gpt-4o)")
        assert server.calls == 0
    assert str(failed.value) == (f"judge(gpt-4o): {server.base_url} serves no model 'gpt-4o' "
                                 "(it lists llama-3-8b, qwen-2-7b): check model=")


def test_a_server_of_one_model_answers_any_name_and_is_asked_once() -> None:
    with FakeServer(models=("/models/some.gguf",)) as server:
        client = LLMClient(server.base_url, "whatever")
        check_client(client, "judge(whatever)")
        check_client(client, "judge(whatever)")  # a card's next method: not asked again
        assert (server.listings, server.calls) == (1, 0)


def test_an_in_process_model_is_not_asked() -> None:
    class Backend:
        name, max_concurrency, identity = "local", 1, "local"

    check_client(LLMClient("unused", "local", backend=Backend()), "judge(local)")  # type: ignore[arg-type]


@pytest.mark.parametrize(("ids", "model", "answered"), [
    (["gpt-4o", "gpt-4o-mini"], "gpt-4o-mini", True),
    (["llama3:latest", "qwen2:7b"], "llama3", True),  # Ollama answers a name without its tag
    (["openai/*", "local-model"], "openai/gpt-4o", True),  # a gateway's wildcard route
    (["gpt-4o", "gpt-4o-mini"], "gpt-4", False),
])
def test_which_listed_models_answer_a_name(ids: list[str], model: str, answered: bool) -> None:
    assert serves(ids, model) is answered
