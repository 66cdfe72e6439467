"""Secrets never reach a file: redaction of echoed keys, refusal of keys typed into specs."""

from __future__ import annotations

import base64
import hashlib
import json
import time
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest

from evalstress.core.redact import (
    MARK,
    check_url,
    holds_secret,
    read_key,
    redact,
    redact_value,
    refuse_secrets,
    register_key_variable,
    register_secret,
    server_excerpt,
)
from evalstress.evaluators.base import create_evaluator
from evalstress.llm.client import LLMClient, LLMError

KEY = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t"

#: keys no shape rule knows, and one that it does
GATEWAY_KEY = "TESTSECRET123-gw-0000"
HEX_KEY = "3f786850e387550fdab836ed7e6dc881de23001b"
BASE64_KEY = "Zm9vYmFy+c2VjcmV0/a2V5=="
SHAPED_KEY = "sk-Qw3rTy7uIo9pAs2dFg5h"
KEYS = [GATEWAY_KEY, HEX_KEY, BASE64_KEY, SHAPED_KEY]


def json_escaped(key: str) -> str:
    """How a JSON encoder that escapes every non-alphanumeric character writes `key`."""
    return "".join(c if c.isalnum() else "\\/" if c == "/" else f"\\u{ord(c):04X}"
                   for c in key)


def echoes(key: str) -> dict[str, str]:
    """Error texts a server could send back with `key` in them, by how it is written."""
    half = len(key) // 2
    return {
        "raw": f"401 Unauthorized: invalid credential {key}; check your settings",
        "json": json.dumps({"error": {"code": 401, "seen": key}}).replace("/", "\\/"),
        "json-unicode": f'{{"error": "401, bad key \\"{json_escaped(key)}\\""}}',
        "url": f"401 for https://gw.example/v1/chat?auth={quote(key, safe='')}&retry=0",
        "form": f"401, rejected body: user=me&sent={quote_plus(key)}",
        "wrapped": f"401: the key\n{key[:half]}\n{key[half:]} is not valid",
        "wrapped-indented": f"401: {key[:7]}\r\n        {key[7:]} is revoked",
    }


