"""`rundir.read_run`: the results.json of a finished run, refused in one line (file, then JSON
path) when it departs from its schema or when its run directory lacks a data file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from evalstress.report.rundir import RunDirError, read_run
from tests.report.test_check import write_run


def damaged(run: Path, change: Any) -> Path:
    path = run / "results.json"
    results = json.loads(path.read_text(encoding="utf-8"))
    change(results)
    path.write_text(json.dumps(results), encoding="utf-8")
    return run


def test_a_complete_run_is_read(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run")
    assert read_run(run)["suite"]["name"] == "s"
    assert read_run(run / "results.json")["suite"]["name"] == "s"  # the file itself


@pytest.mark.parametrize(("change", "says"), [
    (lambda r: r.pop("analyses"), "results.json: analyses: missing (a run always has it)"),
    (lambda r: r.pop("evaluators"), "results.json: evaluators: missing (a stress-test run "
                                    "always records the evaluators it scored)"),
    (lambda r: r.pop("schema_version"), "results.json: schema_version: missing"),
    (lambda r: r.__setitem__("schema_version", "2.0"), "results.json: schema_version 2.0 is "
                                                       "newer than this evalstress reads"),
    (lambda r: r.__setitem__("schema_version", "1.x"), 'results.json: schema_version: "1.x" '
                                                       "does not match"),
    (lambda r: r["analyses"]["blindspot"]["rows"][2].__setitem__("verdict", "maybe"),
     'results.json: analyses.blindspot.rows[2].verdict: "maybe" is not one of pass, fail, '
     "inconclusive"),
    (lambda r: r["analyses"]["blindspot"]["rows"][0].pop("passed"),
     "results.json: analyses.blindspot.rows[0].passed: missing"),
    (lambda r: r.__setitem__("analyses", []), "results.json: not an evalstress results file"),
    (lambda r: r["evaluators"].__setitem__("rep", {"meant_for": "repetition"}),
     'results.json: evaluators.rep.meant_for: expected array or null, got a string '
     '"repetition"'),
])
def test_a_damaged_results_json_is_refused_naming_the_json_path(
        tmp_path: Path, change: Any, says: str) -> None:
    run = damaged(write_run(tmp_path / "run"), change)
    with pytest.raises(RunDirError) as caught:
        read_run(run)
    message = str(caught.value)
    assert message.startswith(str(run / "results.json") + ": ")
    assert says in message and "\n" not in message


def test_evaluators_the_config_lists_must_be_recorded(tmp_path: Path) -> None:
    """A run whose config names the evaluators it scored, with none recorded (a study's
    results.json has no suite block, so only its config tells)."""
    run = write_run(tmp_path / "run")
    damaged(run, lambda r: (r.pop("suite"), r.__setitem__(
        "config", {"command": "run", "evaluators": ["bleu", "rouge"]}),
        r.__setitem__("evaluators", {})))
    with pytest.raises(RunDirError, match=r"results.json: evaluators: empty \(config.evaluators "
                                          r"lists bleu, rouge: the run scored them\)"):
        read_run(run)


def test_every_problem_is_counted_on_the_one_line(tmp_path: Path) -> None:
    run = damaged(write_run(tmp_path / "run"), lambda r: (r.pop("analyses"), r.pop("evaluators")))
    with pytest.raises(RunDirError, match=r"analyses: missing .*\(and 1 more problems\)$"):
        read_run(run)


@pytest.mark.parametrize("name", ["scores.parquet", "variants.parquet"])
def test_a_run_directory_without_its_data_files_is_incomplete(tmp_path: Path, name: str) -> None:
    run = write_run(tmp_path / "run")
    (run / name).unlink()
    with pytest.raises(RunDirError) as caught:
        read_run(run)
    assert str(caught.value) == (
        f"{run / name}: missing, so the run directory is incomplete (a stress-test run writes "
        "scores.parquet and variants.parquet beside results.json)")


def test_an_older_variants_jsonl_stands_for_variants_parquet(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run")
    (run / "variants.parquet").unlink()
    (run / "variants.jsonl").write_text("", encoding="utf-8")
    assert read_run(run)["analyses"]


def test_a_study_without_a_schema_version_is_read_as_1_x(tmp_path: Path) -> None:
    """attack and self-bias wrote no schema_version before studies carried one; they have no
    suite block and keep no scores.parquet."""
    run = tmp_path / "attack"
    run.mkdir()
    (run / "results.json").write_text(json.dumps({
        "evalstress": "0.1.0", "config": {"command": "attack"},
        "analyses": {"adversarial": {"asr": [], "successes": []}}}), encoding="utf-8")
    assert read_run(run)["config"]["command"] == "attack"


def test_a_correlation_study_needs_its_scores(tmp_path: Path) -> None:
    run = tmp_path / "correlate"
    run.mkdir()
    (run / "results.json").write_text(json.dumps({
        "schema_version": "1.0", "evalstress": "0.1.0",
        "config": {"command": "correlate", "evaluators": ["bleu"]},
        "evaluators": {"bleu": {"stats": {"requested": 3}}},
        "analyses": {"correlation": {"rows": []}}}))
    with pytest.raises(RunDirError, match=r"scores.parquet: missing, so the run directory is "
                                          r"incomplete \(this run writes scores.parquet"):
        read_run(run)


@pytest.mark.slow
def test_a_real_run_is_read_and_each_damage_refused(small_run: Path, tmp_path: Path) -> None:
    assert set(read_run(small_run)["evaluators"]) == {"bleu", "rouge", "rep"}
    run = tmp_path / "run"
    shutil.copytree(small_run, run)
    damaged(run, lambda r: r.pop("evaluators"))
    with pytest.raises(RunDirError, match=r"evaluators: missing \(config.evaluators lists "
                                          r"bleu, rouge, rep: the run scored them\)"):
        read_run(run)
