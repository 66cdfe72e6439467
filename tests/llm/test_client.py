"""The client against the fake server: retries, limits, deadline, cache, accounting."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from evalstress.llm.cache import ResponseCache, explain
from evalstress.llm.client import DOWN_AFTER, LLMClient, LLMError, parse_retry_after
from evalstress.llm.fake_server import FakeServer, Reply

MESSAGES = [{"role": "user", "content": "Rate this."}]
PARAMS = {"temperature": 0.0, "max_tokens": 8}


def ask(client: LLMClient, count: int = 1, sample_base: int = 0) -> list[Any]:
    async def main() -> list[Any]:
        try:
            return list(await asyncio.gather(
                *(client.chat(MESSAGES, PARAMS, sample_base + i) for i in range(count)),
                return_exceptions=True))
        finally:
            await client.aclose()
    return asyncio.run(main())


def make(server: FakeServer, **kw: Any) -> LLMClient:
    kw.setdefault("backoff", 0.01)
    return LLMClient(server.base_url, "fake", **kw)


def test_429_waits_as_long_as_retry_after_says(server: FakeServer) -> None:
    server.script.extend([Reply(status=429, headers={"Retry-After": "0.4"}), Reply("Rating: 3")])
    client = make(server)
    start = time.monotonic()
    [answer] = ask(client)
    assert answer.text == "Rating: 3"
    assert time.monotonic() - start >= 0.4
    assert server.calls == 2 and client.usage.rate_limited == 1 and client.usage.retries == 1


def test_500_is_retried_and_400_is_not(server: FakeServer) -> None:
    server.script.extend([Reply(status=500), Reply(status=503), Reply("Rating: 5")])
    [ok] = ask(make(server))
    assert ok.text == "Rating: 5" and server.calls == 3
    server.reset_counters()
    server.script.append(Reply(status=400, error="bad model name"))
    [failed] = ask(make(server))
    assert isinstance(failed, LLMError) and failed.kind == "client" and failed.status == 400
    assert "bad model name" in str(failed)
    assert server.calls == 1


def test_attempt_timeout_then_retry(server: FakeServer) -> None:
    server.script.extend([Reply(hang=True), Reply("Rating: 2")])
    client = make(server, timeout=0.3)
    [answer] = ask(client)
    assert answer.text == "Rating: 2" and server.calls == 2 and client.usage.retries == 1


def test_total_deadline_bounds_the_retries(server: FakeServer) -> None:
    """50 attempts with a 0.1 s backoff doubling each time would take hours; the deadline ends
    them. Counted: with seed 0 the jittered waits are 0.13, 0.25, 0.37, 0.61, 1.62, 2.90 s, so
    a 0.5 s deadline leaves room for at most 3 calls and a 3.5 s one for 6 (a loaded machine
    only makes fewer). Timed against the seven times longer deadline, on the same machine as
    loaded: the short request ends in well under half the long one's time."""
    server.default = Reply(status=500)

    def fail_within(deadline: float) -> tuple[float, int]:
        server.reset_counters()
        client = LLMClient(server.base_url, "fake", backoff=0.1, deadline=deadline,
                           max_attempts=50, seed=0)
        start = time.monotonic()
        [failed] = ask(client)
        took = time.monotonic() - start
        assert isinstance(failed, LLMError) and failed.kind == "deadline"
        return took, server.calls

    short, short_calls = fail_within(0.5)
    long, long_calls = fail_within(3.5)
    assert 2 <= short_calls <= 3 and short_calls < long_calls <= 6
    assert short < 0.5 * long


@pytest.mark.parametrize("reply, kind", [
    (Reply(body=b"{not json"), "malformed"),
    (Reply(body=b'{"choices": []}'), "malformed"),
    (Reply(body=b"[" * 100_000 + b"]" * 100_000), "malformed"),  # was a RecursionError
    (Reply(truncate=True), "connection"),
])
def test_malformed_and_truncated_bodies_fail_with_reason(server: FakeServer, reply: Reply,
                                                         kind: str) -> None:
    server.default = reply
    [failed] = ask(make(server, max_attempts=2))
    assert isinstance(failed, LLMError) and failed.kind == kind
    assert server.calls == 2  # retried once, then given up


