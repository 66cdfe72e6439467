"""BERTScore and embedding similarity equal the reference libraries called directly."""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path

import pytest

from evalstress.core import models
from evalstress.evaluators import create_evaluator
from evalstress.evaluators.base import ScoreRequest

bert_score = pytest.importorskip("bert_score")

CANDS = ["The cat sat on the mat all afternoon.", "A dog barked at the mailman.",
         "Stocks fell sharply on Monday after the report."]
REFS = [["A cat was sitting on the mat.", "The cat lay on a rug all day long."],
        ["The mailman was barked at by a dog."],
        ["Markets dropped on Monday.", "The report sent shares down.", "Shares rose."]]


def _requests() -> list[ScoreRequest]:
    return [ScoreRequest(c, references=tuple(r)) for c, r in zip(CANDS, REFS, strict=True)]


def _rows(spec: str) -> list[dict[str, float]]:
    rows = create_evaluator(spec).score(_requests())
    return [{a: s.value for a, s in row.items()} for row in rows]  # type: ignore[misc]


def test_bertscore_default_model_equals_bert_score(minilm: str) -> None:
    p, r, f = bert_score.score(CANDS, REFS, model_type=minilm, num_layers=6)
    rows = _rows("bertscore")
    for i, row in enumerate(rows):
        assert row["precision"] == pytest.approx(float(p[i]), abs=1e-5)
        assert row["recall"] == pytest.approx(float(r[i]), abs=1e-5)
        assert row["f"] == pytest.approx(float(f[i]), abs=1e-5)


def test_bertscore_on_one_cpu_thread_equals_bert_score_and_puts_torchs_threads_back(
        minilm: str, bertscore_threads: list[int]) -> None:
    import torch

    p, r, f = bert_score.score(CANDS, REFS, model_type=minilm, num_layers=6)
    seen = bertscore_threads
    seen.clear()  # the reference's own passes above are not the evaluator's
    before = torch.get_num_threads()
    evaluator = create_evaluator("bertscore:threads=1")
    rows = evaluator.score(_requests())
    assert seen and set(seen) == {1} and torch.get_num_threads() == before
    assert [row["f"].value for row in rows] == pytest.approx([float(x) for x in f], abs=1e-5)
    assert [row["precision"].value for row in rows] == pytest.approx(
        [float(x) for x in p], abs=1e-5)
    assert [row["recall"].value for row in rows] == pytest.approx(
        [float(x) for x in r], abs=1e-5)
    # the thread count does not change the numbers: the cache key stays the default's
    assert evaluator.signature() == create_evaluator("bertscore").signature()


def test_bertscore_other_layer_equals_cut_down_model(minilm: str) -> None:
    _, _, f = bert_score.score(CANDS, REFS, model_type=minilm, num_layers=3)
    rows = _rows(f"bertscore:model={minilm},num_layers=3")
    assert [row["f"] for row in rows] == pytest.approx([float(x) for x in f], abs=1e-5)


def test_bertscore_idf_equals_bert_scorer_with_idf_sents(minilm: str, tmp_path: Path) -> None:
    corpus = [ref for group in REFS for ref in group] + ["An unrelated sentence about rain."]
    (tmp_path / "idf.txt").write_text("\n".join(corpus) + "\n", encoding="utf-8")
    scorer = bert_score.BERTScorer(model_type=minilm, num_layers=6, idf=True, idf_sents=corpus,
                                   nthreads=0)  # its fork pool can hang under load
    _, r, f = scorer.score(CANDS, REFS)
    rows = _rows(f"bertscore:idf=true,idf_corpus={tmp_path / 'idf.txt'}")
    assert [row["f"] for row in rows] == pytest.approx([float(x) for x in f], abs=1e-5)
    assert [row["recall"] for row in rows] == pytest.approx([float(x) for x in r], abs=1e-5)
    spec = f"bertscore:idf=true,idf_corpus={tmp_path / 'idf.txt'}"
    signature = create_evaluator(spec).signature()
    assert len(signature["versions"]["idf_corpus_sha256"]) == 64
    plain = _rows("bertscore")
    assert [row["f"] for row in rows] != pytest.approx([row["f"] for row in plain], abs=1e-4)


