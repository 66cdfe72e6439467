"""Character-level noise: random deletions and typos of paper 003, spelling mistakes of paper 000.

Paper 003 sets the number of edits k per dataset and level (Table 2); `severity` is "minor" or
"major" (the row's k) or a number (k itself). The product's tasks map onto the paper's as in
`DHP_TASK`: summarization uses the SummEval row (10/50) unless the `dataset` param picks
SumPubMed's (`dataset: sumpubmed`, 20/100: its texts are about twice as long), translation and
QA their own rows; dialogue, data-to-text and open-ended use the summarization values. Stories
are perturbed at one level only in the paper (k = 5): their "minor" is that level and "major"
skips with a reason (give `k: {major: N}` to plan one anyway).
"""

from __future__ import annotations

import bisect
import random
import unicodedata
from collections import Counter
from collections.abc import Callable, Mapping

from evalstress.core.params import declare, level_counts, one_of, whole_number
from evalstress.core.text import ParsedText
from evalstress.perturb.base import (
    Perturbation,
    PerturbContext,
    Severity,
    Skip,
    perturbation,
    sample_count,
)
from evalstress.perturb.common import DHP_TASK, dhp_k
from evalstress.perturb.paper000 import is_paper, spelling_mistakes

#: Paper 003, Table 2: k characters for (C, R) random deletions and random typos, per row (a
#: task, or for summarization one of its two datasets: `SUMMARIZATION_ROWS`).
CHAR_K = {
    "summarization": {"minor": 10, "major": 50},  # SummEval
    "sumpubmed": {"minor": 20, "major": 100},  # SumPubMed (scientific articles)
    "translation": {"minor": 10, "major": 50},
    "qa": {"minor": 5, "major": 25},
    "story": {"minor": 5},  # one level in the paper
}

#: The summarization datasets of Table 2 and their rows of `CHAR_K` (the `dataset` param).
SUMMARIZATION_ROWS = {"summeval": "summarization", "sumpubmed": "sumpubmed"}
DHP_LEVELS = ("minor", "major")
CHAR_DAMAGES = ("fluency", "grammaticality", "readability", "overall")
CHAR_KEEPS = ("coherence", "non-hallucination", "non-contradiction", "informativeness")

#: typo's single-error operations that act inside a word (the space ones would split words).
TYPO_OPS = ("char_swap", "missing_char", "extra_char", "nearby_char", "similar_char",
            "repeated_char")
#: the operations that write the keyboard neighbour of the character they hit
NEIGHBOUR_OPS = ("extra_char", "nearby_char")


def char_k(ctx: PerturbContext, severity: Severity, override: Mapping[str, int] | None,
           dataset: str | None = None) -> int | Skip:
    """The k of Table 2 for this example's task (a summarization text: the row of `dataset`,
    SummEval by default), or a Skip where the paper has no such level."""
    level = str(severity).strip().lower()
    task = DHP_TASK.get(ctx.example.task, "summarization")
    row = SUMMARIZATION_ROWS[dataset] if dataset and task == "summarization" else task
    if level in DHP_LEVELS and level not in CHAR_K[row] and not (override and level in override):
        only = ", ".join(f"{name} (k={k})" for name, k in CHAR_K[row].items())
        return Skip(f"paper 003 perturbs {task} characters at one level only: {only}")
    return dhp_k(ctx, severity, CHAR_K, override, row)


#: the parameters of paper 003's character perturbations: k per level, and which summarization
#: dataset's k (Table 2) a summarization text takes
CHAR_PARAMS = declare(k=level_counts(DHP_LEVELS), dataset=one_of(tuple(SUMMARIZATION_ROWS)))


def _alnum_positions(parsed: ParsedText) -> list[int]:
    return parsed.memo("alnum_positions", lambda p: [
        i for i, ch in enumerate(p.text) if ch.isalnum()])


