"""Secrets never reach a file: redaction of echoed keys, refusal of keys typed into specs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalstress.core.redact import MARK, check_url, redact, redact_value, refuse_secrets
from evalstress.evaluators.base import create_evaluator
from evalstress.llm.client import LLMError

KEY = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t"


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


@pytest.mark.parametrize("url", ["notaurl", "ftp://host/v1", "http://", "127.0.0.1:8080/v1",
                                 "http://a/v1|localhost:9"])
def test_an_endpoint_that_is_no_http_url_is_refused_when_the_spec_is_read(url: str) -> None:
    with pytest.raises(ValueError, match="is not an http\\(s\\) URL"):
        check_url(url, "model m")


def test_http_and_https_endpoints_pass() -> None:
    check_url("http://127.0.0.1:8080/v1|https://api.example.com/v1", "model m")
