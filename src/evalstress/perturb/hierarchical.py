"""Rule-based word and sentence perturbations of paper 003 (DHP) and of paper 000.

Paper 003 grades each perturbation minor/major (Table 2): k continuous words deleted (5/25; the
paper defines it for translation only, and the `dhp` suite plans it there; other tasks get the
same k if a suite asks), sentence reordering (2 sentences / all of them); the replacements of
the ending (stories) and of the whole answer (QA) come in one degree only (Tables 1-2), severity
`default`. Paper 000 builds four aspect-targeted attacks by rule: sentence exchange (coherence),
word exchange (grammaticality), spelling mistake (in `characters`) and sentence deletion
(informativeness); severity `paper` applies each exactly as that paper's code does (see
`paper000`).
"""

from __future__ import annotations

import random

from evalstress.core.params import TEXT, declare, level_counts, one_of
from evalstress.core.text import ParsedText, rebuild_parsed
from evalstress.perturb.base import Perturbation, PerturbContext, Severity, Skip, perturbation
from evalstress.perturb.common import (
    DEFAULT_LEVEL,
    dhp_k,
    nonempty_sentences,
    sentence_words,
    word_indices,
)
from evalstress.perturb.consistency import other_text
from evalstress.perturb.paper000 import count_severity, is_paper, word_exchange

#: Paper 003, Table 2: k continuous words for (W, R) random deletions.
WORD_K = {task: {"minor": 5, "major": 25}
          for task in ("summarization", "translation", "qa", "story")}

DHP_LEVELS = ("minor", "major")
ORDER_DAMAGES = ("coherence", "readability", "overall")
ORDER_KEEPS = ("fluency", "grammaticality", "non-hallucination", "informativeness")
REPLACE_DAMAGES = ("coherence", "faithfulness", "non-hallucination", "non-contradiction",
                   "adequacy", "overall")


def _reorder(sentences: list[str], order: list[int]) -> str:
    return " ".join(sentences[i] for i in order)


