"""bench/probe_reliability.py: each classification rule on hand-made results, the evidence it
reads (protected files, work before a refusal, leaked keys, the error line), and the runner end
to end on a stand-in command line; the probe's own cases are not run here (minutes)."""

from __future__ import annotations

import importlib.util
import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench" / "probe_reliability.py"
_spec = importlib.util.spec_from_file_location("probe_reliability", BENCH)
assert _spec is not None and _spec.loader is not None
probe = importlib.util.module_from_spec(_spec)
sys.modules["probe_reliability"] = probe  # dataclasses look their module up
_spec.loader.exec_module(probe)
Case = probe.Case
Observation = probe.Observation
classify = probe.classify


def refusal(*says: str, **more: Any) -> Any:
    return Case("data", "a refusal", ("run", "data.jsonl"), "error", says, **more)


def run_case(expect: str = "accept", **more: Any) -> Any:
    return Case("data", "a run", ("run", "data.jsonl"), expect, **more)


ERROR_LINE = "error: data.jsonl, line 2, field 'hypothesis': is empty (null)\n"


@pytest.mark.parametrize("case, obs, outcome", [
    # a protected file gone wins over a perfect refusal
    (refusal("hypothesis"), Observation(2, stderr=ERROR_LINE, lost=["out/precious.txt gone"]),
     "data loss"),
    (refusal("hypothesis"), Observation(2, stderr="Traceback (most recent call last):\n"),
     "traceback"),
    (refusal("hypothesis"), Observation(4, stderr="error: unexpected KeyError: 'x'\n"),
     "traceback"),
    (run_case(), Observation(1), "traceback"),  # exit 1 belongs to check alone
    (run_case(), Observation(None), "traceback"),  # killed at the timeout
    (refusal("hypothesis"), Observation(0), "silent wrong"),
    (refusal("hypothesis"), Observation(3), "silent wrong"),
    (run_case(), Observation(0, problem="no scores of 'truncation'"), "silent wrong"),
    (run_case(exits=(3,)), Observation(3, leaks=["out/results.json"]), "silent wrong"),
    (refusal("hypothesis"), Observation(2, stderr=ERROR_LINE,
                                        work=["staging folder .out.partial"]), "late failure"),
    (refusal("interrupt", error_exit=143, late_ok=True),
     Observation(143, stderr="interrupted (SIGTERM): run again to resume\n",
                 work=["staging folder .out.partial"]), "clear error"),
    (refusal("hypothesis"), Observation(2, stderr=ERROR_LINE), "clear error"),
    (refusal("references"), Observation(2, stderr=ERROR_LINE), "misleading"),
    (run_case(), Observation(0), "rightly accepted"),
    (run_case(exits=(3,)), Observation(3), "rightly accepted"),
    (run_case(), Observation(3), "wrongly refused"),  # scores missing where none should be
    (run_case(), Observation(2, stderr=ERROR_LINE), "wrongly refused"),
    (Case("rundir", "check", ("check", "run"), "accept", exits=(0, 1)), Observation(1),
     "rightly accepted"),
    (Case("rundir", "check", ("check", "run"), "error", ("results.json",)), Observation(1),
     "silent wrong"),
    (run_case("either", says=("name",)), Observation(2, stderr="error: bleu: name ''\n"),
     "clear error"),
    (run_case("either", says=("name",)), Observation(0, problem="evaluators ['x']"),
     "silent wrong"),
])
def test_each_rule_gives_its_outcome(case: Any, obs: Any, outcome: str) -> None:
    assert classify(case, obs)[0] == outcome


def test_a_leak_is_named_in_the_detail() -> None:
    _, detail = classify(run_case(exits=(3,)), Observation(3, leaks=["stderr", "out/x.json"]))
    assert detail == "data leak: the API key in stderr, out/x.json"


def test_the_error_line_is_found_when_wrapped_and_in_click_panels() -> None:
    wrapped = ("No data given: using the built-in corpus\n"
               "error: cache file /tmp/probe/cache/scores.sqlite: a disk I/O error (choose \n"
               "another with --cache-dir, or --no-cache)\n")
    message = probe.error_message(wrapped)
    assert message.startswith("error: cache file")
    assert message.endswith("or --no-cache)")
    # rich breaks a long path anywhere: white space is ignored when matching
    assert probe.names_fault(("/tmp/probe/cache/scores.sqlite",),
                                message.replace("scores.sq", "scores.sq\n"))
    panel = ("Usage: evalstress run [OPTIONS] [data]\n"
             "╭─ Error ─────────────────────╮\n"
             "│ Invalid value for '--limit': Input should be  │\n"
             "│ greater than or equal to 1                    │\n"
             "╰──────────────────────────────╯\n")
    assert probe.error_message(panel) == ("error: Invalid value for '--limit': Input should "
                                             "be greater than or equal to 1")


