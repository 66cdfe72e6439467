from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from rouge_score import rouge_scorer
from sacrebleu.metrics import BLEU, CHRF, TER

from evalstress.evaluators import ScoreRequest, create_evaluator
from evalstress.evaluators.lexical import rep_n

HYPS = [
    "The council approved the new budget on Tuesday after a long debate.",
    "Running runners ran quickly; the race ended at noon in Leeds.",
    "the the the the",
]
REFS = (
    "On Tuesday the council passed the new budget following lengthy debate.",
    "After a long debate, the new budget was approved by the council.",
)


def requests() -> list[ScoreRequest]:
    return [ScoreRequest(h, "source", REFS) for h in HYPS]


@pytest.mark.parametrize(("name", "metric"), [("bleu", BLEU(effective_order=True)),
                                              ("chrf", CHRF()), ("ter", TER())])
def test_sacrebleu_metrics_equal_the_library(name: str, metric: object) -> None:
    rows = create_evaluator(name).score(requests())
    for hyp, row in zip(HYPS, rows, strict=True):
        expected = metric.sentence_score(hyp, list(REFS)).score  # type: ignore[attr-defined]
        assert row[name].value == pytest.approx(expected)


@pytest.mark.parametrize("measure", ["fmeasure", "precision", "recall"])
def test_rouge_equals_rouge_score_max_over_references(measure: str) -> None:
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    rows = create_evaluator(f"rouge:measure={measure}").score(requests())
    for hyp, row in zip(HYPS, rows, strict=True):
        for kind in ("rouge1", "rouge2", "rougeL"):
            expected = max(getattr(scorer.score(ref, hyp)[kind], measure) for ref in REFS)
            assert row[kind].value == pytest.approx(expected, abs=1e-12)


def test_missing_references_are_missing_scores_not_zero() -> None:
    [row] = create_evaluator("rouge").score([ScoreRequest("Some text.", "src", ())])
    assert all(not s.ok and "no references" in (s.reason or "") for s in row.values())


def test_rep_n_counts_repeated_ngrams() -> None:
    assert rep_n("a b c d", 2) == 0.0
    assert rep_n("a b a b a b", 2) == pytest.approx(1 - 2 / 5)
    assert rep_n("one", 2) is None
    [row] = create_evaluator("rep").score([ScoreRequest("x y")])
    assert row["rep-2"].value == 0.0 and not row["rep-4"].ok


def test_ter_is_lower_is_better() -> None:
    assert not create_evaluator("ter").higher_is_better("ter")
    assert create_evaluator("bleu").higher_is_better("bleu")


def test_spec_parameters_reach_the_evaluator_and_its_label() -> None:
    evaluator = create_evaluator("rouge:measure=recall,types=rouge1")
    assert evaluator.aspects == ("rouge1",)
    assert evaluator.label == "rouge:measure=recall,types=rouge1"
    assert create_evaluator("rouge").label == "rouge"
    with pytest.raises(KeyError, match="Did you mean 'rouge'"):
        create_evaluator("rogue")


def test_reference_memos_hold_one_chunk_only() -> None:
    """The runner empties the reference memos after each chunk; scores do not change."""
    from evalstress.evaluators.base import ScoreRequest, create_evaluator
    from evalstress.evaluators.lexical import REFERENCE_MEMO

    requests = [ScoreRequest(f"the cat {i} sat on a mat", references=(f"a cat {i} sat", "a mat"))
                for i in range(50)]
    for name in ("bleu", "rouge"):
        evaluator = create_evaluator(name)
        before = evaluator.score(requests)
        memo = (evaluator.__dict__.get("_ref_memo") if name == "bleu"
                else None)
        size = len(memo) if memo is not None else evaluator._reference.cache_info().currsize
        assert 0 < size <= REFERENCE_MEMO
        evaluator.end_chunk()
        size = (len(evaluator.__dict__.get("_ref_memo", {})) if name == "bleu"
                else evaluator._reference.cache_info().currsize)
        assert size == 0
        assert evaluator.score(requests) == before


def test_fast_chrf_path_gives_sacrebleus_numbers(shared_data: Path) -> None:
    """fastchrf (Rust) replaces sacreBLEU's loops only where it returns the same floats."""
    pytest.importorskip("fastchrf")
    rng = random.Random(0)
    rows = [json.loads(line) for line in
            (shared_data / "summeval.jsonl").read_text(encoding="utf-8").splitlines()[:15]]
    requests = []
    for row in rows:  # damaged highlights against the 10 human references
        words = row["highlight"].split()
        for _ in range(8):
            kept = " ".join(w for w in words if rng.random() > 0.25)
            requests.append(ScoreRequest(kept, references=tuple(row["references"])))
    requests += [ScoreRequest(text, references=refs) for text, refs in [
        ("", ("x y",)), ("a", ("a",)), ("Ünïcode ✓ text", ("Ünïcode text", "other")),
        ("  spaced   out  ", ("spaced out",))]]
    fast = create_evaluator("chrf")
    assert "fastchrf" in fast.versions()
    library = CHRF()
    for request, row in zip(requests, fast.score(requests), strict=True):
        assert row["chrf"].value == library.sentence_score(request.text,
                                                           list(request.references)).score
    plus = create_evaluator("chrf:word_order=2")  # chrF++: word n-grams, sacreBLEU's own path
    assert "fastchrf" not in plus.versions()
    [row] = plus.score(requests[:1])
    assert row["chrf"].value == CHRF(word_order=2).sentence_score(
        requests[0].text, list(requests[0].references)).score
