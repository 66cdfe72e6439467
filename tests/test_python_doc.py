"""The "pieces underneath" snippet of docs/python.md runs as printed: it loads the shipped
sample corpus, scores the blind-spot suite with ROUGE and BLEU, prints a verdict per evaluator
aspect and perturbation, and writes a run directory through the one orchestration (StressJob /
run_job)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[1] / "docs" / "python.md"
INTRO = "The pieces underneath, for a pipeline of your own:"

# what the printed lines must cover: the blindspot suite's perturbations
# (src/evalstress/suites/blindspot.yaml) and the scores ROUGE and BLEU report
PERTURBATIONS = {"truncation", "token-drop", "repeated-token", "local-swap", "article-removal",
                 "noised-punctuation", "sentence-switching", "repetition"}
ASPECTS = {"rouge/rouge1", "rouge/rouge2", "rouge/rougeL", "bleu/bleu"}


def snippet() -> str:
    """The ```python block right after the page's "pieces underneath" sentence."""
    text = PAGE.read_text(encoding="utf-8")
    found = re.search(re.escape(INTRO) + r"\s*```python\n(.*?)```", text, re.DOTALL)
    assert found, f"docs/python.md has no python block after {INTRO!r}"
    return found.group(1)


def test_the_pieces_underneath_snippet_runs_and_reports_every_evaluator(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("EVALSTRESS_CACHE_DIR", str(cache))
    monkeypatch.chdir(tmp_path)
    exec(compile(snippet(), str(PAGE), "exec"), {"__name__": "python_page_snippet"})

    lines = capsys.readouterr().out.splitlines()
    verdicts = dict(line.rsplit(": ", 1) for line in lines[:-1])
    assert set(verdicts) == {f"{a} {p}" for a in ASPECTS for p in PERTURBATIONS}
    assert set(verdicts.values()) <= {"pass", "fail", "inconclusive"}
    # a repeated token adds words no reference has: ROUGE-1's precision, so its F1, drops
    assert verdicts["rouge/rouge1 repeated-token"] == "pass"

    report = Path(lines[-1])
    assert report == Path("runs/mine/report.html")
    assert (tmp_path / report).is_file()
    results = json.loads((tmp_path / "runs/mine/results.json").read_text(encoding="utf-8"))
    assert results["counts"]["examples"] == 6
    rows = results["analyses"]["blindspot"]["rows"]
    assert {r["evaluator"] for r in rows} == {"rouge"}
    assert {r["perturbation"] for r in rows} == PERTURBATIONS
    assert (cache / "scores.sqlite").is_file()  # the snippet's score cache is the user's
