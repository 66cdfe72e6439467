"""Paper 002's SummEval points for sentence switching and generic entities: its code's rules
beside evalstress's `--protocol paper`, each as plotted (five seeds) and as expected.

The code (cloudygoose/blindspot_nlg, sum_mt/sanity_transform.py and transform_utils.py) damages
its tokenized highlights (`sum_mt/SUM/SummEval/data.pkl` there; pass that file) and plots, per
severity, the mean over its seeds 1-5 of the mean noise ratio over all 100 highlights, each seed
one `random` stream walked through the highlights in order. This script re-runs both rules that
way, with two stand-ins: Punkt with the abbreviations these highlights need instead of NLTK's
trained English model (not available offline), and en_core_web_sm's entities instead of
en_core_web_trf's. Sentence switching's expected values are exact (every draw enumerated);
generic entities' are means over `--seeds` seeds. The code takes its entity labels in a set's
order, which Python salts per process, so its generic-entity points move in the fourth decimal
from run to run. docs/reproductions.md reports the output (about 8 minutes on two busy cores).

    python bench/paper002_summeval_points.py --code-data data.pkl --data ../shared/data/summeval.jsonl
"""

from __future__ import annotations

import argparse
import itertools
import json
import pickle
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer
from rapidfuzz.distance import Levenshtein

from evalstress.core.data import Example
from evalstress.core.text import TextParser, load_spacy, treebank_units
from evalstress.perturb.base import PerturbContext, Skip, get_perturbation
from evalstress.perturb.common import nonempty_sentences

_PARAMS = PunktParameters()
_PARAMS.abbrev_types = {"st", "u.s"}
PUNKT = PunktSentenceTokenizer(_PARAMS)
#: the code's generic phrases: (articles drawn from, noun)
GENERIC = {"FAC": (["some", "a"], "place"), "GPE": (["some", "a"], "place"),
           "LOC": (["some", "a"], "place"), "ORG": (["some", "an"], "organization"),
           "PERSON": (["some", "a"], "person"), "PRODUCT": (["some", "a"], "product")}


class _PlainData(pickle.Unpickler):
    """The code's data file holds dicts, lists, strings and numbers only: anything else is
    refused rather than run."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"{module}.{name} is not plain data")


def ratio(new: str, old: str, half: bool) -> float:
    """The code's edit ratio: Levenshtein over whitespace words / words, halved for switches."""
    value = Levenshtein.distance(new.split(), old.split()) / len(old.split())
    return value / 2 if half else value


def code_switch(line: str, pairs: int, rng: random.Random) -> str:
    sents = PUNKT.tokenize(line)
    if len(sents) <= 2:
        return " ".join(reversed(sents))
    last: tuple[int, int] | None = None
    done = 0
    while done < pairs:
        i, j = rng.sample(range(len(sents)), k=2)
        if last not in ((i, j), (j, i)):
            sents[i], sents[j] = sents[j], sents[i]
            last, done = (i, j), done + 1
    return " ".join(sents)


def code_generic(line: str, prob: float, rng: random.Random, nlp: Any,
                 ents: dict[str, list[tuple[int, int, str]]]) -> str:
    if line not in ents:
        ents[line] = [(e.start_char, e.end_char, e.label_) for e in nlp(line).ents]
    new, labels = line, set[str]()
    for start, end, label in reversed(ents[line]):  # placeholders first, right to left
        if label in GENERIC and rng.random() < prob:
            new = new[:start] + label + new[end:]
            labels.add(label)
    words = new.split()
    new = " ".join(w for i, w in enumerate(words) if not (
        w.lower() in ("a", "an", "the") and i < len(words) - 1 and words[i + 1] in labels))
    for label in labels:  # a set's order, as in the code
        at = new.find(label)
        while at != -1:
            window, cut = new[max(0, at - 6):at], nlp(new[:at])
            articles, noun = GENERIC[label]
            phrase = noun
            if not any(f" {a} " in window for a in ("some", "a", "an", "the")) and not (
                    len(cut) and cut[-1].pos_ in ("ADJ", "NOUN")):
                phrase = f"{rng.choice(articles)} {noun}"
            if any(f"{p} " in window[-3:] for p in (".", "!", "?", "\\n")):
                phrase = phrase.capitalize()
            new = new[:at] + phrase + new[at + len(label):]
            at = new.find(label)
    return " ".join(s[0].upper() + s[1:] for s in PUNKT.tokenize(new))


