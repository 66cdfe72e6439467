"""The `serve` cases of `probe_reliability.py`: what `evalstress serve` answers a web page of
another origin, a body far over any chat request's size, and JSON sent under the wrong type.

Each case starts `evalstress serve --port 0` (the shipped SmolLM2 GGUF, no key: the default),
waits for its "Serving ... at URL" line, talks to it with `http.client` (the case's `drive`),
and stops it. A problem the client finds makes the case "silent wrong"; a server that does not
start is classified by its exit code and error line like any other case. Where llama-cpp-python
or the shipped GGUF is missing, the cases are skipped with the reason (`unavailable`).
"""

from __future__ import annotations

import contextlib
import http.client
import importlib.util
import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from urllib.parse import urlsplit

from probe_cases import Case, end_group

#: the origin of a web page the user happens to have open while the server runs
EVIL = "https://evil.example"
#: the announcement `evalstress serve` prints once its socket listens and the model is loaded
SERVING = re.compile(r"Serving \S+ at (http://\S+/v1)")
#: a body far over any chat request's size (the issue's 300 MB, scaled down)
BIG_BODY = 20 << 20
#: RSS growth of the server, bytes, that shows a body was taken in whole
RSS_GROWTH = 64 << 20
SERVE = ("serve", "--port", "0", "--n-ctx", "512", "--threads", "1", "--no-logprobs")

Response = tuple[int, dict[str, str], bytes]


def unavailable(need: str) -> str | None:
    """Why the cases that need `need` cannot run here, or None."""
    if need != "serve":
        return f"unknown need '{need}'"
    missing = [m for m in ("llama_cpp", "fastapi", "uvicorn", "sse_starlette",
                           "pydantic_settings") if importlib.util.find_spec(m) is None]
    if missing:
        return f"{', '.join(missing)} not installed (the llm-local extra)"
    try:
        from evalstress.llm.local import resolve_gguf

        resolve_gguf("local")
    except Exception as exc:  # any reason the shipped model cannot be found
        return f"no shipped GGUF ({type(exc).__name__}: {exc})"
    return None


def serve_and_drive(case: Case, argv: list[str], cwd: Path, env: Mapping[str, str]) -> tuple[
        int | None, str, str, str | None, float]:
    """Start the server, run the case's client against it, stop it: (exit code, stdout,
    stderr, problem, seconds). The exit code is 0 once the client ran (how a server ends on
    SIGTERM is not what is probed), None when it neither served nor exited in time."""
    assert case.drive is not None
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "evalstress.cli", *argv], cwd=cwd,
                            env=dict(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, errors="replace", start_new_session=True)
    err_lines: list[str] = []
    out_lines: list[str] = []
    found: list[str] = []
    ready = threading.Event()

    def read_err() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            err_lines.append(line)
            match = SERVING.search(line)
            if match and not found:
                found.append(match[1])
                ready.set()
        ready.set()

    def read_out() -> None:
        assert proc.stdout is not None
        out_lines.extend(proc.stdout)

    readers = [threading.Thread(target=f, daemon=True) for f in (read_err, read_out)]
    for reader in readers:
        reader.start()
    ready.wait(case.timeout)
    problem: str | None = None
    code: int | None = proc.poll()  # a server that ended by itself (None: still going)
    if found:
        try:
            problem = case.drive(found[0], proc.pid)
        except Exception as exc:  # the server broke the connection or never answered
            problem = f"the client failed: {type(exc).__name__}: {exc}"
        code = 0
    end_group(proc)
    for reader in readers:
        reader.join(5)
    return code, "".join(out_lines), "".join(err_lines), problem, time.monotonic() - started


# ---- the client ------------------------------------------------------------------------------

def call(base: str, method: str, path: str, headers: Mapping[str, str] | None = None,
         body: bytes = b"", timeout: float = 120.0) -> Response:
    """One request to the server: (status, headers in lower case, body)."""
    where = urlsplit(base)
    conn = http.client.HTTPConnection(where.hostname or "127.0.0.1", where.port, timeout=timeout)
    try:
        conn.request(method, where.path.rstrip("/") + path, body=body or None,
                     headers=dict(headers or {}))
        answer = conn.getresponse()
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()
    finally:
        conn.close()