def test_protected_files_gone_or_changed_are_listed(tmp_path: Path) -> None:
    kept, changed, gone = (tmp_path / n for n in ("kept.txt", "changed.txt", "gone.txt"))
    for path in (kept, changed, gone):
        path.write_text("mine\n")
    before = {p: probe.digest(p) for p in (kept, changed, gone)}
    changed.write_text("theirs\n")
    gone.unlink()
    assert sorted(probe.lost_files(before, tmp_path)) == ["changed.txt changed",
                                                             "gone.txt gone"]


def test_work_before_a_refusal_is_seen(tmp_path: Path) -> None:
    cache = tmp_path / "cache" / "scores.sqlite"
    cache.parent.mkdir()
    conn = sqlite3.connect(cache)
    conn.execute("CREATE TABLE scores_namespaces (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("CREATE TABLE scores (ns INTEGER, key BLOB, value)")
    conn.execute("INSERT INTO scores_namespaces VALUES (1, 'bleu')")
    conn.execute("INSERT INTO scores VALUES (1, x'01', 1.0)")
    conn.commit()
    files, rows = probe.listing(tmp_path), probe.cache_rows(tmp_path)
    assert probe.work_done(tmp_path, files, rows) == []
    conn.executemany("INSERT INTO scores VALUES (1, ?, 2.0)", [(b"\x02",), (b"\x03",)])
    conn.commit()
    conn.close()
    (tmp_path / ".out.partial" / "chunks").mkdir(parents=True)
    (tmp_path / ".out.partial" / "manifest.json").write_text("{}")
    (tmp_path / "runs" / "data").mkdir(parents=True)
    (tmp_path / "runs" / "data" / "results.json").write_text("{}")
    assert probe.work_done(tmp_path, files, rows) == [
        "staging folder .out.partial", "run file runs/data/results.json",
        "2 cache rows in cache/scores.sqlite"]


def test_a_key_is_found_in_every_form_a_careless_server_echoes_it(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    key = "TESTSECRET123-gw-0000"
    leaks = probe.leaks
    escaped = json.dumps({"reason": "key " + "".join(f"\\u{ord(c):04x}" if not c.isalnum()
                                                     else c for c in key)})
    texts = {"raw": f"Incorrect API key provided: {key}",
             "json": escaped,
             "wrapped": f"Incorrect API key provided: {key[:10]}\n    {key[10:]}",
             "url": "see https://x.example/?k=" + key.replace("-", "%2D"),
             "clean": "Incorrect API key provided: sk-...0000 (redacted)"}
    # '-' percent-encoded as %2D still leaves the key's first half whole
    assert leaks(key, texts) == ["raw", "json", "wrapped", "url"]
    table = tmp_path / "scores.parquet"
    pq.write_table(pa.table({"n": [1, 2], "reason": ["fine", f"401 {key}"]}), table,
                   compression="zstd")
    assert probe.readable_text(table).split("\n") == ["1", "2", "fine", f"401 {key}"]
    assert leaks(key, {"scores": probe.readable_text(table)}) == ["scores"]


def test_a_key_is_found_encoded_at_every_alignment() -> None:
    import base64

    key = "TESTSECRET123-gw-0000"
    raw = key.encode()
    texts = {f"b64 after {n} bytes": base64.b64encode(b"x" * n + raw + b"!").decode()
             for n in range(5)}
    texts |= {"bearer": "auth " + base64.b64encode(b"Bearer " + raw).decode(),
              "url-safe": base64.urlsafe_b64encode(b"u:" + raw).decode().rstrip("="),
              "hex": raw.hex(), "HEX": raw.hex().upper(),
              "percent": "".join(f"%{b:02X}" for b in raw),
              "mime": base64.encodebytes(b"Basic " + raw * 4).decode(),
              "clean": base64.b64encode(b"Bearer sk-...0000 (redacted)").decode()}
    assert probe.leaks(key, texts) == [name for name in texts if name != "clean"]


def test_a_key_in_a_compressed_cache_cell_is_found(tmp_path: Path) -> None:
    import zlib

    cache = tmp_path / "llm.sqlite"
    conn = sqlite3.connect(cache)
    conn.execute("CREATE TABLE llm (key TEXT, value BLOB)")
    conn.execute("INSERT INTO llm VALUES ('a', ?)",
                 (zlib.compress(b'{"content": "Rating: 4. token TESTSECRET123-gw-0000"}'),))
    conn.commit()
    conn.close()
    assert probe.leaks("TESTSECRET123-gw-0000", {"cache": probe.readable_text(cache)}) == [
        "cache"]


@pytest.mark.parametrize("case, obs, outcome", [
    (run_case(raw=("\x1b",)), Observation(0, raw=["'\\x1b'"]), "silent wrong"),
    (refusal("card.json", not_says=("JSONL",)),
     Observation(2, stderr="error: card.json, line 9: never closed; in JSONL each record\n"),
     "misleading"),
    (refusal("card.json", not_says=("JSONL",)),
     Observation(2, stderr="error: card.json, line 9: the file ends inside an object\n"),
     "clear error"),
    (run_case("either", says=("boom",), exits=(4,), traceback_ok=True),
     Observation(4, stderr="Traceback (most recent call last):\nRuntimeError: boom\n"),
     "rightly accepted"),
    (run_case("either", says=("boom",), exits=(4,), traceback_ok=True),
     Observation(1, stderr="Traceback (most recent call last):\nRuntimeError: boom\n"),
     "traceback"),
    (refusal("key"), Observation(2, stderr="error: judge: the key is refused (401)\n",
                                 work=["412 requests to the judge server (at most 20 needed)"]),
     "late failure"),
])
def test_round_four_rules(case: Any, obs: Any, outcome: str) -> None:
    assert classify(case, obs)[0] == outcome


def test_markup_from_the_data_is_found_in_rendered_markdown() -> None:
    import probe_cases_secure as secure

    hostile = ("<details><summary>Example a</summary>\n\n> <script>pwned()</script>\n\n"
               "</details>\n\n| a | <img src=x onerror=pwned()> |\n|---|---|\n\n"
               "</summary></details>\n\n[x](javascript:pwned())\n")
    problem = secure.html_problem(secure.rendered(hostile), "card.md")
    assert problem is not None
    for sign in ("<script>", "onerror", "extra </details>", "javascript:pwned()"):
        assert sign in problem
    safe = ("<details><summary>Example a</summary>\n\n> &lt;script&gt;pwned()&lt;/script&gt;"
            "\n\n</details>\n\n![fig](figures/a.svg)\n\n| `<img src=x onerror=pwned()>` |"
            "\n|---|\n")
    assert secure.html_problem(secure.rendered(safe), "card.md") is None
    assert secure.html_problem('<span title="<img onerror=pwned()>">x</span>', "h") is None


FAKE_CLI = """
import os, sys
action, *rest = sys.argv[1:]
if action == "delete":
    os.remove(rest[0]); print("error: " + rest[0], file=sys.stderr); sys.exit(2)
if action == "stage":
    os.makedirs(".out.partial"); print("error: --out is bad", file=sys.stderr); sys.exit(2)
if action == "crash":
    print("Traceback (most recent call last):", file=sys.stderr); sys.exit(1)
if action == "refuse":
    print("error: --limit must be >= 1", file=sys.stderr); sys.exit(2)
if action == "leak":
    open("out.log", "w").write("key " + os.environ["OPENAI_API_KEY"]); sys.exit(3)
if action == "echo-b64":
    import base64
    key = os.environ["OPENAI_API_KEY"].encode()
    open("out.log", "w").write("token " + base64.b64encode(b"Bearer " + key).decode())
    sys.exit(3)
if action == "escape":
    print("skipped row 'a\x1b]0;x\x07\x1b[2J'"); sys.exit(0)
if action == "tmp":
    open(".page.tmp", "w").write("half"); print("error: page: a folder", file=sys.stderr)
    sys.exit(2)
if action == "key-set":
    sys.exit(3 if "OPENAI_API_KEY" in os.environ else 0)
sys.exit(0)
"""


@pytest.fixture
def stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The probe's runner with `python fake_cli.py ARGV` in place of `python -m evalstress.cli`."""
    script = tmp_path / "fake_cli.py"
    script.write_text(FAKE_CLI)

    def start(argv: Any, root: Path, cwd: Path, url: str, env: dict[str, str],
              preexec: Any = None) -> subprocess.Popen[str]:
        return subprocess.Popen([sys.executable, str(script), *argv], cwd=cwd, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    monkeypatch.setattr(probe, "start", start)
    work = tmp_path / "work"
    work.mkdir()
    return work


@pytest.mark.parametrize("case, outcome", [
    (Case("out", "deletes a protected file", ("delete", "out/precious.txt"), "error",
          ("precious.txt",), files={"out/precious.txt": "mine\n"}), "data loss"),
    (Case("out", "deletes the sentinel of the current folder", ("delete", "KEEP-here.txt"),
          "error", ("KEEP",)), "data loss"),
    (Case("out", "stages, then refuses", ("stage",), "error", ("--out",)), "late failure"),
    (Case("misc", "crashes", ("crash",), "error", ("--limit",)), "traceback"),
    (Case("spec", "refuses", ("refuse",), "error", ("--limit",)), "clear error"),
    (Case("spec", "refuses, naming something else", ("refuse",), "error", ("--seeds",)),
     "misleading"),
    (Case("spec", "runs what it should refuse", ("ok",), "error", ("--limit",)),
     "silent wrong"),
    (Case("misc", "writes the key to a file", ("leak",), "accept", exits=(3,),
          env={"OPENAI_API_KEY": "TESTSECRET123-gw-0000"}, secret="TESTSECRET123-gw-0000"),
     "silent wrong"),
    (Case("misc", "runs", ("ok",), "accept", products=("never.txt",)), "silent wrong"),
    (Case("leak-encoded", "writes b64('Bearer KEY') to a file", ("echo-b64",), "accept",
          exits=(3,), env={"OPENAI_API_KEY": "TESTSECRET123-gw-0000"},
          secret="TESTSECRET123-gw-0000"), "silent wrong"),
    (Case("terminal", "prints an escape sequence of the data", ("escape",), "accept",
          raw=("\x1b",)), "silent wrong"),
    (Case("small", "refuses, leaving its temporary file", ("tmp",), "error", ("page",)),
     "late failure"),
    (Case("upfront", "runs without the key it was not given", ("key-set",), "accept",
          unset=("OPENAI_API_KEY",)), "rightly accepted"),
    (Case("misc", "runs", ("ok",), "accept"), "rightly accepted"),
])
def test_the_runner_observes_a_command_and_classifies_it(stand_in: Path, case: Any,
                                                         outcome: str) -> None:
    def no_base_run(kind: str) -> Path:
        raise AssertionError("no case here copies a finished run")

    result = probe.probe(case, stand_in, "http://127.0.0.1:9/v1", no_base_run, False)
    assert result.outcome == outcome, result
    assert list(stand_in.iterdir()) == []  # the case folder is cleaned up


def test_the_case_list_covers_the_audit() -> None:
    cases = probe.all_cases()
    names = [c.name for c in cases]
    assert len(cases) >= 150
    assert len(set(names)) == len(names), "two cases share a name"
    counts: dict[str, int] = {}
    for c in cases:
        counts[c.category] = counts.get(c.category, 0) + 1
        assert c.expect in ("error", "accept", "either"), c.name
        assert c.expect == "accept" or c.says, f"{c.name}: a refusal must say what it names"
    assert {"data", "spec", "config", "suite", "variants", "template", "rundir", "cache", "out",
            "disk", "misc", "leak-encoded", "markdown", "serve", "terminal", "symlink",
            "ownership", "upfront", "json-depth", "small"} <= set(counts)
    audit = ["foreign files (precious.txt)", "--out equal to the data's folder, --cache-dir",
             "--out .", "--out ..", "export RUN --variants RUN/scores.parquet",
             "API key echoed by the server's 401 (raw)", "a perturbation name the suite lacks",
             "without analyses and evaluators", "aspect= (empty)", "scores.parquet deleted",
             "variants.parquet deleted", "ter:case_sensitive=maybe", "bleu:max_ngram_order=-3",
             "seed: 1.7", "5 MB imported text", "duplicate header", "id an object", "id a list",
             "id a boolean", "judge:timeout=-1", "wrong-schema variants.parquet",
             "seeds: 1000000000", "bleu:name=[/]x", "nested 100,000 deep", "bleu:tokenize=nope",
             "cache_dir: 5", "data: 7", "map: {hypothesis: [1, 2]}", "seeds: 1.5",
             "evaluators: bleu", "two runs writing the same --out", "over 131,072 characters",
             "non-UTF-8 template", "n=abc", "a folder given as data", "-m hypothesis=",
             # issue 43 (round four)
             "401 body as b64bearer", "401 body as hex", "a trailing \\r\\n",
             "200 answer", ".out.lock is a link", ".card.lock is a link",
             ".out.partial is a link", ".out.old is a link", "forged empty .evalstress-run",
             "run --out over a card folder", "over a docs/atlas.md",
             "--page onto the card.json it reads", "card-compare --md onto an input",
             "CORS preflight", "/v1/models", "20 MB request body", "text/plain",
             "gpt-4o-mini with no key", "references are all empty", "50 MB row",
             "card-compare of a card.json nested", "report of a results.json nested",
             "escape sequences", "--page onto a folder", "--html onto a folder",
             "truncated card.json", "--debug", "--force --no-cache"]
    for words in audit:
        assert any(words in name for name in names), words
    assert all(c.needs == "serve" for c in cases if c.category == "serve")
    assert all(c.memory_guard for c in cases if c.category == "json-depth")
    guarded = [c for c in cases if "1000000000" in c.name]
    assert guarded and all(c.memory_guard for c in guarded)
