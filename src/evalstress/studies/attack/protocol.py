"""`--protocol paper` for `evalstress attack`: the settings of paper 004 and its released code
where ours differ, one option away.

| setting            | default (ours)   | paper (004 sec. 3.2 and its released code)             |
|--------------------|------------------|--------------------------------------------------------|
| stop rule          | first-success    | highest-feedback: stop at S > 80 or the last iteration, |
|                    |                  | return the highest S, judge eq. 3 on it                 |
| reference          | example          | original: reference-based victims compare with the      |
|                    |                  | original response                                       |
| patience           | 3                | 1: the code gives up after one iteration with nothing   |
| generator sampling | the spec's       | temperature 1.0, at most 512 new tokens (the code's     |
|                    |                  | PaLM-2 generator)                                       |
| rescore final      | off              | on: the gold rates the returned text again on fresh     |
|                    |                  | samples and eq. 3 is judged on that (`evaluate()`)      |

The protocol itself travels in `AttackParams.protocol`, which decides what no other setting
names (see its docstring): the idle rule of `patience`, eq. 3's strict thresholds, S rounded to
one decimal, ties in the top-k, the prompts' wording and the victim-only ablation's start.

A setting the user gives explicitly wins over the protocol; the settings that ran are recorded
in results.json (`protocol`, `params`, `victims[].reference_mode`, `generator`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalstress.core.strict import unknown_name_error
from evalstress.llm.generate import generator_params
from evalstress.studies.attack.objective import PROTOCOLS

#: What each protocol sets when the user leaves it out.
SETTINGS: Mapping[str, Mapping[str, Any]] = {
    "default": {"stop_rule": "first-success", "reference": "example", "patience": 3,
                "rescore_final": False},
    "paper": {"stop_rule": "highest-feedback", "reference": "original", "patience": 1,
              "rescore_final": True},
}
#: Generator sampling the paper protocol sets unless the generator spec names it.
PAPER_GENERATOR = {"temperature": 1.0, "max_tokens": 512}


@dataclass(frozen=True)
class ProtocolSettings:
    """The settings an attack runs with once the protocol has filled what the user left out."""

    protocol: str
    stop_rule: str
    reference: str
    patience: int
    generator: str | Mapping[str, Any] | None
    rescore_final: bool


def _with_generator_defaults(spec: str | Mapping[str, Any] | None,
                             defaults: Mapping[str, Any]) -> str | Mapping[str, Any] | None:
    """The generator spec as a mapping with `defaults` added for the keys it does not name."""
    if not spec:
        return spec

    return {**defaults, **generator_params(spec)}


def resolve(protocol: str | None, *, stop_rule: str | None = None,
            reference: str | None = None, patience: int | None = None,
            generator: str | Mapping[str, Any] | None = None,
            rescore_final: bool | None = None) -> ProtocolSettings:
    """Fill the settings the user left out (None) from the protocol (default: `default`)."""
    name = protocol or "default"
    if name not in PROTOCOLS:
        raise unknown_name_error("attack protocol", name, PROTOCOLS, "--protocol")
    chosen = SETTINGS[name]
    if name == "paper":
        generator = _with_generator_defaults(generator, PAPER_GENERATOR)
    return ProtocolSettings(
        name, str(stop_rule or chosen["stop_rule"]), str(reference or chosen["reference"]),
        int(patience if patience is not None else chosen["patience"]), generator,
        bool(chosen["rescore_final"] if rescore_final is None else rescore_final))
