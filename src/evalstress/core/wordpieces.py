"""Which vocabulary entries of a subword tokenizer are whole words, for the code that puts a
model's tokens into a text (masked-LM replacements, embedding neighbours).

Three vocabulary families mark word boundaries differently:
- WordPiece (BERT, MiniLM) marks the pieces that continue a word (`##ing`); any other entry
  starts a word;
- byte-level BPE (GPT-2, RoBERTa) marks the pieces that start a word after a space with `Ġ`
  (`Ġcar`); an unmarked entry (`car`) continues a word, as in `s|car`;
- SentencePiece (ALBERT, T5, XLM-R, DeBERTa-v3) marks word starts with `▁` (`▁car`).

Reading an entry's raw string is wrong in both marked families: `'Ġcar'.isalpha()` is True (`Ġ`
is a letter), so a check on the raw string lets the marked piece through and writes `Ġcar` into
the text, and lets continuation pieces through as if they were words; `'▁car'.isalpha()` is
False, so every SentencePiece word start is dropped. These helpers decide from the marks and
return the word as it reads in text.
"""

from __future__ import annotations

from typing import Any

#: the marks byte-level BPE (Ġ) and SentencePiece (▁) put on a word's first piece
WORD_START_MARKS = ("Ġ", "▁")


def marks_word_starts(tokenizer: Any) -> bool:
    """Whether the vocabulary marks word starts (byte-level BPE, SentencePiece) rather than
    continuations (WordPiece): the first piece of ' the' carries a mark."""
    pieces = tokenizer.convert_ids_to_tokens(
        tokenizer(" the", add_special_tokens=False)["input_ids"])
    return any(str(p).startswith(WORD_START_MARKS) for p in pieces[:2])


class Vocabulary:
    """A tokenizer's entries read as words: which start a word, and what word they spell."""

    def __init__(self, tokenizer: Any):
        self.tokenizer = tokenizer
        self.marked = marks_word_starts(tokenizer)
        self.special = frozenset(int(i) for i in tokenizer.all_special_ids)

    def whole_word(self, token_id: int) -> str | None:
        """The alphabetic word entry `token_id` spells when it starts a word, as it reads in
        text (`Ġcar` -> `car`); None for a special token, a piece that continues a word, and
        anything not made of letters."""
        if int(token_id) in self.special:
            return None
        raw = self.tokenizer.convert_ids_to_tokens(int(token_id))
        if raw is None:  # a row of a padded embedding table that no entry owns
            return None
        piece = str(raw)
        if self.marked:
            if not piece.startswith(WORD_START_MARKS):
                return None
            word = str(self.tokenizer.convert_tokens_to_string([piece])).strip()
        else:
            if piece.startswith("##"):
                return None
            word = piece
        return word if word.isalpha() else None

    def token_id(self, word: str) -> int | None:
        """The one entry that spells `word` as a whole word (its word-start form in a marked
        vocabulary: `Ġcar`, not the continuation `car`); None when the tokenizer splits the
        word into several pieces."""
        for text in ((" " + word, word) if self.marked else (word,)):
            ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
            if len(ids) == 1 and self.whole_word(ids[0]) == word:
                return int(ids[0])
        return None
