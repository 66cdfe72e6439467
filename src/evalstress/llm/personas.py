"""Judge personas of the fake server: judges with planted biases of known strength (stdlib only).

A persona reads the judge's prompt as evalstress writes it (the pointwise rating prompts and the
pairwise prompt of `evaluators.judge` / `judge_pairwise`) and answers with a rating or a
verdict, so the card can be checked against answers known in advance:

- `fair`: rates a content signal no bias probe changes: the share of the source's content
  words (less any word a probe or placebo may write) the text covers, mapped onto the lower
  two thirds of the scale (room above for a planted shift). Pairwise, it prefers the text of
  the larger share; equal shares are a tie, whatever the order;
- `position:S` (pairwise): fair, with S added to the first-shown text's value; pointwise fair;
- `verbosity:S`, `self-preference:S`, `authority:S`, `bandwagon:S`, `sycophancy:S`: fair plus
  S (in scale points) when the text carries that probe's cue (`core.biascues`, the very
  wording the probes write; self-preference: a sign-off naming the family of the model the
  request asks for);
- `noisy:S`: fair plus noise of standard deviation S, seeded by the request (the same request
  gets the same answer, any change of the text a fresh draw);
- `constant`: the middle of the scale, always.

Components combine with `+` (`authority:0.5+noisy:0.3`). The rating goes out as `Rating: N` with
top logprobs split between the two whole ratings around the value, so a judge that weighs by
logprobs reads the value itself. Use: `FakeServer(responder=persona("authority:0.5"))`, or
`python -m evalstress.llm.fake_server --persona authority:0.5`.
"""

from __future__ import annotations

import hashlib
import math
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalstress.core import biascues
from evalstress.core.family import model_family
from evalstress.llm.fake_server import Reply, Responder

#: the personas and whether each takes a strength
KINDS = {"fair": False, "constant": False, "noisy": True, "position": True, "verbosity": True,
         "self-preference": True, "authority": True, "bandwagon": True, "sycophancy": True}
#: where on the scale the fair signal lands: low + span x (FLOOR + REACH x coverage)
FLOOR, REACH = 0.1, 0.7
_WORD = re.compile(r"[a-z]+")
#: short function words left out of the content words
_FUNCTION_WORDS = ("about above after again against because been before being below between both "
                   "could does doing down during each from further have having here into just "
                   "more most once only other over same should some such than that their them "
                   "then there these they this those through under until very were what when "
                   "where which while will with would your")
_STOP = frozenset(_FUNCTION_WORDS.split())
_SCALE = re.compile(r"(?:scale from|number from) (\d+)\D+?to (\d+)")


@dataclass(frozen=True)
class Component:
    kind: str
    strength: float


def parse_persona(spec: str) -> tuple[Component, ...]:
    """`authority:0.5+noisy:0.3` -> its components; a ValueError naming an unknown kind."""
    parts = []
    for item in spec.split("+"):
        kind, _, strength = item.strip().partition(":")
        if kind not in KINDS:
            raise ValueError(f"unknown persona '{kind}': choose from {', '.join(KINDS)}")
        if KINDS[kind] and not strength:
            strength = "1"
        try:
            value = float(strength) if strength else 0.0
        except ValueError:
            raise ValueError(f"persona {kind}: strength '{strength}' is not a number") from None
        parts.append(Component(kind, value))
    return tuple(parts)


def _probe_words() -> frozenset[str]:
    """Every word the probes and placebos may write (`core.biascues`)."""
    written = [*biascues.FILLER, *biascues.NAMED_MODELS, *biascues.PEOPLE,
               biascues.ATTRIBUTION, biascues.FAMILY_WHO, *biascues.FAMILIES.values(),
               *biascues.BANDWAGON, *biascues.SYCOPHANCY, *biascues.NEUTRAL,
               *biascues.ASKER_NEUTRAL, *biascues.READERS_NEUTRAL, biascues.AUTHORITY,
               *(f"{a} {j}" for a, _, j in biascues.CITATIONS)]
    return frozenset(w for text in written for w in _WORD.findall(text.lower()))


#: words the fair signal leaves out: those a probe or placebo may add, so that no probe can
#: move it (a source that uses "text" or "readers" would otherwise count the added words)
_PROBE_WORDS = _probe_words()