def rss(pid: int) -> int:
    """Resident memory of a process in bytes (0 when it cannot be read)."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def chat(**more: object) -> bytes:
    """A small valid chat request."""
    return json.dumps({"messages": [{"role": "user", "content": "Say 4."}], "max_tokens": 1,
                       **more}).encode()


def allows(headers: Mapping[str, str]) -> str | None:
    """The CORS grant a response gives the evil origin, or None."""
    origin = headers.get("access-control-allow-origin")
    if origin not in (EVIL, "*"):
        return None
    credentials = headers.get("access-control-allow-credentials") == "true"
    return f"access-control-allow-origin: {origin}" + (
        ", allow-credentials: true" if credentials else "")


def preflight(base: str, pid: int) -> str | None:
    """A web page's CORS preflight for a JSON POST: no grant for an origin nobody allowed."""
    _, headers, _ = call(base, "OPTIONS", "/chat/completions", {
        "Origin": EVIL, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type"})
    grant = allows(headers)
    return f"the preflight from {EVIL} is answered {grant}" if grant else None


def models_cross_origin(base: str, pid: int) -> str | None:
    """GET /v1/models from another origin: not readable by the page (the id may name a file
    of this machine)."""
    status, headers, body = call(base, "GET", "/models", {"Origin": EVIL})
    grant = allows(headers)
    if status == 200 and grant:
        ids = [m.get("id") for m in json.loads(body).get("data", [])]
        return f"{EVIL} may read /v1/models ({grant}), which lists {ids}"
    return None


def simple_post_cross_origin(base: str, pid: int) -> str | None:
    """A POST a page can send without a preflight (text/plain): not served, not readable."""
    status, headers, _ = call(base, "POST", "/chat/completions",
                              {"Origin": EVIL, "Content-Type": "text/plain"}, chat())
    grant = allows(headers)
    if grant or status == 200:
        return f"a text/plain POST from {EVIL} got {status}" + (f" with {grant}" if grant else "")
    return None


def wrong_type(content_type: str) -> Callable[[str, int], str | None]:
    """JSON sent under another content type: 400 or 415, not a 500."""

    def drive(base: str, pid: int) -> str | None:
        status, _, body = call(base, "POST", "/chat/completions",
                               {"Content-Type": content_type}, chat())
        return None if status in (400, 415) else \
            f"a chat request sent as {content_type} got {status}: {body[:120]!r}"

    return drive


def big_body(base: str, pid: int) -> str | None:
    """A 20 MB JSON body: refused as too large (413) without the server taking it in."""
    call(base, "GET", "/models")  # the first request's one-off costs are not the body's
    before = rss(pid)
    body = chat(pad="x" * BIG_BODY)
    try:
        status, _, _ = call(base, "POST", "/chat/completions",
                            {"Content-Type": "application/json"}, body)
    except (ConnectionError, http.client.HTTPException):
        status = 413  # the server closed the connection on the body: refused before reading
    grown = rss(pid) - before
    problems = ([f"a {BIG_BODY >> 20} MB body got {status}, not 413"] if status != 413 else []) \
        + ([f"the server grew by {grown >> 20} MB"] if grown > RSS_GROWTH else [])
    return "; ".join(problems) or None


def declared_huge(base: str, pid: int) -> str | None:
    """A request that declares a 300 MB body and sends 32 MB of it: refused (413, or the
    connection closed) from the header or once past the limit, not waited on for the rest."""
    where = urlsplit(base)
    conn = http.client.HTTPConnection(where.hostname or "127.0.0.1", where.port, timeout=15)
    try:
        conn.putrequest("POST", where.path.rstrip("/") + "/chat/completions")
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Content-Length", str(300 << 20))
        conn.endheaders()
        try:
            for _ in range(32):
                conn.send(b" " * (1 << 20))
        except (ConnectionError, TimeoutError):
            pass  # the server stopped reading: refused
        try:
            status = conn.getresponse().status
        except TimeoutError:
            return "a request declaring 300 MB got no answer after 32 MB and 15 s: the " \
                "server waits for the rest"
        except (ConnectionError, http.client.HTTPException):
            return None  # closed without an answer: refused
    finally:
        conn.close()
    return None if status == 413 else f"a request declaring 300 MB got {status}, not 413"


def serve_cases() -> list[Case]:
    def served(description: str, drive: Callable[[str, int], str | None]) -> Case:
        return Case("serve", description, SERVE, "accept", drive=drive, needs="serve",
                    timeout=180.0)

    return [
        served("CORS preflight from another origin (no key, the default)", preflight),
        served("GET /v1/models from another origin (names the GGUF's path)",
               models_cross_origin),
        served("a text/plain POST from another origin (no preflight needed)",
               simple_post_cross_origin),
        served("JSON sent as text/plain (400 or 415)", wrong_type("text/plain")),
        served("JSON sent as a form (400 or 415)",
               wrong_type("application/x-www-form-urlencoded")),
        served("a 20 MB request body (413, memory kept)", big_body),
        served("a request declaring a 300 MB body (413, not waited on)", declared_huge),
    ]
