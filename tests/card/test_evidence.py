"""Before/after examples read from a card's own run directories."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from evalstress.card.evidence import RunEvidence
from evalstress.core.data import builtin_corpus


def test_an_example_for_one_task_comes_from_that_task(bleu_card: tuple[Path, str]) -> None:
    folder, _ = bleu_card
    evidence = RunEvidence(folder / "runs" / "discernment", "runs/discernment")
    task_of = {e.id: e.task for e in builtin_corpus()}
    anywhere = evidence.before_after("bleu", "sentence-reordering", "major", "typical")
    assert anywhere is not None
    other = next(t for t in ("dialogue", "story", "summarization")
                 if t != task_of[anywhere["example_id"]])
    found = evidence.before_after("bleu", "sentence-reordering", "major", "typical",
                                    task=other)
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


class Texts(RunEvidence):
    """A run's scores and texts given in memory: the variant text names its example and seed."""

    def __init__(self, scores: pd.DataFrame):
        super().__init__(Path("."), "runs/blindspot")
        self.__dict__["scores"] = scores
        self.__dict__["examples"] = {i: ("summarization", f"text {i}")
                                     for i in scores["example_id"].unique()}

    def variant_text(self, example_id: str, perturbation: str, severity: str,
                     seed: int) -> str | None:
        return f"{example_id} seed {seed}"


def scores(drops: dict[str, list[float]], higher: bool = True) -> pd.DataFrame:
    """Originals at 10 (lower is better: 10 too); each example's variant scores per seed, so
    that the drop (positive = worse) is the listed value."""
    rows = []
    for example, per_seed in drops.items():
        rows.append((example, "original", "", 0, 10.0))
        for seed, d in enumerate(per_seed):
            rows.append((example, "typos", "0.5", seed, 10.0 - d if higher else 10.0 + d))
        rows.append((example, "typos", "0.9", 0, 0.0))  # another severity: never shown
    frame = pd.DataFrame(rows, columns=["example_id", "perturbation", "severity", "seed",
                                        "score"])
    return frame.assign(aspect="bleu", higher_is_better=higher, status="ok")


def test_the_example_is_the_median_change_at_the_cited_severity_never_the_least() -> None:
    # drops per example, seeds averaged: a 0 (least moved), b 1, c 2, d 3, e 9 (most);
    # the median of five is c; c's seed nearest its mean of 2 is seed 1 (2.5 vs 1.0 and 3.0)
    drops = {"a": [0.0, 0.0], "b": [1.0, 1.0], "c": [1.0, 2.5, 3.0], "d": [3.0, 3.0],
             "e": [9.0, 9.0]}
    evidence = Texts(scores(drops))
    typical = evidence.before_after("bleu", "typos", "0.5", "typical")
    assert typical is not None
    assert (typical["example_id"], typical["seed"], typical["severity"]) == ("c", 1, "0.5")
    assert typical["variant"] == "c seed 1" and typical["variant_score"] == 7.5
    assert typical["pick"] == "typical" and "median" in typical["label"]
    assert (typical["position"], typical["of"]) == (3, 5)
    extreme = evidence.before_after("bleu", "typos", "0.5", "extreme")
    assert extreme is not None and extreme["example_id"] == "e"
    assert "most extreme" in extreme["label"]
    # lower is better: the same drops, the scores rising; the same example is typical
    flipped = Texts(scores(drops, higher=False)).before_after("bleu", "typos", "0.5",
                                                              "typical")
    assert flipped is not None and flipped["example_id"] == "c"


def test_an_even_count_takes_the_lower_middle_and_a_reversal_its_largest_rise() -> None:
    evidence = Texts(scores({"a": [-4.0], "b": [-1.0], "c": [0.5], "d": [2.0]}))
    typical = evidence.before_after("bleu", "typos", "0.5", "typical")
    assert typical is not None and typical["example_id"] == "b"
    extreme = evidence.before_after("bleu", "typos", "0.5", "extreme")
    assert extreme is not None and extreme["example_id"] == "a"
