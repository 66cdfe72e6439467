"""Tiny masked LMs on the two vocabulary families that mark word starts, built in the tests (no
download): a byte-level BPE trained on a few sentences (pieces `Ġtruck`, continuation `truck`)
and a SentencePiece-style Unigram vocabulary written by hand (`▁truck`, `truck`).

The models are rigged so the expected output can be worked out by hand:
- the masked-LM head ignores the text: at every position its logits are the output bias, which
  ranks the continuation piece `car` first, then the word start of `bus`, then `.`, then the
  word start of `van`, then that of `truck`; every other entry scores 0. So the top whole words
  at a masked `truck` are `bus` and `van`, in that order.
- the input embeddings are zero except for a few rows: the word start of `truck` points along
  (1, 0); its continuation piece along (1, 0.01) (the nearest row of all), `.` along (1, 0.2),
  the word start of `lorry` along (1, 0.5) (cosine 0.894) and that of `wagon` along (1, 1)
  (cosine 0.707). So the two nearest whole words of `truck` are `lorry` and `wagon`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

FAMILIES = ("byte-level-bpe", "sentencepiece")
MARK = {"byte-level-bpe": "Ġ", "sentencepiece": "▁"}
SPECIAL = ["<pad>", "<unk>", "<s>", "</s>", "<mask>"]
WORDS = ("the", "truck", "car", "bus", "van", "lorry", "wagon", "stopped", "road")

_SENTENCES = [
    "the truck stopped on the road", "the car and the bus and the van",
    "the lorry and the wagon stopped", "the minitruck and the sidecar and the minibus",
    "truck", "car", "bus", "van", "lorry", "wagon", "stopped", "road",
]


def _byte_level_bpe() -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=SPECIAL, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(_SENTENCES * 5, trainer)
    return tokenizer


def _sentencepiece_unigram() -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    vocab = [(s, 0.0) for s in SPECIAL] + [("▁", -4.0), (".", -5.0), (",", -5.0)]
    vocab += [(c, -10.0) for c in "abcdefghijklmnopqrstuvwxyz"]
    vocab += [("▁" + w, -2.0) for w in WORDS] + [(w, -3.0) for w in ("truck", "car", "bus")]
    tokenizer = Tokenizer(models.Unigram(vocab, unk_id=1, byte_fallback=False))
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
    tokenizer.decoder = decoders.Metaspace()
    return tokenizer


def build_masked_lm(folder: Path, family: str) -> str:
    """Save the rigged masked LM of `family` with its tokenizer in `folder`; return the path."""
    import torch
    import transformers

    raw = _byte_level_bpe() if family == "byte-level-bpe" else _sentencepiece_unigram()
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=raw, pad_token="<pad>", unk_token="<unk>", bos_token="<s>",
        eos_token="</s>", mask_token="<mask>", cls_token="<s>", sep_token="</s>")
    vocab = tokenizer.get_vocab()
    mark = MARK[family]
    needed = [mark + w for w in WORDS] + ["truck", "car", "bus", "."]
    missing = [p for p in needed if p not in vocab]
    assert not missing, f"the {family} vocabulary lacks {missing}"
    config = transformers.BertConfig(vocab_size=len(vocab), hidden_size=8, num_hidden_layers=1,
                                     num_attention_heads=2, intermediate_size=16,
                                     max_position_embeddings=64, pad_token_id=vocab["<pad>"])
    model = transformers.BertForMaskedLM(config).eval()
    with torch.no_grad():
        head = model.cls.predictions
        head.transform.dense.weight.zero_()  # the head's input is 0 whatever the text ...
        head.transform.dense.bias.zero_()
        head.transform.LayerNorm.bias.zero_()
        head.bias.zero_()  # ... so its logits are this bias
        for rank, piece in enumerate(["car", mark + "bus", ".", mark + "van", mark + "truck"]):
            head.bias[vocab[piece]] = 10.0 - rank
        table = model.get_input_embeddings().weight
        table.zero_()
        for piece, (x, y) in {mark + "truck": (1.0, 0.0), "truck": (1.0, 0.01), ".": (1.0, 0.2),
                              mark + "lorry": (1.0, 0.5), mark + "wagon": (1.0, 1.0)}.items():
            table[vocab[piece], 0], table[vocab[piece], 1] = x, y
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)
