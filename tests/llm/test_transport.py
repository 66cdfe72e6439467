"""Both transports (lean aiohttp and the openai SDK) keep the client's fault semantics."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

import pytest

from evalstress.llm.cache import ResponseCache
from evalstress.llm.client import ChatResponse, LLMClient, LLMError
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


def refused_with_echo(server: FakeServer, transport: str, echo: str,
                      monkeypatch: pytest.MonkeyPatch) -> tuple[str, Any]:
    """A key under a variable of the spec's choosing, a server that answers 401 echoing it as
    `echo`, and one request: the key and what the request gave."""
    key = "TRANSPORTSECRET/gw+0001"
    monkeypatch.setenv("TRANSPORT_TEST_KEY", key)
    server.default = Reply(status=401, echo=echo)
    client = LLMClient(server.base_url, "fake", api_key_env="TRANSPORT_TEST_KEY",
                       max_attempts=1, transport=transport)
    return key, ask(client)


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("echo", ECHOES)
def test_a_key_the_server_echoes_is_not_in_the_error(server: FakeServer, transport: str,
                                                     echo: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A key of no known shape, under a variable of the spec's choosing, given back raw,
    JSON-escaped, percent-encoded or over two lines: the error says 401 and holds none of it."""
    key, failed = refused_with_echo(server, transport, echo, monkeypatch)
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


def encoded_cores(key: str) -> list[str]:
    """Base64 (both alphabets, each of the three alignments), hex and reversed forms of `key`,
    made with the standard library: the base64 characters next to other bytes are left out (the
    first and last group of four), so what is left encodes nothing but the key."""
    raw = key.encode()
    forms = [raw.hex(), raw.hex().upper(), key[::-1]]
    for lead in (b"", b"B", b"Be"):
        std = base64.b64encode(lead + raw).decode()
        core = std[4 if lead else 0:-4]
        forms += [core, core.replace("+", "-").replace("/", "_")]
    return forms


ENCODED_ECHOES = ["base64", "base64-bearer", "base64-auth", "base64url", "hex", "HEX",
                  "reversed"]


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("echo", ENCODED_ECHOES)
def test_a_key_the_server_echoes_encoded_is_not_in_the_error(
        server: FakeServer, transport: str, echo: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`Invalid credentials (token QmVhcmVy...)`: the error keeps the status and the server's
    words, not the key in any encoding or alignment."""
    key, failed = refused_with_echo(server, transport, echo, monkeypatch)
    assert isinstance(failed, LLMError) and failed.status == 401 and failed.kind == "client"
    text = str(failed)
    assert "HTTP 401" in text and "Invalid credentials (token [REDACTED])" in text
    assert not [form for form in [key, *encoded_cores(key)] if form in text], text


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("echo", ["raw", "base64-auth", "hex", "base64url"])
def test_an_answer_that_gives_the_key_back_is_neither_cached_nor_used(
        server: FakeServer, transport: str, echo: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A 200 whose text holds the key: a final failure saying so (no retry, nothing cached: the
    cache is shared by `cache merge`, and a rating read from it would be read from a text
    the gateway tampered with)."""
    key = "ANSWERSECRET-gw-5566"
    monkeypatch.setenv("TRANSPORT_TEST_KEY", key)
    server.default = Reply("Rating: 4", echo=echo)
    cache = ResponseCache(tmp_path / "llm.sqlite")
    client = LLMClient(server.base_url, "fake", api_key_env="TRANSPORT_TEST_KEY",
                       max_attempts=3, transport=transport, cache=cache)
    failed = ask(client)
    assert server.calls == 1  # not retried
    assert isinstance(failed, LLMError) and failed.kind == "key-echo" and failed.status == 200
    assert "holds the API key" in str(failed)
    assert cache.count() == 0
    cache.close()
    stored = b"".join(path.read_bytes() for path in tmp_path.glob("llm.sqlite*"))
    assert not [f for f in [key, *encoded_cores(key)] if f.encode() in stored]


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("value", ["LINEENDSECRET-gw-77\r\n", "LINEENDSECRET-gw-77\n",
                                   " LINEENDSECRET-gw-77\t"])
def test_a_key_with_surrounding_whitespace_is_sent_without_it(
        server: FakeServer, transport: str, value: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A .env written on Windows leaves '\r' after the key: the request still goes out."""
    monkeypatch.setenv("TRANSPORT_TEST_KEY", value)
    client = LLMClient(server.base_url, "fake", api_key_env="TRANSPORT_TEST_KEY",
                       max_attempts=1, transport=transport)
    answer = ask(client)
    assert isinstance(answer, ChatResponse), answer
    assert server.auth_headers == {"Bearer LINEENDSECRET-gw-77"}


def test_a_key_with_an_inner_control_character_is_refused_when_the_client_is_made(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRANSPORT_TEST_KEY", "INNER\rSECRET-gw-77")
    with pytest.raises(ValueError, match=r"\$TRANSPORT_TEST_KEY .*U\+000D") as info:
        LLMClient("http://127.0.0.1:9/v1", "fake", api_key_env="TRANSPORT_TEST_KEY")
    assert "SECRET-gw" not in str(info.value)



def test_a_stored_answer_that_gives_the_key_back_is_asked_again(
        server: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An answer an older evalstress cached with the key in it (or one merged in from another
    cache) is a miss: never read, and replaced by the fresh answer."""
    key = "STOREDSECRET-gw-5566"
    monkeypatch.setenv("TRANSPORT_TEST_KEY", key)
    cache = ResponseCache(tmp_path / "llm.sqlite")
    client = LLMClient(server.base_url, "fake", api_key_env="TRANSPORT_TEST_KEY",
                       max_attempts=1, cache=cache)
    params = {"max_tokens": 4}
    stored = client.key(MESSAGES, params, 0)
    cache.put(stored, client.parts(MESSAGES, params, 0),
              {"text": f"Rating: 2 ({base64.b64encode(key.encode()).decode()})"})
    assert client.cached([stored]) == {}
    answer = ask(client)
    assert isinstance(answer, ChatResponse) and not answer.cached and answer.text == "Rating: 4"
    assert server.calls == 1
    assert cache.get(stored) == {**answer.to_json(), "text": "Rating: 4"}


def test_an_error_body_nested_100_000_deep_is_quoted_cut_short_not_a_crash() -> None:
    """It was a RecursionError out of the transport, which ended the run with exit 4."""
    message = error_message(b"[" * 100_000 + b"]" * 100_000, "Bad Gateway")
    # the server's words as a stored excerpt: 200 characters at most, the cut marked
    assert message == "[" * 197 + "..."
