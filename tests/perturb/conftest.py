"""A tiny masked LM built from a config (no download) with the shipped MiniLM vocabulary."""

from __future__ import annotations

import pytest

from evalstress.evaluators import models


@pytest.fixture(scope="session")
def tiny_mlm_for_perturb(tmp_path_factory: pytest.TempPathFactory) -> str:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=37, max_position_embeddings=128,
                                     vocab_size=30522, pad_token_id=0)
    folder = tmp_path_factory.mktemp("mlm")
    transformers.BertForMaskedLM(config).eval().save_pretrained(folder)
    transformers.AutoTokenizer.from_pretrained(models.resolve_model("minilm")).save_pretrained(
        folder)
    return str(folder)
