"""The most frequent n-grams of a corpus, in memory and work that do not grow with it.

A Counter of every distinct n-gram costs about 160 bytes per n-gram: 2,000 WikiText paragraphs
hold 335,000 distinct 4-grams (53 MB); 100,000 paragraphs would hold some 16 million (~2.6 GB)
for a table of 1,000. So up to `EXACT_LIMIT` distinct n-grams are counted in a Counter, as
before; beyond, the corpus is read twice more: once to count n-grams per hash bucket (a
bucket's count bounds the count of each n-gram in it from above), then to count exactly only
the n-grams of the fullest buckets. The result is the same table, ties included. (A corpus
whose most frequent n-grams occur hardly more often than the rest ends in a full count after
all.)

Work is bounded too: a corpus of more than `SAMPLE_TEXTS` texts (a run's warm-up counts the
whole dataset's hypotheses when no corpus is given) is counted on a sample of that many texts,
drawn with a fixed seed and kept in corpus order, so the same corpus always gives the same
table and a 100,000-example run counts as much as a 20,000-example one. A frequent n-gram of
the corpus is frequent in so large a sample too; only the order of near-ties at the table's
tail can differ from a count of every text. Corpora up to `SAMPLE_TEXTS` texts (the shipped
corpus, WikiText's 2,000 paragraphs) are counted whole, as before.
"""

from __future__ import annotations

import random
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Sequence

import numpy as np

Gram = tuple[str, ...]

#: distinct n-grams counted in a plain Counter before counting switches to buckets (~16 MB)
EXACT_LIMIT = 100_000
#: hash buckets of the bucket count (a power of two; 2M counts of 4 bytes: 8 MB)
BUCKETS = 1 << 21
#: bucket indexes gathered before they are added up (8 MB)
_BATCH = 1 << 20
#: texts counted at most; a larger corpus is counted on a seeded sample of this many
SAMPLE_TEXTS = 20_000
#: the seed of that sample: fixed, so a corpus always gives the same table
SAMPLE_SEED = 0


def sample_texts(texts: Sequence[str], size: int = SAMPLE_TEXTS,
                 seed: int = SAMPLE_SEED) -> Sequence[str]:
    """`texts` itself when it holds at most `size`, else `size` of them drawn with `seed`, in
    the corpus's order (ties are ranked by first appearance)."""
    if len(texts) <= size:
        return texts
    return [texts[i] for i in sorted(random.Random(seed).sample(range(len(texts)), size))]


def top_ngrams(texts: Sequence[str], grams_of: Callable[[str], Iterable[Gram]], keep: int, *,
               exact_limit: int = EXACT_LIMIT, buckets: int = BUCKETS,
               sample: int = SAMPLE_TEXTS, seed: int = SAMPLE_SEED) -> tuple[list[Gram], bool]:
    """The `keep` most frequent n-grams of `texts` (of a seeded sample of `sample` of them,
    when there are more: `sample_texts`), most frequent first, ties in order of first
    appearance; and whether they are every distinct n-gram of the texts counted.

    `grams_of` gives a text's n-grams (what counts as a word, case, which n-grams to leave out
    is the caller's). The texts counted are read once when they hold at most `exact_limit`
    distinct n-grams (or `keep`, if larger), else three times."""
    if sample < 1:
        raise ValueError(f"sample must be at least 1 text, not {sample}")
    texts = sample_texts(texts, sample, seed)
    counts: Counter[Gram] = Counter()
    for text in texts:
        counts.update(grams_of(text))
        if len(counts) > max(exact_limit, keep):
            break
    else:
        return [gram for gram, _ in counts.most_common(keep)], len(counts) <= keep
    del counts
    if buckets & (buckets - 1):
        raise ValueError(f"buckets must be a power of two, not {buckets}")
    load = _bucket_load(texts, grams_of, buckets)
    # The keep-th fullest bucket is about the keep-th count (plus collisions); half of it,
    # rounded up, is usually below that count, and if not, halving again costs one more read
    rank = min(keep, buckets)
    threshold = max(1, -(-int(np.partition(load, -rank)[-rank]) // 2))  # half, rounded up
    mask = buckets - 1
    while True:
        hot = load >= threshold
        candidates: Counter[Gram] = Counter()
        for text in texts:
            candidates.update(gram for gram in grams_of(text) if hot[hash(gram) & mask])
        ranked = candidates.most_common(keep)  # ties in order of first appearance
        # every n-gram outside the hot buckets occurs fewer than `threshold` times: once `keep`
        # candidates reach it, they are the top `keep` of the whole corpus
        if threshold == 1 or sum(1 for _, count in ranked if count >= threshold) >= keep:
            return [gram for gram, _ in ranked], False
        threshold = max(1, -(-threshold // 2))


def _bucket_load(texts: Sequence[str], grams_of: Callable[[str], Iterable[Gram]],
                 buckets: int) -> np.ndarray:
    """How many n-grams (with repeats) fall into each hash bucket."""
    load = np.zeros(buckets, dtype=np.uint32)
    mask = buckets - 1
    batch = array("q")  # 8 bytes an index, where a list would hold a Python int each
    for text in texts:
        batch.extend(hash(gram) & mask for gram in grams_of(text))
        if len(batch) >= _BATCH:
            np.add.at(load, np.frombuffer(batch, dtype=np.int64), 1)
            batch = array("q")
    if batch:
        np.add.at(load, np.frombuffer(batch, dtype=np.int64), 1)
    return load