def test_concurrency_limit_is_honoured() -> None:
    with FakeServer(latency=0.05) as server:
        answers = ask(make(server, max_concurrency=4), count=40)
        assert all(a.text == "Rating: 4" for a in answers)
        assert server.max_in_flight == 4


def test_429_halves_the_limit_and_success_restores_it() -> None:
    count = {"n": 0}

    def responder(request: dict[str, Any]) -> Reply:
        count["n"] += 1
        if count["n"] <= 6:
            return Reply(status=429, headers={"Retry-After": "0.05"})
        return Reply("Rating: 4")

    with FakeServer(latency=0.02, responder=responder) as server:
        client = make(server, max_concurrency=8)
        endpoint = client.pool.endpoints[0]
        ask(client, count=6)
        after_429 = endpoint.limit
        assert after_429 < 8
        ask(client, count=200, sample_base=100)
        assert endpoint.limit > after_429
        assert server.calls >= 206


def test_several_endpoints_share_the_load() -> None:
    with FakeServer(latency=0.02) as a, FakeServer(latency=0.02) as b:
        client = LLMClient([a.base_url, b.base_url], "fake", max_concurrency=4)
        ask(client, count=60)
        assert a.calls + b.calls == 60
        assert min(a.calls, b.calls) >= 20
        assert a.max_in_flight <= 4 and b.max_in_flight <= 4


def test_cache_rerun_costs_no_call_and_errors_are_not_cached(server: FakeServer,
                                                             tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "llm.sqlite")
    server.script.append(Reply(status=400))
    first = ask(make(server, cache=cache), count=3)
    assert sum(isinstance(a, LLMError) for a in first) == 1
    assert server.calls == 3 and cache.count() == 2
    client = make(server, cache=cache)
    again = ask(client, count=3)
    assert all(not isinstance(a, LLMError) for a in again)
    assert server.calls == 4  # only the failed one was asked again
    assert client.usage.cache_hits == 2 and client.usage.calls == 1
    assert sum(a.cached for a in again) == 2


def test_sample_index_is_part_of_the_key(server: FakeServer, tmp_path: Path) -> None:
    client = make(server, cache=ResponseCache(tmp_path / "llm.sqlite"))
    assert client.key(MESSAGES, PARAMS, 0) != client.key(MESSAGES, PARAMS, 1)
    ask(client, count=2)
    ask(client, count=2)
    assert server.calls == 2