@perturbation("word-span-deletion")
class WordSpanDeletion(Perturbation):
    PARAMS = declare(k=level_counts(DHP_LEVELS))
    family = "hierarchical"
    level = "word"
    damages = ("fluency", "grammaticality", "informativeness", "readability", "adequacy",
               "overall")
    preserves = ("non-hallucination", "non-contradiction")
    severity_param = "k"
    grid = DHP_LEVELS
    description = "Delete k continuous words at a random place (paper 003: 5 minor, 25 major)."
    source_papers = ("003",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        k = dhp_k(ctx, severity, WORD_K, self.params.get("k"))
        words = word_indices(ctx.parsed)
        if len(words) <= k:
            return Skip(f"{len(words)} words: deleting {k} continuous words would leave nothing")
        first = rng.randrange(len(words) - k + 1)
        drop = range(words[first], words[first + k - 1] + 1)
        text = rebuild_parsed(ctx.parsed, drop=drop)
        if first == 0:  # the text now starts where the span ended: no stray ", but ..."
            text = text.lstrip(" ,;:.!?")
            text = text[:1].upper() + text[1:]
        return text


@perturbation("sentence-reordering")
class SentenceReordering(Perturbation):
    family = "hierarchical"
    level = "sentence"
    damages = ORDER_DAMAGES
    preserves = ORDER_KEEPS
    severity_param = "k"
    grid = DHP_LEVELS
    description = "Shuffle k sentences: two for minor, all of them for major (paper 003)."
    swap_type = True
    source_papers = ("003",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        sentences = nonempty_sentences(ctx.parsed)
        n = len(sentences)
        if n < 2 or len(set(sentences)) < 2:
            return Skip("fewer than two different sentences to reorder")
        k = n if severity == "major" else min(n, 2 if severity == "minor" else int(severity))
        if k < 2:
            raise ValueError(f"severity {severity!r}: at least 2 sentences must move")
        order = list(range(n))
        picked = sorted(rng.sample(range(n), k))
        # k sentences of one text (a repeated line) cannot be reordered: draw again, until two
        # of them differ (the text holds two different sentences, so some draw has them)
        while len({sentences[i] for i in picked}) < 2:
            picked = sorted(rng.sample(range(n), k))
        moved = list(picked)
        while [sentences[i] for i in moved] == [sentences[i] for i in picked]:
            rng.shuffle(moved)
        for slot, src in zip(picked, moved, strict=True):
            order[slot] = src
        return _reorder(sentences, order)


@perturbation("random-ending")
class RandomEnding(Perturbation):
    family = "hierarchical"
    level = "sentence"
    damages = REPLACE_DAMAGES
    preserves = ("fluency", "grammaticality")
    severity_param = "level"
    grid = (DEFAULT_LEVEL,)  # one degree in paper 003 (no minor/major)
    description = "Replace the last sentence by the last sentence of another example of the task."
    source_papers = ("003",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        sentences = nonempty_sentences(ctx.parsed)
        if not sentences:
            return Skip("no sentence to replace")
        ending = ""
        for _ in range(8):
            text = other_text(ctx, rng)
            if text is None:
                return Skip(f"no other '{ctx.example.task}' example in the pool to take an "
                            "ending from")
            last = nonempty_sentences(ctx.parser.parse(text))
            if last and last[-1] != sentences[-1]:
                ending = last[-1]
                break
        if not ending:
            return Skip("the other examples have no different ending")
        return " ".join([*sentences[:-1], ending])


@perturbation("random-answer")
class RandomAnswer(Perturbation):
    family = "hierarchical"
    level = "sentence"
    damages = (*REPLACE_DAMAGES, "informativeness")
    preserves = ("fluency", "grammaticality")
    severity_param = "level"
    grid = (DEFAULT_LEVEL,)  # one degree in paper 003 (no minor/major)
    description = "Replace the whole answer by the answer of another example of the same task."
    source_papers = ("003",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        other = other_text(ctx, rng)
        if other is None:
            return Skip(f"no other '{ctx.example.task}' example in the pool to take an answer from")
        return other.strip()


@perturbation("wrong-ending")
class WrongEnding(Perturbation):
    PARAMS = declare(field=TEXT, replace=one_of(("last", "all")))
    family = "hierarchical"
    level = "sentence"
    damages = REPLACE_DAMAGES
    preserves = ("fluency", "grammaticality")
    severity_param = "level"
    grid = (DEFAULT_LEVEL,)  # one degree in paper 003 (no minor/major)
    description = ("Replace the ending by the dataset's wrong ending (meta.wrong_ending), or the "
                   "answer by meta.wrong_answer (params: field, replace=last|all).")
    source_papers = ("003",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        meta = ctx.example.meta
        field = self.params.get("field")
        fields = [str(field)] if field else ["wrong_ending", "wrong_answer"]
        name = next((f for f in fields if isinstance(meta.get(f), str) and meta[f].strip()), None)
        if name is None:
            return Skip(f"the example has no {' or '.join('meta.' + f for f in fields)} text")
        wrong = str(meta[name]).strip()
        replace = self.params.get("replace") or ("all" if "answer" in name else "last")
        if replace == "all":
            return wrong
        if replace != "last":
            raise ValueError(f"wrong-ending: replace must be 'last' or 'all', not '{replace}'")
        sentences = nonempty_sentences(ctx.parsed)
        return " ".join([*sentences[:-1], wrong])


@perturbation("sentence-exchange")
class SentenceExchange(Perturbation):
    SEVERITY_NAMES = ("paper",)
    family = "aspect"
    level = "sentence"
    damages = ORDER_DAMAGES
    preserves = ("fluency", "grammaticality", "simplicity", "faithfulness", "non-hallucination",
                 "non-contradiction", "informativeness", "adequacy")
    severity_param = "pairs"
    grid = (1, 2)
    description = ("Exchange the places of random pairs of sentences (paper 000, coherence "
                   "attack); severity 'paper': a random full permutation, as its code does.")
    swap_type = True
    source_papers = ("000",)
    attack = "000:sentence-exchange"

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        sentences = nonempty_sentences(ctx.parsed)
        n = len(sentences)
        if n < 2 or len(set(sentences)) < 2:
            return Skip("fewer than two different sentences to exchange")
        if is_paper(severity):
            # paper 000: every sentence goes to a random place; redrawn until the order changed
            order = rng.sample(range(n), n)
            while [sentences[i] for i in order] == sentences:
                order = rng.sample(range(n), n)
            return _reorder(sentences, order)
        order = list(range(n))
        free = list(range(n))
        rng.shuffle(free)
        for _ in range(min(count_severity(self, severity), n // 2)):
            i, j = free.pop(), free.pop()
            order[i], order[j] = order[j], order[i]
        if [sentences[i] for i in order] == sentences:
            i, j = rng.sample(range(n), 2)
            order[i], order[j] = order[j], order[i]
        return _reorder(sentences, order)


@perturbation("word-exchange")
class WordExchange(Perturbation):
    SEVERITY_NAMES = ("paper",)
    family = "aspect"
    level = "word"
    damages = ("fluency", "grammaticality", "readability", "overall")
    preserves = ("coherence", "simplicity", "faithfulness", "non-hallucination",
                 "non-contradiction", "informativeness", "adequacy")
    severity_param = "per_sentence"
    grid = (1, 3, 5)
    description = ("Exchange k pairs of neighbouring words in every sentence (paper 000); "
                   "severity 'paper': one pair in sentences of 6-9 words, one per half from 10 "
                   "words, none in shorter ones, lower-case words only.")
    swap_type = True
    source_papers = ("000",)
    attack = "000:word-exchange"

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        if is_paper(severity):
            exchanged = word_exchange(ctx.parsed, rng)
            return exchanged if exchanged is not None else Skip(
                "no sentence of more than 5 words with two neighbouring lower-case words")
        per_sentence = count_severity(self, severity)
        tokens = ctx.parsed.tokens
        rows = ctx.parsed.memo("word_exchange", lambda p: [
            (row, starts) for row in sentence_words(p) if (starts := _exchangeable(p, row))])
        if not rows:
            return Skip("no sentence with two neighbouring words to exchange")
        replacements: dict[int, str] = {}
        for row, found in rows:
            starts = list(found)
            rng.shuffle(starts)
            used: set[int] = set()
            done = 0
            for j in starts:
                if done == per_sentence:
                    break
                if j in used or j + 1 in used:
                    continue
                a, b = row[j], row[j + 1]
                replacements[a], replacements[b] = tokens[b].text, tokens[a].text
                used.update((j, j + 1))
                done += 1
        return rebuild_parsed(ctx.parsed, replacements)


def _exchangeable(parsed: ParsedText, row: list[int]) -> list[int]:
    """Positions j in a sentence's words where words j and j+1 may trade places.

    Both must stand apart from what follows them (a clitic such as n't glued to its host would
    glue onto the other word), and they must differ.
    """
    tokens = parsed.tokens
    last = len(tokens) - 1

    def free(i: int) -> bool:
        after = bool(tokens[i].ws) or i == last or tokens[i + 1].is_punct
        before = i == 0 or bool(tokens[i - 1].ws) or tokens[i - 1].is_punct
        return after and before

    return [j for j in range(len(row) - 1)
            if tokens[row[j]].text != tokens[row[j + 1]].text
            and free(row[j]) and free(row[j + 1]) and row[j + 1] == row[j] + 1]


@perturbation("sentence-deletion")
class SentenceDeletion(Perturbation):
    SEVERITY_NAMES = ("paper",)
    family = "aspect"
    level = "sentence"
    damages = ("informativeness", "adequacy", "overall")
    preserves = ("fluency", "grammaticality", "coherence", "simplicity", "readability",
                 "faithfulness", "non-hallucination", "non-contradiction")
    severity_param = "sentences"
    grid = (1, 2)
    description = ("Delete k random sentences, never all of them (paper 000, informativeness); "
                   "severity 'paper': delete the last sentence.")
    source_papers = ("000",)
    attack = "000:sentence-deletion"

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        sentences = nonempty_sentences(ctx.parsed)
        if is_paper(severity):
            if len(sentences) < 2:
                return Skip("one sentence: deleting the last would leave nothing")
            return " ".join(sentences[:-1])
        k = count_severity(self, severity)
        if len(sentences) <= k:
            return Skip(f"{len(sentences)} sentence(s): deleting {k} would leave nothing")
        gone = set(rng.sample(range(len(sentences)), k))
        return " ".join(s for i, s in enumerate(sentences) if i not in gone)
