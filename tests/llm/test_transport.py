"""Both transports (lean aiohttp and the openai SDK) keep the client's fault semantics."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any
from urllib.parse import quote_plus

import pytest

from evalstress.llm.client import LLMClient, LLMError
from evalstress.llm.fake_server import ECHOES, FakeServer, Reply
from evalstress.llm.transport import choose_transport, error_message

MESSAGES = [{"role": "user", "content": "Rate this."}]
TRANSPORTS = ["aiohttp", "openai"]


def ask(client: LLMClient) -> Any:
    async def main() -> Any:
        try:
            return (await asyncio.gather(client.chat(MESSAGES, {"max_tokens": 4}),
                                         return_exceptions=True))[0]
        finally:
            await client.aclose()
    return asyncio.run(main())


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_retry_after_then_answer(server: FakeServer, transport: str) -> None:
    server.script.extend([Reply(status=429, headers={"retry-after-ms": "300"}),
                          Reply(status=502), Reply("Rating: 4")])
    client = LLMClient(server.base_url, "fake", backoff=0.01, transport=transport)
    start = time.monotonic()
    answer = ask(client)
    assert answer.text == "Rating: 4" and server.calls == 3
    assert time.monotonic() - start >= 0.3
    assert client.usage.rate_limited == 1 and client.usage.retries == 2


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("reply, kind", [
    (Reply(status=404, error="no such model"), "client"),
    (Reply(truncate=True), "connection"),
    (Reply(body=b"<html>"), "malformed"),
    (Reply(hang=True), "timeout"),
])
def test_failures_keep_their_kind(server: FakeServer, transport: str, reply: Reply,
                                  kind: str) -> None:
    server.default = reply
    client = LLMClient(server.base_url, "fake", backoff=0.01, max_attempts=2, timeout=0.3,
                       transport=transport)
    failed = ask(client)
    assert isinstance(failed, LLMError)
    assert failed.kind == kind
    if kind == "client":
        assert "no such model" in str(failed) and server.calls == 1


@pytest.mark.filterwarnings("ignore:could not ask")  # the loopback identity probe is refused too
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_connection_refused_says_so(transport: str) -> None:
    """A port nothing listens on reads "connection refused", never a timeout (the SDK's aiohttp
    adapter reports it as a connect timeout)."""
    with FakeServer() as srv:
        url = srv.base_url  # closed again: nothing listens on this port now
    client = LLMClient(url, "fake", backoff=0.01, max_attempts=2, transport=transport)
    failed = ask(client)
    assert isinstance(failed, LLMError) and failed.kind == "connection"
    assert f"connection refused by {url}" in str(failed)
    assert "timeout" not in str(failed) and "(after 2 attempts)" in str(failed)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_unknown_host_says_so(transport: str) -> None:
    client = LLMClient("http://no-such-host.invalid:9/v1", "fake", backoff=0.01,
                       max_attempts=1, transport=transport)
    failed = ask(client)
    assert isinstance(failed, LLMError) and failed.kind == "connection"
    assert "could not connect to http://no-such-host.invalid:9/v1" in str(failed)


def test_transport_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    assert choose_transport() == "aiohttp"
    monkeypatch.setenv("EVALSTRESS_LLM_TRANSPORT", "openai")
    assert choose_transport() == "openai"
    with pytest.raises(ValueError, match="unknown LLM transport 'httpx'"):
        choose_transport("httpx")


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("echo", ECHOES)
def test_a_key_the_server_echoes_is_not_in_the_error(server: FakeServer, transport: str,
                                                     echo: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A key of no known shape, under a variable of the spec's choosing, given back raw,
    JSON-escaped, percent-encoded or over two lines: the error says 401 and holds none of it."""
    key = "TRANSPORTSECRET/gw+0001"
    monkeypatch.setenv("TRANSPORT_TEST_KEY", key)
    server.default = Reply(status=401, echo=echo)
    client = LLMClient(server.base_url, "fake", api_key_env="TRANSPORT_TEST_KEY",
                       max_attempts=1, transport=transport)
    failed = ask(client)
    assert f"Bearer {key}" in server.auth_headers
    assert isinstance(failed, LLMError) and failed.status == 401
    text = str(failed)
    joined = "".join(text.split())
    escaped = key.replace("/", "\\/").replace("+", "\\u002b")
    for form in (key, escaped, quote_plus(key), key[:11], key[11:]):
        assert form not in text and form not in joined, (form, text)
    assert "HTTP 401" in text


def test_a_long_error_message_is_cut_after_the_key_is_removed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Cutting first would leave the head of a key that straddles the cut, which no longer
    matches the key."""
    key = "CUTSECRET-gw-998877"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    body = json.dumps({"error": {"message": "x" * 190 + key + " was refused"}}).encode()
    message = error_message(body)
    assert message.startswith("x" * 190) and len(message) <= 200
    assert "CUTSE" not in message
    assert "CUTSE" not in error_message(b"not json " + b"y" * 185 + key.encode())


def test_an_error_body_nested_100_000_deep_is_quoted_cut_short_not_a_crash() -> None:
    """It was a RecursionError out of the transport, which ended the run with exit 4."""
    message = error_message(b"[" * 100_000 + b"]" * 100_000, "Bad Gateway")
    assert message == "[" * 200
