"""Integration: the judge against a real llama.cpp server running SmolLM2-135M-Instruct."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from evalstress.cli import app
from evalstress.evaluators.base import ScoreRequest, create_evaluator

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def test_judge_scores_or_honestly_misses(llama_url: str, tmp_path: Path) -> None:
    # SmolLM2-135M rarely writes a parsable rating (0 of 6 answers for two short hand-written
    # sentences, in score-only and rate-explain alike); with logprobs at the rating token it
    # rates the sample corpus's first summaries, so those are what it is asked about
    judge = create_evaluator(f"judge:model=smollm2,base_url={llama_url},aspect=fluency,"
                             f"form=rate-explain,max_tokens=48,with_source=false,"
                             f"max_concurrency=2,cache={tmp_path}/llm.sqlite")
    corpus = [json.loads(line) for line in
              (ROOT / "src/evalstress/corpus/sample.jsonl").read_text("utf-8").splitlines()]
    requests = [ScoreRequest(row["hypothesis"], task=row["task"]) for row in corpus[:2]]
    requests.append(ScoreRequest("budget the Monday on approved committee new The."))
    rows = judge.score(requests)
    for row in rows:
        score = row["fluency"]
        if score.ok:
            assert score.value is not None and 1 <= score.value <= 5
            assert score.extra["n_valid"] >= 1
        else:
            assert score.reason and score.extra["n_samples"] == 1 + score.extra["reasks"]
    # a 135M model often writes no usable rating, but a run where every score is missing
    # would show nothing about the judge: at least one must be a real score
    print("llama judge: ok", sum(row["fluency"].ok for row in rows), "of", len(rows))
    assert any(row["fluency"].ok for row in rows)
    used = judge.usage  # type: ignore[attr-defined]
    assert used.calls >= 2 and used.errors == 0 and used.completion_tokens > 0


@pytest.mark.slow
@pytest.mark.long_run
def test_cli_blindspot_run_with_the_judge(llama_url: str, tmp_path: Path) -> None:
    spec = (f"judge:model=smollm2,base_url={llama_url},aspect=fluency,form=rate-explain,"
            "max_tokens=48,with_source=false")
    out = tmp_path / "run"
    # one summary and its five truncations: each text costs the 135M model a rating (and up
    # to two re-asks), and the judge scores in the main process whatever --workers says
    outcome = CliRunner().invoke(app, [
        "run", str(ROOT / "src/evalstress/corpus/sample.jsonl"), "--limit", "1", "-p",
        "truncation", "--seeds", "1", "--workers", "1", "-e", spec, "--cache-dir",
        str(tmp_path), "--out", str(out), "--quiet"], env={**os.environ})
    assert outcome.exit_code == 0, outcome.output
    table = pd.read_parquet(out / "scores.parquet")
    assert len(table) == 1 + 5 and set(table["status"]) <= {"ok", "missing"}
    ok = table[table["status"] == "ok"]
    print("llama blindspot run: ok", len(ok), "of", len(table))
    assert len(ok) >= 1 and ok["score"].between(1, 5).all()
    missing = table[table["status"] == "missing"]
    assert (missing["reason"].str.len() > 0).all() and missing["score"].isna().all()
