"""A request's deadline runs from its dispatch: a long queue behind the limit kills nothing."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from evalstress.llm.client import LLMClient, LLMError
from evalstress.llm.fake_server import FakeServer, Reply

MESSAGES = [{"role": "user", "content": "Rate this."}]


def _serial(seconds: float) -> Any:
    """A responder that blocks the fake server's loop: it answers one request at a time, like
    a llama.cpp server with a single slot."""
    def respond(request: dict[str, Any]) -> Reply:
        time.sleep(seconds)
        return Reply("Rating: 3")
    return respond


def _ask_all(client: LLMClient, count: int) -> list[Any]:
    async def main() -> list[Any]:
        try:
            return list(await asyncio.gather(
                *(client.chat(MESSAGES, {"temperature": 0.0}, i) for i in range(count)),
                return_exceptions=True))
        finally:
            await client.aclose()
    return asyncio.run(main())


def test_queued_requests_are_not_killed_by_the_deadline() -> None:
    # 24 requests through 2 slots of a one-at-a-time server, 0.05 s each: about 1.2 s in all,
    # more than twice the 0.5 s deadline; each request, once sent, waits at most ~0.1 s
    with FakeServer(responder=_serial(0.05)) as server:
        client = LLMClient(server.base_url, "fake", max_concurrency=2, timeout=0.5,
                           deadline=0.5, backoff=0.01)
        start = time.monotonic()
        answers = _ask_all(client, 24)
        elapsed = time.monotonic() - start
    failures = [a for a in answers if isinstance(a, LLMError)]
    assert not failures, [str(f) for f in failures]
    assert elapsed > 2 * 0.5  # the batch did outlast the deadline
    assert server.calls == 24 and server.max_in_flight <= 2
    assert client.usage.errors == 0 and client.usage.calls == 24


def test_the_deadline_still_bounds_retries_after_dispatch() -> None:
    with FakeServer(default=Reply(status=500), latency=0.02) as server:
        client = LLMClient(server.base_url, "fake", max_concurrency=1, deadline=0.3,
                           backoff=0.05, max_attempts=50)
        answers = _ask_all(client, 3)
    assert all(isinstance(a, LLMError) and a.kind == "deadline" for a in answers)
    # each request was tried after it left the queue: none died unsent
    assert all(a.attempts >= 1 for a in answers if isinstance(a, LLMError))
    assert all("after 0 attempts" not in str(a) for a in answers)
