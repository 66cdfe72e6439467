"""Before/after examples read from a card's own run directories."""

from __future__ import annotations

from pathlib import Path

from evalstress.card.evidence import RunEvidence
from evalstress.core.data import builtin_corpus


def test_an_example_for_one_task_comes_from_that_task(bleu_card: tuple[Path, str]) -> None:
    folder, _ = bleu_card
    evidence = RunEvidence(folder / "runs" / "discernment", "runs/discernment")
    task_of = {e.id: e.task for e in builtin_corpus()}
    anywhere = evidence.before_after("bleu", "sentence-reordering", "major", "least")
    assert anywhere is not None
    other = next(t for t in ("dialogue", "story", "summarization")
                 if t != task_of[anywhere["example_id"]])
    found = evidence.before_after("bleu", "sentence-reordering", "major", "least", task=other)
    assert found is not None and task_of[found["example_id"]] == other
    texts = {e.id: e.hypothesis for e in builtin_corpus()}
    assert found["original"] == texts[found["example_id"]]