def test_bertscore_rescaling_with_user_baseline_file(minilm: str, tmp_path: Path) -> None:
    lines = ["LAYER,P,R,F"] + [f"{i},0.{50 + i},0.{40 + i},0.{45 + i}" for i in range(7)]
    (tmp_path / "base.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    p, _, f = bert_score.score(CANDS, REFS, model_type=minilm, num_layers=6, lang="en",
                               rescale_with_baseline=True, baseline_path=str(tmp_path / "base.csv"))
    rows = _rows(f"bertscore:rescale_with_baseline=true,baseline_path={tmp_path / 'base.csv'}")
    assert [row["precision"] for row in rows] == pytest.approx([float(x) for x in p], abs=1e-5)
    assert [row["f"] for row in rows] == pytest.approx([float(x) for x in f], abs=1e-5)
    numbers = _rows("bertscore:rescale_with_baseline=true,baseline='0.56 0.46 0.51'")
    assert [row["f"] for row in numbers] == pytest.approx([float(x) for x in f], abs=1e-5)


def test_bertscore_bad_options_say_what_to_give() -> None:
    with pytest.raises(ValueError, match="idf_corpus"):
        create_evaluator("bertscore:idf=true")
    with pytest.raises(ValueError, match="baseline_path"):
        create_evaluator("bertscore:rescale_with_baseline=true")
    with pytest.raises(ValueError, match="num_layers"):
        create_evaluator("bertscore:model=/some/local/model")


def test_bertscore_flags_inputs_cut_to_the_window(minilm: str) -> None:
    long_text = " ".join(["word"] * 600)
    requests = [ScoreRequest(long_text, references=("a short reference",)),
                ScoreRequest("short text", references=("a short reference",))]
    rows = create_evaluator("bertscore").score(requests)
    assert rows[0]["f"].extra.get("truncated") is True
    assert "truncated" not in rows[1]["f"].extra
    _, _, f = bert_score.score([long_text], ["a short reference"], model_type=minilm, num_layers=6)
    assert rows[0]["f"].value == pytest.approx(float(f[0]), abs=1e-5)


def test_signature_names_model_hash_and_versions(minilm: str) -> None:
    signature = create_evaluator("bertscore").signature()
    versions = signature["versions"]
    assert versions["path"] == minilm
    assert len(versions["sha256"]) == 64
    assert versions["bert-score"] == version("bert-score")
    assert "torch" in versions and "transformers" in versions


def test_embedding_similarity_equals_sentence_transformers(minilm: str) -> None:
    from sentence_transformers import SentenceTransformer, util

    model = SentenceTransformer(minilm, device="cpu")
    expected = []
    for cand, refs in zip(CANDS, REFS, strict=True):
        vectors = model.encode([cand, *refs], convert_to_tensor=True)
        expected.append(float(util.cos_sim(vectors[0:1], vectors[1:]).max()))
    rows = _rows("embedding-similarity")
    assert [row["cosine"] for row in rows] == pytest.approx(expected, abs=1e-5)


def test_embedding_similarity_to_source_and_missing_source() -> None:
    evaluator = create_evaluator("embedding-similarity:against=source")
    rows = evaluator.score([ScoreRequest("The cat sat.", source="A cat was sitting."),
                            ScoreRequest("The cat sat.")])
    assert 0.5 < rows[0]["cosine"].value <= 1.0  # type: ignore[operator]
    assert not rows[1]["cosine"].ok and "source" in (rows[1]["cosine"].reason or "")


def test_one_model_load_shared_by_bertscore_and_mauve(minilm: str) -> None:
    models.release_all()
    key = ("base", minilm, "cpu")
    before = models.LOADS.get(key, 0)
    create_evaluator("bertscore").score(_requests()[:1])
    create_evaluator("bertscore:num_layers=3").score(_requests()[:1])
    mauve = create_evaluator("mauve")
    mauve.features(["one text", "another text"])  # type: ignore[attr-defined]
    assert models.LOADS[key] - before == 1


def _summeval() -> Path | None:
    root = Path(__file__).resolve().parents[2]
    for folder in (root.parent / "shared", root.parent.parent / "shared"):
        if (folder / "data" / "summeval.jsonl").is_file():
            return folder / "data" / "summeval.jsonl"
    return None


@pytest.mark.skipif(_summeval() is None,
                    reason="shared/data/summeval.jsonl is not beside the repo")
