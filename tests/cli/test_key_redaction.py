"""An API key a server gives back in its error never reaches the run's files or the terminal,
whatever the key looks like and however the server encodes it; the reason still says what
happened (the 401)."""

from __future__ import annotations

import base64
import html
import json
import sqlite3
from pathlib import Path
from urllib.parse import quote, quote_plus

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from evalstress.cli import app
from evalstress.llm.fake_server import FakeServer, Reply

GATEWAY_KEY = "TESTSECRET123-gw-0000"
HEX_KEY = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b"
BASE64_KEY = "q8Zr+Tw/5kLm0PxV3nB9yH2e/Jd7Ua4c+Wo1Ri6s=="


def shapes(key: str) -> list[str]:
    """The forms of `key` a leak could take: raw, JSON-escaped (every non-alphanumeric
    character as \\uXXXX, '/' as \\/), percent-encoded, and each half of it (a wrapped key)."""
    json_escaped = "".join(c if c.isalnum() else "\\/" if c == "/" else f"\\u{ord(c):04x}"
                           for c in key)
    half = len(key) // 2
    return [key, json_escaped, quote_plus(key), key[:half], key[half:]]


def strings_of(path: Path) -> str:
    """Every string cell of a Parquet file, one per line."""
    table = pq.read_table(path)
    cells: list[str] = []
    for name in table.column_names:
        column = table.column(name)
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type) or \
                pa.types.is_dictionary(column.type):
            cells += [str(v) for v in column.to_pylist() if v is not None]
    return "\n".join(cells)


def leaks(key: str, text: str) -> list[str]:
    """The forms of `key` found in `text`, also once the text is joined back into one line (the
    terminal wraps long words) and with doubled backslashes undone (a JSON file writes the
    backslash of an escape as two)."""
    views = [text, "".join(text.split()), text.replace("\\\\", "\\")]
    return [form for form in shapes(key) if any(form in view for view in views)]


@pytest.mark.parametrize("variable, key, echo", [
    ("OPENAI_API_KEY", GATEWAY_KEY, "raw"),
    ("OPENAI_API_KEY", HEX_KEY, "wrapped"),
    ("MY_KEY", BASE64_KEY, "json"),
    ("MY_KEY", GATEWAY_KEY, "url"),
])
def test_a_key_echoed_by_the_judge_server_is_nowhere_in_the_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str, key: str,
        echo: str) -> None:
    monkeypatch.setenv(variable, key)
    monkeypatch.setenv("EVALSTRESS_CACHE_DIR", str(tmp_path / "cache"))
    named = "" if variable == "OPENAI_API_KEY" else f",api_key_env={variable}"
    out = tmp_path / "run"
    with FakeServer(default=Reply(status=401, echo=echo)) as srv:
        result = CliRunner().invoke(app, [
            "run", "--limit", "2", "-p", "truncation", "--seeds", "1", "--workers", "1",
            "-e", f"judge:model=m,base_url={srv.base_url},form=score-only,max_attempts=1,"
            f"cache={tmp_path / 'llm.sqlite'}{named}",
            "--out", str(out)])
        assert f"Bearer {key}" in srv.auth_headers  # the key was sent, and echoed back
    assert result.exit_code == 3, result.output  # every score missing: outputs written, exit 3
    assert not leaks(key, result.stdout), result.stdout
    assert not leaks(key, result.stderr), result.stderr
    assert "401" in result.stderr  # the error line still says what happened

    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert results["counts"]["missing_scores"] > 0
    assert all("401" in r["reason"] for r in results["missing_reasons"])
    reasons = pq.read_table(out / "scores.parquet").column("reason").to_pylist()
    assert any("401" in r for r in reasons)

    checked = set()
    for path in tmp_path.rglob("*"):
        if not path.is_file():
            continue
        text = strings_of(path) if path.suffix == ".parquet" else \
            path.read_bytes().decode("utf-8", "replace")
        assert not leaks(key, text), path.relative_to(tmp_path)
        checked.add(path.name)
    assert {"scores.parquet", "variants.parquet", "results.json", "report.html"} <= checked


