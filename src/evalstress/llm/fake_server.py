"""A fake OpenAI-compatible chat server on 127.0.0.1 for tests and benchmarks (stdlib only).

It answers `POST /v1/chat/completions` with canned or scripted replies and can misbehave on
purpose: latency, 429 with Retry-After, 5xx, hanging (client timeouts), truncated bodies,
malformed JSON, and errors (or answers) that echo the API key they were sent (`Reply.echo`):
raw, escaped, percent-encoded, wrapped, base64 or hex encoded, as careless gateways do. It
counts calls and the most requests it held at once, so tests can check concurrency limits.
Run it in a thread (`FakeServer().start()`) or as a process for benchmarks: `python -m
evalstress.llm.fake_server --latency 0.05` prints its base URL; `GET /_stats` reports its
counters. `--persona NAME[:STRENGTH]` (or `responder=persona(...)`) answers as a judge with a
planted bias of known strength (`llm.personas`).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import quote_plus


@dataclass
class Reply:
    """One scripted answer. `content` is the assistant text; `label_probs` adds top logprobs."""

    content: str = "Rating: 4"
    status: int = 200
    delay: float | None = None  # None: the server's latency
    headers: dict[str, str] = field(default_factory=dict)
    label_probs: Mapping[str, float] | None = None  # top logprobs at the last digit token
    body: bytes | None = None  # raw body instead of a chat completion (malformed replies)
    truncate: bool = False  # promise more bytes than sent, then close the connection
    hang: bool = False  # never answer
    error: str = "scripted error"
    #: put the key of the request's Authorization header into the error message (or, with
    #: status 200, after the answer's content) in the form `how` of `echoed`; "" echoes nothing
    echo: str = ""
    #: the model the answer names (a dated snapshot, say); None: the name the request asked
    model: str | None = None


ECHOES = ("raw", "json", "url", "wrapped", "base64", "base64-bearer", "base64-auth",
          "base64url", "hex", "HEX", "reversed")


def echoed(key: str, how: str) -> str:
    """A message that gives back `key` in the form `how`: "raw"; "json" (a JSON string with
    \\uXXXX and \\/ escapes); "url" (percent-encoded in a link); "wrapped" (split over two
    lines); "base64" (padded); "base64-bearer" (the whole header value "Bearer KEY", padding
    dropped); "base64-auth" ("Authorization: Bearer KEY"); "base64url" (the URL-safe
    alphabet, unpadded); "hex" and "HEX" (the UTF-8 bytes); "reversed"."""
    raw = key.encode("utf-8")
    encoded = {
        "base64": lambda: base64.b64encode(raw).decode(),
        "base64-bearer": lambda: base64.b64encode(b"Bearer " + raw).decode().rstrip("="),
        "base64-auth": lambda: base64.b64encode(b"Authorization: Bearer " + raw).decode(),
        "base64url": lambda: base64.urlsafe_b64encode(raw).decode().rstrip("="),
        "hex": raw.hex, "HEX": lambda: raw.hex().upper(), "reversed": lambda: key[::-1],
    }.get(how)
    if encoded is not None:
        return f"Invalid credentials (token {encoded()})"
    if how == "raw":
        return f"Incorrect API key provided: {key}"
    if how == "json":
        escaped = "".join(c if c.isalnum() else "\\/" if c == "/" else f"\\u{ord(c):04x}"
                          for c in key)
        return f'upstream refused the request {{"presented": "{escaped}"}}'
    if how == "url":
        return f"see https://auth.example/help?presented={quote_plus(key)}&code=401"
    if how == "wrapped":
        half = len(key) // 2
        return f"Incorrect API key provided: {key[:half]}\n    {key[half:]}"
    raise ValueError(f"unknown echo '{how}': choose from {', '.join(ECHOES)}")


Responder = Callable[[dict[str, Any]], Reply]


def _tokens(text: str) -> list[str]:
    """Split text into word-ish tokens, digits on their own, so a rating digit is one token."""
    out: list[str] = []
    current = ""
    for ch in text:
        if ch.isdigit() or not (ch.isalnum() or ch in " _"):
            if current:
                out.append(current)
                current = ""
            out.append(ch)
        elif ch == " " and current.strip():
            out.append(current)
            current = ch
        else:
            current += ch
    if current:
        out.append(current)
    return out


def completion_body(reply: Reply, request: Mapping[str, Any], index: int) -> dict[str, Any]:
    """A chat.completion object for the reply, with logprobs when the request asks for them."""
    content = reply.content
    choice: dict[str, Any] = {"index": 0, "finish_reason": "stop",
                              "message": {"role": "assistant", "content": content}}
    if request.get("logprobs"):
        top_n = int(request.get("top_logprobs") or 0)
        tokens = _tokens(content)
        last_digit = max((i for i, t in enumerate(tokens) if t.isdigit()), default=-1)
        items: list[dict[str, Any]] = []
        for i, token in enumerate(tokens):
            if i == last_digit and reply.label_probs:
                ranked = sorted(reply.label_probs.items(), key=lambda kv: -kv[1])[:max(top_n, 1)]
                top: list[dict[str, Any]] = [{"token": t, "logprob": math.log(p), "bytes": None}
                                             for t, p in ranked]
                chosen: float = top[0]["logprob"] if top[0]["token"] == token else math.log(1e-3)
            else:
                top = [{"token": token, "logprob": -0.01, "bytes": None}][:top_n]
                chosen = -0.01
            items.append({"token": token, "logprob": chosen, "bytes": None, "top_logprobs": top})
        choice["logprobs"] = {"content": items}
    prompt_chars = sum(len(str(m.get("content", ""))) for m in request.get("messages", []))
    return {"id": f"fake-{index}", "object": "chat.completion", "created": int(time.time()),
            "model": reply.model or request.get("model", "fake"), "choices": [choice],
            "usage": {"prompt_tokens": prompt_chars // 4 + 1,
                      "completion_tokens": len(_tokens(content)),
                      "total_tokens": prompt_chars // 4 + 1 + len(_tokens(content))}}


_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found",
            429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway",
            503: "Service Unavailable"}


#: the body of a 401, as OpenAI words it
UNAUTHORIZED = json.dumps({"error": {"message": "Incorrect API key provided", "type": "fake",
                                     "code": "invalid_api_key"}}).encode()


class FakeServer:
    """Canned answers by default; `script` replies are used first, in order; `responder` decides
    everything when given. `GET /models` lists `models`; with `api_key` set, a request without
    `Authorization: Bearer <api_key>` gets a 401, as a hosted API answers. Counters: `calls`,
    `max_in_flight`, `requests` (the JSON bodies), `answered` (the bodies that got a
    completion), `listings` (the `GET /models` asked)."""

    def __init__(self, *, latency: float = 0.0, default: Reply | None = None,
                 script: list[Reply] | None = None, responder: Responder | None = None,
                 keep_requests: bool = True, port: int = 0,
                 models: tuple[str, ...] = ("fake",), api_key: str | None = None):
        self.latency = latency
        self.default = default or Reply()
        self.script: deque[Reply] = deque(script or [])
        self.responder = responder
        self.keep_requests = keep_requests
        self.port = port
        self.models = models
        self.api_key = api_key
        self.calls = 0
        self.listings = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.statuses: dict[int, int] = {}
        self.requests: list[dict[str, Any]] = []
        self.answered: list[dict[str, Any]] = []  # requests answered with a completion
        self.auth_headers: set[str] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def reset_counters(self) -> None:
        self.calls = 0
        self.listings = 0
        self.max_in_flight = self.in_flight
        self.statuses.clear()
        self.requests.clear()
        self.answered.clear()

    def stats(self) -> dict[str, Any]:
        return {"calls": self.calls, "max_in_flight": self.max_in_flight,
                "statuses": {str(k): v for k, v in self.statuses.items()}}

    def _choose(self, request: dict[str, Any]) -> Reply:
        if self.responder is not None:
            return self.responder(request)
        if self.script:
            return self.script.popleft()
        return self.default

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, path = lines[0].split(" ")[:2]
                headers = {}
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0") or 0))
                if "authorization" in headers:
                    self.auth_headers.add(headers["authorization"])
                refused = (self.api_key is not None
                           and headers.get("authorization") != f"Bearer {self.api_key}")
                if method == "GET" and path.endswith("/_stats"):
                    await self._send(writer, 200, json.dumps(self.stats()).encode(), {})
                elif method == "GET" and path.endswith("/models"):
                    self.listings += 1
                    models = {"object": "list",
                              "data": [{"id": m, "object": "model"} for m in self.models]}
                    await self._send(writer, 401 if refused else 200,
                                     UNAUTHORIZED if refused else json.dumps(models).encode(), {})
                elif method == "POST" and path.endswith("/chat/completions") and refused:
                    self.calls += 1
                    await self._send(writer, 401, UNAUTHORIZED, {})
                elif method == "POST" and path.endswith("/chat/completions"):
                    auth = headers.get("authorization", "")
                    if not await self._chat(writer, body, reader, auth):
                        return
                else:
                    await self._send(writer, 404, b'{"error": {"message": "not found"}}', {})
        except (ConnectionError, asyncio.CancelledError):
            return
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def _chat(self, writer: asyncio.StreamWriter, body: bytes,
                    reader: asyncio.StreamReader | None = None, auth: str = "") -> bool:
        """Answer one chat request; False when the connection must close."""
        self.calls += 1
        index = self.calls
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            request = json.loads(body or b"{}")
            if self.keep_requests:
                self.requests.append(request)
            reply = self._choose(request)
            delay = self.latency if reply.delay is None else reply.delay
            if reply.hang:
                await asyncio.sleep(3600)
            if delay > 0:
                await asyncio.sleep(delay)
        finally:
            self.in_flight -= 1
        self.statuses[reply.status] = self.statuses.get(reply.status, 0) + 1
        if reply.body is not None:
            payload = reply.body
        elif reply.status != 200:
            message = reply.error
            if reply.echo:
                message = echoed(auth.removeprefix("Bearer ").strip(), reply.echo)
            payload = json.dumps({"error": {"message": message, "type": "fake",
                                            "code": reply.status}}).encode()
        else:
            if reply.echo:  # a gateway that puts the key into a successful answer
                reply = replace(reply, content=f"{reply.content} "
                                f"({echoed(auth.removeprefix('Bearer ').strip(), reply.echo)})")
            payload = json.dumps(completion_body(reply, request, index)).encode()
        if reply.truncate:
            head = (f"HTTP/1.1 {reply.status} OK\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(payload) + 100}\r\n\r\n").encode()
            writer.write(head + payload[: len(payload) // 2])
            await writer.drain()
            return False
        await self._send(writer, reply.status, payload, reply.headers)
        gone = reader is not None and reader.at_eof()  # the client hung up before the answer
        if self.keep_requests and reply.status == 200 and not gone:
            self.answered.append(request)
        return True

    @staticmethod
    async def _send(writer: asyncio.StreamWriter, status: int, payload: bytes,
                    headers: Mapping[str, str]) -> None:
        extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        head = (f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
                f"Connection: keep-alive\r\n{extra}\r\n").encode()
        writer.write(head + payload)
        await writer.drain()

    async def serve(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port,
                                                  backlog=1024)
        self.port = self._server.sockets[0].getsockname()[1]
        self._loop = asyncio.get_running_loop()
        self._ready.set()
        async with self._server:
            await self._server.serve_forever()

    def start(self) -> FakeServer:
        """Serve from a background thread; returns once the port is bound."""
        def target() -> None:
            with contextlib.suppress(asyncio.CancelledError):
                asyncio.run(self.serve())

        self._thread = threading.Thread(target=target, name="fake-openai", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the fake server did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._server is not None:
            loop, server = self._loop, self._server

            def shutdown() -> None:
                server.close()
                for task in asyncio.all_tasks(loop):
                    task.cancel()

            loop.call_soon_threadsafe(shutdown)
        if self._thread is not None:
            self._thread.join(5)

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main() -> None:  # pragma: no cover - exercised by the benchmark as a subprocess
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--content", default="Rating: 4")
    parser.add_argument("--persona", default=None, metavar="NAME[:STRENGTH]",
                        help="answer as a judge persona of evalstress.llm.personas (fair, "
                             "constant, noisy:S, position:S, verbosity:S, ...; join with +)")
    args = parser.parse_args()
    responder = None
    if args.persona:
        from evalstress.llm.personas import persona

        try:
            responder = persona(args.persona)
        except ValueError as exc:
            parser.error(str(exc))
    server = FakeServer(latency=args.latency, default=Reply(args.content), keep_requests=False,
                        port=args.port, responder=responder)

    async def run() -> None:
        task = asyncio.create_task(server.serve())
        while not server._ready.is_set():
            await asyncio.sleep(0.01)
        print(server.base_url, flush=True)
        await task

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run())


if __name__ == "__main__":  # pragma: no cover
    main()
