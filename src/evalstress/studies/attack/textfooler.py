"""A greedy word-substitution attack in the style of TextFooler (Jin et al. 2020), aimed at a
regression score in either direction, as paper 004 adapts it (the search: `substitution`).

Importance is by deletion. Replacement candidates for a word, by default:
- its WordNet synonyms (same part of speech, re-inflected), and
- its nearest neighbours in the input-embedding table of the shipped MiniLM that WordNet lists
  with the same part of speech;
and the sentence similarity floor (`sim`, TextAttack's 0.84) uses MiniLM sentence embeddings.

How this differs from TextFooler itself: TextFooler takes its candidates from counter-fitted
word vectors only (the 50 nearest with cosine >= 0.5) and measures sentence similarity with the
Universal Sentence Encoder over a window around the word. Neither ships offline. Give the
counter-fitted vectors (or any word-vector file in word2vec/GloVe text format) with
`textfooler:vectors=PATH`: they become the neighbour source and WordNet synonyms are left out
(`wordnet=true` adds them back); the similarity stays MiniLM's, over the whole text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evalstress.core.text import ParsedText, rebuild_parsed
from evalstress.core.wordnet import WORDNET_POS, knows, synonyms
from evalstress.perturb.common import inflect
from evalstress.studies.attack.embeddings import EmbeddingNeighbours, VectorNeighbours
from evalstress.studies.attack.substitution import GreedySubstitution

METHOD = "textfooler"
_INFLECTED = {"NNS", "VBD", "VBZ", "VBG", "VBN", "VBP", "JJR", "JJS"}


@dataclass
class TextFooler(GreedySubstitution):
    """Settings: `sim` (sentence cosine floor, TextAttack's 0.84 by default), `neighbours` and
    `min_cos` (embedding candidates), `vectors` (a word-vector file as the neighbour source),
    `wordnet` (add WordNet synonyms; default: on without `vectors`, off with them), `start` for
    the bad direction (random or original)."""

    sim: float = 0.84
    neighbours: int = 50
    min_cos: float = 0.5
    model: str = "minilm"
    start: str = "random"
    device: str = "auto"
    vectors: str = ""
    wordnet: bool | None = None

    def __post_init__(self) -> None:
        self.method = METHOD
        self._table: EmbeddingNeighbours | VectorNeighbours | None = None
        if self.vectors:
            VectorNeighbours.check(self.vectors)  # a bad file fails before any attack
        if self.wordnet is None:
            self.wordnet = not self.vectors

    def neighbour_table(self) -> EmbeddingNeighbours | VectorNeighbours:
        if self._table is None:
            if self.vectors:
                self._table = VectorNeighbours.load(self.vectors)
            else:
                from evalstress.core import models

                loaded = models.load("base", self.model, self.device)
                self._table = EmbeddingNeighbours(loaded.model, loaded.tokenizer)
        return self._table

    def candidates(self, word: str, upos: str, tag: str) -> list[str]:
        """Synonyms (re-inflected like the word; unless `wordnet` is off) then neighbours with
        the same part of speech in WordNet; each once, never the word itself."""
        pos = WORDNET_POS.get(upos)
        if pos is None:
            return []
        base = word.lower()
        out: dict[str, None] = {}
        if self.wordnet:
            inflected = tag in _INFLECTED and upos in ("NOUN", "VERB")
            lemma = base
            if inflected:
                from lemminflect import getLemma

                lemma = (getLemma(base, upos=upos) or (base,))[0]
            for synonym in synonyms(lemma, pos):
                form = inflect(synonym, tag, upos) if inflected else synonym
                out.setdefault(form.lower(), None)
        for neighbour, _ in self.neighbour_table().neighbours(base, self.neighbours,
                                                               self.min_cos):
            if knows(neighbour, pos):
                out.setdefault(neighbour.lower(), None)
        out.pop(base, None)
        return list(out)

    def sentence_encoder(self) -> str:
        return self.model

    def importance_text(self, parsed: ParsedText, i: int) -> str:
        return rebuild_parsed(parsed, drop=[i])

    def options(self, parsed: ParsedText, i: int) -> list[str]:
        token = parsed.tokens[i]
        return self.candidates(token.text, token.pos, token.tag)

    def describe(self) -> dict[str, Any]:
        return {"neighbours": self.vectors or f"{self.model} input embeddings",
                "wordnet": self.wordnet, "sim": self.sim}