def content_words(text: str) -> set[str]:
    """Lower-cased words of at least four letters that are neither function words nor words a
    probe may write."""
    return {w for w in _WORD.findall(text.lower())
            if len(w) >= 4 and w not in _STOP and w not in _PROBE_WORDS}


def coverage(source: str, text: str) -> float:
    """The share of the source's content words that the text uses (0 without a source)."""
    wanted = content_words(source)
    return len(wanted & content_words(text)) / len(wanted) if wanted else 0.0


def _between(content: str, start: str, ends: tuple[str, ...]) -> str | None:
    at = content.find(start)
    if at < 0:
        return None
    begin = at + len(start)
    stops = [i for i in (content.find(end, begin) for end in ends) if i >= 0]
    return content[begin:min(stops)] if stops else content[begin:]


@dataclass(frozen=True)
class Request:
    """What a persona reads of a chat request."""

    model: str
    scale: tuple[int, int]
    source: str
    texts: tuple[str, ...]  # one text (pointwise) or two, in the order shown (pairwise)
    prompt: str

    @classmethod
    def of(cls, body: Mapping[str, Any]) -> Request:
        messages = body.get("messages") or []
        content = str(messages[-1].get("content", "")) if messages else ""
        found = _SCALE.search(content)
        scale = (int(found[1]), int(found[2])) if found else (1, 5)
        source = _between(content, "Source:\n", ("\n\nReference text", "\n\nText to evaluate:",
                                                  "\n\nText 1:")) or ""
        if "Text 1:\n" in content:
            first = _between(content, "Text 1:\n", ("\n\nText 2:\n",)) or ""
            second = _between(content, "Text 2:\n", ("\n\nCriterion",)) or ""
            texts: tuple[str, ...] = (first, second)
        else:
            texts = (_between(content, "Text to evaluate:\n", ("\n\nCriterion",)) or "",)
        return cls(str(body.get("model", "")), scale, source, texts, content)


def value_of(components: tuple[Component, ...], request: Request, text: str,
             shown_first: bool = False) -> float:
    """The persona's rating of `text` on the request's scale, before rounding."""
    low, high = request.scale
    span = high - low
    if any(c.kind == "constant" for c in components):
        return (low + high) / 2
    value = low + span * (FLOOR + REACH * min(1.0, coverage(request.source, text)))
    family = model_family(request.model)
    for part in components:
        if part.kind == "noisy":
            seed = hashlib.sha256(f"{request.prompt}\x00{text}".encode()).digest()
            value += random.Random(seed).gauss(0.0, part.strength)
        elif part.kind == "position":
            value += part.strength if shown_first else 0.0
        elif part.kind == "self-preference":
            value += part.strength if family and biascues.self_cue(family) in text else 0.0
        elif part.kind in biascues.CUES:
            value += part.strength if biascues.has_cue(part.kind, text) else 0.0
    return min(float(high), max(float(low), value))


def rating_reply(value: float, scale: tuple[int, int]) -> Reply:
    """`Rating: N` with the logprob mass split between the whole ratings around `value`."""
    low_label = math.floor(value)
    share = value - low_label
    probs = {str(low_label): 1.0 - share} if share < 1e-9 else {
        str(low_label): 1.0 - share, str(min(scale[1], low_label + 1)): share}
    probs = {k: p for k, p in probs.items() if p > 1e-9}
    shown = max(probs, key=lambda k: (probs[k], k))
    return Reply(f"Rating: {shown}", label_probs=probs)


def persona(spec: str) -> Responder:
    """A responder for `FakeServer(responder=...)` that answers as the persona `spec`."""
    components = parse_persona(spec)

    def answer(body: dict[str, Any]) -> Reply:
        request = Request.of(body)
        if len(request.texts) == 2:
            first = value_of(components, request, request.texts[0], shown_first=True)
            second = value_of(components, request, request.texts[1])
            verdict = "tie" if abs(first - second) < 1e-9 else ("1" if first > second else "2")
            return Reply(f"Verdict: {verdict}")
        return rating_reply(value_of(components, request, request.texts[0]), request.scale)

    return answer