def test_a_key_echoed_to_the_gold_judge_and_generator_of_attack_is_nowhere(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`evalstress attack` with a gold judge and a generator that both read MY_KEY: their
    failures are counted by reason in attacks.jsonl and results.json, without the key."""
    key = "ATTACKSECRET99-gw-0000"
    monkeypatch.setenv("MY_KEY", key)
    monkeypatch.setenv("EVALSTRESS_CACHE_DIR", str(tmp_path / "cache"))
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({
        "id": i, "task": "summarization",
        "hypothesis": f"The ferry left the harbour at dawn, run {i}. Gulls followed it closely.",
        "references": ["A ferry left at dawn, followed by gulls."]}) + "\n" for i in "ab"))
    out = tmp_path / "run"
    with FakeServer(default=Reply(status=401, echo="wrapped")) as srv:
        llm = f"base_url={srv.base_url},api_key_env=MY_KEY,max_attempts=1"
        result = CliRunner().invoke(app, [
            "attack", str(data), "-v", "bleu", "-g", f"judge:model=gold,{llm}",
            "--generator", f"model=gen,{llm}", "--method", "rules", "--method", "adveval",
            "--budget", "5", "--out", str(out)])
        assert f"Bearer {key}" in srv.auth_headers
    assert result.exit_code == 3, result.output  # the gold's scores are all missing
    assert not leaks(key, result.stdout) and not leaks(key, result.stderr), result.output
    assert "401" in result.stderr
    for name in ("attacks.jsonl", "results.json", "report.html"):
        text = (out / name).read_text(encoding="utf-8")
        assert "401" in text, name
        assert not leaks(key, text), name


@pytest.mark.parametrize("status, echo", [(401, "json"), (401, "base64-auth"), (200, "hex")])
def test_a_key_echoed_to_the_generator_and_verifier_is_nowhere(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: int, echo: str) -> None:
    """LLM-written perturbations whose generator and verifier read MY_KEY and are refused, or
    answered with the key in the text: the variants are skipped with the reason in
    skips.jsonl and results.json, without the key in any form."""
    key = "GENSECRET77-gw/0000+x"
    monkeypatch.setenv("MY_KEY", key)
    monkeypatch.setenv("EVALSTRESS_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "run"
    with FakeServer(default=Reply(status=status, echo=echo)) as srv:
        llm = f"base_url={srv.base_url},api_key_env=MY_KEY,max_attempts=1"
        result = CliRunner().invoke(app, [
            "run", "--limit", "1", "--suite", "criteria-full", "--seeds", "1", "-e", "bleu",
            "--generator", f"model=gen,{llm}", "--verifier", f"model=ver,{llm}",
            "--workers", "1", "--out", str(out)])
        assert f"Bearer {key}" in srv.auth_headers
    assert result.exit_code == 3, result.output  # no variant was written
    assert not leaks(key, result.stdout) and not leaks(key, result.stderr), result.output
    skips = (out / "skips.jsonl").read_text(encoding="utf-8")
    assert ("HTTP 401" if status == 401 else "holds the API key") in skips
    for path in out.iterdir():
        text = strings_of(path) if path.suffix == ".parquet" else \
            path.read_text(encoding="utf-8")
        assert not leaks(key, text), path.name
    texts = every_text(tmp_path)
    texts["stdout"], texts["stderr"] = result.stdout, result.stderr
    assert not encoded_leaks(key, texts)


def test_an_error_line_of_the_command_line_never_shows_the_key(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from evalstress.cli.common import fail

    monkeypatch.setenv("OPENAI_API_KEY", GATEWAY_KEY)
    fail(f"could not list the models of http://127.0.0.1:9/v1 (HTTP 401: {GATEWAY_KEY})")
    shown = capsys.readouterr().err
    assert "HTTP 401" in shown
    assert not leaks(GATEWAY_KEY, shown), shown



# --- encoded echoes: the forms are made here with the standard library ---------------------------

def encoded_forms(key: str) -> list[str]:
    """`key` raw, percent-encoded, reversed, hex (either case), and base64 in both alphabets
    in each of the three alignments it can have inside an encoded run (b64("KEY"),
    b64("Bearer KEY"): 7 bytes before it, b64("xy" + KEY)): the first and last group of four
    characters are left out, as they may carry bits of the bytes around the key."""
    raw = key.encode()
    forms = [key, quote(key, safe=""), key[::-1], raw.hex(), raw.hex().upper()]
    for lead in (b"", b"B", b"xy"):
        core = base64.b64encode(lead + raw).decode()[4 if lead else 0:-4]
        forms += [core, core.replace("+", "-").replace("/", "_")]
    return forms


def every_text(root: Path) -> dict[str, str]:
    """The text of every file under `root`: Parquet cells through pyarrow, SQLite rows through
    sqlite3 (plus the bytes of the database and its log), any other file's bytes."""
    texts: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        if not path.is_file():
            continue
        name = str(path.relative_to(root))
        data = path.read_bytes()
        texts[name] = data.decode("utf-8", "replace")
        if path.suffix == ".parquet":
            table = pq.read_table(path)
            texts[name] = "\n".join(str(v) for column in table.columns
                                    for v in column.to_pylist())
        elif data.startswith(b"SQLite format 3"):
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            try:
                tables = [t for (t,) in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type='table'")]
                rows = [str(row) for t in tables for row in conn.execute(f'SELECT * FROM "{t}"')]
            finally:
                conn.close()
            texts[name] += "\n".join(rows)
    return texts


def encoded_leaks(key: str, texts: dict[str, str]) -> list[tuple[str, str]]:
    """(file, form) for each form of `key` found, also with whitespace removed (a wrapped
    line) and with a JSON file's doubled backslashes undone."""
    found = []
    for name, text in texts.items():
        views = [text, "".join(text.split()), text.replace("\\\\", "\\").replace("\\/", "/")]
        found += [(name, form) for form in encoded_forms(key) if any(form in v for v in views)]
    return found


@pytest.mark.parametrize("transport, status, echo", [
    ("aiohttp", 401, "base64-bearer"),
    ("openai", 401, "base64-auth"),
    ("aiohttp", 401, "HEX"),
    ("openai", 401, "base64url"),
    ("aiohttp", 200, "base64"),
    ("openai", 200, "raw"),
])
def test_a_key_echoed_encoded_is_in_no_file_of_the_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, transport: str, status: int,
        echo: str) -> None:
    """A 401 that gives the key back base64- or hex-encoded, and a 200 whose answer holds it:
    no file the run writes (results.json, scores.parquet, report.html, the caches) holds it in
    any form; the reasons say what happened."""
    key = "E2ESECRET-gw/42+xy-0000"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.setenv("EVALSTRESS_LLM_TRANSPORT", transport)
    monkeypatch.setenv("EVALSTRESS_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "run"
    with FakeServer(default=Reply("Rating: 4", status=status, echo=echo)) as srv:
        result = CliRunner().invoke(app, [
            "run", "--limit", "2", "-p", "truncation", "--seeds", "1", "--workers", "1",
            "-e", f"judge:model=m,base_url={srv.base_url},form=score-only,max_attempts=2,"
            f"cache={tmp_path / 'cache' / 'llm.sqlite'}", "--out", str(out)])
        assert f"Bearer {key}" in srv.auth_headers
        assert srv.calls == len(srv.requests) > 0
    assert result.exit_code == 3, result.output  # every score missing: outputs written, exit 3
    reasons = [r["reason"] for r in
               json.loads((out / "results.json").read_text(encoding="utf-8"))["missing_reasons"]]
    said = "HTTP 401" if status == 401 else "holds the API key"
    assert reasons and all(said in r for r in reasons), reasons
    texts = every_text(tmp_path)
    texts["stdout"], texts["stderr"] = result.stdout, result.stderr
    assert {"run/results.json", "run/scores.parquet", "run/report.html",
            "cache/llm.sqlite"} <= set(texts)
    assert not encoded_leaks(key, texts)


@pytest.mark.parametrize("transport", ["aiohttp", "openai"])
def test_a_key_with_a_windows_line_end_is_used_without_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, transport: str) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "CRLFSECRET-gw-0000\r\n")
    monkeypatch.setenv("EVALSTRESS_LLM_TRANSPORT", transport)
    with FakeServer() as srv:
        result = CliRunner().invoke(app, [
            "run", "--limit", "1", "-p", "truncation", "--seeds", "1", "--workers", "1",
            "-e", f"judge:model=m,base_url={srv.base_url},form=score-only,max_attempts=1",
            "--no-cache", "--out", str(tmp_path / "run")])
        assert srv.auth_headers == {"Bearer CRLFSECRET-gw-0000"}
    assert result.exit_code == 0, result.output


