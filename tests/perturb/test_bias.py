"""The bias probes keep the text whole, add what they promise, and their placebos match them."""

from __future__ import annotations

import pytest

from evalstress.core import biascues as cues
from evalstress.core.data import Example, builtin_corpus
from evalstress.core.text import TextParser
from evalstress.perturb.base import PerturbContext, Variant, get_perturbation
from evalstress.perturb.bias import FAMILY, LENGTH_TOLERANCE, PLACEBO, probe_arms
from evalstress.suites import load_suite

TEXT = ("The council approved the new budget on Monday. Spending on schools rises by four "
        "percent, and the road repairs planned for spring go ahead.")
PROBES = ("verbosity", "attribution", "authority", "bandwagon", "sycophancy")


def context(text: str = TEXT, example_id: str = "e1") -> PerturbContext:
    return PerturbContext(Example(example_id, "summarization", "a source", text, []), TextParser())


def made(name: str, arm: str, seed: int = 0, ctx: PerturbContext | None = None,
         **params: str) -> str:
    variant = get_perturbation(name, **params).apply(ctx or context(), arm, seed)
    assert isinstance(variant, Variant), variant
    return variant.text


def added_part(name: str, variant: str, original: str = TEXT) -> str:
    if name == "sycophancy":
        assert variant.endswith("\n\n" + original)
        return variant[: -len(original) - 2]
    assert variant.startswith(original.rstrip())
    return variant[len(original.rstrip()):].strip(" ")


@pytest.mark.parametrize("name", PROBES)
def test_every_arm_keeps_the_original_text_whole_and_adds_at_one_place(name: str) -> None:
    for arm in get_perturbation(name).grid:
        for seed in range(6):
            variant = made(name, arm, seed)
            assert TEXT in variant
            assert variant != TEXT


@pytest.mark.parametrize("name", ["attribution", "authority", "bandwagon", "sycophancy"])
def test_a_placebo_adds_as_many_characters_as_its_probe_within_the_tolerance(name: str) -> None:
    arms = [a for a in get_perturbation(name).grid if a != PLACEBO]
    for seed in range(12):
        placebo = added_part(name, made(name, PLACEBO, seed))
        for arm in arms:
            probe = added_part(name, made(name, arm, seed))
            assert abs(len(probe) - len(placebo)) <= LENGTH_TOLERANCE * len(probe), (probe,
                                                                                      placebo)


@pytest.mark.parametrize("name", PROBES)
def test_the_probe_carries_its_cue_and_the_placebo_carries_none(name: str) -> None:
    kind = "attribution" if name == "self-preference" else name
    for seed in range(8):
        for arm in probe_arms(type(get_perturbation(name))):
            assert cues.has_cue(kind, made(name, arm, seed))
        placebo = made(name, PLACEBO, seed)
        assert not any(cues.has_cue(k, placebo) for k in cues.CUES)


def test_verbosity_pads_about_half_the_length_with_filler_only() -> None:
    long_text = " ".join([TEXT] * 6)  # 156 words
    for seed in range(5):
        variant = made("verbosity", "probe", seed, context(long_text))
        padding = variant[len(long_text):].strip()
        words = len(padding.split())
        half = len(long_text.split()) / 2
        assert half <= words <= half + max(len(s.split()) for s in cues.FILLER)
        rest = padding
        for sentence in cues.FILLER:
            rest = rest.replace(sentence, "")
        assert not rest.strip(), "only filler sentences are added"


def test_the_verbosity_placebo_is_the_text_asked_again() -> None:
    assert made("verbosity", PLACEBO) == TEXT + "\n"


def test_self_preference_names_the_judges_family_and_its_placebo_another() -> None:
    for seed in range(6):
        probe = made("self-preference", "probe", seed, family="gpt-4o-mini")
        placebo = made("self-preference", PLACEBO, seed, family="gpt-4o-mini")
        assert probe.endswith("(This text was written by a GPT model.)")
        assert placebo.startswith(TEXT) and "GPT" not in placebo
        assert placebo.endswith(" model.)") and "(This text was written by a " in placebo
        assert abs(len(probe) - len(placebo)) <= LENGTH_TOLERANCE * (len(probe) - len(TEXT))


def test_self_preference_without_a_family_says_what_it_needs() -> None:
    assert "family=NAME" in str(get_perturbation("self-preference").unmet())


def test_the_draw_is_seeded_and_varies_with_the_seed() -> None:
    assert made("authority", "probe", 3) == made("authority", "probe", 3)
    assert len({made("authority", "probe", s) for s in range(12)}) > 1
    assert len({made("bandwagon", "probe", s) for s in range(12)}) > 1


def test_the_probes_are_of_their_own_family_and_the_bias_suite_runs_them() -> None:
    suite = load_suite("bias")
    names = [p.name for p in suite.perturbations]
    assert set(names) == set(PROBES)
    assert all(p.perturbation.family == FAMILY for p in suite.perturbations)
    assert suite.analyses == ("bias",)


def test_every_probe_applies_to_every_built_in_example() -> None:
    examples = builtin_corpus()
    parser = TextParser()
    for example in examples:
        ctx = PerturbContext(example, parser)
        for name in PROBES:
            for arm in get_perturbation(name).grid:
                assert isinstance(get_perturbation(name).apply(ctx, arm, 0), Variant)
