"""MAUVE equals mauve-text called directly on features from its own featurizer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalstress.core.data import builtin_corpus
from evalstress.engine.runner import run
from evalstress.evaluators import create_evaluator
from evalstress.evaluators.base import ScoreRequest
from evalstress.suites import custom_suite

mauve = pytest.importorskip("mauve")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


# MAUVE compares sets, so a set needs a few dozen texts: 30 of the corpus give mauve-text's
# automatic 3 k-means buckets (n/10), and every text costs a MiniLM forward pass. Cut to three
# words, they make a set MAUVE clearly tells from the whole texts (about 0.3; their first
# halves score 1 up to rounding at this size), so the value compared is not a trivial one
SET_SIZE = 30


def _sets() -> tuple[list[ScoreRequest], list[ScoreRequest]]:
    gold = [ScoreRequest(e.hypothesis, e.source, e.references)
            for e in builtin_corpus()[:SET_SIZE]]
    noised = [ScoreRequest(" ".join(r.text.split()[:3])) for r in gold]
    return gold, noised


def _mauve_features(path: str, texts: list[str]) -> object:
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModel.from_pretrained(path).eval()
    tokens = [tokenizer(t, return_tensors="pt")["input_ids"] for t in texts]
    with torch.no_grad():
        return mauve.utils.featurize_tokens_from_model(model, tokens, batch_size=8).numpy()


def test_mauve_equals_mauve_text_on_its_own_features(minilm: str) -> None:
    seed = 7  # the k-means seed is exposed and passed through
    gold, noised = _sets()
    evaluator = create_evaluator(f"mauve:seed={seed}")
    value = evaluator.score_sets(gold, noised)["mauve"].value
    expected = mauve.compute_mauve(
        p_features=_mauve_features(minilm, [r.text for r in gold]),
        q_features=_mauve_features(minilm, [r.text for r in noised]), seed=seed).mauve
    assert value == pytest.approx(expected, abs=1e-6)
    assert 0.05 < value < 0.95  # type: ignore[operator]
    assert evaluator.signature()["params"]["seed"] == seed


def test_gold_set_against_itself_is_one_and_tiny_sets_are_missing() -> None:
    gold, _ = _sets()
    evaluator = create_evaluator("mauve")
    assert evaluator.score_sets(gold, gold)["mauve"].value == pytest.approx(1.0)
    row = evaluator.score_sets(gold, gold[:1])
    assert not row["mauve"].ok and "at least 2" in (row["mauve"].reason or "")


def test_mauve_runs_once_per_set_in_the_runner(tiny_gpt: str) -> None:
    examples = builtin_corpus()[:24]
    result = run(examples, custom_suite(["truncation"], [0], ["blindspot"]),
                 [create_evaluator(f"mauve:model={tiny_gpt},against=references")])
    table = result.table
    assert set(table["example_id"]) == {"*"}
    assert len(table) == 1 + 5  # the gold set and one set per truncation severity
    assert table["status"].eq("ok").all()


def test_mauve_reads_a_separate_reference_set(tmp_path: Path) -> None:
    from evalstress.evaluators.distribution import Mauve

    lines = tmp_path / "refs.jsonl"
    lines.write_text("\n".join(json.dumps(r) for r in [
        {"set": "a", "text": "gold one"}, {"set": "b", "text": "ref one"},
        {"set": "b", "text": "ref two"}]), encoding="utf-8")
    mauve = Mauve(reference_set=str(lines), reference_where="set=b")
    assert mauve.against == "file" and not mauve.compares_with_gold
    assert mauve.reference_texts([ScoreRequest("gold one")]) == ["ref one", "ref two"]
    assert "reference_sha256" in mauve.signature()["params"]
    assert Mauve().compares_with_gold
    with pytest.raises(ValueError, match="at least 2"):
        Mauve(reference_set=str(lines), reference_where="set=a")
    with pytest.raises(ValueError, match=r"'reference_set' = '.*none\.txt': no such file"):
        Mauve(reference_set=str(tmp_path / "none.txt"))
