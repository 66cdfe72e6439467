"""Properties every registered perturbation must have, checked over the whole catalogue."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from statistics import mean

import hypothesis
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalstress.core.data import Example
from evalstress.core.text import TextParser
from evalstress.criteria import aspects
from evalstress.perturb.base import PerturbContext, Skip, Variant, registry
from evalstress.perturb.bias import FAMILY as BIAS_FAMILY
from evalstress.perturb.bias import PLACEBO
from evalstress.perturb.catalogue import catalogue_markdown
from evalstress.suites import load_suite
from tests.perturb.conftest import GARDEN, HARBOUR, MARKET, make_ctx
from tests.perturb.fuzzing import time_limit

ROOT = Path(__file__).resolve().parents[2]
WIKITEXT = Path("/work/shared/data/wikitext_paragraphs.jsonl")
if not WIKITEXT.exists():
    WIKITEXT = ROOT.parent.parent / "shared" / "data" / "wikitext_paragraphs.jsonl"

# rule-based perturbations run anywhere; model-based ones (bert-diverge) need weights and are
# tested in their own module
ALL = sorted(name for name, cls in registry().items() if cls.method == "rule")
UNITS = [(name, severity) for name in ALL for severity in registry()[name].grid]
POOL = [Example("p1", "summarization", "", HARBOUR), Example("p2", "summarization", "", GARDEN)]

EXPECTED = {  # the catalogue the three papers ask for
    "truncation", "article-removal", "preposition-removal", "stopword-removal",
    "verb-lemmatization", "token-drop", "repeated-token", "local-swap", "middle-swap",
    "noised-punctuation", "sentence-switching", "sentence-replacement", "negation",
    "generic-entity", "entity-switching", "verb-switching", "noun-switching", "positioned-error",
    "injection", "frequent-ngram", "repetition", "copy-source", "char-deletion", "char-typo",
    "word-span-deletion", "sentence-reordering", "random-ending", "random-answer",
    "wrong-ending", "sentence-exchange", "word-exchange", "spelling-mistake", "sentence-deletion",
}


def test_the_catalogue_of_the_three_papers_is_registered() -> None:
    assert set(ALL) >= EXPECTED


@pytest.mark.parametrize("name", sorted(registry()))
def test_metadata_is_complete_and_uses_known_aspects(name: str) -> None:
    cls = registry()[name]
    known = set(aspects())
    assert cls.family and cls.level in ("char", "word", "sentence")
    assert cls.method in ("rule", "model", "llm")
    if cls.family == BIAS_FAMILY:  # a bias probe damages nothing, by design, beside a placebo
        assert cls.description and PLACEBO in cls.grid and cls.severity_param == "arm"
        assert not cls.damages and cls.preserves
        return
    assert cls.description and cls.grid and cls.severity_param and cls.source_papers
    assert cls.damages, "a perturbation must damage something"
    assert set(cls.damages) <= known, set(cls.damages) - known
    assert set(cls.preserves) <= known, set(cls.preserves) - known
    assert not set(cls.damages) & set(cls.preserves)


def test_docs_catalogue_is_generated_from_the_registry() -> None:
    assert (ROOT / "docs" / "perturbations.md").read_text(encoding="utf-8") == catalogue_markdown()


@pytest.mark.parametrize("suite", ["blindspot", "blindspot-full", "dhp", "criteria-rules"])
def test_builtin_suites_load(suite: str) -> None:
    assert load_suite(suite).perturbations


# -- robustness on arbitrary input ----------------------------------------------------------------

EDGE_TEXTS = ["", "   \n\t ", "word", "One sentence only.", "!!! ???", "ÄÖÜ ß 東京 😀 …",
              " ".join(["Long text keeps going and going."] * 300)]


def _check(result: Variant | Skip, text: str) -> None:
    assert isinstance(result, Variant | Skip)
    if isinstance(result, Variant):
        assert result.text != text
        assert result.noise_ratio >= 0


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(max_size=200), seed=st.integers(0, 2**32))
@hypothesis.example(text="୦", seed=0)  # an Oriya digit: typo's neighbour keys know 0-9 only (char-typo)
@hypothesis.example(text="Rain fell. Rain fell. Sun came.", seed=0)  # sentence-reordering: copies forever
def test_arbitrary_unicode_never_raises(text: str, seed: int) -> None:
    with time_limit(120):
        for name, severity in UNITS:
            ctx = make_ctx(text, pool=POOL, source="A source.",
                           meta={"wrong_ending": "Bad end."})
            _check(registry()[name]().apply(ctx, severity, seed), text)


def unit_variants(order: list[tuple[str, object]]) -> dict[str, str]:
    """Every unit's outcome on one text at seeds 0-2, visited in `order`."""
    out = {}
    for name, severity in order:
        for seed in range(3):
            ctx = make_ctx(MARKET, pool=POOL, source="Source text.",
                           meta={"wrong_ending": "Bad end."})
            result = registry()[name]().apply(ctx, severity, seed)  # type: ignore[arg-type]
            out[f"{name}|{severity}|{seed}"] = (result.text if isinstance(result, Variant)
                                               else f"skip: {result.reason}")
    return out


