"""The frequent n-gram table: the same as a full count, in memory that does not grow."""

from __future__ import annotations

import itertools
import json
import random
import tracemalloc
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from evalstress.core.data import builtin_corpus
from evalstress.perturb.ngramcount import SAMPLE_TEXTS, sample_texts, top_ngrams
from tests.conftest import SHARED_DATA

WIKITEXT = SHARED_DATA / "wikitext_paragraphs.jsonl"


def bigrams(text: str) -> Iterator[tuple[str, ...]]:
    words = text.split()
    return itertools.pairwise(words)


def full_count(texts: list[str], keep: int) -> list[tuple[str, ...]]:
    """The reference: every bigram counted, ranked by count, ties by first appearance."""
    counts: dict[tuple[str, ...], int] = {}
    first: dict[tuple[str, ...], int] = {}
    for text in texts:
        for gram in bigrams(text):
            counts[gram] = counts.get(gram, 0) + 1
            first.setdefault(gram, len(first))
    return sorted(counts, key=lambda g: (-counts[g], first[g]))[:keep]


def zipf_corpus(texts: int, seed: int, vocabulary: int = 400) -> list[str]:
    """Words drawn with falling weights: a few frequent bigrams, many rare ones, many ties."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(vocabulary)]
    weights = [1 / (i + 1) for i in range(vocabulary)]
    return [" ".join(rng.choices(words, weights, k=rng.randint(3, 20))) for _ in range(texts)]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("keep", [1, 10, 150])
@pytest.mark.parametrize("buckets", [16, 1024])
def test_bucket_counting_gives_the_full_counts_table_ties_included(seed: int, keep: int,
                                                                  buckets: int) -> None:
    """A tiny exact limit forces the bucket path; 16 buckets force heavy collisions."""
    texts = zipf_corpus(300, seed)
    table, complete = top_ngrams(texts, bigrams, keep, exact_limit=50, buckets=buckets)
    assert table == full_count(texts, keep)
    assert not complete


def test_a_small_corpus_is_counted_whole_and_says_so() -> None:
    texts = ["a b a b", "b a c"]  # bigrams: (a,b) 2, (b,a) 2, (a,c) 1
    assert top_ngrams(texts, bigrams, 10) == ([("a", "b"), ("b", "a"), ("a", "c")], True)
    assert top_ngrams(texts, bigrams, 2) == ([("a", "b"), ("b", "a")], False)


def test_buckets_must_be_a_power_of_two() -> None:
    with pytest.raises(ValueError, match="power of two"):
        top_ngrams(zipf_corpus(50, 0), bigrams, 5, exact_limit=5, buckets=1000)


def test_memory_stays_small_where_a_full_count_would_grow() -> None:
    """About 100,000 distinct bigrams: a full count holds them all, the bucket count a few."""
    texts = zipf_corpus(15_000, seed=7, vocabulary=20_000)

    def peak(**limits: int) -> tuple[list[tuple[str, ...]], int]:
        tracemalloc.start()
        try:
            table, _ = top_ngrams(texts, bigrams, 50, **limits)
            return table, tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    full_table, full_peak = peak(exact_limit=10**9)
    bucket_table, bucket_peak = peak(exact_limit=5_000, buckets=1 << 16)
    assert bucket_table == full_table
    assert len(Counter(g for t in texts for g in bigrams(t))) > 100_000
    assert bucket_peak < full_peak / 5, (bucket_peak, full_peak)


def fourgrams(text: str) -> Iterator[tuple[str, ...]]:
    words = text.split()
    return zip(words, words[1:], words[2:], words[3:], strict=False)


class LazyCorpus(Sequence[str]):
    """A corpus of `size` texts made when read, counting the reads: as large as wanted without
    holding it."""

    def __init__(self, size: int):
        self.size = size
        self.reads = 0

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            raise TypeError("no slices")
        self.reads += 1
        rng = random.Random(index)
        return " ".join(f"w{int(rng.paretovariate(1.2)) % 5000}" for _ in range(12))


def test_a_large_corpus_is_counted_on_a_fixed_sample_in_bounded_memory() -> None:
    """Texts read and memory stay those of the sample whether the corpus holds 20,000 or
    400,000 texts; the same corpus gives the same table every time."""
    peaks, tables = {}, {}
    for size in (20_000, 400_000):
        corpus = LazyCorpus(size)
        tracemalloc.start()
        try:
            tables[size], complete = top_ngrams(corpus, bigrams, 50, sample=2_000,
                                                exact_limit=1_000, buckets=1 << 12)
            peaks[size] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert corpus.reads == 2_000 and not complete
        assert len(tables[size]) == 50
    assert peaks[400_000] < 1.3 * peaks[20_000], peaks
    again = LazyCorpus(400_000)
    assert top_ngrams(again, bigrams, 50, sample=2_000, exact_limit=1_000,
                      buckets=1 << 12)[0] == tables[400_000]


def test_the_sample_is_the_texts_at_a_seeded_draw_kept_in_corpus_order() -> None:
    texts = [f"t{i}" for i in range(100)]
    assert sample_texts(texts, 100) is texts  # small enough: counted whole
    picked = sample_texts(texts, 10, seed=3)
    expected = [texts[i] for i in sorted(random.Random(3).sample(range(100), 10))]
    assert list(picked) == expected
    assert sample_texts(texts, 10, seed=4) != picked
    with pytest.raises(ValueError, match="sample must be at least 1"):
        top_ngrams(texts, bigrams, 5, sample=0)


def test_a_sample_keeps_the_head_of_a_skewed_corpus() -> None:
    """A tenth of a Zipf corpus ranks its most frequent bigrams as a count of every text."""
    texts = zipf_corpus(20_000, seed=5, vocabulary=2_000)
    table, _ = top_ngrams(texts, bigrams, 5, sample=2_000)
    assert table[:1] == full_count(texts, 1)
    assert set(table[:3]) == set(full_count(texts, 3))


def test_the_shipped_corpus_and_wikitext_give_todays_table() -> None:
    """Both are within the sample's size, so counted whole: the table is a full count's."""
    hypotheses = [e.hypothesis for e in builtin_corpus()]
    corpora = [hypotheses]
    if WIKITEXT.exists():  # the shared WikiText paragraphs, where this checkout has them
        corpora.append([json.loads(line)["text"]
                        for line in WIKITEXT.read_text(encoding="utf-8").splitlines() if line])
    for texts in corpora:
        assert len(texts) <= SAMPLE_TEXTS
        table, _ = top_ngrams(texts, fourgrams, 100)
        counts = Counter(g for t in texts for g in fourgrams(t))
        first: dict[tuple[str, ...], int] = {}
        for gram in (g for t in texts for g in fourgrams(t)):
            first.setdefault(gram, len(first))
        assert table == sorted(counts, key=lambda g: (-counts[g], first[g]))[:100]
