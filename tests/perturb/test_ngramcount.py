"""The frequent n-gram table: the same as a full count, in memory that does not grow."""

from __future__ import annotations

import itertools
import random
import tracemalloc
from collections import Counter
from collections.abc import Iterator

import pytest

from evalstress.perturb.ngramcount import top_ngrams


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
