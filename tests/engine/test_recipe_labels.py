"""An evaluator rebuilt in a worker process keeps its label: the rows it scores there land under
the name the run knows it by (name=, or the label `distinct_labels` chose)."""

from __future__ import annotations

import pytest

from evalstress.core.data import builtin_corpus
from evalstress.engine import pipeline
from evalstress.engine.chunkwork import recipe_for
from evalstress.engine.runner import run
from evalstress.evaluators.base import create_evaluator
from evalstress.suites import custom_suite


def test_a_recipe_rebuilds_the_label() -> None:
    named = create_evaluator("bleu:name=B")
    recipe = recipe_for(named)
    assert recipe is not None and recipe.build().label == "B"


def test_named_evaluators_keep_their_rows_with_worker_processes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pipeline, "POOL_MIN_WORK", 0)  # a pool even for this small run
    evaluators = [create_evaluator("bleu:name=B"), create_evaluator("chrf")]
    result = run(builtin_corpus()[:12], custom_suite(["truncation"], [0]), evaluators,
                 workers=2, chunk_size=4)
    table = result.table
    assert set(table["evaluator"]) == {"B", "chrf"}
    counts = table.groupby("evaluator").size()
    assert counts["B"] == counts["chrf"] > 0  # every scored text, under the run's label
