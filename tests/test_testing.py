"""The pytest plugin, run inside pytest itself (pytester)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.slow

CONFTEST = '''
import pytest

pytest_plugins = ["evalstress.testing"]

SUITE = """
name: tiny
seeds: [0]
perturbations:
  truncation: {grid: [0.3, 0.6]}
analyses: [blindspot]
"""

DATA = [
    {"id": "a", "task": "summarization",
     "hypothesis": "The mayor opened a new bridge over the river on Monday morning.",
     "references": ["The mayor opened a new bridge over the river on Monday."]},
    {"id": "b", "task": "summarization",
     "hypothesis": "Heavy rain closed three schools and flooded the main road near the station.",
     "references": ["Rain closed three schools and flooded the main road by the station."]},
    {"id": "c", "task": "summarization",
     "hypothesis": "The team won the final after a late goal from their youngest player.",
     "references": ["The team won the final thanks to a late goal by its youngest player."]},
]


@pytest.fixture
def suite(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text(SUITE)
    return str(path)


def recall(request):
    """Share of reference words found in the text: truncation lowers it."""
    words = set(request.text.lower().split())
    ref = request.references[0].lower().split()
    return sum(w in words for w in ref) / len(ref)


def constant(request):
    return 0.5
'''

TESTS = '''
from evalstress.testing import assert_passes
from conftest import DATA, recall, constant


def test_recall_notices_truncation(suite):
    run = assert_passes(recall, suite=suite, data=DATA, require=["recall:truncation=pass"])
    assert run.report.exists()
    assert [o.verdict for o in run.outcomes] == ["pass"]


def test_constant_is_blind(suite):
    assert_passes(constant, suite=suite, data=DATA)


def test_fixture_writes_under_tmp_path(evalstress, suite, tmp_path):
    run = evalstress.stress(constant, suite=suite, data=DATA)
    assert tmp_path in run.out_dir.parents
    assert (run.out_dir / "results.json").exists()
    assert [o.verdict for o in run.outcomes] == ["fail"]
'''


def test_assert_passes_and_the_fixture_inside_pytest(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_metric=TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines([
        "*AssertionError: evalstress suite '*tiny.yaml': 1 of 1 expectations not met:*",
        "*1 test fails, more than the 0 allowed: constant/score:truncation*",
        "*report: *report.html*",
    ])


def test_plugin_is_registered_under_its_module_name() -> None:
    data = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    plugins = data["project"]["entry-points"]["pytest11"]
    # named like the module, so pytest_plugins = ["evalstress.testing"] never registers it twice
    assert plugins == {"evalstress.testing": "evalstress.testing"}
    import evalstress.testing as plugin

    assert plugin.evalstress_fixture is not None