def test_api_key_is_sent_but_never_stored(server: FakeServer, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-test-secret-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    cache = ResponseCache(tmp_path / "llm.sqlite")
    ask(make(server, cache=cache), count=2)
    assert f"Bearer {secret}" in server.auth_headers
    cache.close()
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert secret.encode() not in stored and b"sk-test" not in stored


def test_explain_names_the_field_that_differs(server: FakeServer, tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "llm.sqlite")
    client = make(server, cache=cache)
    ask(client)
    wanted = client.parts(MESSAGES, {**PARAMS, "temperature": 0.7}, 0)
    result = explain(cache, wanted)
    assert not result.hit
    [(_, diffs)] = result.nearest
    assert [(d.field, d.wanted, d.stored) for d in diffs] == [("params.temperature", 0.7, 0.0)]
    assert explain(cache, client.parts(MESSAGES, PARAMS, 0)).hit


def test_usage_counts_tokens(server: FakeServer) -> None:
    client = make(server)
    ask(client, count=3)
    assert client.usage.calls == 3 and client.usage.completion_tokens > 0
    assert client.usage.prompt_tokens > 0


def test_retry_after_forms() -> None:
    assert parse_retry_after({"Retry-After": "2"}) == 2.0
    assert parse_retry_after({"retry-after-ms": "250"}) == 0.25
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert parse_retry_after({}) is None


@pytest.mark.filterwarnings("ignore:could not ask")  # the loopback identity probe is refused too
def test_a_server_that_is_not_there_is_not_asked_hundreds_of_times() -> None:
    """40 requests of up to 3 attempts each against a closed port: after DOWN_AFTER attempts in
    a row could not connect, the client sends nothing more and every request fails at once
    with the reason (not 120 connection attempts)."""
    with FakeServer() as srv:
        url = srv.base_url  # closed again: nothing listens on this port now
    client = LLMClient(url, "fake", backoff=0.01, max_attempts=3, max_concurrency=4)
    failed = ask(client, 40)
    assert all(isinstance(f, LLMError) and f.kind == "connection" for f in failed)
    calls = client.usage.calls
    assert calls <= DOWN_AFTER + 4  # those already on their way when it tripped
    assert f"connection refused by {url}" in str(failed[-1])
    assert "attempts in a row could not connect, so nothing more is sent" in str(failed[-1])
    client.reset_failures()  # closed at the end of a run, used again: it tries again
    ask(client, 1)
    assert client.usage.calls > calls


@pytest.mark.parametrize("status", [401, 403])
def test_a_server_that_refuses_the_key_is_not_asked_hundreds_of_times(
        server: FakeServer, status: int) -> None:
    """A card whose judge got 401 to every request sent 396 requests before exit 3: the key is
    refused on every later request as well, so after DOWN_AFTER in a row nothing more is sent."""
    server.default = Reply(status=status, error="Incorrect API key provided")
    client = make(server, max_concurrency=4)
    failed = ask(client, 60)
    assert all(isinstance(f, LLMError) and f.kind == "client" for f in failed)
    assert server.calls <= DOWN_AFTER + 4  # those already on their way when it tripped
    assert f"HTTP {status}" in str(failed[-1])
    assert "attempts in a row had the key refused, so nothing more is sent" in str(failed[-1])


def test_a_new_client_for_a_refused_key_sends_nothing_and_a_new_key_is_tried(
        server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """A card builds a client per method: the second one for the same key and server sends
    nothing (396 requests over a card's methods before); a changed key is asked again."""
    monkeypatch.setenv("REFUSED_TEST_KEY", "old-key")
    server.default = Reply(status=401, error="Incorrect API key provided")
    ask(make(server, max_concurrency=1, api_key_env="REFUSED_TEST_KEY"), DOWN_AFTER)
    assert server.calls == DOWN_AFTER
    failed = ask(make(server, api_key_env="REFUSED_TEST_KEY"), 20)
    assert server.calls == DOWN_AFTER
    assert all(isinstance(f, LLMError) and "had the key refused" in str(f) for f in failed)
    monkeypatch.setenv("REFUSED_TEST_KEY", "new-key")
    server.default = Reply("Rating: 4")
    answers = ask(make(server, api_key_env="REFUSED_TEST_KEY"), 2)
    assert server.calls == DOWN_AFTER + 2 and not any(isinstance(a, LLMError) for a in answers)


def test_a_refused_key_between_answers_does_not_stop_the_client(server: FakeServer) -> None:
    """Only refusals in a row count: one answer that took the key starts the count again."""
    for _ in range(3):
        server.script.extend([Reply(status=401, error="no")] * (DOWN_AFTER - 1))
        server.script.append(Reply("Rating: 3"))
    answers = ask(make(server, max_concurrency=1), 3 * DOWN_AFTER)
    assert server.calls == 3 * DOWN_AFTER
    assert sum(not isinstance(a, LLMError) for a in answers) == 3


def test_an_answer_of_any_kind_starts_the_count_again(server: FakeServer) -> None:
    """Errors that show the server is there (a 400) never stop the client."""
    server.default = Reply(status=400, error="bad request")
    failed = ask(make(server), DOWN_AFTER + 5)
    assert all(isinstance(f, LLMError) and f.kind == "client" for f in failed)
    assert server.calls == DOWN_AFTER + 5


def test_the_model_an_answer_names_is_kept_fresh_and_from_the_cache(
        server: FakeServer, tmp_path: Path) -> None:
    server.default = Reply("Rating: 4", model="fake-2026-01-15")
    cache = ResponseCache(tmp_path / "llm.sqlite")
    client = make(server, cache=cache)
    [answer] = ask(client)
    assert answer.model == "fake-2026-01-15"
    assert client.served_models == {"fake-2026-01-15": 1}
    again = make(server, cache=cache)  # a new client: the answer comes from the cache
    [stored] = ask(again)
    assert stored.cached and stored.model == "fake-2026-01-15"
    assert again.served_models == {"fake-2026-01-15": 1} and server.calls == 1
    # results.json's usage block carries the names, so a card can read them from any run
    assert again.usage.to_json()["served"] == {"fake-2026-01-15": 1}
    both = client.usage
    both.merge(again.usage)
    assert both.to_json()["served"] == {"fake-2026-01-15": 2}
