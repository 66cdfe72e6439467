"""Bias probes: changes that should not move a fair judge, each beside a placebo of its size.

A probe adds a cue a biased judge may reward (padding, a claimed author, a citation, a claim of
popularity, the asker's approval) and leaves every word of the text in place. Its severities
are its arms: one or more probe arms and `placebo`, an edit of the same place and about the
same size that makes no such claim. The `bias` analysis reads the probe's effect above the
placebo, so a judge that moves with any edit at all is not called biased.

Both arms of one example and seed draw from one random stream (the arm is left out of the
seed), so the probe and its placebo are built from the same draw: the placebo is matched to
the very sentence the probe wrote. The wording lives in `core.biascues`, where the fake
server's personas read their cues too.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import ClassVar

from evalstress.core import biascues as cues
from evalstress.core.family import model_family
from evalstress.core.params import TEXT, declare
from evalstress.core.text import noise_ratio
from evalstress.perturb.base import (
    Perturbation,
    PerturbContext,
    Severity,
    Skip,
    Skipped,
    Variant,
    derive_seed,
    perturbation,
)

#: the family of every bias probe (the card's `bias` method runs the perturbations of it)
FAMILY = "bias-probe"
#: the severity of every probe's placebo arm
PLACEBO = "placebo"
#: the most a placebo's added characters may differ from its probe's, as a share of the
#: probe's (the property tests hold every probe to it)
LENGTH_TOLERANCE = 0.15


class BiasProbe(Perturbation):
    """A probe with its placebo arm; subclasses write `added(ctx, arm, rng)` and say where it
    goes (`prefix`)."""

    family = FAMILY
    level = "sentence"
    damages = ()
    preserves = ("faithfulness", "informativeness")  # every word of the text stays
    severity_param = "arm"
    grid: ClassVar[tuple[Severity, ...]] = ("probe", PLACEBO)
    #: the added words go before the text (the asker's note) instead of after it
    prefix = False
    #: what the probe arm adds, for the analysis's verdict ("biased toward ...")
    toward: ClassVar[Mapping[str, str]] = {}

    def added(self, ctx: PerturbContext, arm: str, rng: random.Random) -> str:
        """The words this arm adds, drawn from `rng` (the same draw for every arm)."""
        raise NotImplementedError

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str | Skip:
        text = ctx.text
        if not text.strip():
            return Skip("an empty text: nothing to attach a probe to")
        extra = self.added(ctx, str(severity), rng)
        if self.prefix:
            return f"{extra}\n\n{text}"
        return f"{text.rstrip()} {extra}" if extra.strip() else text + extra

    def apply(self, ctx: PerturbContext, severity: Severity, seed: int) -> Variant | Skip:
        """As `Perturbation.apply`, with one random stream for all arms of an example."""
        rng = random.Random(derive_seed(seed, ctx.example.id, self.name))
        try:
            result = self.transform(ctx, severity, rng)
        except Skipped as skip:
            return Skip(str(skip))
        if isinstance(result, Skip):
            return result
        if result == ctx.text:
            return Skip("the probe left the text unchanged")
        ratio = noise_ratio(ctx.text, result, swap=False, units=self.noise_units(ctx))
        return Variant(ctx.example.id, self.name, severity, seed, result, ratio)


@perturbation("verbosity")
class Verbosity(BiasProbe):
    description = (
        "Append content-free sentences (restating nothing, adding no fact) until they make "
        "about half the text's length in words. Placebo: re-asking, the text with one trailing "
        "line break. Any addition of the same size would itself be padding, so the only edit "
        "of this place without the extra length is none: the floor is the judge's own "
        "variation when asked again (zero for a deterministic judge).")
    toward: ClassVar[Mapping[str, str]] = {"probe": "padding (content-free sentences adding half the length)"}

    def added(self, ctx: PerturbContext, arm: str, rng: random.Random) -> str:
        order = list(cues.FILLER)
        rng.shuffle(order)
        if arm == PLACEBO:
            return "\n"
        want = max(1, len(ctx.text.split()) // 2)
        chosen: list[str] = []
        words = 0
        for sentence in order * (1 + want // 40):
            if words >= want:
                break
            chosen.append(sentence)
            words += len(sentence.split())
        return " ".join(chosen)


@perturbation("attribution")
class Attribution(BiasProbe):
    description = (
        "Sign the text as written by a named model (arm `model`) or by a named person with a "
        "title (arm `person`), in one closing sentence. Placebo: a closing neutral sentence "
        "about how the copy was stored, of the nearest length (within 15%), in the same "
        "parentheses and place.")
    grid = ("model", "person", PLACEBO)
    toward: ClassVar[Mapping[str, str]] = {"model": "a named model as author",
                                           "person": "a named person as author"}

    def added(self, ctx: PerturbContext, arm: str, rng: random.Random) -> str:
        i = rng.randrange(len(cues.NAMED_MODELS))
        model = cues.ATTRIBUTION.format(who=cues.NAMED_MODELS[i])
        person = cues.ATTRIBUTION.format(who=cues.PEOPLE[i])
        if arm == PLACEBO:  # matched to both arms' sentences of this draw
            return cues.closest_neutral((len(model) + len(person)) // 2)
        return model if arm == "model" else person


@perturbation("self-preference")
class SelfPreference(BiasProbe):
    PARAMS = declare(family=TEXT)
    description = (
        "Sign the text as written by a model of the judge's own family (param family, which "
        "the card fills from the judge's model name). Placebo: the same sentence naming a "
        "model of another family, so the probe differs only in whose family it names, not in "
        "claiming a model as author (that is the attribution probe).")
    toward: ClassVar[Mapping[str, str]] = {"probe": "its own model family as author"}

    def unmet(self) -> str | None:
        if self.params.get("family"):
            return None
        return ("self-preference needs family=NAME: the model family of the judge under test "
                "(the card fills it from the judge's model name)")

    def added(self, ctx: PerturbContext, arm: str, rng: random.Random) -> str:
        own = model_family(str(self.params.get("family") or ""))
        if not own:
            raise Skipped("no model family given (family=NAME)")
        others = sorted(f for f in cues.FAMILIES if f != own)
        other = rng.choice(others)
        return cues.self_cue(other if arm == PLACEBO else own)


@perturbation("authority")
class Authority(BiasProbe):
    description = (
        "Close the text with an invented citation (authors, year, journal; no such paper "
        "exists). Placebo: a closing neutral sentence about how the copy was stored, of the "
        "nearest length (within 15%), in the same parentheses and place.")
    toward: ClassVar[Mapping[str, str]] = {"probe": "an invented citation"}

    def added(self, ctx: PerturbContext, arm: str, rng: random.Random) -> str:
        authors, year, journal = rng.choice(cues.CITATIONS)
        cited = cues.AUTHORITY.format(authors=authors, year=year, journal=journal)
        return cues.closest_neutral(len(cited)) if arm == PLACEBO else cited


@perturbation("bandwagon")
class Bandwagon(BiasProbe):
    description = (
        "Close the text with a claim that most readers rated it highly. Placebo: the same "
        "frame saying something about its readers that rates nothing (how they read it), "
        "written to the same length.")
    toward: ClassVar[Mapping[str, str]] = {"probe": "a claim that most readers rated it highly"}

    def added(self, ctx: PerturbContext, arm: str, rng: random.Random) -> str:
        i = rng.randrange(len(cues.BANDWAGON))
        return cues.READERS_NEUTRAL[i] if arm == PLACEBO else cues.BANDWAGON[i]


@perturbation("sycophancy")
class Sycophancy(BiasProbe):
    description = (
        "Put a note of the person asking before the text, saying they think it is good. "
        "Placebo: a note of the asker in the same frame and place that holds no opinion "
        "(where the text came from), written to the same length.")
    prefix = True
    toward: ClassVar[Mapping[str, str]] = {"probe": "the asker's stated approval"}

    def added(self, ctx: PerturbContext, arm: str, rng: random.Random) -> str:
        i = rng.randrange(len(cues.SYCOPHANCY))
        return cues.ASKER_NEUTRAL[i] if arm == PLACEBO else cues.SYCOPHANCY[i]


def probe_arms(cls: type[Perturbation]) -> dict[str, str]:
    """A bias probe's arms other than the placebo, each with what it adds ({} for another
    perturbation)."""
    return dict(getattr(cls, "toward", {})) if cls.family == FAMILY else {}
