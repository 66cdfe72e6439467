"""`evalstress criteria-levels` on the fake server: one judge, several criteria levels."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalstress.cli import app
from evalstress.cli.criteria_levels import level_specs
from evalstress.core.data import builtin_corpus
from evalstress.criteria import load_criteria
from evalstress.engine import pipeline
from evalstress.engine.variantfile import read_records
from evalstress.llm.fake_server import FakeServer, Reply
from evalstress.report.schema import schema_problems

CRITERIA = load_criteria()
TERM = {CRITERIA[a].text("term") for a in ("fluency", "coherence")}


@pytest.fixture(autouse=True)
def _one_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """criteria-levels has no --workers: it takes every core, as on a one-core machine here.
    Two worker processes importing spaCy cost more than perturbing six texts, and a pool's
    table equals a serial run's (tests/engine/test_pipeline.py)."""
    monkeypatch.setattr(pipeline, "default_workers", lambda: 1)


def _examples(tmp_path: Path) -> tuple[Path, set[str]]:
    chosen = [e for e in builtin_corpus() if e.task == "summarization"][:6]
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(e.to_dict()) + "\n" for e in chosen), encoding="utf-8")
    return path, {e.hypothesis for e in chosen}


def scripted_judge(originals: set[str]):  # type: ignore[no-untyped-def]
    """Originals get 5 at every level that states a criterion; perturbed texts 2 with the
    detailed criteria, 4 with the term; without a criterion everything gets 3."""

    def answer(request: dict[str, Any]) -> Reply:
        prompt = request["messages"][-1]["content"]
        if "Criterion: (none given" in prompt:
            return Reply("Rating: 3")
        text = re.search(r"Text to evaluate:\n(.*?)\n\nCriterion", prompt, re.DOTALL)
        assert text is not None
        if text[1] in originals:
            return Reply("Rating: 5")
        return Reply("Rating: 4" if any(t in prompt for t in TERM) else "Rating: 2")

    return answer


def test_the_comparison_table_and_chart_from_three_levels(tmp_path: Path) -> None:
    data, originals = _examples(tmp_path)
    out = tmp_path / "run"
    with FakeServer(responder=scripted_judge(originals)) as server:
        judge = (f"judge:model=fake,base_url={server.base_url},aspect=fluency coherence,"
                 "form=score-only,logprobs=False")
        args = ["criteria-levels", str(data), "-j", judge, "--levels", "detailed,term,empty",
                "--seeds", "1", "--out", str(out), "--cache-dir", str(tmp_path / "cache")]
        outcome = CliRunner().invoke(app, args)
        assert outcome.exit_code == 0, outcome.output
        calls = server.calls
        again = CliRunner().invoke(app, [*args, "--quiet"])
        assert again.exit_code == 0, again.output
        assert server.calls == calls  # every judgment came from the caches
    whole = json.loads((out / "results.json").read_text())
    assert "schema_version" in whole and schema_problems(whole) == []
    result = whole["analyses"]["description-types"]
    assert result["levels"] == ["detailed", "term", "empty"]  # most detailed first
    rows = {r["level"]: r for r in result["rows"]}
    # every perturbed text drops 5 -> 2 (detailed) or 5 -> 4 (term): each should-move item
    # passes (6 examples, all differences positive: exact one-sided p = 1/64) and each
    # should-stay item is moved (confusion); without a criterion nothing moves at all
    assert rows["detailed"]["directional_pass_rate"] == 1.0
    assert rows["detailed"]["directional"]["median"] == pytest.approx(3.0)
    assert rows["term"]["directional"]["median"] == pytest.approx(1.0)
    assert rows["detailed"]["confusion_rate"] == rows["term"]["confusion_rate"] == 1.0
    assert rows["empty"]["directional_pass_rate"] == 0.0
    assert rows["empty"]["confusion_rate"] == 0.0
    assert rows["empty"]["directional"]["maximum"] == 0.0
    # sentence-exchange should move coherence, spelling-mistake fluency (Table 21): both kinds
    assert rows["detailed"]["directional"]["n"] > 0 and rows["detailed"]["invariance"]["n"] > 0
    corr = result["correlation"]
    assert corr[0][1] == pytest.approx(1.0)  # 5/2 and 5/4 order the texts the same way
    assert corr[0][2] is None and corr[1][2] is None  # a constant level: undefined
    svg = (out / "description-types.svg").read_text()
    assert svg.startswith("<svg") and "S_T (should move)" in svg and "term-only" not in svg
    html = (out / "description-types.html").read_text()
    assert "<script" not in html and "http" not in html.split("</svg>", 1)[1]
    assert "| detailed |" in (out / "description-types.md").read_text()
    assert "S_T pass" in outcome.output and "Pearson correlation between levels" in outcome.output


def test_level_specs_clone_the_judge_and_check_the_levels() -> None:
    assert level_specs("judge:model=m", ["term", "empty"]) == [
        "judge:model=m,level=term", "judge:model=m,level=empty"]
    with pytest.raises(ValueError, match="Did you mean 'detailed'"):
        level_specs("judge:model=m", ["detaild", "term"])
    with pytest.raises(ValueError, match="must not set level"):
        level_specs("judge:model=m,level=term", ["term", "empty"])
    with pytest.raises(ValueError, match="LLM judge"):
        level_specs("rouge", ["term", "empty"])
    with pytest.raises(ValueError, match="two or more"):
        level_specs("judge:model=m", ["term", "term"])


def test_protocol_paper_judges_the_rule_attacks_as_paper_000_applies_them(tmp_path: Path) -> None:
    """Paper 000's code applies each of its four rule attacks once per text (severity `paper`):
    the judged variants are those, seed 0 only, and the last-sentence deletion is among them."""
    data, originals = _examples(tmp_path)
    out = tmp_path / "run"
    with FakeServer(responder=scripted_judge(originals)) as server:
        judge = (f"judge:model=fake,base_url={server.base_url},aspect=fluency coherence,"
                 "form=score-only,logprobs=False")
        outcome = CliRunner().invoke(app, [
            "criteria-levels", str(data), "-j", judge, "--levels", "detailed,term",
            "--protocol", "paper", "--out", str(out), "--quiet"])
        assert outcome.exit_code == 0, outcome.output
    results = json.loads((out / "results.json").read_text())
    assert results["config"]["protocol"] == "paper" and results["suite"]["seeds"] == [0]
    variants = list(read_records(out / "variants.parquet"))
    assert {v["severity"] for v in variants} == {"paper"} and {v["seed"] for v in variants} == {0}
    examples = {json.loads(line)["id"]: json.loads(line)["hypothesis"]
                for line in data.read_text().splitlines()}
    deleted = [v for v in variants if v["perturbation"] == "sentence-deletion"]
    assert deleted
    for v in deleted:
        original = examples[v["example_id"]]
        last = original.rstrip().rsplit(". ", 1)[-1]
        assert v["text"].strip() == original[: original.rindex(last)].strip()
