"""The request guard of `evalstress serve`, over real HTTP, around a small app in place of the
model: what a web page, a client with a wrong body and an oversized upload get back.

The app behind the guard allows every origin with credentials, as llama-cpp-python's does
(Starlette's CORSMiddleware with `allow_origins=["*"], allow_credentials=True`), and echoes the
body it receives."""

from __future__ import annotations

import http.client
import json
import select
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip("starlette")
uvicorn = pytest.importorskip("uvicorn")

from pydantic import BaseModel  # noqa: E402
from starlette.middleware.cors import CORSMiddleware  # noqa: E402
from starlette.types import Receive, Scope, Send  # noqa: E402

from evalstress.serve.browser import BrowserPolicy  # noqa: E402
from evalstress.serve.guard import RequestGuard  # noqa: E402
from evalstress.serve.listen import open_listener, resolve  # noqa: E402

LIMIT = 64 * 1024
DRAIN = 4 * LIMIT
KEY = "k3y-for-tests"
PAGE = "http://localhost:3000"
EVIL = "https://evil.example"
DIGEST = "0" * 64
CHAT = json.dumps({"messages": [{"role": "user", "content": "Hi"}]}).encode()


class Chat(BaseModel):
    messages: list[dict[str, Any]]
    model: str | None = None
    temperature: float = 0.8


async def echo(scope: Scope, receive: Receive, send: Send) -> None:
    """Answers with what reached it: the path, the body's length and the model it named."""
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    named = json.loads(body).get("model") if body.startswith(b"{") else None
    reply = json.dumps({"path": scope["path"], "length": len(body), "model": named}).encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": reply})


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def cors(self) -> dict[str, str]:
        return {k: v for k, v in self.headers.items() if k.startswith("access-control-")}


@dataclass
class Guarded:
    port: int

    def request(self, method: str, path: str, body: bytes | None = None,
                headers: dict[str, str] | None = None) -> Answer:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            sent = {"Content-Type": "application/json", **(headers or {})}
            conn.request(method, path, body=body, headers={k: v for k, v in sent.items() if v})
            answer = conn.getresponse()
            return Answer(answer.status, {k.lower(): v for k, v in answer.getheaders()},
                          answer.read())
        finally:
            conn.close()


