"""The job builder refuses, before any work, what could only fail halfway through a run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalstress.core.data import DataError
from evalstress.core.strict import ConfigError
from evalstress.job import RunSettings, build_job


def test_a_perturbation_missing_its_model_is_refused_before_any_work(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """bert-diverge without a masked LM raised in the middle of the run (exit 4)."""
    monkeypatch.delenv("EVALSTRESS_MASKED_LM", raising=False)
    settings = RunSettings.resolve({"perturbations": ["bert-diverge"], "seeds": 1, "limit": 1})
    with pytest.raises(ConfigError, match="bert-diverge needs a masked LM: give model=PATH"):
        build_job(settings)


def _data(tmp_path: Path, references: list[object]) -> Path:
    path = tmp_path / "d.jsonl"
    text = "The council approved the new budget on Monday after a long debate."
    path.write_text("".join(json.dumps({"id": f"r{i}", "task": "summarization", "hypothesis": text,
                                        "references": ref})
                            + "\n" for i, ref in enumerate(references)))
    return path


def test_a_reference_metric_over_data_without_references_is_refused_before_any_work(
        tmp_path: Path) -> None:
    """It ran every perturbation and scored nothing, then ended in exit 3."""
    data = _data(tmp_path, ["", [], "  "])
    settings = RunSettings.resolve({"data": data, "evaluators": ["rouge", "bleu", "rep"],
                                    "perturbations": ["truncation"], "seeds": 1})
    with pytest.raises(DataError) as failed:
        build_job(settings)
    assert str(failed.value) == (
        f"{data}: rouge, bleu need references, and none of the 3 examples has one: map the "
        "field that holds them (--map references=FIELD), or choose an evaluator that needs "
        "none")


def test_rows_without_references_are_counted_in_the_run_s_notes(tmp_path: Path) -> None:
    data = _data(tmp_path, ["A budget passed.", [], "The council met."])
    settings = RunSettings.resolve({"data": data, "evaluators": ["bleu"],
                                    "perturbations": ["truncation"], "seeds": 1})
    job = build_job(settings)
    assert job.notes == [f"1 of 3 examples of {data} has no reference: bleu skips it, and its "
                         "scores are missing"]


def test_a_default_task_is_a_note_of_the_job_said_once_it_is_built(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Said at once by the loader, it came before a refusal's one line; as a note of the job it
    comes only with a job that will run."""
    data = tmp_path / "notask.csv"
    data.write_text("id,hypothesis,references\nr0,The council met.,The council met today.\n",
                    encoding="utf-8")
    settings = RunSettings.resolve({"data": data, "evaluators": ["bleu"],
                                    "perturbations": ["truncation"], "seeds": 1})
    job = build_job(settings)
    assert job.notes == [f"warning: {data}: task: open-ended (no task column; give --task or "
                         "a task field)"]
    assert capsys.readouterr().err == ""
    assert [e.task for e in job.examples] == ["open-ended"]
    monkeypatch.delenv("EVALSTRESS_MASKED_LM", raising=False)  # bert-diverge is refused
    refused = RunSettings.resolve({"data": data, "evaluators": ["bleu"],
                                   "perturbations": ["bert-diverge"], "seeds": 1})
    with pytest.raises(ConfigError):
        build_job(refused)
    assert capsys.readouterr().err == ""  # nothing said before the refusal
