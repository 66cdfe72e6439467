"""The notebook face: evalstress.stress() end to end, its frame and HTML views, early errors."""

from __future__ import annotations

import html
import json
import re
import sys
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import evalstress
from evalstress.cli import app
from evalstress.core.data import builtin_corpus
from evalstress.core.extras import MissingExtra
from evalstress.evaluators.base import ScoreRequest


def words(request: ScoreRequest) -> float:
    return float(len(request.text.split()))


def test_stress_end_to_end_on_the_builtin_corpus(tmp_path: Path) -> None:
    result = evalstress.stress(None, ["bleu", words], perturbations=["truncation"], seeds=1,
                               limit=3, cache_dir=tmp_path / "cache", progress=False)
    corpus = builtin_corpus()[:3]
    table = result.to_frame()
    assert set(table["evaluator"]) == {"bleu", "words"}
    originals = table[(table["evaluator"] == "words") & (table["perturbation"] == "original")]
    assert dict(zip(originals["example_id"], originals["score"], strict=True)) == {
        e.id: float(len(e.hypothesis.split())) for e in corpus}
    # truncation keeps a prefix: never more words than the original
    cut = table[(table["evaluator"] == "words") & (table["perturbation"] == "truncation")]
    assert len(cut) == 3 * len(result.run.plan.suite.perturbations[0].grid)
    assert (cut.groupby("example_id")["score"].max() <= originals.set_index("example_id")["score"]
            ).all()
    verdicts = result.to_frame("blindspot")
    assert {"evaluator", "aspect", "perturbation", "rank_pass", "monotonic_pass"} <= set(verdicts)
    assert set(verdicts["evaluator"]) == {"bleu", "words"}
    assert "missing=0" in repr(result) and "examples=3" in repr(result)
    variants = result.variants()  # the texts, before and after the run directory is saved
    assert len(variants) == len(cut) and set(variants["perturbation"]) == {"truncation"}
    by_id = {e.id: e.hypothesis for e in corpus}
    assert all(by_id[e].startswith(t.rstrip(" .")) and len(t) < len(by_id[e])
               for e, t in zip(variants["example_id"], variants["text"], strict=True))
    result.save(tmp_path / "run")
    pd.testing.assert_frame_equal(result.variants(), variants)


def test_the_html_view_is_the_run_report_in_a_frame(tmp_path: Path) -> None:
    result = evalstress.stress("builtin", "rouge", perturbations=["token-drop"], seeds=1, limit=2,
                               cache=False, progress=False, out=tmp_path / "run")
    shown = result._repr_html_()
    assert shown.startswith("<iframe") and 'sandbox="allow-scripts"' in shown
    document = html.unescape(re.search(r'srcdoc="([^"]*)"', shown)[1])  # type: ignore[index]
    assert document == (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    assert "<html" in document and "token-drop" in document
    saved = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))
    assert saved["config"]["command"] == "stress" and saved["counts"]["examples"] == 2


def test_data_from_a_dataframe_and_labels_from_a_mapping(tmp_path: Path) -> None:
    rows = pd.DataFrame([{"id": f"r{i}", "task": "story", "summary": text}
                         for i, text in enumerate(["The ship left the harbour at dawn. The crew "
                                                   "was tired but glad to be home.",
                                                   "Rain fell on the old town all night. By "
                                                   "morning the river had risen."])])
    result = evalstress.stress(rows, {"length": words, "R": "rouge"}, mapping={
        "hypothesis": "summary", "references": "summary"}, perturbations=["sentence-switching"],
        seeds=1, cache_dir=tmp_path, progress=False)
    assert set(result.table["evaluator"]) == {"length", "R"}
    assert set(result.table["example_id"]) == {"r0", "r1"}


def test_unknown_analysis_table_is_named(tmp_path: Path) -> None:
    result = evalstress.stress(None, "bleu", perturbations=["truncation"], seeds=1, limit=1,
                               cache=False, progress=False)
    with pytest.raises(KeyError, match="no analysis 'discernment'"):
        result.to_frame("discernment")
    with pytest.raises(KeyError, match="has no table 'nothing'"):
        result.to_frame("blindspot", "nothing")


