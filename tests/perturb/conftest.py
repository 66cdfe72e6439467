"""Shared helpers: one parser for the whole session, hand-written texts, a small pool."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from evalstress.core.data import Example
from evalstress.core.text import TextParser
from evalstress.perturb.base import PerturbContext, Severity, Skip, Variant, get_perturbation
from evalstress.perturb.labelled import KINDS
from evalstress.perturb.llm import builtin_attacks

MARKET = ("Maria drove to the market in Lisbon on Monday. She bought fresh bread and two kilos "
          "of oranges. Her brother has repaired the old bicycle, but the shop will close early.")
HARBOUR = ("The ferry left the harbour at dawn. Tomas counted the gulls that followed it. "
           "By noon the island was a grey line behind them.")
GARDEN = ("Aunt Rosa planted tomatoes in April. The summer was dry, so she watered them every "
          "evening. In September the family ate them with olive oil and salt.")

_PARSER = TextParser()


@pytest.fixture(scope="session")
def parser() -> TextParser:
    return _PARSER


def make_ctx(text: str, *, task: str = "summarization", source: str = "",
             meta: Mapping[str, Any] | None = None, pool: Sequence[Example] = (),
             example_id: str = "ex-1", parser: TextParser | None = None,
             resources: dict[str, Any] | None = None) -> PerturbContext:
    example = Example(example_id, task, source, text, (), dict(meta or {}))
    return PerturbContext(example, parser or _PARSER, [example, *pool],
                          resources if resources is not None else {})


def run(name: str, text: str, severity: Severity, seed: int = 0, *,
        params: Mapping[str, Any] | None = None, **ctx_kwargs: Any) -> Variant | Skip:
    return get_perturbation(name, **dict(params or {})).apply(make_ctx(text, **ctx_kwargs),
                                                              severity, seed)


GOLDEN_POOL = [Example("p1", "summarization", "", HARBOUR),
               Example("p2", "summarization", "", GARDEN)]
GOLDEN_SOURCE = "Long source text about a market trip."
GOLDEN_META = {"wrong_ending": "Then the market burned down."}


def golden(name: str, severity: Severity, *, fresh_parser: bool = False) -> str:
    """The perturbation of MARKET at seed 0, with the pool, source and meta golden tests share."""
    return text_of(run(name, MARKET, severity, 0, pool=GOLDEN_POOL, source=GOLDEN_SOURCE,
                       meta=GOLDEN_META, parser=TextParser() if fresh_parser else None))


def text_of(result: Variant | Skip) -> str:
    assert isinstance(result, Variant), result
    return result.text


def assert_every_kind_of_reply(cases: Mapping[str, Sequence[Any]], min_kinds: int = 0) -> None:
    """A labelled set (tuning or held-out) covers every LLM attack with at least 8 correct
    and 8 wrong replies; the wrong ones are cut off, refusals and remarks, unchanged or
    over-rewritten, the wrong attack or a new fact (at least `min_kinds` kinds); and every
    severity of a graded attack has correct replies."""
    attacks = builtin_attacks()
    assert set(cases) == set(attacks)  # all 17
    wrong_kinds = set(KINDS) - {"correct"}
    for name, answers in cases.items():
        correct = [a for a in answers if a.correct]
        wrong = [a for a in answers if not a.correct]
        assert len(correct) >= 8 and len(wrong) >= 8, name
        kinds = {a.kind for a in wrong}
        assert {"cut-off", "refusal", "preamble"} <= kinds, (name, kinds)
        assert kinds & {"unchanged", "over-rewritten"}, (name, kinds)
        assert kinds & {"wrong-attack", "new-fact"}, (name, kinds)
        assert len(kinds) >= min_kinds and kinds <= wrong_kinds, (name, kinds)
        for level in attacks[name].grid:
            assert any(a.level in (level, None) for a in correct), (name, level)