def serve_guard(guard: RequestGuard) -> Iterator[Guarded]:
    sock = open_listener(resolve("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(guard, log_level="critical", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        for _ in range(200):
            if server.started:
                break
            time.sleep(0.05)
        yield Guarded(int(sock.getsockname()[1]))
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def make_guard(origins: tuple[str, ...] = (), key: str | None = None) -> RequestGuard:
    app = CORSMiddleware(echo, allow_origins=["*"], allow_credentials=True,
                         allow_methods=["*"], allow_headers=["*"])  # as llama-cpp-python's
    listing = {"object": "list", "data": [{"id": "SmolLM2.gguf", "object": "model",
                                           "file_sha256": DIGEST}]}
    return RequestGuard(app, api_key=key, browser=BrowserPolicy.build(origins, "127.0.0.1",
                                                                     loopback=True),
                        max_body=LIMIT, models={"/v1/chat/completions": Chat}, listing=listing,
                        drain_limit=DRAIN)


@pytest.fixture(scope="module")
def guarded() -> Iterator[Guarded]:
    """No key, no origin allowed: the default."""
    yield from serve_guard(make_guard())


@pytest.fixture(scope="module")
def allowing() -> Iterator[Guarded]:
    """A page at http://localhost:3000 allowed, with a key."""
    yield from serve_guard(make_guard((PAGE,), KEY))


def preflight(origin: str) -> dict[str, str]:
    return {"Origin": origin, "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type, authorization"}


def test_a_page_of_any_origin_gets_no_cors_header_by_default(guarded: Guarded) -> None:
    answer = guarded.request("OPTIONS", "/v1/chat/completions", headers=preflight(EVIL))
    assert answer.status == 403 and answer.cors == {}
    for method, path, body in [("GET", "/v1/models", None),
                               ("POST", "/v1/chat/completions", CHAT)]:
        answer = guarded.request(method, path, body, headers={"Origin": EVIL})
        assert answer.status == 403 and answer.cors == {}, (path, answer)
        assert b"--allow-origin" in answer.body
    # a client that is not a browser sends no Origin and is served
    assert guarded.request("POST", "/v1/chat/completions", CHAT).status == 200


def test_an_allowed_origin_gets_its_own_name_back_and_never_credentials(
        allowing: Guarded) -> None:
    answer = allowing.request("OPTIONS", "/v1/chat/completions", headers=preflight(PAGE))
    assert answer.status == 204
    assert answer.cors["access-control-allow-origin"] == PAGE
    assert "authorization" in answer.cors["access-control-allow-headers"]
    assert "access-control-allow-credentials" not in answer.cors
    answer = allowing.request("POST", "/v1/chat/completions", CHAT,
                              headers={"Origin": PAGE, "Authorization": f"Bearer {KEY}"})
    assert answer.status == 200
    assert answer.cors == {"access-control-allow-origin": PAGE}
    # another origin is still refused, before the key is even asked for
    answer = allowing.request("OPTIONS", "/v1/models", headers=preflight(EVIL))
    assert answer.status == 403 and answer.cors == {}


def test_every_origin_is_allowed_only_as_a_star_without_credentials() -> None:
    for server in serve_guard(make_guard(("*",))):
        answer = server.request("GET", "/v1/models", headers={"Origin": EVIL})
        assert answer.status == 200
        assert answer.cors == {"access-control-allow-origin": "*"}


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8080", "10.0.0.5:8080"])
def test_a_loopback_server_refuses_a_host_name_that_is_not_loopback(guarded: Guarded,
                                                                     host: str) -> None:
    # DNS rebinding: a page of evil.example whose name now points at 127.0.0.1 calls
    # "its own" origin
    origin = f"http://{host}"
    for headers in ({"Host": host}, {"Host": host, "Origin": origin}):
        answer = guarded.request("POST", "/v1/chat/completions", CHAT, headers=headers)
        assert answer.status == 403 and answer.cors == {}, headers
    for host in ("localhost:8080", "127.0.0.1:8080", "[::1]:8080", "app.localhost"):
        assert guarded.request("GET", "/v1/models", headers={"Host": host}).status == 200


def test_the_model_list_names_the_model_never_its_path(guarded: Guarded) -> None:
    answer = guarded.request("GET", "/v1/models")
    assert answer.status == 200
    assert [(m["id"], m["file_sha256"]) for m in json.loads(answer.body)["data"]] == \
        [("SmolLM2.gguf", DIGEST)]
    # a request that names no model gets the served name (the library would put the path)
    answer = guarded.request("POST", "/v1/chat/completions", CHAT)
    assert json.loads(answer.body)["model"] == "SmolLM2.gguf"


@pytest.mark.parametrize("kind", ["text/plain", "application/x-www-form-urlencoded",
                                  "multipart/form-data; boundary=x"])
def test_json_sent_as_another_type_gets_415(guarded: Guarded, kind: str) -> None:
    answer = guarded.request("POST", "/v1/chat/completions", CHAT, headers={"Content-Type": kind})
    assert answer.status == 415
    assert "Content-Type: application/json" in json.loads(answer.body)["error"]["message"]
    for kind in ("application/json; charset=utf-8", "application/vnd.api+json"):
        answer = guarded.request("POST", "/v1/chat/completions", CHAT,
                                 headers={"Content-Type": kind})
        assert answer.status == 200, kind


@pytest.mark.parametrize("body", [b'{"messages": [', b"\xff\xfe", b"[" * 50_000,
                                  b'{"messages": "Hi"}'])
def test_a_malformed_body_gets_400_and_no_internals(guarded: Guarded, body: bytes) -> None:
    answer = guarded.request("POST", "/v1/chat/completions", body)
    assert answer.status == 400
    message = json.loads(answer.body)["error"]["message"]
    assert "\n" not in message and "Traceback" not in message and ".py" not in message


def test_a_body_declared_over_the_limit_gets_413_before_it_is_sent(guarded: Guarded) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", guarded.port, timeout=30)
    try:
        conn.putrequest("POST", "/v1/chat/completions")
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Content-Length", str(300 << 20))
        conn.endheaders()  # not one byte of the 300 MB
        answer = conn.getresponse()
        assert answer.status == 413
        assert b"--max-body-mib" in answer.read()
    finally:
        conn.close()
    conn = http.client.HTTPConnection("127.0.0.1", guarded.port, timeout=30)
    try:  # a client that waits for `100 Continue` before it sends a body the guard refuses
        conn.putrequest("POST", "/v1/chat/completions")
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Content-Length", str(2 * LIMIT))
        conn.putheader("Expect", "100-continue")
        conn.endheaders()
        assert conn.getresponse().status == 413
    finally:
        conn.close()
    fits = json.dumps({"messages": [{"role": "user", "content": "x" * (LIMIT - 100)}]})
    assert guarded.request("POST", "/v1/chat/completions", fits.encode()).status == 200


def test_a_body_over_the_limit_sent_whole_still_hears_413(guarded: Guarded) -> None:
    """Most clients send the whole body before they read: the guard throws it away (a bounded
    amount) so that they get the 413 rather than a reset connection."""
    over = json.dumps({"messages": [{"role": "user", "content": "x" * 2 * LIMIT}]}).encode()
    answer = guarded.request("POST", "/v1/chat/completions", over)
    assert answer.status == 413 and b"--max-body-mib" in answer.body
    chunks = (over[i:i + 4096] for i in range(0, len(over), 4096))
    conn = http.client.HTTPConnection("127.0.0.1", guarded.port, timeout=30)
    try:
        conn.request("POST", "/v1/chat/completions", body=chunks, encode_chunked=True,
                     headers={"Content-Type": "application/json",
                              "Transfer-Encoding": "chunked"})
        assert conn.getresponse().status == 413
    finally:
        conn.close()


def test_a_chunked_body_that_never_ends_is_cut_off(guarded: Guarded) -> None:
    """A chunked body declares no length: the guard stops reading it past the limit (and what
    it throws away), however much more the client sends."""
    with socket.create_connection(("127.0.0.1", guarded.port), timeout=30) as sock:
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"x" * 4096
        sent = 0
        while sent < 100 * LIMIT:  # the guard answers long before this
            if select.select([sock], [], [], 0)[0]:
                break
            try:
                sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            except OSError:  # the server answered and closed
                break
            sent += len(chunk)
        reply = sock.recv(65536)
    assert reply.startswith(b"HTTP/1.1 413"), reply[:100]
    assert LIMIT + DRAIN <= sent < 100 * LIMIT
