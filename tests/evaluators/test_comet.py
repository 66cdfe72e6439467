"""COMET / COMET-QE / BLEURT wrappers: the real libraries when installed, else a clear skip.

unbabel-comet and bleurt-pytorch are not installable beside transformers 5 here and their
checkpoints cannot be downloaded, so the comparison with the library runs only where a user has
both (EVALSTRESS_COMET_CKPT points at a local checkpoint). The wrapper's own logic (which fields go
to the model, best reference, missing inputs) is tested with a stand-in `comet` module.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import types
from typing import Any

import pytest

from evalstress.evaluators import create_evaluator
from evalstress.evaluators.base import ScoreRequest

REQUESTS = [ScoreRequest("Der Hund bellt.", "The dog barks.",
                         ("Der Hund bellt laut.", "Ein Hund.")),
            ScoreRequest("Hallo.", "", ("Hallo!",)),
            ScoreRequest("Guten Tag.", "Good day.", ())]


@pytest.fixture
def fake_comet(monkeypatch: pytest.MonkeyPatch) -> list[list[dict[str, str]]]:
    seen: list[list[dict[str, str]]] = []

    class Model:
        def predict(self, data: list[dict[str, str]], **kwargs: Any) -> Any:
            seen.append(data)
            return types.SimpleNamespace(scores=[len(d["mt"]) / 10 + len(d.get("ref", "")) / 100
                                                 for d in data])

    module = types.ModuleType("comet")
    module.load_from_checkpoint = lambda path: Model()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "comet", module)
    return seen


def test_comet_sends_triples_and_keeps_best_reference(fake_comet: list, tmp_path: Any) -> None:
    ckpt = tmp_path / "model.ckpt"
    ckpt.write_bytes(b"weights")
    rows = create_evaluator(f"comet:model={ckpt}").score(REQUESTS)
    assert fake_comet[0] == [
        {"src": "The dog barks.", "mt": "Der Hund bellt.", "ref": "Der Hund bellt laut."},
        {"src": "The dog barks.", "mt": "Der Hund bellt.", "ref": "Ein Hund."}]
    assert rows[0]["score"].value == pytest.approx(1.5 + 0.2)
    assert "source" in (rows[1]["score"].reason or "")
    assert "references" in (rows[2]["score"].reason or "")


def test_comet_qe_sends_pairs_without_reference(fake_comet: list, tmp_path: Any) -> None:
    ckpt = tmp_path / "model.ckpt"
    ckpt.write_bytes(b"weights")
    evaluator = create_evaluator(f"comet-qe:model={ckpt}")
    rows = evaluator.score(REQUESTS)
    assert all("ref" not in d for d in fake_comet[0]) and len(fake_comet[0]) == 2
    assert rows[2]["score"].value == pytest.approx(1.0)
    assert len(evaluator.signature()["versions"]["sha256"]) == 64


def test_missing_library_and_missing_checkpoint_explain(monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Any) -> None:
    monkeypatch.setitem(sys.modules, "comet", types.ModuleType("comet"))  # installed
    with pytest.raises(ValueError, match="checkpoint"):
        create_evaluator("comet")
    monkeypatch.setitem(sys.modules, "comet", None)  # not installed
    # the missing library is named when the evaluator is made, before any work
    with pytest.raises(ImportError, match=r"pip install 'evalstress\[comet\]'"):
        create_evaluator(f"comet:model={tmp_path}")


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("comet") is None
                    or not os.environ.get("EVALSTRESS_COMET_CKPT"),
                    reason="unbabel-comet is not installed (pins clash with transformers 5) or "
                           "EVALSTRESS_COMET_CKPT names no local checkpoint")
def test_comet_equals_library_called_directly() -> None:
    from comet import load_from_checkpoint

    path = os.environ["EVALSTRESS_COMET_CKPT"]
    data = [{"src": "The dog barks.", "mt": "Der Hund bellt.", "ref": "Der Hund bellt laut."}]
    expected = load_from_checkpoint(path).predict(data, batch_size=8, gpus=0).scores[0]
    row = create_evaluator(f"comet:model={path}").score(
        [ScoreRequest("Der Hund bellt.", "The dog barks.", ("Der Hund bellt laut.",))])[0]
    assert row["score"].value == pytest.approx(expected, abs=1e-5)


@pytest.mark.skipif(importlib.util.find_spec("bleurt_pytorch") is None
                    or not os.environ.get("EVALSTRESS_BLEURT_CKPT"),
                    reason="bleurt-pytorch is not installed or EVALSTRESS_BLEURT_CKPT is unset")
def test_bleurt_equals_library_called_directly() -> None:
    import torch
    from bleurt_pytorch import BleurtForSequenceClassification, BleurtTokenizer

    path = os.environ["EVALSTRESS_BLEURT_CKPT"]
    model = BleurtForSequenceClassification.from_pretrained(path).eval()
    tokenizer = BleurtTokenizer.from_pretrained(path)
    with torch.no_grad():
        expected = float(model(**tokenizer(["A reference."], ["A candidate."],
                                           return_tensors="pt")).logits.flatten()[0])
    row = create_evaluator(f"bleurt:model={path}").score(
        [ScoreRequest("A candidate.", references=("A reference.",))])[0]
    assert row["score"].value == pytest.approx(expected, abs=1e-5)
