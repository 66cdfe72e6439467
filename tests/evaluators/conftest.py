"""Fixtures: the fake OpenAI-compatible server, tiny models built from a config (no download)
and the shipped MiniLM."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalstress.core import models
from evalstress.llm.fake_server import FakeServer


def _torch() -> Any:
    """torch, imported on first use so tests that need no model never load it."""
    return pytest.importorskip("torch")


def _transformers() -> Any:
    return pytest.importorskip("transformers")


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as srv:
        yield srv


def _tokenizer() -> object:
    # the shipped MiniLM's WordPiece vocabulary (BERT uncased) serves every tiny model
    return _transformers().AutoTokenizer.from_pretrained(models.resolve_model("minilm"))


def _save(model: object, folder: Path) -> str:
    model.save_pretrained(folder)  # type: ignore[attr-defined]
    _tokenizer().save_pretrained(folder)  # type: ignore[attr-defined]
    return str(folder)


SMALL = {"vocab_size": 30522, "pad_token_id": 0}


@pytest.fixture(scope="session")
def minilm() -> str:
    return models.resolve_model("minilm")


@pytest.fixture(scope="session")
def tiny_mlm(tmp_path_factory: pytest.TempPathFactory) -> str:
    tf = _transformers()
    _torch().manual_seed(0)
    config = tf.BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                           intermediate_size=37, max_position_embeddings=64, **SMALL)
    return _save(tf.BertForMaskedLM(config).eval(), tmp_path_factory.mktemp("mlm"))


@pytest.fixture(scope="session")
def tiny_gpt(tmp_path_factory: pytest.TempPathFactory) -> str:
    tf = _transformers()
    _torch().manual_seed(1)
    config = tf.GPT2Config(n_embd=32, n_layer=2, n_head=2, n_positions=64,
                           vocab_size=30522, bos_token_id=101, eos_token_id=102)
    return _save(tf.GPT2LMHeadModel(config).eval(), tmp_path_factory.mktemp("gpt"))


@pytest.fixture(scope="session")
def tiny_bart(tmp_path_factory: pytest.TempPathFactory) -> str:
    tf = _transformers()
    _torch().manual_seed(2)
    config = tf.BartConfig(d_model=32, encoder_layers=1, decoder_layers=1,
                           encoder_attention_heads=2, decoder_attention_heads=2,
                           encoder_ffn_dim=37, decoder_ffn_dim=37, max_position_embeddings=64,
                           bos_token_id=101, eos_token_id=102, decoder_start_token_id=102,
                           forced_eos_token_id=102, **SMALL)
    return _save(tf.BartForConditionalGeneration(config).eval(), tmp_path_factory.mktemp("bart"))


def _tiny_classifier(folder: Path, num_labels: int) -> str:
    tf = _transformers()
    _torch().manual_seed(3)
    config = tf.BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                           intermediate_size=37, max_position_embeddings=64,
                           num_labels=num_labels, **SMALL)
    if num_labels > 1:
        config.id2label = {i: f"class{i}" for i in range(num_labels)}
        config.label2id = {v: k for k, v in config.id2label.items()}
    return _save(tf.BertForSequenceClassification(config).eval(), folder)


@pytest.fixture
def tiny_classifier(tmp_path: Path) -> object:
    """Build a tiny classifier with `num_labels` outputs (1 = regression head)."""
    return lambda num_labels: _tiny_classifier(tmp_path / f"cls{num_labels}", num_labels)
