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
    assert evaluator.label == "rouge(measure=recall, types=rouge1)"  # no model: its params
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


def damaged_summeval(shared_data: Path, examples: int, per_example: int) -> list[ScoreRequest]:
    """SummEval highlights with a quarter of their words dropped, against the human references."""
    rng = random.Random(1)
    rows = [json.loads(line) for line in
            (shared_data / "summeval.jsonl").read_text(encoding="utf-8").splitlines()[:examples]]
    out = []
    for row in rows:
        words = row["highlight"].split()
        for _ in range(per_example):
            kept = " ".join(w for w in words if rng.random() > 0.25)
            out.append(ScoreRequest(kept, references=tuple(row["references"][:4])))
    return out


@pytest.mark.parametrize(("spec", "metric"), [
    ("bleu:tokenize=intl", BLEU(tokenize="intl", effective_order=True)),
    ("bleu:lowercase=true,smooth_method=floor", BLEU(lowercase=True, smooth_method="floor",
                                                     effective_order=True)),
    ("chrf:word_order=2", CHRF(word_order=2)),
    ("chrf:word_order=2,beta=3,lowercase=true", CHRF(word_order=2, beta=3, lowercase=True)),
    ("ter:case_sensitive=true", TER(case_sensitive=True)),
])
def test_sacrebleu_settings_give_the_librarys_numbers_on_real_data(
        shared_data: Path, spec: str, metric: object) -> None:
    requests = damaged_summeval(shared_data, 4, 3)
    rows = create_evaluator(spec).score(requests)
    name = spec.split(":")[0]
    for request, row in zip(requests, rows, strict=True):
        expected = metric.sentence_score(  # type: ignore[attr-defined]
            request.text, list(request.references)).score
        assert row[name].value == expected


def test_rouge_settings_give_rouge_scores_numbers_on_real_data(shared_data: Path) -> None:
    requests = damaged_summeval(shared_data, 6, 4)
    types = ["rouge1", "rouge3", "rougeL"]
    for stem in (True, False):
        scorer = rouge_scorer.RougeScorer(types, use_stemmer=stem)
        evaluator = create_evaluator(f"rouge:types={' '.join(types)},use_stemmer={stem}")
        for request, row in zip(requests, evaluator.score(requests), strict=True):
            scores = [scorer.score(ref, request.text) for ref in request.references]
            for kind in types:
                assert row[kind].value == pytest.approx(
                    max(s[kind].fmeasure for s in scores), abs=1e-12)


def test_chrf_is_sacrebleus_chrf_and_its_signature_says_so() -> None:
    """sacreBLEU's chrF: character 6-grams, no word n-grams, beta 2 (its documented defaults);
    chrF++ adds word 1- and 2-grams and must never share the cache with it."""
    plain, plus = create_evaluator("chrf"), create_evaluator("chrf:word_order=2")
    settings = plain.signature()["settings"]
    assert (settings["char_order"], settings["word_order"], settings["beta"]) == (6, 0, 2)
    assert settings["metric"] == "chrF2" and "nw:0" in settings["sacrebleu_signature"]
    assert "word_order=0" in plain.description
    plus_settings = plus.signature()["settings"]
    assert plus_settings["word_order"] == 2 and plus_settings["metric"] == "chrF2++"
    assert "nw:2" in plus_settings["sacrebleu_signature"]
    assert plain.cache_namespace != plus.cache_namespace
    hyp, refs = "The cat sat on the mat.", ["A cat was sitting on the mat."]
    [row] = plus.score([ScoreRequest(hyp, references=tuple(refs))])
    assert row["chrf"].value == CHRF(word_order=2).sentence_score(hyp, refs).score
    assert row["chrf"].value != CHRF().sentence_score(hyp, refs).score


def test_bleu_and_ter_signatures_carry_the_resolved_tokenizer_and_smoothing() -> None:
    """Defaults the user never typed (sacreBLEU's 13a tokenizer, exp smoothing, 4-grams,
    tercom tokenization, lowercased TER) are named, and changing one changes the cache key."""
    bleu = create_evaluator("bleu").signature()["settings"]
    assert (bleu["tokenize"], bleu["smooth_method"], bleu["max_ngram_order"],
            bleu["effective_order"]) == ("13a", "exp", 4, True)
    floor = create_evaluator("bleu:smooth_method=floor").signature()["settings"]
    assert floor["smooth_value"] == 0.1  # sacreBLEU's documented floor default
    assert create_evaluator("bleu:tokenize=intl").signature()["settings"]["tokenize"] == "intl"
    assert (create_evaluator("bleu").cache_namespace
            != create_evaluator("bleu:tokenize=intl").cache_namespace)
    ter = create_evaluator("ter").signature()["settings"]
    assert ter["case_sensitive"] is False and ter["tokenize"] == "tercom"
    rouge = create_evaluator("rouge:use_stemmer=false").signature()["settings"]
    assert rouge["stemmer"] == "none"
    assert "Porter" in create_evaluator("rouge").signature()["settings"]["stemmer"]


def test_scoring_leaves_sacrebleus_tokenizer_memos_empty() -> None:
    """sacreBLEU memoizes up to 65,536 tokenized lines per tokenizer stage (13a, then its regexp
    post-tokenizer), class-wide; a run scores each text once and keeps the references
    preprocessed, so the memos are emptied after each batch, or they would hold a chunk's
    variants (~120 MB for 64 paragraphs) and ~180 MB of lines each on a long run."""
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a
    from sacrebleu.tokenizers.tokenizer_re import TokenizerRegexp

    evaluator = create_evaluator("bleu")
    requests = [ScoreRequest(f"line {i} of a run , scored once .", references=("a line",))
                for i in range(40)]
    Tokenizer13a()("a line the memo would keep")  # the memo is in use...
    assert Tokenizer13a.__call__.cache_info().currsize >= 1
    before = evaluator.score(requests)
    assert Tokenizer13a.__call__.cache_info().currsize == 0  # ...and scoring empties it
    assert TokenizerRegexp.__call__.cache_info().currsize == 0
    evaluator.end_chunk()
    assert evaluator.score(requests) == before