def test_a_key_with_an_inner_control_character_stops_before_any_work(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "INNER\rSECRET-gw-0000")
    with FakeServer() as srv:
        result = CliRunner().invoke(app, [
            "run", "--limit", "1", "-p", "truncation", "--seeds", "1", "--workers", "1",
            "-e", f"judge:model=m,base_url={srv.base_url},form=score-only",
            "--no-cache", "--out", str(tmp_path / "run")])
        assert srv.calls == 0
    assert result.exit_code == 2, result.output
    assert "$OPENAI_API_KEY" in result.stderr and "U+000D" in result.stderr
    assert "SECRET-gw" not in result.output
    assert not (tmp_path / "run").exists()


def test_a_key_echoed_encoded_is_in_no_file_of_the_card(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The card is the document people publish: card.md, card.json, card.html and every run
    under runs/ keep the 401 and the server's words, not b64("Bearer KEY")."""
    key = "CARDSECRET-gw/42+xy-0000"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.setenv("EVALSTRESS_CACHE_DIR", str(tmp_path / "cache"))
    with FakeServer(default=Reply(status=401, echo="base64-bearer")) as srv:
        result = CliRunner().invoke(app, [
            "card", f"judge:model=m,base_url={srv.base_url},form=score-only,max_attempts=1",
            "--budget", "small", "--workers", "1", "--quiet", "--out", str(tmp_path / "card")])
        assert f"Bearer {key}" in srv.auth_headers
    assert result.exit_code == 3, result.output
    texts = every_text(tmp_path)
    texts["stdout"], texts["stderr"] = result.stdout, result.stderr
    assert {"card/card.md", "card/card.json", "card/card.html",
            "card/runs/blindspot/results.json"} <= set(texts)
    # card.md writes the data's Markdown and HTML characters as character references: the
    # text a reader sees is the unescaped one, and that is searched too
    texts["card/card.md as read"] = html.unescape(texts["card/card.md"])
    assert "Invalid credentials (token [REDACTED])" in texts["card/card.md as read"]
    assert not encoded_leaks(key, texts)
