"""The body checks of `evalstress serve`, with llama-cpp-python's own request models and no
model loaded: what a client is told for a body the library would fail on."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("llama_cpp.server.types")

from evalstress.serve.body import BadRequest, Served, check_body, request_models

SERVED = Served("SmolLM2.gguf", vocab_size=49152)
HI = [{"role": "user", "content": "Hi"}]


def told(path: str, data: dict[str, Any]) -> tuple[str, str | None]:
    with pytest.raises(BadRequest) as caught:
        check_body(path, json.dumps(data).encode(), request_models()[path], SERVED)
    return str(caught.value), caught.value.field


def test_token_ids_are_checked_against_the_vocabulary() -> None:
    assert told("/extras/detokenize", {"tokens": [3, 49152]}) == (
        "field 'tokens[1]': a token id from 0 to 49151", "tokens[1]")
    message, field = told("/v1/chat/completions", {"messages": HI, "logit_bias": {"-1": 2}})
    assert field == "logit_bias"
    assert message.startswith("field 'logit_bias': the key '-1' is not a token id from 0 to")
    # biased by text, the keys are words
    body = json.dumps({"messages": HI, "logit_bias": {"yes": 2}, "logit_bias_type": "tokens"})
    check_body("/v1/chat/completions", body.encode(), request_models()["/v1/chat/completions"],
               SERVED)


def test_a_request_without_a_model_is_given_the_served_name() -> None:
    body = json.dumps({"messages": HI}).encode()
    named = check_body("/v1/chat/completions", body, request_models()["/v1/chat/completions"],
                       SERVED)
    assert json.loads(named) == {"messages": HI, "model": "SmolLM2.gguf"}
    copilot = "/v1/engines/copilot-codex/completions"
    named = check_body(copilot, b'{"prompt": "def f("}', request_models()[copilot], SERVED)
    assert json.loads(named)["model"] == "SmolLM2.gguf"
    mine = json.dumps({"messages": HI, "model": "mine"}).encode()
    assert check_body("/v1/chat/completions", mine, request_models()["/v1/chat/completions"],
                      SERVED) == mine


@pytest.mark.parametrize(("prompt", "said"), [
    ("", "field 'prompt' is missing or empty"), ([], "field 'prompt' is missing or empty"),
    (["a", "b"], "field 'prompt': send one prompt per request, not a list of 2"),
])
def test_a_completion_needs_one_prompt(prompt: Any, said: str) -> None:
    message, field = told("/v1/completions", {"prompt": prompt})
    assert message.startswith(said) and field == "prompt"


def test_a_lone_surrogate_is_named_wherever_it_is() -> None:
    body = b'{"messages": [{"role": "user", "content": "Hi"}], "stop": ["ok", "\\udc00"]}'
    with pytest.raises(BadRequest) as caught:
        check_body("/v1/chat/completions", body, request_models()["/v1/chat/completions"],
                   SERVED)
    assert caught.value.field == "stop[1]"
