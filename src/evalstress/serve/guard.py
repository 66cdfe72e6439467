"""The ASGI layer `evalstress serve` puts in front of llama-cpp-python's server app.

The library's app leaves three things to its caller:
- its API key guards the model routes only (its documentation pages and schema answer anyone),
  and compares keys in a time that depends on the key; with a key set, every request here must
  carry `Authorization: Bearer KEY`, compared in constant time;
- a body that is not JSON, or JSON the request model rejects, comes back as HTTP 500 whose
  message holds the library's file path and line; a chat request without `messages` is answered
  as if it had an empty conversation; a GBNF grammar llama.cpp cannot parse crashes the process.
  Each of these is answered here with HTTP 400 and a one-line message naming the field, before
  the library sees the request (its own validation then passes);
- any 5xx that still happens is answered with a fixed message; the details stay in the server's
  log, never in the reply.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ValidationError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

#: How many problems of one field a 400 lists before "..."
MAX_LISTED = 4


def request_models() -> dict[str, type[BaseModel]]:
    """The request model each POST route of llama-cpp-python's server validates its body with."""
    from llama_cpp.server.types import (
        CreateChatCompletionRequest,
        CreateCompletionRequest,
        CreateEmbeddingRequest,
        DetokenizeInputRequest,
        TokenizeInputRequest,
    )

    return {"/v1/chat/completions": CreateChatCompletionRequest,
            "/v1/completions": CreateCompletionRequest,
            "/v1/engines/copilot-codex/completions": CreateCompletionRequest,
            "/v1/embeddings": CreateEmbeddingRequest,
            "/extras/tokenize": TokenizeInputRequest,
            "/extras/tokenize/count": TokenizeInputRequest,
            "/extras/detokenize": DetokenizeInputRequest}


class BadRequest(Exception):
    """A request body the server cannot use; `field` names the offending field, if one does."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


def field_path(data: Any, loc: tuple[int | str, ...]) -> tuple[str, tuple[int | str, ...]]:
    """The path of a pydantic error location in the client's own JSON (`messages[0].role`), and
    the steps left out: the union members pydantic tried, which the client never wrote."""
    path = ""
    skipped: tuple[int | str, ...] = ()
    node = data
    for position, step in enumerate(loc):
        present = (step in node if isinstance(node, dict)
                   else isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node))
        if present:
            node = node[step]
        elif isinstance(node, dict) and position == len(loc) - 1:
            node = None  # the field that is missing
        else:
            skipped += (step,)
            continue
        path += f"[{step}]" if isinstance(step, int) else (f".{step}" if path else str(step))
    return path, skipped


def describe(error: ValidationError, data: Any) -> BadRequest:
    """One line for a rejected body: the first field at fault and what pydantic said of it.

    A union (a chat message is a system, user, assistant, tool or function message) fails once
    per member; the members whose `role` literal did not match are the wrong ones, so when a
    member's literal matched, its own problems are reported (a user message without `content`),
    else the literals allowed (a role that no member has)."""
    issues = [(issue, *field_path(data, tuple(issue["loc"])))
              for issue in error.errors(include_url=False)]
    wrong = {skipped for issue, _, skipped in issues if issue["type"] == "literal_error"}
    matched = [item for item in issues if item[2] not in wrong]
    issues = matched or issues
    where = issues[0][1]
    mine = [issue for issue, path, _ in issues if path == where]
    if all(issue["type"] == "literal_error" for issue in mine):
        allowed = ", ".join(dict.fromkeys(str(issue.get("ctx", {}).get("expected", "?"))
                                          for issue in mine))
        said = f"should be one of {allowed}"
    else:
        said_each = list(dict.fromkeys(str(issue["msg"]) for issue in mine))
        said = "; ".join(said_each[:MAX_LISTED]) + ("; ..." if len(said_each) > MAX_LISTED else "")
    return BadRequest(f"field '{where}': {said}" if where else said, where or None)


def check_body(path: str, body: bytes, model: type[BaseModel],
               grammar_parses: Callable[[str], bool] | None) -> None:
    """Raise BadRequest when the body of a POST to `path` is not something the route can use."""
    if not body.strip():
        raise BadRequest("the request body is empty; send a JSON object")
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadRequest(f"the request body is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise BadRequest(f"the request body must be a JSON object, not {type(data).__name__}")
    if path == "/v1/chat/completions":
        messages = data.get("messages")
        if not isinstance(messages, list) or not messages:
            told = "is missing" if messages is None else "must be a non-empty list"
            raise BadRequest(f"field 'messages' {told}: send a list of "
                             "{\"role\": ..., \"content\": ...} objects", "messages")
    try:
        model.model_validate(data)
    except ValidationError as exc:
        raise describe(exc, data) from None
    grammar = data.get("grammar")
    if grammar_parses is not None and isinstance(grammar, str) and not grammar_parses(grammar):
        raise BadRequest("field 'grammar': llama.cpp cannot parse this GBNF grammar (it needs "
                         "a 'root' rule and every rule it names)", "grammar")


async def send_error(send: Send, status: int, message: str, kind: str,
                     field: str | None = None, headers: tuple[tuple[bytes, bytes], ...] = ()
                     ) -> None:
    """An OpenAI-style error reply: `{"error": {"message", "type", "param", "code"}}`."""
    body = json.dumps({"error": {"message": message, "type": kind, "param": field,
                                 "code": None}}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})


def bearer_token(scope: Scope) -> bytes | None:
    """The token of the request's `Authorization: Bearer ...` header, if it has one."""
    for name, value in scope.get("headers", []):
        if name.lower() == b"authorization":
            scheme, _, token = bytes(value).strip().partition(b" ")
            return token.strip() if scheme.lower() == b"bearer" else None
    return None


async def read_body(receive: Receive) -> bytes:
    """The whole request body."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b""  # the client left
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


class RequestGuard:
    """Key check, body checks and 5xx replies around an ASGI app (see the module docstring)."""

    def __init__(self, app: ASGIApp, api_key: str | None = None,
                 grammar_parses: Callable[[str], bool] | None = None) -> None:
        self.app = app
        self._key = api_key.encode() if api_key else None
        self._grammar_parses = grammar_parses
        self._models = request_models()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self._key is not None and not self._preflight(scope):
            token = bearer_token(scope)
            if token is None or not hmac.compare_digest(token, self._key):
                await send_error(send, 401, "missing or wrong API key: send the header "
                                 "'Authorization: Bearer <key>'", "invalid_request_error",
                                 headers=((b"www-authenticate", b"Bearer"),))
                return
        model = self._models.get(scope["path"]) if scope["method"] == "POST" else None
        if model is not None:
            body = await read_body(receive)
            try:
                check_body(scope["path"], body, model, self._grammar_parses)
            except BadRequest as exc:
                await send_error(send, 400, str(exc), "invalid_request_error", exc.field)
                return
            receive = _replay(body, receive)
        await self.app(scope, receive, _without_server_errors(send))

    @staticmethod
    def _preflight(scope: Scope) -> bool:
        """A browser's CORS preflight, which never carries credentials; the app's CORS layer
        answers it without reaching a route."""
        return scope["method"] == "OPTIONS" and any(
            name.lower() == b"access-control-request-method" for name, _ in scope["headers"])


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that yields the body already read, then what the client sends next (its
    disconnect, which the app watches for during a generation)."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replay() -> Message:
        return pending.pop() if pending else await receive()

    return replay


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
