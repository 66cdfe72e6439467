"""Fuzz: every perturbation meets arbitrary Unicode, empty, 1 MB and 10k-sentence texts and
answers with a Variant or a Skip (with its reason), never an exception."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalstress.core.data import Example
from evalstress.core.text import DEFAULT_MAX_CHARS, TextParser
from evalstress.engine.planning import plan_dataset
from evalstress.perturb.base import Skip, Variant, get_perturbation, registry
from evalstress.suites import custom_suite
from tests.perturb.conftest import GOLDEN_META, GOLDEN_POOL, make_ctx

PARSER = TextParser()
RULES = sorted(name for name, cls in registry().items() if cls.method == "rule")
LLM = sorted(name for name, cls in registry().items() if cls.method == "llm")
PIECES = ["the", "cat", "Maria", "Lisbon", "sat", "not", "was", "and", "but", "running", ".",
          ",", "!", "?", "...", "(", ")", '"', "'s", "—", "\n", "\n\n", "  ", "\t", "\u200b",
          "Émile", "東京", "🙂", "Dr.", "U.S.", "ﬁ", "İ", "2024", "3.5", "New York", "Monday"]
texts = st.one_of(
    st.text(max_size=200),  # any Unicode, control characters and lone combining marks included
    st.lists(st.sampled_from(PIECES), max_size=60).map(" ".join),
    st.lists(st.sampled_from(PIECES), max_size=60).map("".join),
)


def _check(name: str, text: str, severity: object, seed: int) -> Variant | Skip:
    ctx = make_ctx(text, pool=GOLDEN_POOL, source="A source text.", meta=GOLDEN_META)
    result = get_perturbation(name).apply(ctx, severity, seed)  # type: ignore[arg-type]
    assert isinstance(result, Variant | Skip), (name, severity, result)
    if isinstance(result, Variant):
        assert result.text != text  # an unchanged text is a Skip, never a Variant
    else:
        assert result.reason.strip()  # a Skip says why
    return result


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, seed=st.integers(0, 3))
def test_every_rule_perturbation_answers_arbitrary_text(text: str, seed: int) -> None:
    for name in RULES:
        for severity in registry()[name].grid:
            _check(name, text, severity, seed)


@pytest.mark.parametrize("text", ["", " ", "\n\n\t"])
def test_an_empty_text_is_skipped_unless_the_rule_adds_text(text: str) -> None:
    """Nothing to damage: every rule skips, except those whose damage is to put other text in
    (the source, a note to the grader, another example's answer, the dataset's wrong ending)."""
    for name in RULES:
        result = _check(name, text, registry()[name].grid[-1], 0)
        adds_text = name in ("copy-source", "injection", "random-answer", "wrong-ending")
        assert isinstance(result, Variant if adds_text else Skip), (name, result)


@settings(max_examples=30, deadline=None)
@given(text=texts)
def test_every_llm_attack_builds_its_prompt_for_arbitrary_text(text: str) -> None:
    """LLM attacks never run `apply` (the generation stage asks the model): their prompt
    must hold the text whatever it is."""
    for name in LLM:
        attack = get_perturbation(name)
        messages = attack.messages(text, "summarization", attack.grid[0])  # type: ignore[attr-defined]
        assert messages and all(isinstance(m["content"], str) for m in messages)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(original=texts, answer=texts)
def test_every_llm_attack_judges_an_arbitrary_answer(original: str, answer: str) -> None:
    """The generation stage checks whatever a model answers against the original: a rejection
    with its reason, or acceptance, never an exception."""
    from evalstress.perturb.llm_checks import Rejection, validate

    assert LLM  # the registry holds the LLM attacks
    parsed = PARSER.parse(original)
    for name in LLM:
        spec = get_perturbation(name).spec  # type: ignore[attr-defined]
        for severity in spec.grid:
            verdict = validate(parsed, answer, spec.resolve(severity), PARSER)
            assert verdict is None or (isinstance(verdict, Rejection) and verdict.detail)


def test_a_1_mb_row_is_skipped_by_id_and_never_parsed() -> None:
    huge = ("The harbour was quiet that night. " * 30_000)[:1_000_000]
    examples = [Example("huge-row", "summarization", "", huge),
                Example("small", "summarization", "", GOLDEN_POOL[0].hypothesis)]
    suite = custom_suite(RULES, [0], ["blindspot"])
    parser = TextParser()
    plan = plan_dataset(examples, suite, parser=parser)
    assert parser.parses == 1  # the small row only: the 1 MB text never reaches spaCy
    huge_skips = [s for s in plan.skips if s.example_id == "huge-row"]
    units = sum(len(p.grid) for p in suite.perturbations)
    assert len(huge_skips) == units and not any(v.example_id == "huge-row" for v in plan.variants)
    assert {s.reason for s in huge_skips} == {
        f"row 'huge-row': its text of 1,000,000 characters is beyond the text length limit "
        f"({DEFAULT_MAX_CHARS:,}; raise it with --max-chars or the suite option max_chars)"}
    assert any(v.example_id == "small" for v in plan.variants)


@pytest.mark.slow
def test_a_10k_sentence_text_gets_a_variant_or_a_skip_from_every_rule() -> None:
    """10,000 short sentences (80,000 characters, under the default limit) through every rule
    perturbation at every severity."""
    names, verbs = ["Al", "Bo", "Cy", "Di", "Ed"], ["ran", "sat", "hid"]
    text = "".join(f"{names[i % 5]} {verbs[i % 3]}. " for i in range(10_000))
    assert len(text) < DEFAULT_MAX_CHARS
    parser = TextParser()
    assert len(parser.parse(text).sentences) >= 9_000  # spaCy's sentence splitter may join a few
    variants = 0
    for name in RULES:
        for severity in registry()[name].grid:
            ctx = make_ctx(text, pool=GOLDEN_POOL, source="A source text.", meta=GOLDEN_META,
                           parser=parser)
            result = get_perturbation(name).apply(ctx, severity, 0)
            assert isinstance(result, Variant | Skip), name
            variants += isinstance(result, Variant)
    assert variants > len(RULES)  # most rules find something to damage in 10k sentences
