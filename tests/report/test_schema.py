"""results.json matches docs/results.schema.json, and the schema rejects broken results."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

jsonschema = pytest.importorskip("jsonschema")

SCHEMA = json.loads((Path(__file__).parents[2] / "docs" / "results.schema.json")
                    .read_text(encoding="utf-8"))


def validate(results: dict) -> None:
    jsonschema.validate(results, SCHEMA, cls=jsonschema.Draft202012Validator)


def test_the_schema_is_a_valid_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def test_each_problem_is_one_line_naming_its_json_path() -> None:
    from evalstress.report.schema import schema_problems

    row = {"evaluator": 7, "aspect": "a", "perturbation": "p", "higher_is_better": True,
           "gold": 1.0, "points": [], "tolerance": 0.1, "rank_pass": True,
           "monotonic_pass": True, "passed": True}
    assert schema_problems({"suite": {}, "counts": {"examples": None},
                            "analyses": {"blindspot": {"rows": [row]}}}) == [
        "evalstress: missing (a run always records the version that wrote it)",
        "schema_version: missing (a stress-test run always has it)",
        "evaluators: missing (a stress-test run always records the evaluators it scored)",
        "analyses.blindspot.rows[0].verdict: missing",
        "analyses.blindspot.rows[0].evaluator: expected string, got a number 7",
        "counts.examples: expected integer, got null"]
    study = {"evalstress": "0.1.0", "config": {"command": "self-bias"},
             "analyses": {"self-bias": {"rows": []}}}
    assert schema_problems(study) == []  # no suite block: a study, read without a version


def test_the_packaged_schema_is_the_documented_one() -> None:
    """Readers validate against the copy inside the package (an installed evalstress has no
    docs/); docs/results.schema.json documents it and must say the same, byte for byte."""
    from importlib import resources

    from evalstress.report.schema import SCHEMA_FILE, results_schema

    packaged = resources.files("evalstress.report") / SCHEMA_FILE
    docs = Path(__file__).parents[2] / "docs" / "results.schema.json"
    assert packaged.read_bytes() == docs.read_bytes()
    assert results_schema() == SCHEMA


def test_a_wheel_ships_the_schema_and_what_validates_with_it() -> None:
    """The package data patterns take the schema into a wheel, and jsonschema is a dependency
    of the package itself, not of a development extra."""
    import fnmatch
    import tomllib

    from packaging.requirements import Requirement

    from evalstress.report.schema import SCHEMA_FILE

    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text("utf-8"))
    patterns = project["tool"]["setuptools"]["package-data"]["evalstress"]
    assert any(fnmatch.fnmatch(f"report/{SCHEMA_FILE}", pattern) for pattern in patterns)
    assert "jsonschema" in {Requirement(r).name for r in project["project"]["dependencies"]}


@pytest.mark.slow
def test_a_real_run_matches_the_schema(e2e_run: Path) -> None:
    from evalstress.report import SCHEMA_VERSION

    results = json.loads((e2e_run / "results.json").read_text(encoding="utf-8"))
    assert results["schema_version"] == SCHEMA_VERSION
    validate(results)  # with the schema's generation and adversarial blocks ($defs)


@pytest.mark.slow
def test_broken_results_are_rejected(small_run: Path) -> None:
    good = json.loads((small_run / "results.json").read_text(encoding="utf-8"))
    validate(good)
    for damage in (
        lambda r: r.pop("schema_version"),
        lambda r: r.__setitem__("schema_version", "2.0"),
        lambda r: r["analyses"]["blindspot"]["rows"][0].__setitem__("verdict", "maybe"),
        lambda r: r["analyses"]["blindspot"]["rows"][0].pop("passed"),
        lambda r: r["evaluators"]["rep"].__setitem__("meant_for", "repetition"),
        lambda r: r.__setitem__("generation", {"perturbations": {"x": {
            "planned": 2, "accepted": 1, "acceptance_rate": 1.5, "rejections": {}}}}),
        lambda r: r["analyses"].__setitem__("adversarial", {"asr": [{
            "victim": "v", "direction": "sideways", "method": "adveval", "attempts": 1,
            "successes": 0, "asr": 0, "ci_low": 0, "ci_high": 1}], "successes": []}),
        lambda r: r.__setitem__("backend", {"name": "ray", "shards": 2, "placement": [
            {"shard": 0, "examples": "four", "reused": False}]}),
    ):
        broken = copy.deepcopy(good)
        damage(broken)
        with pytest.raises(jsonschema.ValidationError):
            validate(broken)