def test_cli_blindspot_run_with_bertscore_on_summeval(tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from evalstress.cli import app

    result = CliRunner().invoke(app, [
        "run", str(_summeval()), "-m", "hypothesis=highlight", "-m", "references=references",
        "--task", "summarization", "-e", "bertscore", "-p", "truncation", "--limit", "4",
        "--out", str(tmp_path / "run"), "--cache-dir", str(tmp_path / "cache"), "--quiet"])
    assert result.exit_code == 0, result.output
    saved = json.loads((tmp_path / "run" / "results.json").read_text())
    stats = saved["evaluators"]["bertscore"]["stats"]
    # 1 original + 5 severities x 5 seeds requested; truncation ignores the seed: 6 distinct
    assert stats["requested"] == 4 * 26 and stats["distinct"] == 4 * 6
    rows = {(r["evaluator"], r["aspect"], r["perturbation"])
            for r in saved["analyses"]["blindspot"]["rows"]}
    assert {a for _, a, _ in rows} == {"precision", "recall", "f"}


def _summeval_requests(shared_data: Path, count: int) -> list[ScoreRequest]:
    """Distinct damaged SummEval highlights (one word dropped, a different one each time),
    each against two human references."""
    import json

    rows = [json.loads(line) for line in
            (shared_data / "summeval.jsonl").read_text(encoding="utf-8").splitlines()[:10]]
    out = []
    for i in range(count):
        row = rows[i % len(rows)]
        words = row["highlight"].split()
        kept = words[:i // len(rows)] + words[i // len(rows) + 1:]
        out.append(ScoreRequest(" ".join(kept), references=tuple(row["references"][:2])))
    assert len({r.key for r in out}) == count
    return out


@pytest.mark.slow
def test_a_crash_mid_bertscore_keeps_every_finished_model_batch(
        shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """24 texts at model batch 4 are six model batches; a failure in the third leaves the
    first two (8 texts) in the score cache, and the resumed run scores only the other 16."""
    from evalstress.core.cache import SQLiteCache
    from evalstress.engine.scoring import Scorer
    from evalstress.evaluators.embedding import BertScore

    requests = _summeval_requests(shared_data, 24)
    evaluator = create_evaluator("bertscore:batch_size=4")
    assert evaluator.batch_size > len(requests)  # one runner call holds all 24
    cache = SQLiteCache(tmp_path / "scores.sqlite", "scores")
    calls = {"n": 0}
    real = BertScore.score_batch

    def failing(self: BertScore, batch: list[ScoreRequest]) -> list[dict[str, object]]:
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("the machine went away")
        return real(self, batch)  # type: ignore[return-value]

    monkeypatch.setattr(BertScore, "score_batch", failing)
    with pytest.raises(RuntimeError, match="went away"):
        Scorer(evaluator, cache).score(requests)
    assert cache.count(evaluator.cache_namespace) == 8
    monkeypatch.setattr(BertScore, "score_batch", real)
    resumed = Scorer(create_evaluator("bertscore:batch_size=4"), cache)
    scores = resumed.score(requests)
    assert (resumed.stats.cached, resumed.stats.scored) == (8, 16)
    fresh = create_evaluator("bertscore").score(requests)
    for request, row in zip(requests, fresh, strict=True):
        assert scores[request.key]["f"].value == pytest.approx(row["f"].value, abs=1e-5)


KILLED_RUN = """
import sys
from evalstress.core.cache import SQLiteCache
from evalstress.evaluators import create_evaluator
from evalstress.evaluators.base import ScoreRequest
from evalstress.engine.scoring import Scorer
texts, refs = sys.argv[2].split("\\x1f"), tuple(sys.argv[3].split("\\x1f"))
evaluator = create_evaluator("bertscore:batch_size=4")
Scorer(evaluator, SQLiteCache(sys.argv[1], "scores")).score(
    [ScoreRequest(t, references=refs) for t in texts])
"""


@pytest.mark.slow
def test_kill_9_during_bertscore_keeps_the_finished_batches(
        shared_data: Path, tmp_path: Path) -> None:
    """A real SIGKILL: the cache holds whole model batches of 4 from before the kill, and a
    rerun scores only the rest."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from evalstress.core.cache import SQLiteCache
    from evalstress.engine.scoring import Scorer

    base = _summeval_requests(shared_data, 1)[0]
    # 16 model batches: the kill comes after the second, fourteen before the last; the rerun
    # scores what is left of them
    texts = [f"{base.text} ({i})" for i in range(64)]
    path = tmp_path / "scores.sqlite"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    process = subprocess.Popen([sys.executable, "-c", KILLED_RUN, str(path), "\x1f".join(texts),
                                "\x1f".join(base.references)], env=env)
    cache = None
    seen = 0
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and process.poll() is None:
            if path.exists():
                cache = cache or SQLiteCache(path, "scores")
                seen = cache.count()
                if seen >= 8:
                    break
            time.sleep(0.05)
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL, "the scoring ended before it could be killed"
    kept = SQLiteCache(path, "scores").count()
    assert 8 <= seen <= kept < len(texts)
    assert kept % 4 == 0  # whole model batches only
    from evalstress.evaluators import create_evaluator as make

    resumed = Scorer(make("bertscore:batch_size=4"), SQLiteCache(path, "scores"))
    resumed.score([ScoreRequest(t, references=base.references) for t in texts])
    assert resumed.stats.cached == kept and resumed.stats.scored == len(texts) - kept
