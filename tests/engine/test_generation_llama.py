"""criteria-full end to end against llama.cpp serving SmolLM2-135M, as generator and as judge.

A 135M model fails many validations: the test checks that the run completes, that every planned
LLM unit ends as an accepted variant or a skip with its reason, that the acceptance rates in
results.json are what the variants show, and that the confusion analysis runs on what was
accepted. How many attacks the model gets right is measured, not asserted."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from evalstress.cli import app
from evalstress.engine.variantfile import read_records
from evalstress.perturb.base import registry

# one two-sentence example: every LLM attack is planned once and every rule attack applies
# (sentence exchange and deletion need two). Each LLM unit costs the 135M model a generation
# and each variant a judged rating, so a second example would double the minutes; the prompts
# of other tasks are checked without a model in tests/perturb/test_llm.py
DATA = [
    {"id": "news", "task": "summarization", "source": "", "references": [],
     "hypothesis": "The city council of Oakford approved a new library on Monday. It will open "
                   "in 2027 and hold 80,000 books."},
]


@pytest.mark.slow
@pytest.mark.long_run
def test_criteria_full_runs_end_to_end_on_smollm2(llama_url: str, tmp_path: Path) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in DATA), "utf-8")
    out = tmp_path / "run"
    generator = (f"model=smollm2,base_url={llama_url},temperature=0.7,max_tokens=160,"
                 "max_concurrency=1,timeout=300,deadline=1800")
    # the form in which the 135M model gives ratings (logprob-weighted, after a short reason);
    # one ask per text, as for the generator: re-asking a real model is tests/evaluators/
    # test_judge_llama.py's subject, and here it doubled the judge's calls
    judge = (f"judge:model=smollm2,base_url={llama_url},aspect=fluency,form=rate-explain,"
             "max_tokens=48,with_source=false,max_reasks=0,max_concurrency=1,timeout=300,"
             "deadline=1800")
    result = CliRunner().invoke(app, [
        "run", str(data), "--suite", "criteria-full", "--generator", generator, "--shots", "2",
        "--max-reasks", "0", "-e", judge, "--out", str(out), "--cache-dir", str(tmp_path / "c")])
    assert result.exit_code == 0, result.output
    assert "LLM-written perturbations" in result.output
    results = json.loads((out / "results.json").read_text())
    scores = pd.read_parquet(out / "scores.parquet")
    assert (scores["status"] == "ok").any(), "every judge score is missing"
    block = results["generation"]
    llm_names = {n for n, c in registry().items() if c.method == "llm" and "000" in c.source_papers}
    assert set(block["perturbations"]) == llm_names and len(llm_names) == 14
    variants = list(read_records(out / "variants.parquet"))
    skips = [json.loads(line) for line in (out / "skips.jsonl").read_text().splitlines()]
    made = Counter(v["perturbation"] for v in variants if v.get("method") == "llm")
    for name, row in block["perturbations"].items():
        assert row["planned"] == len(DATA)
        assert row["accepted"] == made[name]  # the reported rate is what the run produced
        assert row["accepted"] + row["skipped"] == row["planned"]
        assert row["acceptance_rate"] == row["accepted"] / len(DATA)
        assert sum(row["rejections"].values()) == row["asks"] - row["accepted"]
    llm_skips = [s for s in skips if s["perturbation"] in llm_names]
    assert all(s["reason"] for s in llm_skips)
    assert block["usage"]["calls"] + block["usage"]["cache_hits"] >= sum(
        r["asks"] for r in block["perturbations"].values())
    confusion = results["analyses"]["criteria-confusion"]
    tested = {item["perturbation"] for item in confusion["items"]}
    produced = {v["perturbation"] for v in variants}
    assert tested <= produced  # only what was accepted (and the rule attacks) is analysed
    assert {"sentence-exchange", "word-exchange", "spelling-mistake"} & tested