_CHILD = """
import json, sys
sys.path[:0] = [{root!r}, {src!r}]
from tests.perturb.test_catalogue import UNITS, unit_variants
print(json.dumps(unit_variants(list(reversed(UNITS)))))
"""


def test_variants_depend_on_the_seed_alone_not_on_process_or_order() -> None:
    """A seed gives the same variant in another process (other hash seed) and in any order of
    work, so a rerun, a shard or a worker reproduces the run; and the seed does matter."""
    import os
    import subprocess
    import sys

    here = unit_variants(UNITS)
    child = subprocess.run(
        [sys.executable, "-c", _CHILD.format(root=str(ROOT), src=str(ROOT / "src"))],
        capture_output=True, text=True, check=True, cwd=ROOT,
        env={**os.environ, "PYTHONHASHSEED": "12345"})
    there = json.loads(child.stdout.strip().splitlines()[-1])
    assert there == here
    # seeds 0-2 of a random rule give at least two different variants
    for name in ("token-drop", "local-swap", "char-typo", "sentence-exchange"):
        severity = registry()[name].grid[0]
        assert len({here[f"{name}|{severity}|{s}"] for s in range(3)}) >= 2, name


# -- one parse per text --------------------------------------------------------------------------

def test_each_text_is_parsed_once_whatever_the_units() -> None:
    parser = TextParser()
    examples = [Example("a", "summarization", "S.", MARKET), *POOL]
    shared: dict[str, object] = {}
    for example in examples:
        ctx = PerturbContext(example, parser, examples, shared)
        for name, severity in UNITS:
            for seed in range(3):
                registry()[name]().apply(ctx, severity, seed)  # type: ignore[arg-type]
    assert parser.parses == len(examples)


# -- noise ratio grows over each grid (WikiText) -------------------------------------------------

#: Perturbations whose grid is not a growing amount of noise (positions, modes, single levels).
NOT_GRADED = {"positioned-error", "injection", "copy-source", "random-ending", "random-answer",
              "wrong-ending", "frequent-ngram",
              # bias probes: arms beside a placebo, no amount of noise
              *(n for n, c in registry().items() if c.family == BIAS_FAMILY)}
#: Grids that cannot reach paper 002's ~5% gap between steps on WikiText: what they remove is
#: rarer than 5% of the words per step (articles, prepositions, entities, lemmatizable verbs),
#: or the amount is in pairs/sentences/repeats whose ratio shrinks on a 200-word paragraph.
SMALL_STEPS = {"article-removal", "preposition-removal", "verb-lemmatization", "generic-entity",
               "entity-switching", "verb-switching", "noun-switching", "negation",
               "noised-punctuation", "sentence-exchange", "sentence-deletion", "repetition",
               "sentence-switching", "sentence-replacement"}


@pytest.fixture(scope="module")
def wiki_ratios() -> dict[str, list[float]]:
    if not WIKITEXT.exists():
        pytest.skip("shared WikiText data not available")
    lines = WIKITEXT.read_text(encoding="utf-8").splitlines()[:50]
    examples = [Example(f"w{i}", "open-ended", "", json.loads(line)["text"])
                for i, line in enumerate(lines)]
    parser = TextParser()
    parser.parse_many([e.hypothesis for e in examples])
    shared: dict[str, object] = {}
    out: dict[str, list[float]] = {}
    for name in ALL:
        if name in NOT_GRADED:
            continue
        pert = registry()[name]()
        means = []
        for severity in type(pert).grid:
            ratios = [r.noise_ratio for e in examples for seed in range(2)
                      if isinstance(r := pert.apply(PerturbContext(e, parser, examples, shared),
                                                    severity, seed), Variant)]
            means.append(mean(ratios))
        out[name] = means
    return out


@pytest.mark.parametrize("name", [n for n in ALL if n not in NOT_GRADED])
def test_mean_noise_ratio_grows_over_the_grid(name: str, wiki_ratios: dict) -> None:
    means = wiki_ratios[name]
    assert all(b > a for a, b in itertools.pairwise(means)), means
    if name not in SMALL_STEPS:
        gaps = [b - a for a, b in itertools.pairwise(means)]
        # paper 002: gaps "close to or larger than 5%"
        assert min(gaps, default=1.0) >= 0.04, (means, gaps)


def test_cli_lists_perturbations_as_markdown() -> None:
    from typer.testing import CliRunner

    from evalstress.cli import app

    result = CliRunner().invoke(app, ["list", "perturbations", "--markdown"])
    assert result.exit_code == 0
    assert result.output == catalogue_markdown()
