"""Named judge settings: a paper's judging protocol in one spec key (`judge:...,preset=NAME`).

A preset fills the settings the spec leaves out; a setting the spec gives wins over the preset
(e.g. `preset=paper-000,n=3` for a cheaper run, or `criteria-levels`, which sets `level=` per
level). The resolved settings, not the preset's name, enter the score-cache signature, so a
preset judge and the same judge written out in full share their cached scores.

- `paper-000` (criteria confusion, appendix C.2 and sec. 5): analyse, then rate 1-5; the
  detailed criterion texts; temperature 1; 10 samples, averaged.
- `paper-003` (DHP, appendix E and sec. 4.1): G-Eval with evaluation steps the judge writes
  itself (Auto-CoT); temperature 0; each text scored 5 times and the scores averaged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evalstress.core.strict import unknown_name_error


@dataclass(frozen=True)
class JudgePreset:
    """The settings a preset gives, and where in its paper they come from."""

    settings: dict[str, Any]
    source: str


PRESETS: dict[str, JudgePreset] = {
    "paper-000": JudgePreset(
        {"form": "analyze-rate", "level": "detailed", "temperature": 1.0, "n": 10,
         "aggregate": "mean"},
        "paper 000: analyze-rate, temperature 1, 10 samples averaged (appendix C.2); detailed "
        "criteria (sec. 5)"),
    "paper-003": JudgePreset(
        {"form": "g-eval", "steps": "auto", "temperature": 0.0, "n": 5, "aggregate": "mean"},
        "paper 003: G-Eval with Auto-CoT steps (appendix E); temperature 0, 5 scores per text "
        "averaged (sec. 4.1)"),
}

#: what a judge uses for a setting that neither its spec nor its preset gives (None: the judge
#: decides, e.g. the form by whether the model runs locally)
DEFAULTS: dict[str, Any] = {"form": None, "level": "default", "temperature": None, "n": 1,
                            "aggregate": "mean", "steps": "generic"}


def resolve(preset: str | None, given: dict[str, Any]) -> dict[str, Any]:
    """The settings of `DEFAULTS`' keys: the spec's own (`given`, None for left out), else the
    preset's, else the default. An unknown preset is an error with a did-you-mean."""
    chosen: dict[str, Any] = {}
    if preset:
        if preset not in PRESETS:
            raise unknown_name_error("judge preset", str(preset), list(PRESETS), "judge")
        chosen = PRESETS[preset].settings
    return {key: given[key] if given.get(key) is not None else chosen.get(key, default)
            for key, default in DEFAULTS.items()}