@pytest.mark.parametrize("text, secret", [
    (f"Incorrect API key provided: {KEY}.", KEY),
    ("401: header was 'Authorization: Bearer abcdef123456'", "abcdef123456"),
    ("bearer zyx987wvu654 rejected", "zyx987wvu654"),
    ("GET https://host/v1?api_key=hunter22secret&x=1", "hunter22secret"),
    ("could not reach https://alice:s3cret@host.example/v1", "alice:s3cret"),
    ('{"api_key": "plainvalue99"}', "plainvalue99"),
    ("token hf_abcdefghijklmnopqrstuvwx leaked", "hf_abcdefghijklmnopqrstuvwx"),
])
def test_an_echoed_secret_is_replaced(text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out
    assert MARK in out


def test_ordinary_prose_is_left_alone() -> None:
    text = "timeout within 60 s (after 6 attempts); the key point: fluency drops"
    assert redact(text) == text


def test_redact_value_walks_nested_config_and_keeps_keys() -> None:
    config = {"evaluators": [f"judge:model=m,note={KEY}"], "seeds": [1, 2], "api_key_env": "X"}
    out = redact_value(config)
    assert KEY not in str(out)
    assert out["seeds"] == [1, 2] and out["api_key_env"] == "X"


def test_llm_error_messages_are_redacted_where_they_are_made() -> None:
    error = LLMError("client", f"HTTP 401: Incorrect API key provided: {KEY}", attempts=1)
    assert KEY not in str(error)


@pytest.mark.parametrize("params", [
    {"api_key": "whatever-value"},
    {"model": "m", "base_url": "http://user:pw@127.0.0.1:8080/v1"},
    {"model": "m", "note": KEY},
])
def test_a_secret_typed_into_a_spec_is_refused(params: dict[str, str]) -> None:
    with pytest.raises(ValueError, match="api_key_env"):
        refuse_secrets(params, "judge")


def test_naming_the_key_variable_is_allowed() -> None:
    refuse_secrets({"api_key_env": "MY_KEY", "model": "gpt"}, "judge")


def test_an_evaluator_spec_with_a_key_fails_before_any_work() -> None:
    with pytest.raises(ValueError, match="secret"):
        create_evaluator(f"judge:model=m,base_url=http://127.0.0.1:9/v1,api_key={KEY}")


def test_a_url_with_credentials_is_refused_without_echoing_them() -> None:
    with pytest.raises(ValueError) as info:
        check_url("http://bob:pa55word@host/v1", "model m")
    assert "pa55word" not in str(info.value)


def test_a_key_the_server_echoes_never_reaches_the_run_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server that answers 401 quoting the key it was sent: the run records the failure as
    missing, with its reason, and no file of the run holds the key."""
    from typer.testing import CliRunner

    from evalstress.cli import app
    from evalstress.llm.fake_server import FakeServer, Reply

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"id": "a", "task": "summarization", "hypothesis":
                                "The ferry left the harbour at dawn. Gulls followed it."}) + "\n")
    echo = Reply(status=401, error=f"Incorrect API key provided: Bearer {KEY}")
    with FakeServer(default=echo) as srv:
        result = CliRunner().invoke(app, [
            "run", str(data), "-e", f"judge:model=m,base_url={srv.base_url},form=score-only,"
            "max_attempts=1", "-p", "truncation", "--seeds", "1", "--workers", "1",
            "--out", str(tmp_path / "run"), "--no-cache", "--max-missing", "1"])
    assert result.exit_code == 0, result.output
    results = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))
    assert results["counts"]["missing_scores"] > 0
    assert any("Incorrect API key" in r["reason"] for r in results["missing_reasons"])
    for path in (tmp_path / "run").rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path.name
    assert KEY not in result.output


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("how", list(echoes(GATEWAY_KEY)))
def test_the_key_of_openai_api_key_is_redacted_in_every_form(
        monkeypatch: pytest.MonkeyPatch, key: str, how: str) -> None:
    """The default variable is read when the text is redacted: nothing registers it first."""
    monkeypatch.setenv("OPENAI_API_KEY", key)
    text = echoes(key)[how]
    out = redact(text)
    assert key not in out and key[: len(key) // 2] not in out and key[len(key) // 2:] not in out
    assert quote_plus(key) not in out and json_escaped(key) not in out
    assert "401" in out  # the rest stays readable
    assert MARK in out


@pytest.mark.parametrize("variable, key", [
    ("REDACT_TEST_GATEWAY", "NAMEDSECRET77-gw-1234"),
    ("REDACT_TEST_HEX", "0a1b2c3d4e5f60718293a4b5c6d7e8f901234567"),
    ("REDACT_TEST_BASE64", "bmFtZWQ+a2V5/dmFs=="),
])
def test_a_key_named_by_api_key_env_is_redacted(monkeypatch: pytest.MonkeyPatch,
                                                variable: str, key: str) -> None:
    monkeypatch.setenv(variable, key)
    assert redact(f"denied: {key}") == f"denied: {key}"  # no shape rule knows it
    refuse_secrets({"model": "m", "api_key_env": variable}, "judge")  # reading the spec
    assert redact(f"denied: {key}") == f"denied: {MARK}"


def test_a_client_registers_the_variable_it_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    key = "clientvar-77-Q5mKp2"
    monkeypatch.setenv("REDACT_TEST_CLIENT_VAR", key)
    LLMClient("http://127.0.0.1:9/v1", "m", api_key_env="REDACT_TEST_CLIENT_VAR")
    error = LLMError("client", f"HTTP 401: unknown key {key}", attempts=1)
    assert key not in str(error) and "HTTP 401" in str(error)


def test_a_variable_whose_value_changes_is_redacted_with_its_new_value(
        monkeypatch: pytest.MonkeyPatch) -> None:
    register_key_variable("REDACT_TEST_ROTATED")
    monkeypatch.setenv("REDACT_TEST_ROTATED", "first-value-9931")
    assert redact("got first-value-9931") == f"got {MARK}"
    monkeypatch.setenv("REDACT_TEST_ROTATED", "second-value-4417")
    assert redact("got second-value-4417") == f"got {MARK}"


def test_a_refused_key_is_still_redacted_if_it_is_echoed() -> None:
    with pytest.raises(ValueError):
        refuse_secrets({"model": "m", "api_key": "refused-value-8823"}, "judge")
    assert "refused-value-8823" not in redact("server saw refused-value-8823")


@pytest.mark.parametrize("value, text", [
    ("not-needed", "the field is not-needed here"),
    ("EMPTY", "an EMPTY answer"),
    ("none", "none of the scores"),
    ("abc12", "row abc12 was skipped"),
    ("  ", "two  spaces"),
])
def test_placeholders_and_short_values_are_no_secrets(monkeypatch: pytest.MonkeyPatch,
                                                      value: str, text: str) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", value)
    register_secret(value)
    assert redact(text) == text


def test_a_registered_value_is_redacted_and_the_set_can_grow() -> None:
    first, second = "grow-first-5521-x", "grow-second-6632-y"
    register_secret(first)
    assert redact(f"{first} {second}") == f"{MARK} {second}"
    register_secret(second)  # the compiled pattern is rebuilt for the larger set
    assert redact(f"{first} {second}") == f"{MARK} {MARK}"


@pytest.mark.parametrize("text", [
    ("The judge could not score this text, the answer was cut short. " * 160)[:10_000],
    "\\" * 10_000,  # escapes start with backslashes: a run of them must not cost n squared
    "%" * 10_000,
], ids=["prose", "backslashes", "percent"])
def test_redacting_a_long_text_stays_cheap(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    """Every error reason passes through redact: 10 kB with three keys known takes a few
    milliseconds (about 2 ms for prose, 5 ms for 10,000 backslashes, on one core)."""
    monkeypatch.setenv("OPENAI_API_KEY", GATEWAY_KEY)
    register_secret(HEX_KEY)
    register_secret(BASE64_KEY)
    redact(text)  # compiles
    start = time.perf_counter()
    for _ in range(20):
        assert redact(text) == text
    assert (time.perf_counter() - start) / 20 < 0.05


@pytest.mark.parametrize("url", ["notaurl", "ftp://host/v1", "http://", "127.0.0.1:8080/v1",
                                 "http://a/v1|localhost:9"])
def test_an_endpoint_that_is_no_http_url_is_refused_when_the_spec_is_read(url: str) -> None:
    with pytest.raises(ValueError, match="is not an http\\(s\\) URL"):
        check_url(url, "model m")


def test_http_and_https_endpoints_pass() -> None:
    urls = "http://127.0.0.1:8080/v1|https://api.example.com/v1"
    assert check_url(urls, "model m") is None  # no error
    client = LLMClient(urls, "m")  # the client checks each of its endpoints the same way
    assert [e.base_url for e in client.pool.endpoints] == ["http://127.0.0.1:8080/v1",
                                                            "https://api.example.com/v1"]



# --- encodings: made here with the standard library, not with the code under test -------------

B64, URL = base64.b64encode, base64.urlsafe_b64encode


def encoded(key: str) -> dict[str, str]:
    """`key` as a careless server may give it back encoded. The bytes before it set its
    alignment in base64: none (0), "Bearer " and "Authorization: Bearer " (7 and 22 bytes: 1),
    "to" (2)."""
    raw = key.encode("utf-8")
    bearer = B64(b"Bearer " + raw).decode()
    return {
        "b64": B64(raw).decode(),
        "b64-unpadded": B64(raw).decode().rstrip("="),
        "b64-bearer": bearer,
        "b64-auth": B64(b"Authorization: Bearer " + raw).decode(),
        "b64-align2": B64(b"to" + raw + b"!").decode(),
        "b64url": URL(raw).decode().rstrip("="),
        "b64url-bearer": URL(b"Bearer " + raw).decode().rstrip("="),
        "b64url-align2": URL(b"to" + raw).decode(),
        "b64-glued": "token" + B64(b"to" + raw).decode(),  # no space before the encoded run
        "b64-wrapped": "\n".join(bearer[i:i + 16] for i in range(0, len(bearer), 16)),
        "b64-percent": quote(bearer, safe=""),
        "b64-json": bearer.replace("/", "\\/"),
        "hex": raw.hex(),
        "HEX": raw.hex().upper(),
        "hex-bearer": (b"Bearer " + raw).hex(),
        "reversed": key[::-1],
        "percent": quote(key, safe=""),
    }


def windows(form: str, width: int = 12) -> list[str]:
    """Every `width`-character slice of an encoded form: none may survive redaction."""
    flat = "".join(form.split())
    return [flat[i:i + width] for i in range(0, max(1, len(flat) - width + 1))]


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("how", list(encoded(GATEWAY_KEY)))
def test_an_encoded_key_is_redacted_in_every_alignment(monkeypatch: pytest.MonkeyPatch,
                                                       key: str, how: str) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", key)
    form = encoded(key)[how]
    out = redact(f"401 Invalid credentials (token {form}); check your settings")
    flat = "".join(out.split())
    assert not [w for w in windows(form) if w in flat], out
    assert out.startswith("401 Invalid credentials (token ") and "check your settings" in out
    assert MARK in out


@pytest.mark.parametrize("text", [
    B64(b"Authorization: Bearer UNKNOWN-gw-key-778899").decode(),
    B64(b"Bearer zq81Xv0Lw9Yt7Rr3").decode().rstrip("="),
    URL(b'{"api_key": "plainvalue99-unknown"}').decode(),
    (b"Bearer zq81Xv0Lw9Yt7Rr3").hex().upper(),
    B64(b"sk-Qq9Ww8Ee7Rr6Tt5Yy4Uu3").decode(),
    B64(B64(b"Bearer zq81Xv0Lw9Yt7Rr3")).decode(),  # an encoding inside an encoding
])
def test_a_credential_of_no_known_value_is_found_once_decoded(text: str) -> None:
    """Nothing registers these keys: the decoded text is what looks like a credential."""
    out = redact(f"upstream said: token {text} (401)")
    assert out == f"upstream said: token {MARK} (401)"


@pytest.mark.parametrize("text", [
    hashlib.sha256(b"a response key").hexdigest(),
    "POST /v1/chat/completions failed",
    "internationalization and counterrevolutionaries",
    B64(b"the judge answered with a rating of four out of five").decode(),
    "C:/Users/someone/Documents/evaluation_outputs_2024/run-0001",
])
def test_encoded_runs_that_carry_no_secret_are_kept(monkeypatch: pytest.MonkeyPatch,
                                                    text: str) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", GATEWAY_KEY)
    register_secret(HEX_KEY)
    assert redact(text) == text


def test_an_answer_holds_a_secret_only_by_the_keys_value(monkeypatch: pytest.MonkeyPatch) -> None:
    """Shapes do not count in an answer: a model may write about passwords."""
    monkeypatch.setenv("OPENAI_API_KEY", GATEWAY_KEY)
    assert holds_secret(f"Rating: 4 (token {encoded(GATEWAY_KEY)['b64-auth']})")
    assert holds_secret(f"Rating: 4 {encoded(GATEWAY_KEY)['hex']}")
    assert holds_secret(f"Rating: 4 {GATEWAY_KEY}")
    assert not holds_secret("Rating: 4. The text says password=hunter22 and Bearer abcdefgh.")
    assert not holds_secret("Rating: 4")


def test_a_server_excerpt_is_one_short_redacted_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", GATEWAY_KEY)
    text = (f"\x1b]0;owned\x07\x1b[2J denied\r\n token {encoded(GATEWAY_KEY)['b64-bearer']} "
            + "padding " * 200)
    out = server_excerpt(text)
    assert len(out) <= 200 and out.endswith("...")
    assert out.startswith("]0;owned [2J denied token [REDACTED] padding")
    assert not any(ord(c) < 32 or ord(c) == 127 for c in out)


@pytest.mark.parametrize("value, key", [
    ("crlf-secret-4411\r\n", "crlf-secret-4411"),
    ("  spaced-secret-4411\t", "spaced-secret-4411"),
    ("lf-secret-4411\n", "lf-secret-4411"),
])
def test_a_key_is_read_without_its_surrounding_whitespace(monkeypatch: pytest.MonkeyPatch,
                                                          value: str, key: str) -> None:
    monkeypatch.setenv("REDACT_TEST_READ", value)
    assert read_key("REDACT_TEST_READ") == key
    assert redact(f"got {key}") == f"got {MARK}"


@pytest.mark.parametrize("value, code", [("inner\rsecret-4411", "U+000D"),
                                         ("inner\x1bsecret-4411", "U+001B"),
                                         ("inner-s\u00e9cret-4411", "U+00E9")])
def test_a_key_with_a_character_no_header_carries_is_refused(
        monkeypatch: pytest.MonkeyPatch, value: str, code: str) -> None:
    monkeypatch.setenv("REDACT_TEST_READ", value)
    with pytest.raises(ValueError, match=r"\$REDACT_TEST_READ") as info:
        read_key("REDACT_TEST_READ")
    assert code in str(info.value) and "secret-4411" not in str(info.value)


def test_an_unset_or_blank_key_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REDACT_TEST_READ", raising=False)
    assert read_key("REDACT_TEST_READ") is None
    monkeypatch.setenv("REDACT_TEST_READ", " \r\n")
    assert read_key("REDACT_TEST_READ") is None
