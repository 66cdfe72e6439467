"""`evalstress attack` end to end on SummEval: a fake server scripted to succeed, and the local
SmolLM2 llama.cpp server as generator and gold."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalstress.cli import app
from evalstress.core.data import load_examples
from evalstress.llm.fake_server import FakeServer, Reply
from evalstress.report.schema import schema_problems

from .conftest import judged_text

REWORDED = "Entirely reworded account"
REFUTED = "None of this is true."
BUDGET = 5  # victim queries per attack: the synonym rule spends it all


def summeval(shared_data: Path, n: int) -> list[Any]:
    return load_examples(shared_data / "summeval.jsonl",
                         ["hypothesis=highlight", "references=references"],
                         task="summarization", limit=n)


def _fake(examples: list[Any]) -> FakeServer:
    """Even samples reword (gold 90, lexical overlap ~0); odd samples copy a reference and deny
    it (gold 5, overlap high); the originals get 60."""
    reference = {e.source.strip(): e.references[0] for e in examples}

    def respond(body: dict[str, Any]) -> Reply:
        user = body["messages"][-1]["content"]
        if body["messages"][0]["content"].startswith("You write texts"):
            source = next((s for s in reference if s in user), "")
            seed = int(body["seed"])
            if seed % 2 == 0:
                return Reply(f"<text>{REWORDED} number {seed}.</text>")
            return Reply(f"<text>{reference[source]} {REFUTED}</text>")
        text = judged_text(body)
        return Reply("90" if REWORDED in text else "5" if text.endswith(REFUTED) else "60")

    return FakeServer(responder=respond)


def _run(args: list[str]) -> Any:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return result


@pytest.mark.slow
def test_fake_server_scripted_to_succeed(shared_data: Path, tmp_path: Path) -> None:
    examples = summeval(shared_data, 3)
    with _fake(examples) as server:
        url = server.base_url
        out = tmp_path / "run"
        args = ["attack", str(shared_data / "summeval.jsonl"), "-m", "hypothesis=highlight",
                "-m", "references=references", "--task", "summarization", "--limit", "3",
                "-v", "rouge@rougeL", "-v", "bleu", "-g", f"judge:model=gold,base_url={url}",
                "--generator", f"model=gen,base_url={url}", "--method", "adveval",
                "--method", "textfooler", "--method", "rules", "--budget", "30",
                "--gold-samples", "2", "--out", str(out), "--quiet"]
        _run(args)
        calls = server.calls
        _run(args)  # the same command again: everything from the caches
        assert server.calls == calls
    records = [json.loads(line) for line in (out / "attacks.jsonl").read_text().splitlines()]
    # per example and victim: adveval and textfooler both ways, 3 invariant + 5 deterioration rules
    assert len(records) == 3 * 2 * (2 + 2 + 8)
    assert all(r["queries"] <= 30 for r in records)
    whole = json.loads((out / "results.json").read_text())
    assert "schema_version" in whole and schema_problems(whole) == []  # the run's own layout
    results = whole["analyses"]["adversarial"]
    rows = {(r["victim"], r["direction"], r["method"]): r for r in results["asr"]}
    for victim in ("rouge@rougeL", "bleu"):
        for direction in ("good", "bad"):
            row = rows[(victim, direction, "adveval")]
            assert (row["attempts"], row["successes"], row["asr"]) == (3, 3, 1.0)
        assert rows[(victim, "good", "textfooler")]["attempts"] == 3
        assert rows[(victim, "bad", "rule:jumble")]["attempts"] == 3
        assert rows[(victim, "bad", "rule:negate-previous")]["not_run"] == 3  # no dialogue
    assert results["params"]["budget"] == 30 and results["params"]["gold_samples"] == 2
    wins = [s for s in results["successes"] if s["method"] == "adveval"]
    assert len(wins) == 12
    good = next(s for s in wins if s["direction"] == "good")
    assert REWORDED in good["text"] and good["gold"] == 90.0 and good["victim_score"] < 50
    bad = next(s for s in wins if s["direction"] == "bad")
    assert bad["text"].endswith(REFUTED) and bad["gold"] == 5.0 and bad["victim_score"] >= 45
    assert (out / "report.html").exists()


@pytest.mark.slow
@pytest.mark.long_run
def test_smollm2_as_generator_and_gold(shared_data: Path, tmp_path: Path,
                                       llama_url: str) -> None:
    """Every method runs with the 135M model writing and rating, on the smallest settings
    that still reach each stop: each gold rating and each candidate costs the model a
    generation, and averaging several gold samples is the fake-server test's to check."""
    out = tmp_path / "run"
    # one request at a time with long timeouts: the local server answers them one by one
    slow = "max_concurrency=1,timeout=600,deadline=3600"
    # the 135M model wrote no parsable rating for these highlights without logprobs (0 of 16
    # answers); the logprob-weighted rating at its rating token, without the long source, is
    # what it can give
    judge = (f"judge:model=smollm2,base_url={llama_url},max_reasks=1,form=rate-explain,"
             f"max_tokens=48,with_source=false,{slow}")
    result = CliRunner().invoke(app, [
        "attack", str(shared_data / "summeval.jsonl"), "-m", "hypothesis=highlight",
        "-m", "references=references", "--task", "summarization", "--limit", "2",
        "-v", "rouge@rougeL", "-v", "bleu", "-g", judge,
        "--generator", f"model=smollm2,base_url={llama_url},max_tokens=96,{slow}",
        "--method", "adveval", "--method", "textfooler", "--method", "rules",
        "--direction", "good", "--budget", str(BUDGET), "--candidates", "2",
        "--max-iterations", "1", "--gold-samples", "1", "--out", str(out), "--quiet"])
    records = [json.loads(line) for line in (out / "attacks.jsonl").read_text().splitlines()]
    assert len(records) == 2 * 2 * (2 + 3)
    # the 135M gold leaves about half its ratings unparsable (35 of 62 in one run): above half,
    # the run says so and exits 3 after writing everything, as --max-missing promises
    asked = sum(r["gold_queries"] for r in records)
    lost = sum(n for r in records for k, n in r["missing"].items() if k.startswith("gold: "))
    assert result.exit_code == (3 if lost > asked / 2 else 0), result.output
    if result.exit_code == 3:
        assert f"gold: {lost} of {asked} scores missing" in " ".join(result.output.split())
    for r in records:
        assert r["queries"] <= BUDGET
        # the 135M judge often writes no number: then the attack cannot start, and says why
        if r["stop"] == "original-unscored":
            assert r["rejections"].get("gold-missing", 0) >= 1
        elif r["stop"] != "not-applicable":
            assert r["gold_original"] is not None and 0 <= r["gold_original"] <= 100
    # the attack needs the judge's rating of the original: at least one must be real
    assert any(r.get("gold_original") is not None for r in records)
    results = json.loads((out / "results.json").read_text())["analyses"]["adversarial"]
    assert {(r["victim"], r["method"]) for r in results["asr"]} >= {
        ("rouge@rougeL", "adveval"), ("bleu", "textfooler"), ("bleu", "rule:synonym")}


