"""Word neighbours in a model's input-embedding table or a word-vector file, and sentence
similarity, for the greedy word-substitution attacks (TextFooler-style, paper 002 appendix J).
Default model: the shipped MiniLM."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evalstress.core.wordpieces import Vocabulary


class EmbeddingNeighbours:
    """The k nearest whole-word tokens of a word by cosine in the input-embedding table.

    Words the tokenizer splits into several pieces have no neighbours (their meaning lives in no
    single row of the table). A word is looked up by its word-start entry and only word-start
    entries are neighbours, in WordPiece, byte-level BPE and SentencePiece vocabularies alike
    (`core.wordpieces`), each returned as it reads in text."""

    def __init__(self, model: Any, tokenizer: Any):
        import torch

        weight = model.get_input_embeddings().weight.detach().float()
        self._table = torch.nn.functional.normalize(weight, dim=-1)
        self._vocabulary = Vocabulary(tokenizer)
        self.neighbours = functools.lru_cache(maxsize=20_000)(self._neighbours)

    def token_id(self, word: str) -> int | None:
        return self._vocabulary.token_id(word)

    def _neighbours(self, word: str, k: int, min_cos: float = 0.0) -> tuple[tuple[str, float], ...]:
        import torch

        token = self.token_id(word.lower()) if word.lower() != word else self.token_id(word)
        if token is None:
            return ()
        sims = self._table @ self._table[token]
        found: list[tuple[str, float]] = []
        for index in torch.argsort(sims, descending=True).tolist():
            if len(found) == k or float(sims[index]) < min_cos:
                break
            if index == token:
                continue
            neighbour = self._vocabulary.whole_word(index)
            if neighbour is None or neighbour.lower() == word.lower():
                continue
            found.append((neighbour, float(sims[index])))
        return tuple(found)


class VectorNeighbours:
    """The k nearest words by cosine in a word-vector file: word2vec/GloVe text format, one word
    and its numbers per line, an optional first line 'COUNT DIM' (the counter-fitted vectors
    TextFooler uses come this way). Loaded once per process and file."""

    def __init__(self, words: Sequence[str], vectors: Any):
        import numpy as np

        self.words = list(words)
        self.index = {w: i for i, w in enumerate(self.words)}
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        self._table = vectors / np.where(norms == 0, 1.0, norms)
        self.neighbours = functools.lru_cache(maxsize=20_000)(self._neighbours)

    @staticmethod
    def check(path: str) -> None:
        if not Path(path).is_file():
            raise ValueError(f"word vectors {path}: no such file (give a word2vec/GloVe text "
                             "file: a word and its numbers per line)")

    @classmethod
    def load(cls, path: str) -> VectorNeighbours:
        """The table of a file, read once per process."""
        return _load_vectors(path)

    @classmethod
    def read(cls, path: str) -> VectorNeighbours:
        import numpy as np

        cls.check(path)
        words: list[str] = []
        rows: list[list[float]] = []
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                parts = line.rstrip("\n").split(" ")
                if number == 1 and len(parts) == 2 and all(p.isdigit() for p in parts):
                    continue  # the word2vec header
                if not line.strip():
                    continue
                try:
                    values = [float(p) for p in parts[1:] if p]
                except ValueError:
                    raise ValueError(f"{path}, line {number}: a word vector must be a word and "
                                     "numbers separated by spaces") from None
                if rows and len(values) != len(rows[0]):
                    raise ValueError(f"{path}, line {number}: {len(values)} numbers where the "
                                     f"first vector has {len(rows[0])}")
                if not values:
                    raise ValueError(f"{path}, line {number}: '{parts[0]}' has no numbers")
                words.append(parts[0])
                rows.append(values)
        if not rows:
            raise ValueError(f"{path}: no word vectors in the file")
        return cls(words, np.asarray(rows, dtype=np.float32))

    def _neighbours(self, word: str, k: int, min_cos: float = 0.0) -> tuple[tuple[str, float], ...]:
        import numpy as np

        row = self.index.get(word, self.index.get(word.lower()))
        if row is None:
            return ()
        sims = self._table @ self._table[row]
        found: list[tuple[str, float]] = []
        for index in np.argsort(-sims, kind="stable").tolist():
            if len(found) == k or float(sims[index]) < min_cos:
                break
            if index == row or self.words[index].lower() == word.lower():
                continue
            found.append((self.words[index], float(sims[index])))
        return tuple(found)


@functools.lru_cache(maxsize=2)
def _load_vectors(path: str) -> VectorNeighbours:
    return VectorNeighbours.read(path)


class SentenceSimilarity:
    """Cosine similarity of sentence embeddings (sentence-transformers), memoized per text."""

    def __init__(self, model: str = "minilm", device: str = "auto"):
        self.model_name, self.device = model, device
        self._memo: dict[str, Any] = {}

    def _encode(self, texts: Sequence[str]) -> None:
        from evalstress.core import models

        todo = [t for t in dict.fromkeys(texts) if t not in self._memo]
        if todo:
            loaded = models.load("st", self.model_name, self.device)
            vectors = loaded.model.encode(todo, normalize_embeddings=True,
                                          convert_to_numpy=True, show_progress_bar=False)
            for text, vector in zip(todo, vectors, strict=True):
                self._memo[text] = vector
            if len(self._memo) > 50_000:
                self._memo.clear()

    def __call__(self, anchor: str, texts: Sequence[str]) -> list[float]:
        self._encode([anchor, *texts])
        base = self._memo[anchor]
        return [float(base @ self._memo[t]) for t in texts]