def _word_spans(parsed: ParsedText) -> tuple[list[int], list[tuple[int, int]]]:
    """Whitespace words holding a letter or digit: (their starts, their [start, end) spans)."""

    def build(p: ParsedText) -> tuple[list[int], list[tuple[int, int]]]:
        spans, start = [], None
        text = p.text
        for i, ch in enumerate(text + " "):
            if ch.isspace():
                if start is not None and any(c.isalnum() for c in text[start:i]):
                    spans.append((start, i))
                start = None
            elif start is None:
                start = i
        return [s for s, _ in spans], spans

    return parsed.memo("word_spans", build)


def _with_typo_seed(rng: random.Random, action: Callable[[], str]) -> str:
    """Run typo code (it seeds and draws from the global `random`) without disturbing it."""
    state = random.getstate()
    try:
        return action()
    finally:
        random.setstate(state)


def typo_word(word: str, edits: int, rng: random.Random) -> str:
    """`edits` random typographical errors in one word, made by the typo package.

    typo's keyboard is English: its neighbouring keys cover a-z and 0-9, its look-alikes are
    Latin shapes. A letter it has no key for (é, ж, क) gets the typos that need no keyboard:
    swapped, dropped or repeated. A decimal digit of another script (٥, ५, ୦, full-width ５) gets
    those too, and its neighbouring key is the neighbour of its value written in its own script
    (٥ becomes ٤ or ٦: digit keys sit in the same order on every keyboard), never a Latin digit;
    it gets no look-alike.
    """
    from typo import StrErrer

    errer = StrErrer(word, seed=rng.getrandbits(32))
    for _ in range(edits):
        before = errer.result
        # an operation with nothing to act on (similar_char on a letter without a look-alike,
        # char_swap on "ll") changes nothing: draw again, so k typos are k edits
        for _attempt in range(3 * len(TYPO_OPS)):
            operation = rng.choice(TYPO_OPS)
            current = errer.result
            typed = _as_ascii_digits(current)
            if operation in NEIGHBOUR_OPS and typed != current:
                errer.result = typed  # typo's neighbour tables know the ASCII digits only
                getattr(errer, operation)()
                errer.result = _in_own_script(current, typed, errer.result)
            else:
                errer = getattr(errer, operation)()
            if errer.result != before:
                break
    return str(errer.result)


def _as_ascii_digits(text: str) -> str:
    """The text with each decimal digit of another script (Unicode Nd) as its ASCII digit."""
    return "".join(str(unicodedata.decimal(ch)) if ch.isdecimal() and not ch.isascii() else ch
                   for ch in text)


def _in_own_script(original: str, typed: str, result: str) -> str:
    """`result` (one character of `typed` replaced, or one inserted before it) with every
    character that was there before taken from `original`, and a new digit written in the
    script of the digit it was typed next to."""
    at = next((i for i, (a, b) in enumerate(zip(typed, result, strict=False)) if a != b),
              min(len(typed), len(result)))
    if at == len(result):
        return original  # nothing changed
    new, beside = result[at], original[at] if at < len(original) else ""
    if new.isdecimal() and beside.isdecimal():
        new = chr(ord(beside) - unicodedata.decimal(beside) + int(new))
    inserted = len(result) - len(typed)
    return original[:at] + new + original[at + 1 - inserted:]


def _typo_words(parsed: ParsedText, counts: Counter[int], rng: random.Random) -> str:
    """Apply `counts[w]` typos to the w-th word span and rebuild the text."""
    _, spans = _word_spans(parsed)
    text = parsed.text
    parts, last = [], 0

    def run() -> str:
        nonlocal last
        for index in sorted(counts):
            start, end = spans[index]
            parts.append(text[last:start])
            parts.append(typo_word(text[start:end], counts[index], rng))
            last = end
        parts.append(text[last:])
        return "".join(parts)

    return _with_typo_seed(rng, run).strip()


