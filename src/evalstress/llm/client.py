"""An async chat client for any OpenAI-compatible endpoint, with our own retry discipline.

Speaks the OpenAI chat-completions protocol, so it works with OpenAI, vLLM, Ollama, llama.cpp
server, SGLang and gateways alike, over a lean aiohttp POST (llm/transport.py; the official
`openai.AsyncOpenAI` with max_retries=0 is one option away). What we add: bounded retries for 429 (honouring
Retry-After), 5xx, timeouts, connection errors and malformed bodies; no retry for other 4xx; a
per-attempt timeout and a total deadline per request; per-endpoint concurrency that halves on 429;
a pool of endpoints that share one model's load; the response cache (hits cost no call); and
call/token accounting. The API key is read from the environment (surrounding whitespace
stripped; a control character inside it refused when the client is made) and never stored.

Nothing a server sends is stored as it came: an error keeps its status, a kind and a redacted
excerpt (`server_excerpt`), and a successful answer that holds the API key, raw or encoded,
fails for good as kind "key-echo" (not retried, not cached, not parsed: a judgment read from
a text the gateway tampered with would be silently wrong, and the cache is shared). A stored
answer that holds the key (cached by an older evalstress, or merged in) is a miss.

A request's deadline starts when it is first dispatched, not when it is queued: a batch of
thousands waits its turn behind the concurrency limit without any request timing out unsent.
A `Backend` (the in-process GGUF model of `llm/local.py`) can stand in for the HTTP endpoints;
retries, the deadline, the cache and the accounting stay the same. In cache keys an endpoint is
named by `identity`: a remote URL by itself, a loopback server by the model it serves (see
`llm/identity.py`), so a local server's port never enters a key.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from evalstress.core.redact import (
    check_url,
    holds_secret,
    read_key,
    redact,
    register_key_variable,
    server_excerpt,
)
from evalstress.core.userfile import parse_json
from evalstress.llm.accounting import Usage
from evalstress.llm.cache import ResponseCache, claimant, key_parts, response_key
from evalstress.llm.identity import group_identity
from evalstress.llm.limits import Endpoint, EndpointPool
from evalstress.llm.transport import TransportError, choose_transport, make_transport
from evalstress.llm.transport import parse_retry_after as parse_retry_after

#: Parameters the client sends; all of them change the output and so enter the cache key.
SAMPLING_PARAMS = ("temperature", "top_p", "max_tokens", "logprobs", "top_logprobs", "seed",
                   "stop", "presence_penalty", "frequency_penalty", "response_format", "grammar")
#: Seconds between looks at the cache while another run holds the claim on a request.
CLAIM_POLL = 0.1
#: Failure kinds that are not retried: a 4xx other than 408/409/429, and an answer that gave
#: the API key back (the same request would only be paid for again).
FINAL_KINDS = ("client", "key-echo")
#: after a Ctrl-C, how long an answer already on its way may take to arrive and be cached (it
#: is paid for); nothing new is sent meanwhile
IN_FLIGHT_GRACE = 2.0
#: attempts in a row that no retry can mend (the connection refused or the host unknown, or
#: the key refused: HTTP 401/403) after which a client sends nothing more: every later request
#: fails at once with the last reason, instead of hundreds of requests each sent to a server
#: that is not there or will not take the key
DOWN_AFTER = 10
#: statuses that say the key was refused: the same key is refused on every later request
KEY_REFUSED = (401, 403)
#: the endpoints that refused a key DOWN_AFTER times in a row, this process: sha256 of the base
#: URLs and the key (the key itself is never kept) -> the last reason. A card builds a client
#: per method; the next one for the same key sends nothing, while a changed key is tried.
_refused_keys: dict[str, str] = {}


@dataclass
class ChatResponse:
    """The parts of a chat completion the judge needs; JSON-serialisable for the cache."""

    text: str
    logprobs: list[dict[str, Any]] | None = None  # per token: {"token", "logprob", "top": {t: lp}}
    finish_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    key: str = ""
    cached: bool = False
    endpoint: str = ""
    #: the model as the endpoint named it in its answer (a dated snapshot of the asked name,
    #: say); "" when it named none, or the answer was cached before this was kept
    model: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "logprobs": self.logprobs, "finish_reason": self.finish_reason,
                "usage": self.usage, "endpoint": self.endpoint,
                **({"model": self.model} if self.model else {})}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], key: str = "", cached: bool = False
                  ) -> ChatResponse:
        return cls(str(data.get("text", "")), data.get("logprobs"), data.get("finish_reason"),
                   dict(data.get("usage") or {}), key, cached, str(data.get("endpoint", "")),
                   str(data.get("model") or ""))


class LLMError(Exception):
    """A request that failed for good; `kind` says why (rate-limit, server, timeout, client...)."""

    def __init__(self, kind: str, message: str, attempts: int, status: int | None = None):
        super().__init__(redact(f"{kind}: {message} (after {attempts} "
                                f"attempt{'s' * (attempts != 1)})"))
        self.kind = kind
        self.status = status
        self.attempts = attempts


class _Retry(Exception):
    def __init__(self, kind: str, message: str, status: int | None = None,
                 retry_after: float | None = None):
        super().__init__(redact(message))
        self.kind, self.status, self.retry_after = kind, status, retry_after


#: What a backend raises for one failed attempt: a kind of FINAL_KINDS is final, any other is
#: retried.
AttemptError = _Retry


class Backend(Protocol):
    """Something that answers chat requests in place of HTTP endpoints (e.g. an in-process model).

    `name` shows in the accounting, `identity` names the model in cache keys, and
    `max_concurrency` bounds the attempts in flight. `complete` raises `AttemptError`."""

    name: str
    max_concurrency: int

    @property
    def identity(self) -> str: ...

    async def complete(self, parts: Mapping[str, Any], timeout: float) -> ChatResponse: ...


def _compact_logprobs(choice: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    content = (choice.get("logprobs") or {}).get("content")
    if not content:
        return None
    return [{"token": t.get("token", ""), "logprob": t.get("logprob"),
             "top": {x.get("token", ""): x.get("logprob") for x in t.get("top_logprobs") or []}}
            for t in content]


def gives_key_back(response: ChatResponse) -> bool:
    """Whether an answer holds a known API key in any form `redact` knows: in its text, in its
    tokens read as one text, or in its finish reason (all of them would be cached)."""
    tokens = "".join(str(t.get("token", "")) for t in response.logprobs or [])
    parts = {response.text, tokens, str(response.finish_reason or "")}  # tokens: the text, often
    return any(holds_secret(part) for part in parts)


class LLMClient:
    """Chat completions through a pool of endpoints serving one model.

    Use inside one event loop per batch: `async with client.session(): await client.chat(...)`.
    Endpoint limits and accounting persist across sessions; HTTP connections do not.
    """

    def __init__(self, base_urls: str | Sequence[str], model: str, *,
                 api_key_env: str = "OPENAI_API_KEY", max_concurrency: int = 16,
                 timeout: float = 60.0, deadline: float = 600.0, max_attempts: int = 6,
                 backoff: float = 0.5, max_backoff: float = 30.0,
                 cache: ResponseCache | None = None, seed: int = 0,
                 backend: Backend | None = None, transport: str | None = None):
        self.backend = backend
        if backend is not None:
            self.pool = EndpointPool([Endpoint(backend.name, backend.max_concurrency)])
        else:
            urls = [base_urls] if isinstance(base_urls, str) else list(base_urls)
            urls = [u.strip() for url in urls for u in url.split("|") if u.strip()]
            for url in urls:
                check_url(url, f"model {model}")
            self.pool = EndpointPool([Endpoint(u, max_concurrency) for u in urls])
        self._identity: str | None = None
        self.model = model
        self.api_key_env = api_key_env
        register_key_variable(api_key_env)  # a server may echo the key: redact it by value
        if backend is None:
            read_key(api_key_env)  # a key no header can carry is refused now, before any work
        self.timeout = timeout
        self.deadline = deadline
        self.max_attempts = max(1, max_attempts)
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.cache = cache
        self.usage = Usage()
        self._rng = random.Random(seed)  # jitter only; never touches results
        self.transport = choose_transport(transport)  # aiohttp, or the openai SDK
        self._clients: dict[str, Any] = {}
        self._pending: dict[str, asyncio.Future[ChatResponse]] = {}
        self._owner = claimant()  # this client's name in the cache's claims table
        self._stopping = False  # set by a cancellation: no new request leaves
        self._dead_ends = 0  # attempts in a row that could not connect or had the key refused
        self._down: str | None = None  # set after DOWN_AFTER of them: the last reason
        self._down_kind = "connection"  # and the kind of failure it was

    @property
    def served_models(self) -> Counter[str]:
        """The model names the endpoint's answers gave (fresh or stored), with their counts:
        the card's record of what answered, which can differ from the name asked (kept in
        `usage.served`, so results.json's usage carries them)."""
        return Counter(self.usage.served)

    def _served(self, names: Iterable[str]) -> None:
        for name in names:
            if name:
                self.usage.served[name] = self.usage.served.get(name, 0) + 1

    @property
    def identity(self) -> str:
        """The endpoint group's name in cache keys: a backend's model identity, remote URLs as
        they are, loopback servers by the model they serve (never their port)."""
        if self._identity is None:
            if self.backend is not None:
                self._identity = self.backend.identity
            else:
                self._identity = group_identity([e.base_url for e in self.pool.endpoints],
                                                self.model, self.api_key_env)
        return self._identity

    def parts(self, messages: Sequence[Mapping[str, Any]], params: Mapping[str, Any],
              sample: int) -> dict[str, Any]:
        """The cache-key parts of a request."""
        return key_parts(self.identity, self.model, messages,
                         {k: params[k] for k in SAMPLING_PARAMS if k in params}, sample)

    def key(self, messages: Sequence[Mapping[str, Any]], params: Mapping[str, Any],
            sample: int) -> str:
        return response_key(self.parts(messages, params, sample))

    def _client(self, endpoint: Endpoint) -> Any:
        """The endpoint's transport (see llm/transport.py), made inside the running loop."""
        client = self._clients.get(endpoint.base_url)
        if client is None:
            key = read_key(self.api_key_env) or "not-needed"
            client = make_transport(self.transport, endpoint.base_url, key,
                                    endpoint.max_concurrency + 8, self.timeout)
            self._clients[endpoint.base_url] = client
        return client

    async def aclose(self) -> None:
        self._stopping = False  # a notebook may score again with this client after a stop
        clients, self._clients = self._clients, {}
        for client in clients.values():
            await client.aclose()

    def cached(self, keys: Sequence[str]) -> dict[str, ChatResponse]:
        """The stored answers among `keys`; one that gives the API key back (stored by an
        older evalstress, or merged in from another cache) counts as a miss, and the fresh
        answer replaces it."""
        if self.cache is None:
            return {}
        found = (ChatResponse.from_json(v, k, True) for k, v in self.cache.get_many(keys).items())
        kept = {r.key: r for r in found if not gives_key_back(r)}
        self._served(r.model for r in kept.values())
        return kept

    def _hit(self, key: str) -> ChatResponse | None:
        """The stored answer for `key`, or None (see `cached`)."""
        return self.cached([key]).get(key)

    async def chat(self, messages: Sequence[Mapping[str, Any]], params: Mapping[str, Any],
                   sample: int = 0, lookup: bool = True) -> ChatResponse:
        """One response for (messages, params, sample): from the cache, else from an endpoint.

        `lookup=False` skips the cache read when the caller already knows it misses."""
        parts = self.parts(messages, params, sample)
        key = response_key(parts)
        self.usage.requests += 1
        if self.cache is not None and lookup:
            hit = self._hit(key)
            if hit is not None:
                self.usage.cache_hits += 1
                return hit
        pending = self._pending.get(key)
        if pending is not None:  # the same request is already on its way: share its answer
            self.usage.cache_hits += 1
            return await asyncio.shield(pending)
        future: asyncio.Future[ChatResponse] = asyncio.get_running_loop().create_future()
        self._pending[key] = future
        try:
            response = await self._claimed_call(key, parts)
            future.set_result(response)
        except BaseException as exc:
            if isinstance(exc, LLMError):
                self.usage.request_failed(exc.kind)
            future.set_exception(exc)
            future.exception()  # retrieved: no "never retrieved" warning when nobody shares it
            raise
        finally:
            del self._pending[key]
        return response

    async def _claimed_call(self, key: str, parts: Mapping[str, Any]) -> ChatResponse:
        """Call once across every run sharing the cache: claim the request first; while another
        run holds the claim, wait for its stored answer instead of paying for it again."""
        if self.cache is None:
            response = await self._call(parts)
            response.key = key
            return response
        while not self.cache.claim(key, self._owner, self.deadline + self.timeout):
            await asyncio.sleep(CLAIM_POLL)
            hit = self._hit(key)
            if hit is not None:
                self.usage.cache_hits += 1
                self.usage.waited_for_other_run += 1
                return hit
        try:
            hit = self._hit(key)  # answered while we were claiming
            if hit is not None:
                self.usage.cache_hits += 1
                return hit
            call = asyncio.ensure_future(self._call(parts))
            try:
                response = await asyncio.shield(call)
            except asyncio.CancelledError:
                await self._keep_in_flight(call, key, parts)
                raise
            response.key = key
            self.cache.put(key, parts, response.to_json())
            return response
        finally:
            self.cache.release(key, self._owner)

    async def _keep_in_flight(self, call: asyncio.Future[ChatResponse], key: str,
                              parts: Mapping[str, Any]) -> None:
        """On a cancellation (Ctrl-C), give a request already sent up to IN_FLIGHT_GRACE to
        come back and cache its answer, so the resumed run does not pay for it again; a request
        still queued or waiting to retry is not sent (`_stopping`)."""
        self._stopping = True
        done, _ = await asyncio.wait({call}, timeout=IN_FLIGHT_GRACE)
        if call in done and not call.cancelled() and call.exception() is None:
            response = call.result()
            response.key = key
            assert self.cache is not None
            self.cache.put(key, parts, response.to_json())
        elif call not in done:
            call.cancel()
            await asyncio.wait({call})

    async def _call(self, parts: Mapping[str, Any]) -> ChatResponse:
        end: float | None = None  # the deadline runs from the first dispatch, not the queue
        last: _Retry | None = None
        for attempt in range(1, self.max_attempts + 1):
            try:
                endpoint = await self.pool.acquire(end)
            except TimeoutError:
                break
            if self._stopping:  # cancelled while queued: send nothing new
                await self.pool.release(endpoint)
                raise asyncio.CancelledError
            if self._down is None and _refused_keys and self.backend is None:
                self._recall_refused_key()
            if self._down is not None:  # the server is not there: send nothing more
                await self.pool.release(endpoint)
                self.usage.errors += 1
                raise LLMError(*self._down_reason(), attempt - 1)
            if end is None:
                end = time.monotonic() + self.deadline
            try:
                remaining = end - time.monotonic()
                if remaining <= 0:
                    break
                response = await self._dispatch(endpoint, parts, min(self.timeout, remaining))
                endpoint.succeeded()
                self._dead_ends = 0
                self.usage.add_tokens(response.usage)
                return response
            except _Retry as exc:
                last = exc
                self.usage.attempt_failed(exc.kind)
                self._count_dead_end(exc)
                if exc.kind == "rate-limit":
                    self.usage.rate_limited += 1
                    endpoint.rate_limited(exc.retry_after)
                if exc.kind in FINAL_KINDS:
                    self.usage.errors += 1
                    raise LLMError(exc.kind, str(exc), attempt, exc.status) from None
            finally:
                await self.pool.release(endpoint)
            if attempt == self.max_attempts:
                break
            wait = last.retry_after if last.retry_after is not None else min(
                self.max_backoff, self.backoff * 2 ** (attempt - 1)) * (0.5 + self._rng.random())
            if time.monotonic() + wait >= end:
                self.usage.errors += 1
                raise LLMError("deadline", f"{last} and the next try (in {wait:.1f}s) would pass "
                               f"the {self.deadline:g}s deadline", attempt, last.status)
            self.usage.retries += 1
            await asyncio.sleep(wait)
        self.usage.errors += 1
        if last is None or end is None or time.monotonic() >= end:
            attempts = self.max_attempts if last else 0
            raise LLMError("deadline", f"no answer within the {self.deadline:g}s deadline"
                           + (f"; last: {last}" if last else ""), attempts)
        raise LLMError(last.kind, str(last), self.max_attempts, last.status)

    def reset_failures(self) -> None:
        """Forget the attempts that could not connect or had the key refused: a client closed
        at the end of a run and used again (a notebook's judge) tries the server again."""
        self._dead_ends, self._down = 0, None
        self._down_kind = "connection"

    def _count_dead_end(self, failure: _Retry) -> None:
        """Count an attempt no retry can mend (no connection, the key refused); any other
        answer, even an error, shows the server is there and takes the key, and starts the
        count again."""
        refused = failure.kind == "client" and failure.status in KEY_REFUSED
        if failure.kind != "connection" and not refused:
            self._dead_ends = 0
            return
        self._dead_ends += 1
        if self._dead_ends >= DOWN_AFTER:
            self._down = str(failure)
            self._down_kind = failure.kind
            if refused:
                _refused_keys[self._key_fingerprint()] = self._down

    @staticmethod
    def forget_refused_keys() -> None:
        """Forget the keys endpoints refused (tests whose fake servers reuse a port)."""
        _refused_keys.clear()

    def _key_fingerprint(self) -> str:
        """Which endpoints and which key: a digest, so the key itself is not kept."""
        urls = "|".join(e.base_url for e in self.pool.endpoints)
        key = read_key(self.api_key_env) or ""
        return hashlib.sha256(f"{urls}\0{key}".encode()).hexdigest()

    def _recall_refused_key(self) -> None:
        """Stop at once where another client of this process had the same key refused by
        the same endpoints DOWN_AFTER times in a row."""
        reason = _refused_keys.get(self._key_fingerprint())
        if reason is not None:
            self._down, self._down_kind = reason, "client"

    def _down_reason(self) -> tuple[str, str]:
        """The failure kind and reason every request gets once the client has stopped."""
        what = "could not connect" if self._down_kind == "connection" else "had the key refused"
        return self._down_kind, f"{self._down}; {DOWN_AFTER} attempts in a row {what}, so " \
            "nothing more is sent"

    async def _dispatch(self, endpoint: Endpoint, parts: Mapping[str, Any],
                        timeout: float) -> ChatResponse:
        """One attempt: through the backend when there is one, else over HTTP."""
        if self.backend is None:
            return await self._attempt(endpoint, parts, timeout)
        self.usage.calls += 1
        self.usage.by_endpoint[endpoint.base_url] = self.usage.by_endpoint.get(
            endpoint.base_url, 0) + 1
        response = await self.backend.complete(parts, timeout)
        response.endpoint = endpoint.base_url
        return response

    async def _attempt(self, endpoint: Endpoint, parts: Mapping[str, Any],
                       timeout: float) -> ChatResponse:
        self.usage.calls += 1
        self.usage.by_endpoint[endpoint.base_url] = self.usage.by_endpoint.get(
            endpoint.base_url, 0) + 1
        body_out = {"model": parts["model"], "messages": parts["messages"], **parts["params"]}
        try:
            body = await self._client(endpoint).post(body_out, timeout)
        except TransportError as exc:
            raise _Retry(exc.kind, str(exc), exc.status, exc.retry_after) from None
        except ValueError as exc:  # the key variable changed since the client was made
            raise _Retry("client", str(exc)) from None
        try:
            data = parse_json(body, endpoint.base_url)  # a value too deep: a ValueError
            choice = data["choices"][0]
            text = choice["message"].get("content")
            if text is None:
                text = ""
            if not isinstance(text, str):
                raise TypeError("message content is not a string")
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            snippet = server_excerpt(body[:4096].decode("utf-8", "replace"), 80)
            raise _Retry("malformed", f"{endpoint.base_url} sent a malformed body "
                         f"({type(exc).__name__}: {server_excerpt(str(exc), 80)}): "
                         f"{snippet!r}") from None
        usage = {k: int(v) for k, v in (data.get("usage") or {}).items()
                 if k in ("prompt_tokens", "completion_tokens") and isinstance(v, int)}
        named = data.get("model")
        response = ChatResponse(text, _compact_logprobs(choice), choice.get("finish_reason"),
                                usage, endpoint=endpoint.base_url,
                                model=server_excerpt(named, 120) if isinstance(named, str)
                                else "")
        self._served([response.model])
        if gives_key_back(response):
            raise _Retry("key-echo", f"HTTP 200 from {endpoint.base_url}: the answer holds the "
                         f"API key ({len(text)} characters; the key raw or encoded): neither "
                         "cached nor used", 200)
        return response
