"""`evalstress check`: exit 0 when met, 1 when not, 2 on usage or input errors; JUnit XML."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from evalstress.cli import app
from evalstress.core.scoretable import SCORE_SCHEMA
from evalstress.engine.variantfile import VARIANT_SCHEMA
from evalstress.report.check import CheckInputError, parse_expect, parse_requirement
from evalstress.suites import Suite

runner = CliRunner()


def row(evaluator, aspect, perturbation, passed, higher=True):
    return {"evaluator": evaluator, "aspect": aspect, "perturbation": perturbation,
            "higher_is_better": higher, "gold": 10.0, "tolerance": 0.1, "rank_pass": passed,
            "monotonic_pass": passed, "passed": passed, "verdict": "pass" if passed else "fail",
            "points": [{"severity": "0.5", "noise_ratio": 0.5, "mean": 8.0 if passed else 10.0,
                        "std": 0.0, "gold": 10.0, "delta": -2.0 if passed else 0.0}]}


def write_run(folder: Path, expect: dict | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    results = {
        "schema_version": "1.0", "evalstress": "0.1.0",
        "suite": {"name": "s", "expect": expect or {}, "perturbations": {
            "truncation": {"family": "fluency"}, "repetition": {"family": "probe"}}},
        "evaluators": {"bleu": {"meant_for": None}, "rouge": {"meant_for": None},
                       "rep": {"meant_for": ["repetition"]}},
        "analyses": {
            "blindspot": {"rows": [
                row("bleu", "bleu", "truncation", False), row("bleu", "bleu", "repetition", True),
                row("rouge", "rougeL", "truncation", True),
                row("rouge", "rouge1", "truncation", False),
                row("rouge", "rougeL", "repetition", True),
                row("rep", "rep-2", "truncation", False, higher=False),
                row("rep", "rep-2", "repetition", True, higher=False)]},
            "discernment": {"method": {"score": "D = log_0.05(p); D >= 1 <=> p <= 0.05"},
                            "units": [], "summaries": [
                {"evaluator": "judge", "task": "*", "group": "all", "d_avg": 1.2, "d_min": 0.3,
                 "d_min_at": "typos@minor"},
                {"evaluator": "judge", "task": "*", "group": "minor", "d_avg": 0.4,
                 "d_min": 0.3}]}}}
    (folder / "results.json").write_text(json.dumps(results), encoding="utf-8")
    pq.write_table(SCORE_SCHEMA.empty_table(), folder / "scores.parquet")  # check reads neither,
    pq.write_table(VARIANT_SCHEMA.empty_table(), folder / "variants.parquet")  # but a run has them
    return folder


def check(*args: str):
    return runner.invoke(app, ["check", *args])


def test_met_expectations_exit_0(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run")
    result = check(str(run), "--require", "rouge/rougeL:truncation=pass",
                   "--require", "bleu:truncation=fail", "--max-failures", "2", "--min-d", "1")
    assert result.exit_code == 0, result.output
    assert "4 of 4 expectations met" in result.output
    assert "rouge/rougeL:truncation=pass: 1 verdict is pass" in result.output
    assert "1 test fails (at most 2 allowed)" not in result.output  # two fail: bleu and rouge1
    assert "2 tests fail (at most 2 allowed)" in result.output


def test_broken_expectations_exit_1_with_one_line_each(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run")
    result = check(str(run), "--require", "bleu:truncation=pass", "--require",
                   "rouge:truncation=pass", "--max-failures", "1", "--min-d", "1.5")
    assert result.exit_code == 1
    failed = [line for line in result.output.splitlines() if line.startswith("FAIL")]
    assert len(failed) == 4
    assert failed[0].startswith("FAIL  bleu:truncation=pass: expected pass, got fail")
    assert "rouge/rouge1 truncation" in failed[1]  # rougeL passes, rouge1 does not
    assert "2 tests fail, more than the 1 allowed: bleu:truncation, rouge/rouge1:truncation" \
        in failed[2]  # rep on truncation is not applicable, so not a failure
    assert "D_avg = 1.20 < 1.5" in failed[3]


def test_default_requires_every_applicable_test_to_pass(tmp_path: Path) -> None:
    result = check(str(write_run(tmp_path / "run")))
    assert result.exit_code == 1 and "2 tests fail, more than the 0 allowed" in result.output


def test_suite_expect_block_is_used_and_flags_win(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", {"max_failures": 2,
                                       "require": {"bleu:repetition": "pass"}})
    assert check(str(run)).exit_code == 0
    assert check(str(run), "--max-failures", "0").exit_code == 1
    assert check(str(run), "--no-suite", "--max-failures", "5").exit_code == 0


@pytest.mark.parametrize(("args", "message"), [
    (["--require", "blue:truncation=pass"], "unknown evaluator 'blue'"),
    (["--require", "bleu:trunction=pass"], "did you mean truncation"),
    (["--require", "bleu:truncation=passed!"], "unknown verdict"),
    (["--require", "bleu-truncation-pass"], "must look like EVALUATOR:TEST=VERDICT"),
    (["--require", "rouge/rouge9:truncation=pass"], "has no aspect 'rouge9'"),
    (["--max-failures", "-1"], "--max-failures must be >= 0"),
    (["--max-failures", "many"], "Usage:"),
])
def test_usage_and_input_errors_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    result = check(str(write_run(tmp_path / "run")), *args)
    assert result.exit_code == 2
    assert message in result.output.replace("\n", " ")


def test_missing_or_broken_run_exits_2(tmp_path: Path) -> None:
    assert check(str(tmp_path / "nowhere")).exit_code == 2
    run = write_run(tmp_path / "run")
    (run / "results.json").write_text("[1, 2", encoding="utf-8")
    result = check(str(run))
    assert result.exit_code == 2 and "not valid JSON" in result.output
    no_d = write_run(tmp_path / "run2")
    data = json.loads((no_d / "results.json").read_text())
    del data["analyses"]["discernment"]
    (no_d / "results.json").write_text(json.dumps(data))
    result = check(str(no_d), "--min-d", "1")
    assert result.exit_code == 2 and "no discernment analysis" in result.output


def test_junit_xml_has_a_case_per_expectation(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run")
    out = tmp_path / "junit.xml"
    result = check(str(run), "--require", "bleu:truncation=pass", "--require",
                   "rouge/rougeL:truncation=pass", "--junit", str(out))
    assert result.exit_code == 1
    root = ET.parse(out).getroot()
    assert root.tag == "testsuites" and root.get("tests") == "2" and root.get("failures") == "1"
    suite = root.find("testsuite")
    assert suite is not None and suite.get("failures") == "1"
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == ["bleu:truncation=pass",
                                              "rouge/rougeL:truncation=pass"]
    failure = cases[0].find("failure")
    assert failure is not None and "expected pass, got fail" in (failure.get("message") or "")
    assert cases[1].find("failure") is None
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["suite"] == "s"


def test_expect_block_errors_name_the_key() -> None:
    with pytest.raises(CheckInputError, match=r"unknown key 'max_failure'; .*did you mean "
                                              r"max_failures"):
        parse_expect({"max_failure": 1})
    with pytest.raises(CheckInputError, match="max_failures: a whole number"):
        parse_expect({"max_failures": -2})
    assert parse_requirement("judge:base=x:typos@minor=n/a").verdict == "not-applicable"
    assert parse_requirement("judge:base=x:typos@minor=n/a").subject == "judge:base=x"
    with pytest.raises(ValueError, match="field 'expect': unknown key"):
        Suite.from_dict({"perturbations": ["truncation"], "expect": {"oops": 1}})


@pytest.mark.slow
def test_check_passes_on_a_real_run_that_meets_its_expectations(tmp_path: Path) -> None:
    from tests.report.conftest import build_small_run

    run = build_small_run(tmp_path / "run", count=3)
    result = check(str(run), "--require", "rep:truncation=not-applicable", "--max-failures",
                   "100")
    assert result.exit_code == 0, result.output


def test_a_run_without_verdicts_has_nothing_to_check(tmp_path: Path) -> None:
    """Only a study's analysis: no test verdict, so no expectation can be met or broken; the
    old "1 of 1 expectations met" read as a pass."""
    run = write_run(tmp_path / "run")
    data = json.loads((run / "results.json").read_text())
    data["analyses"] = {"correlation": {"rows": []}}
    (run / "results.json").write_text(json.dumps(data))
    for flags in ([], ["--max-failures", "3"]):
        result = check(str(run), *flags)
        assert result.exit_code == 2, result.output
        said = " ".join(result.output.split())
        assert f"nothing to check in {run}: the run has no test verdicts (its analyses: " \
               "correlation;" in said
        assert "expectations met" not in said


def test_a_run_whose_every_test_is_not_applicable_has_nothing_to_count(tmp_path: Path) -> None:
    """rep is meant for repetition only: on truncation alone every verdict is not-applicable,
    so "0 tests fail" would say nothing; a requirement of that verdict still holds."""
    run = write_run(tmp_path / "run")
    data = json.loads((run / "results.json").read_text())
    data["analyses"] = {"blindspot": {"rows": [row("rep", "rep-2", "truncation", True,
                                                   higher=False)]}}
    (run / "results.json").write_text(json.dumps(data))
    result = check(str(run))
    assert result.exit_code == 2, result.output
    assert "none of the run's 1 test applies to its evaluators" in " ".join(result.output.split())
    assert check(str(run), "--max-failures", "2").exit_code == 2
    met = check(str(run), "--require", "rep:truncation=not-applicable")
    assert met.exit_code == 0 and "1 of 1 expectation met" in met.output, met.output


def test_a_requirement_on_an_evaluator_the_run_lacks_is_an_input_error(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run")
    data = json.loads((run / "results.json").read_text())
    rows = data["analyses"]["blindspot"]["rows"]
    data["analyses"]["blindspot"]["rows"] = [r for r in rows if r["evaluator"] != "bleu"]
    del data["evaluators"]["bleu"]
    (run / "results.json").write_text(json.dumps(data))
    result = check(str(run), "--require", "bleu:truncation=pass")
    assert result.exit_code == 2
    assert "unknown evaluator 'bleu' in this run; known: " in " ".join(result.output.split())