@perturbation("char-deletion")
class CharDeletion(Perturbation):
    PARAMS = CHAR_PARAMS
    family = "character"
    level = "char"
    damages = CHAR_DAMAGES
    preserves = CHAR_KEEPS
    severity_param = "k"
    grid = DHP_LEVELS
    description = ("Delete k random letters or digits; k per task of paper 003 for minor/major "
                   "(e.g. summarization 10/50, with dataset=sumpubmed 20/100), or a number.")
    source_papers = ("003",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        k = char_k(ctx, severity, self.params.get("k"), self.params.get("dataset"))
        if isinstance(k, Skip):
            return k
        positions = _alnum_positions(ctx.parsed)
        if len(positions) < 2:
            return Skip("fewer than two letters or digits to delete from")
        # never delete every character: the text must stay a text
        chosen = set(rng.sample(positions, min(k, len(positions) - 1)))
        return _delete_positions(ctx.parsed.text, sorted(chosen))


def _delete_positions(text: str, positions: list[int]) -> str:
    """The text without the characters at the sorted positions, in one pass over the gaps."""
    parts, last = [], 0
    for p in positions:
        parts.append(text[last:p])
        last = p + 1
    parts.append(text[last:])
    return "".join(parts).strip()


@perturbation("char-typo")
class CharTypo(Perturbation):
    PARAMS = CHAR_PARAMS
    family = "character"
    level = "char"
    damages = CHAR_DAMAGES
    preserves = CHAR_KEEPS
    severity_param = "k"
    grid = DHP_LEVELS
    description = ("Add k random typos with the typo package (swapped, missing, extra, "
                   "neighbouring keys; a digit of another script, such as ٥, gets a neighbour "
                   "in its own script); k per task of paper 003 for minor/major (dataset="
                   "sumpubmed: SumPubMed's 20/100 for summaries), or a number.")
    source_papers = ("003",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        k = char_k(ctx, severity, self.params.get("k"), self.params.get("dataset"))
        if isinstance(k, Skip):
            return k
        positions = _alnum_positions(ctx.parsed)
        starts, spans = _word_spans(ctx.parsed)
        if not positions or not spans:
            return Skip("no letter or digit to put a typo in")
        # typos land on random characters, so a long word is hit more often than a short one
        chosen = [positions[rng.randrange(len(positions))] for _ in range(k)]
        counts = Counter(max(0, bisect.bisect_right(starts, p) - 1) for p in chosen)
        return _typo_words(ctx.parsed, counts, rng)


@perturbation("spelling-mistake")
class SpellingMistake(Perturbation):
    SEVERITY_NAMES = ("paper",)
    PARAMS = declare(per_sentence=whole_number(1))
    family = "character"
    level = "char"
    damages = ("fluency", "grammaticality", "overall")
    preserves = ("coherence", "simplicity", "faithfulness", "non-hallucination",
                 "non-contradiction", "informativeness", "adequacy")
    grid = (0.1, 0.2, 0.3, 0.4)
    description = ("Misspell a random portion of the words, one typo each (paper 000); severity "
                   "'paper': up to 3 words of 4+ lower-case letters per sentence, each with a "
                   "repeated, dropped or swapped letter.")
    source_papers = ("000",)
    attack = "000:spelling-mistake"

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        if is_paper(severity):
            text, hit = spelling_mistakes(ctx.parsed, rng,
                                          int(self.params.get("per_sentence", 3)))
            return text if hit else Skip("no word of four or more lower-case letters")
        _, spans = _word_spans(ctx.parsed)
        text = ctx.parsed.text
        # words of three letters or more: a typo in "a" or "of" reads as another word
        eligible = ctx.parsed.memo("spelling_words", lambda p: [
            i for i, (s, e) in enumerate(spans) if sum(c.isalpha() for c in text[s:e]) >= 3])
        if not eligible:
            return Skip("no word of three or more letters to misspell")
        chosen = rng.sample(eligible, sample_count(len(eligible), float(severity), rng))
        return _typo_words(ctx.parsed, Counter(chosen), rng)