def _without(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    """As if the modules were not installed (None in sys.modules blocks an import)."""
    for name in names:
        monkeypatch.setitem(sys.modules, name, None)


def test_a_missing_extra_is_named_before_any_work(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    _without(monkeypatch, "torch")
    # the data path does not exist: reaching it would raise a DataError instead
    with pytest.raises(MissingExtra, match=r"needs torch, which is not installed: "
                                           r"pip install 'evalstress\[models\]'"):
        evalstress.stress(tmp_path / "absent.jsonl", ["bleu", "bertscore"], progress=False)


def test_the_cli_names_the_missing_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _without(monkeypatch, "openai")
    outcome = CliRunner().invoke(app, ["run", str(tmp_path / "absent.jsonl"), "-e",
                                       "judge:model=gpt-4o-mini"])
    assert outcome.exit_code == 2
    assert "pip install 'evalstress[llm]'" in " ".join(outcome.output.split())
    assert "does not exist" not in outcome.output  # the data was never read


@pytest.mark.parametrize(("spec", "extra"), [
    ("bertscore", "models"), ("mauve", "models"), ("judge:model=m", "llm"),
    ("judge:model=local", "llm-local"), ("comet", "comet")])
def test_each_evaluator_names_its_extra(spec: str, extra: str,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from evalstress.evaluators.base import create_evaluator

    _without(monkeypatch, "torch", "openai", "llama_cpp", "comet", "mauve")
    with pytest.raises(MissingExtra, match=re.escape(f"pip install 'evalstress[{extra}]'")):
        create_evaluator(spec)


def test_two_evaluators_with_one_label_are_refused() -> None:
    with pytest.raises(ValueError, match="share the label rouge"):
        evalstress.stress(None, ["rouge", "rouge"], progress=False)


THREE = ("The council met on Monday. It approved the new harbour bridge plan. Work will start "
         "in the spring.")


def test_stress_runs_a_suite_under_the_papers_protocol(tmp_path: Path) -> None:
    """protocol="paper" is --protocol paper: paper 000's rule attacks once per text (severity
    `paper`, one seed), sentence deletion dropping the last sentence; the caller's seeds win."""
    rows = [{"id": "a", "hypothesis": THREE, "references": [THREE]}]
    done = evalstress.stress(rows, "rouge", "criteria-rules", task="summarization",
                             protocol="paper", cache=False, progress=False)
    made = done.variants()
    assert set(zip(made["severity"], made["seed"], strict=True)) == {("paper", 0)}
    deleted = made[made["perturbation"] == "sentence-deletion"]["text"].tolist()
    assert deleted == ["The council met on Monday. It approved the new harbour bridge plan."]
    assert done.config["protocol"] == "paper"
    two = evalstress.stress(rows, "rouge", "criteria-rules", task="summarization",
                            protocol="paper", seeds=2, cache=False, progress=False)
    assert set(two.variants()["seed"]) == {0, 1}
    with pytest.raises(ValueError, match=r"stress\(protocol=...\): expected one of default, paper"):
        evalstress.stress(rows, "rouge", protocol="exact", cache=False, progress=False)


def test_the_result_signature_has_no_private_fields(tmp_path: Path) -> None:
    """The API page printed `_tmp=None, _paths=None` in StressResult's signature."""
    import inspect

    from evalstress.api import StressResult

    assert list(inspect.signature(StressResult).parameters) == [
        "run", "analyses", "config", "out"]
    result = evalstress.stress(None, "bleu", perturbations=["truncation"], seeds=1, limit=2,
                               cache=False, progress=False)
    assert result.report_html().startswith("<!")  # saved to a folder of its own on demand
    assert result.out is not None and (result.out / "report.html").is_file()


def test_stress_writes_plain_progress_lines_to_a_stderr_that_is_no_terminal(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A notebook's stderr is a cell, a script's may be a log: there it was rich bars' escape
    codes; now, as with the command line, plain lines."""
    evalstress.stress(None, "bleu", perturbations=["truncation"], seeds=1, limit=2, cache=False)
    said = capsys.readouterr().err.splitlines()
    assert "examples: 0/2 (0%)" in said
    assert any(line.startswith("examples: 2/2 (100%), ") for line in said)
    assert not any("\x1b[" in line for line in said)
