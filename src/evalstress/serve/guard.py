"""The ASGI layer `evalstress serve` puts in front of llama-cpp-python's server app.

The library's app leaves these to its caller:
- it lets every web page call it (CORS for any origin, with credentials): here a page of another
  origin gets in only when the user allowed its origin, and a loopback server answers only to
  loopback host names (`browser`);
- its API key guards the model routes only (its documentation pages and schema answer anyone),
  and compares keys in a time that depends on the key; with a key set, every request here must
  carry `Authorization: Bearer KEY`, compared in constant time;
- it reads a body of any size into memory: here a body over the limit gets 413, refused on its
  `Content-Length` before it is read, or as soon as a chunked body passes the limit;
- it answers a body it cannot use with HTTP 500 (or crashes on it): here a body declared as
  anything but JSON gets 415, and one `body` finds at fault a 400 naming the field, before the
  library sees the request;
- it names the model by its file path in `/v1/models` and in answers to requests that name no
  model: here the listing is the served name's, and a request without `model` gets that name;
- any 5xx that still happens is answered with a fixed message; the details stay in the server's
  log, never in the reply.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from evalstress.serve.body import BadRequest, Served, check_body, request_models
from evalstress.serve.browser import BrowserPolicy

#: The largest request body accepted by default: a chat request fills a context window of tens
#: of kilobytes; megabytes more are no request of a judge's
DEFAULT_MAX_BODY = 8 << 20
#: How much of a body over the limit is read and thrown away before the 413, so that a client
#: that sends its whole body before it reads (most do) hears the 413 instead of a reset
#: connection; a larger one, or one whose client waits for `100 Continue`, is answered at once
DRAIN_LIMIT = 64 << 20


async def send_error(send: Send, status: int, message: str, kind: str,
                     field: str | None = None, headers: tuple[tuple[bytes, bytes], ...] = ()
                     ) -> None:
    """An OpenAI-style error reply: `{"error": {"message", "type", "param", "code"}}`."""
    await send_json(send, status, {"error": {"message": message, "type": kind,
                                             "param": field, "code": None}}, headers)


async def send_json(send: Send, status: int, data: Any,
                    headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    """A JSON reply."""
    body = json.dumps(data).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})


async def send_empty(send: Send, status: int, headers: list[tuple[bytes, bytes]]) -> None:
    """A reply without a body (a preflight's)."""
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-length", b"0"), *headers]})
    await send({"type": "http.response.body", "body": b""})


def header(scope: Scope, wanted: bytes) -> bytes | None:
    """The value of a request header (the first, when sent twice), or None."""
    for name, value in scope.get("headers", []):
        if name.lower() == wanted:
            return bytes(value)
    return None


def bearer_token(scope: Scope) -> bytes | None:
    """The token of the request's `Authorization: Bearer ...` header, if it has one."""
    value = header(scope, b"authorization")
    if value is None:
        return None
    scheme, _, token = value.strip().partition(b" ")
    return token.strip() if scheme.lower() == b"bearer" else None


def is_json_type(value: bytes | None) -> bool:
    """Whether a `Content-Type` declares JSON (`application/json`, `application/*+json`, any
    parameters); a request without one is read as JSON, as the library does."""
    if value is None:
        return True
    kind = value.split(b";", 1)[0].strip().lower()
    return kind == b"application/json" or (kind.startswith(b"application/")
                                           and kind.endswith(b"+json"))


def declared_length(scope: Scope) -> int | None:
    """The request's `Content-Length`, or None when it has none (a chunked body) or it is not a
    number (the HTTP layer refuses those before the app sees them)."""
    value = header(scope, b"content-length")
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


class TooLarge(Exception):
    """The request body passed the limit."""


async def read_body(receive: Receive, limit: int) -> bytes:
    """The whole request body, stopping with TooLarge as soon as more than `limit` bytes came:
    a chunked body that never ends holds no more than the limit in memory."""
    chunks = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b""  # the client left
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise TooLarge
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def discard_body(receive: Receive, budget: int) -> None:
    """Read and drop the rest of a request body, up to `budget` bytes (nothing is kept)."""
    while budget > 0:
        message = await receive()
        if message["type"] != "http.request":
            return
        budget -= len(message.get("body", b""))
        if not message.get("more_body", False):
            return


class RequestGuard:
    """Browser policy, key check, body checks and 5xx replies around an ASGI app (see the
    module docstring).

    `models` maps each POST route to the pydantic model of its body (llama-cpp-python's when
    None); `listing` is the `/v1/models` answer, given here instead of by the library;
    `drain_limit` is how much of a body over `max_body` is thrown away before the 413;
    `vocab_size` and `grammar_parses` let `body` check token ids and grammars."""

    def __init__(self, app: ASGIApp, api_key: str | None = None,
                 grammar_parses: Callable[[str], bool] | None = None,
                 browser: BrowserPolicy | None = None, max_body: int = DEFAULT_MAX_BODY,
                 models: dict[str, type[BaseModel]] | None = None,
                 listing: dict[str, Any] | None = None, drain_limit: int = DRAIN_LIMIT,
                 vocab_size: int | None = None) -> None:
        self.app = app
        self._key = api_key.encode() if api_key else None
        self._browser = browser or BrowserPolicy()
        self._max_body = max_body
        self._models = request_models() if models is None else models
        self._listing = listing
        self._drain = drain_limit
        names = [entry.get("id") for entry in (listing or {}).get("data", [])]
        name = names[0] if len(names) == 1 and isinstance(names[0], str) else None
        self._served = Served(name, vocab_size, grammar_parses)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        admitted, cors = await self._admit(scope, send)
        if not admitted:
            return
        send = _with_cors(send, cors)
        if self._key is not None:
            token = bearer_token(scope)
            if token is None or not hmac.compare_digest(token, self._key):
                await send_error(send, 401, "missing or wrong API key: send the header "
                                 "'Authorization: Bearer <key>'", "invalid_request_error",
                                 headers=((b"www-authenticate", b"Bearer"),))
                return
        if self._listing is not None and scope["method"] == "GET" \
                and scope["path"] == "/v1/models":
            await send_json(send, 200, self._listing)
            return
        length = declared_length(scope)
        if length is not None and length > self._max_body:
            expects = header(scope, b"expect")
            if length <= self._drain and (expects or b"").lower() != b"100-continue":
                await discard_body(receive, self._drain)
            await self._too_large(send)
            return
        try:
            body = await read_body(receive, self._max_body)
        except TooLarge:
            await discard_body(receive, self._drain)
            await self._too_large(send)
            return
        model = self._models.get(scope["path"]) if scope["method"] == "POST" else None
        if model is not None and not is_json_type(header(scope, b"content-type")):
            await send_error(send, 415, "the request body must be JSON: send it with the "
                             "header 'Content-Type: application/json'", "invalid_request_error")
            return
        if model is not None:
            try:
                body = check_body(scope["path"], body, model, self._served)
            except BadRequest as exc:
                await send_error(send, 400, str(exc), "invalid_request_error", exc.field)
                return
        await self.app(scope, _replay(body, receive), _without_server_errors(send))

    async def _admit(self, scope: Scope, send: Send) -> tuple[bool, bytes | None]:
        """Whether a browser may make this request (answering it when not, or when it is a
        preflight), and the `access-control-allow-origin` its answer carries."""
        host = header(scope, b"host")
        host_text = host.decode("latin-1") if host is not None else None
        if not self._browser.host_allowed(host_text):
            await send_error(send, 403, "this server answers only to localhost and loopback "
                             "addresses: call it as http://127.0.0.1:PORT", "forbidden")
            return False, None
        origin = header(scope, b"origin")
        origin_text = origin.decode("latin-1") if origin is not None else None
        cors = None
        if origin_text is not None and self._browser.cross_origin(origin_text, host_text):
            if not self._browser.origin_allowed(origin_text):
                await send_error(send, 403, "requests from web pages of another origin are "
                                 "refused; start the server with --allow-origin ORIGIN to let "
                                 "one in", "forbidden")
                return False, None
            cors = self._browser.allow_origin_header(origin_text)
        if self._preflight(scope):  # preflights carry no key; same-origin needs no headers
            requested = header(scope, b"access-control-request-headers")
            extra = ([] if cors is None or origin_text is None
                     else self._browser.preflight_headers(origin_text, requested))
            await send_empty(send, 204, extra)
            return False, None
        return True, cors

    async def _too_large(self, send: Send) -> None:
        await send_error(send, 413, f"the request body is larger than the server's limit of "
                         f"{self._max_body} bytes (evalstress serve --max-body-mib)",
                         "invalid_request_error")

    @staticmethod
    def _preflight(scope: Scope) -> bool:
        """A browser's CORS preflight, which never carries credentials."""
        return scope["method"] == "OPTIONS" and header(
            scope, b"access-control-request-method") is not None


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that yields the body already read, then what the client sends next (its
    disconnect, which the app watches for during a generation)."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replay() -> Message:
        return pending.pop() if pending else await receive()

    return replay


def _with_cors(send: Send, allow_origin: bytes | None) -> Send:
    """A `send` that drops the app's own CORS headers (the library allows every origin with
    credentials) and, for an allowed origin, adds `access-control-allow-origin`."""

    async def guarded(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = [(name, value) for name, value in message.get("headers", [])
                       if not bytes(name).lower().startswith(b"access-control-")]
            if allow_origin is not None:
                headers += [(b"access-control-allow-origin", allow_origin), (b"vary", b"origin")]
            message = {**message, "headers": headers}
        await send(message)

    return guarded


def _without_server_errors(send: Send) -> Send:
    """A `send` that turns a 5xx reply into a fixed message: the library's would carry the
    exception's text, which can hold file paths."""
    replaced = False

    async def guarded(message: Message) -> None:
        nonlocal replaced
        if message["type"] == "http.response.start" and message["status"] >= 500:
            replaced = True
            await send_error(send, message["status"], "the server failed on this request; "
                             "its log says why", "server_error")
            return
        if replaced and message["type"] == "http.response.body":
            return
        await send(message)

    return guarded
