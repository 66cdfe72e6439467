import json

import pytest

from evalstress.analyses import analysis_names, run_analyses
from evalstress.core.data import builtin_corpus
from evalstress.engine.runner import run
from evalstress.evaluators.base import create_evaluator
from evalstress.report import write_outputs
from evalstress.suites import Suite


@pytest.fixture(scope="module")
def small_run():
    suite = Suite.from_dict({"name": "t", "seeds": [0, 1], "perturbations": {
        "token-drop": {"grid": [0.3]}, "sentence-switching": {"grid": [1]}},
        "analyses": ["blindspot", "discernment", "criteria-confusion", "style", "correlation"]})
    return run(builtin_corpus()[:12], suite, [create_evaluator("bleu")])


def test_every_suite_analysis_runs_and_serializes(small_run, tmp_path):
    assert {"blindspot", "discernment", "criteria-confusion", "correlation",
            "style"} <= set(analysis_names())
    results = run_analyses(small_run.plan.suite.analyses, small_run,
                           {"aspect_map": {"bleu": "overall"}})
    assert list(results) == list(small_run.plan.suite.analyses)
    assert results["discernment"].units and results["criteria-confusion"].items
    assert results["correlation"].notes  # the corpus has no human scores
    paths = write_outputs(small_run, results, tmp_path)
    data = json.loads(paths["results"].read_text())
    assert set(data["analyses"]) == set(results)
    html = paths["report"].read_text()
    assert "<section id='discernment'>" in html


def test_unknown_analysis_is_a_clear_error(small_run):
    with pytest.raises(ValueError, match=r"unknown analysis 'nope'. Known: .*blindspot"):
        run_analyses(["nope"], small_run)
