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


def test_a_broken_examples_line_is_named_by_file_line_and_column(tmp_path: Path) -> None:
    """A raw tab inside a text of a run's examples.jsonl: one DataError in words (it was
    Python's own message, which ends in a dangling "at")."""
    import pytest

    from evalstress.core.userfile import DataError

    path = tmp_path / "examples.jsonl"
    path.write_text('{"id": "a", "hypothesis": "fine"}\n{"id": "b", "hypothesis": "x\ty"}\n',
                    encoding="utf-8")
    with pytest.raises(DataError) as caught:
        _ = RunEvidence(tmp_path).examples
    # '{"id": "b", "hypothesis": "x' is 28 characters: the tab is the 29th
    assert str(caught.value).startswith(f"{path}, line 2, column 29: invalid control character")
    assert " at," not in str(caught.value)