@pytest.mark.slow
def test_smollm2_candidates_reach_the_victim(shared_data: Path, tmp_path: Path,
                                             llama_url: str) -> None:
    """SmolLM2 writes the candidates; a scripted gold rates them 75 (the original 50, so the
    original is no success already) so they flow on to the victim."""
    [first] = summeval(shared_data, 1)

    def rate(body: dict[str, Any]) -> Reply:
        return Reply("50" if judged_text(body) == first.hypothesis else "75")

    with FakeServer(responder=rate) as gold:
        out = tmp_path / "run"
        _run(["attack", str(shared_data / "summeval.jsonl"), "-m", "hypothesis=highlight",
              "-m", "references=references", "--task", "summarization", "--limit", "1",
              "-v", "rouge@rougeL", "-g", f"judge:model=gold,base_url={gold.base_url}",
              "--generator", f"model=smollm2,base_url={llama_url},max_tokens=96,"
              "max_concurrency=1,timeout=600,deadline=3600", "--direction", "good",
              "--candidates", "4", "--max-iterations", "1",
              "--gold-samples", "1", "--out", str(out), "--quiet"])
    [record] = [json.loads(line) for line in (out / "attacks.jsonl").read_text().splitlines()]
    generated = record["extra"]["answers"]["generated"]
    usable = len(record["trajectory"]) - 1
    assert generated == 4 and record["queries"] == 1 + usable
    assert usable + sum(record["rejections"].values()) == 4
    for candidate in record["trajectory"][1:]:
        assert candidate["gold"] == 75.0 and candidate["text"].strip()