def code_point(lines: Sequence[str], rule: Callable[[str, random.Random], str], half: bool,
               seeds: Sequence[int]) -> float:
    """The code's point: per seed one stream through the lines in order, mean over lines."""
    means = []
    for seed in seeds:
        rng = random.Random(seed)
        means.append(np.mean([ratio(rule(line, rng), line, half) for line in lines]))
    return float(np.mean(means))


def switch_expected(sents: Sequence[str], units: Callable[[str], list[str]], original: str,
                    pairs: int) -> float:
    """Exact mean noise ratio of 1 or 2 sequential switches (the second never the first pair)."""
    base = units(original)

    def one(order: Sequence[int]) -> float:
        moved = units(" ".join(sents[k] for k in order))
        return Levenshtein.distance(moved, base) / len(base) / 2

    n = len(sents)
    if n < 2:
        return 0.0
    if n == 2:
        return one([1, 0])
    pairs_all = list(itertools.combinations(range(n), 2))
    values = []
    for first in pairs_all:
        order = list(range(n))
        order[first[0]], order[first[1]] = order[first[1]], order[first[0]]
        seconds = [None] if pairs == 1 else [p for p in pairs_all if p != first]
        for second in seconds:
            now = list(order)
            if second is not None:
                now[second[0]], now[second[1]] = now[second[1]], now[second[0]]
            values.append(one(now))
    return float(np.mean(values))


def ours(rows: Sequence[dict[str, Any]], name: str, severity: float | int,
         seeds: Sequence[int], parser: TextParser) -> float:
    """evalstress's paper rule, whole-set mean per seed (a text left alone counts 0)."""
    perturbation = get_perturbation(name, rule="paper")
    means = []
    for seed in seeds:
        values = []
        for row in rows:
            example = Example(row["id"], "summarization", row["source"], row["highlight"], (), {})
            made = perturbation.apply(PerturbContext(example, parser, [example], {}), severity,
                                      seed)
            values.append(0.0 if isinstance(made, Skip) else made.noise_ratio)
        means.append(np.mean(values))
    return float(np.mean(means))


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    options.add_argument("--code-data", type=Path, required=True,
                         help="sum_mt/SUM/SummEval/data.pkl of the paper's code")
    options.add_argument("--data", type=Path, default=Path("../shared/data/summeval.jsonl"))
    options.add_argument("--seeds", type=int, default=20,
                         help="seeds for the expected values of generic entities")
    args = options.parse_args()
    with args.code_data.open("rb") as handle:
        code_data = _PlainData(handle).load()
    rows = [json.loads(line) for line in args.data.read_text(encoding="utf-8").splitlines()]
    if [r["id"] for r in rows] != list(code_data):
        raise SystemExit("the two files do not hold the same highlights in the same order")
    lines = [code_data[r["id"]]["ref_summ"] for r in rows]
    parser, nlp, ents = TextParser(), load_spacy(), {}
    many = range(args.seeds)
    print("| point | code, seeds 1-5 | code, expected | ours, seeds 0-4 | ours, expected |")
    print("| --- | --- | --- | --- | --- |")
    for pairs in (1, 2):
        code_exp = np.mean([switch_expected(PUNKT.tokenize(t), str.split, t, pairs)
                            for t in lines])
        ours_exp = np.mean([switch_expected(nonempty_sentences(parser.parse(r["highlight"])),
                                            treebank_units, r["highlight"], pairs)
                            for r in rows])
        def switch(t: str, g: random.Random, k: int = pairs) -> str:
            return code_switch(t, k, g)
        print(f"| sentence switching {pairs} | "
              f"{code_point(lines, switch, True, range(1, 6)):.4f}"
              f" | {code_exp:.4f} | {ours(rows, 'sentence-switching', pairs, range(5), parser):.4f}"
              f" | {ours_exp:.4f} |")
    for prob in (0.5, 1.0):
        def rule(t: str, g: random.Random, p: float = prob) -> str:
            return code_generic(t, p, g, nlp, ents)
        print(f"| generic entity {prob} | {code_point(lines, rule, False, range(1, 6)):.4f} | "
              f"{code_point(lines, rule, False, range(1, args.seeds + 1)):.4f} | "
              f"{ours(rows, 'generic-entity', prob, range(5), parser):.4f} | "
              f"{ours(rows, 'generic-entity', prob, many, parser):.4f} |")


if __name__ == "__main__":
    main()
