"""The fuzz properties of the perturbations and the texts they are fuzzed with, in one place.

tests/perturb/test_fuzz.py checks them on a fixed, derandomized draw in every test run;
bench/bench_fuzz.py runs them with fresh randomness and many more examples before a release.
"""

from __future__ import annotations

import signal
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager

from hypothesis import strategies as st

from evalstress.core.text import TextParser
from evalstress.perturb.base import Skip, Variant, get_perturbation, registry
from tests.perturb.conftest import GOLDEN_META, GOLDEN_POOL, make_ctx

RULES = sorted(name for name, cls in registry().items() if cls.method == "rule")
LLM = sorted(name for name, cls in registry().items() if cls.method == "llm")

#: words and marks of real texts, English first, then the characters that tripped a library
#: underneath once: digits of other scripts, scripts written right to left or without spaces,
#: combining marks, emoji sequences, full-width forms, ligatures, the Turkish i's, astral
#: letters, control and format characters
PIECES = ["the", "cat", "Maria", "Lisbon", "sat", "not", "was", "and", "but", "running", ".",
          ",", "!", "?", "...", "(", ")", '"', "'s", "—", "\n", "\n\n", "  ", "\t", "\u200b",
          "Émile", "東京", "🙂", "Dr.", "U.S.", "ﬁ", "İ", "2024", "3.5", "New York", "Monday",
          "२०२४", "٥", "۱۲", "୦", "５", "𝟓", "๕", "किताब", "كتاب", "שלום", "ไทย", "한국어",
          "Москва", "Αθήνα", "ı", "ß", "ǅ", "e\u0301", "\u0301", "👨\u200d👩\u200d👧",
          "👋🏽", "🇵🇹", "Ｍａｒｉａ", "𝐌𝐚𝐫𝐢𝐚", "\x00", "\x1b", "\u202e", "\ufeff", "\x85"]

#: single characters of the Unicode classes above, drawn from every code point of the class
HOSTILE = st.characters(categories=["Nd", "No", "Nl", "Mn", "Mc", "Me", "Cc", "Cf", "So",
                                    "Lo", "Lm", "Lt"])

texts = st.one_of(
    st.text(max_size=200),  # any Unicode, control characters and lone combining marks included
    st.lists(st.sampled_from(PIECES), max_size=60).map(" ".join),
    st.lists(st.sampled_from(PIECES), max_size=60).map("".join),
    # real words with hostile characters inside them and between them
    st.lists(st.sampled_from(PIECES) | st.text(HOSTILE, min_size=1, max_size=3)
             | st.builds("".join, st.lists(st.sampled_from(PIECES) | HOSTILE, min_size=2,
                                           max_size=4)),
             max_size=40).map(" ".join),
)

#: every decimal digit of Unicode (category Nd), a string of ten per script
DIGIT_RUNS = ["".join(chr(ord(zero) + i) for i in range(10))
              for zero in map(chr, range(0x110000))
              if unicodedata.category(zero) == "Nd" and unicodedata.decimal(zero) == 0]

