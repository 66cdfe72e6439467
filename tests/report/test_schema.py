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