#: a sentence of each class of text a perturbation may meet beside English, written by hand
SCRIPT_SAMPLES = {
    "digits of every script": " ".join(DIGIT_RUNS),
    "Devanagari": "राम ने २०२४ में ५ किताबें खरीदीं।",
    "Arabic, right to left": "اشترى أحمد ٥ كتب في عام ٢٠٢٤.",
    "Persian digits": "او ۱۲ سیب خرید.",
    "Hebrew, right to left": "הוא קנה 5 ספרים בשנת 2024.",
    "Thai, no spaces": "เขาซื้อหนังสือ ๕ เล่ม ในปี ๒๕๖๗",
    "CJK with full-width digits": "東京で５冊の本を買った。二〇二四年。",
    "Hangul": "그는 2024년에 책 다섯 권을 샀다.",
    "Cyrillic": "Мария купила 5 книг в Москве в понедельник.",
    "Greek": "Η Μαρία αγόρασε 5 βιβλία στην Αθήνα.",
    "Oriya": "ସେ ୫ଟି ବହି କିଣିଲେ ୨୦୨୪ ରେ।",
    "combining marks": "cafe\u0301 n\u0303 a\u0300\u0301\u0302 \u0301lone e\u20dd.",
    "emoji with ZWJ and skin tones": "The family 👨\u200d👩\u200d👧\u200d👦 waved 👋🏽 🏳️\u200d🌈 🇵🇹.",
    "full-width forms": "Ｍａｒｉａ ｂｏｕｇｈｔ ５ ｏｒａｎｇｅｓ ｏｎ Ｍｏｎｄａｙ．",
    "ligatures and digraphs": "The ﬁrst ﬂight left the oﬃce; Ǆ ǅ ǆ ß ẞ.",
    "dotted and dotless i": "İstanbul ıslak İİ ı I i. DİYARBAKIR is in Türkiye.",
    "astral letters and digits": "𝐌𝐚𝐫𝐢𝐚 went 𝟓 times 𐍈 𝒜 to 𓀀 Lisbon 🀄.",
    "control and format characters": "Maria\x00 drove\x07 to\x1b the\x7f market\u202e in\u200d "
                                     "Lisbon\ufeff.\x85",
    "superscripts, fractions, numerals": "x² + y³ = z¹ ½ ⅓ ① ⑽ Ⅻ ⅻ.",
}

#: English around the sample, the same sentence on both sides (a repeated sentence is a class
#: of its own: sentence-reordering once drew its two copies forever)
ENGLISH = "Maria drove to the market on Monday. She paid 2 euros, but the shop was not open."


def in_english(sample: str) -> str:
    return f"{ENGLISH} {sample} {ENGLISH}"


def check_rule(name: str, text: str, severity: object, seed: int,
               parser: TextParser | None = None) -> Variant | Skip:
    """A rule perturbation answers a text with a changed Variant or a Skip that says why."""
    ctx = make_ctx(text, pool=GOLDEN_POOL, source="A source text.", meta=GOLDEN_META,
                   parser=parser)
    result = get_perturbation(name).apply(ctx, severity, seed)  # type: ignore[arg-type]
    assert isinstance(result, Variant | Skip), (name, severity, result)
    if isinstance(result, Variant):
        assert result.text != text  # an unchanged text is a Skip, never a Variant
    else:
        assert result.reason.strip()  # a Skip says why
    return result


def check_rule_grid(name: str, text: str, seed: int, parser: TextParser | None = None) -> None:
    """`check_rule` at every severity of the perturbation's grid."""
    for severity in registry()[name].grid:
        check_rule(name, text, severity, seed, parser)


def check_attack_prompt(name: str, text: str) -> None:
    """LLM attacks never run `apply` (the generation stage asks the model): their prompt
    holds the text whatever it is."""
    attack = get_perturbation(name)
    messages = attack.messages(text, "summarization", attack.grid[0])  # type: ignore[attr-defined]
    assert messages and all(isinstance(m["content"], str) for m in messages)


def check_attack_validation(name: str, original: str, answer: str, parser: TextParser) -> None:
    """The generation stage checks whatever a model answers against the original: a rejection
    with its reason, or acceptance, never an exception."""
    from evalstress.perturb.llm_checks import Rejection, validate

    parsed = parser.parse(original)
    spec = get_perturbation(name).spec  # type: ignore[attr-defined]
    for severity in spec.grid:
        verdict = validate(parsed, answer, spec.resolve(severity), parser)
        assert verdict is None or (isinstance(verdict, Rejection) and verdict.detail)


@contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    """A TimeoutError where the block runs longer than `seconds` (SIGALRM, main thread only):
    a perturbation that loops forever fails its example instead of stalling the run."""

    def stop(_signum: int, _frame: object) -> None:
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
