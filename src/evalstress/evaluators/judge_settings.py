"""The LLM judge's settings, grouped by what they govern, each a declared parameter.

A judge spec stays flat (`judge:model=m,temperature=0,timeout=30`); each key is a field of one
of five settings objects, and the declaration (`JUDGE_PARAMS`, built from the fields) maps the
spec onto them and checks every value when the spec loads:

- `JudgeEndpoint`: which model answers and how it is reached (model, base_url, key, cache);
- `JudgeAsk`: what the judge is asked (aspects, form, criteria, scale, a preset or the
  user's own prompt);
- `JudgeSampling`: how answers are sampled and combined (n, temperature, seed, logprobs);
- `JudgeReading`: how an answer is read (the output contract, constrained decoding);
- `JudgeLimits`: how long and how often it may try (timeouts, retries, concurrency, re-asks).

Settings a preset may fill (form, level, n, temperature, aggregate, steps) default to None:
"not given", so the preset's value or the judge's own default applies (`judge_presets`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from evalstress.core.params import (
    BOOLEAN,
    TEXT,
    DeclaredSettings,
    ParamKind,
    ParamValueError,
    declare_groups,
    duration,
    one_of,
    optional,
    path,
    real,
    setting,
    text,
    whole_number,
)
from evalstress.criteria import LEVELS
from evalstress.evaluators.judge_constraints import CONSTRAINTS
from evalstress.evaluators.judge_presets import PRESETS

FORMS = ("score-only", "rate-explain", "analyze-rate", "g-eval", "rubric")
AGGREGATES = ("mean", "median", "mode")
#: G-Eval's evaluation steps: the judge's fixed four, or written by the judge (`geval`)
STEP_MODES = ("generic", "auto")
_SCALE = re.compile(r"(-?\d+)\s*(?:-|to|\.\.)\s*(-?\d+)")


def parse_scale(scale: str | tuple[int, int]) -> tuple[int, int]:
    """(bottom, top) of a rating scale written `1-5`, `0 to 100` or `1..10`."""
    if isinstance(scale, tuple):
        low, high = scale
    else:
        match = _SCALE.fullmatch(str(scale).strip())
        if not match:
            raise ValueError(f"scale '{scale}' must look like 1-5 or 0-100")
        low, high = int(match[1]), int(match[2])
    if high <= low:
        raise ValueError(f"scale '{scale}': the top must exceed the bottom")
    return low, high


def _scale(value: Any) -> str:
    if isinstance(value, str):
        try:
            parse_scale(value)
            return value
        except ValueError:
            pass
    raise ParamValueError("expected a scale such as 1-5 or 0-100 (the top above the bottom)")


def _aspects(value: Any) -> str:
    if isinstance(value, str) and value.replace(",", " ").split():
        return value
    raise ParamValueError("expected one or more aspect names, space-separated")


def _cache(value: Any) -> bool | str:
    """true/on/1 (the run's response cache), false/off/none/0 (none), or a file of its own."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str | os.PathLike) and str(value).strip():
        word = str(value).strip().lower()
        if word in ("true", "on", "1", "false", "off", "none", "0"):
            return word in ("true", "on", "1")
        return str(value)
    raise ParamValueError("expected true, false or the path of a cache file")


SCALE = ParamKind("a scale such as 1-5 or 0-100", _scale)
ASPECTS = ParamKind("one or more aspect names, space-separated", _aspects)
CACHE = ParamKind("true, false or the path of a cache file", _cache)


@dataclass(frozen=True)
class JudgeEndpoint(DeclaredSettings):
    """Which model answers, and how it is reached."""

    model: str = setting(text(empty=True), "", "the model's name at the endpoint, local (the "
                         "shipped SmolLM2) or a .gguf file", short="model",
                         default_note="$EVALSTRESS_JUDGE_MODEL")
    base_url: str | None = setting(optional(TEXT), None, "the OpenAI-compatible endpoint; "
                                   "A|B spreads one model over several",
                                   signed="never", default_note="$EVALSTRESS_BASE_URL, "
                                   "$OPENAI_BASE_URL or https://api.openai.com/v1")
    api_key_env: str = setting(TEXT, "OPENAI_API_KEY", "the environment variable holding the "
                               "API key", signed="never")
    n_ctx: int | None = setting(optional(whole_number(1)), None, "the context window of an "
                                "in-process model", signed="never",
                                default_note="the model's own")
    cache: bool | str = setting(CACHE, True, "cache responses in the run's cache folder, "
                                "not at all (false) or in a file of their own",
                                signed="never")


@dataclass(frozen=True)
class JudgeAsk(DeclaredSettings):
    """What the judge is asked: which aspects, in which prompt form, with which criteria."""

    aspect: str = setting(ASPECTS, "overall", "the aspects judged, space-separated: the "
                          "criteria's aspects or their aliases, or free names a prompt= "
                          "template judges without a criterion", signed="never",
                          short="aspect")
    form: str | None = setting(optional(one_of(FORMS)), None, "the built-in prompt form",
                               short="form", default_note="analyze-rate (score-only for a "
                               "local model), or the preset's")
    level: str | None = setting(optional(one_of(LEVELS)), None, "the criteria's level of "
                                "detail", short="level", default_note="default, or the "
                                "preset's")
    scale: str | None = setting(optional(SCALE), None, "the rating scale", signed="never",
                                short="scale", default_note="1-5, or the output contract's")
    criteria: str | None = setting(optional(path()), None, "a YAML file of criteria that add "
                                   "to or replace the built-in ones", signed="never")
    criterion_variant: int = setting(whole_number(0), 0, "the wording of each built-in "
                                     "criterion's definition: 0 as written, 1 or 2 a "
                                     "rewording (criteria/paraphrases.yaml)", signed="given")
    with_source: bool | None = setting(optional(BOOLEAN), None, "show the source",
                                       default_note="true")
    with_reference: bool | None = setting(optional(BOOLEAN), None, "show the first reference",
                                          default_note="false")
    steps: str | None = setting(optional(one_of(STEP_MODES)), None, "G-Eval's evaluation "
                                "steps: the fixed ones, or written by the judge (auto)",
                                signed="never", default_note="generic, or the preset's")
    preset: str | None = setting(optional(one_of(tuple(PRESETS))), None, "a paper's judging "
                                 "protocol; the spec's own settings win", signed="never")
    prompt: str | None = setting(optional(path()), None, "your own prompt template file, "
                                 "instead of the built-in forms", signed="never")
    pair_prompt: str | None = setting(optional(path()), None, "your own pairwise prompt "
                                      "template file", signed="never")


@dataclass(frozen=True)
class JudgeSampling(DeclaredSettings):
    """How answers are sampled and combined into one score."""

    n: int | None = setting(optional(whole_number(1)), None, "samples per text",
                            short="n", default_note="1, or the preset's")
    temperature: float | None = setting(optional(real(0)), None, "the sampling temperature",
                                        short="t", default_note="1 when n > 1, else 0")
    aggregate: str | None = setting(optional(one_of(AGGREGATES)), None, "how the samples' "
                                    "ratings combine", default_note="mean, or the preset's")
    seed: int = setting(whole_number(0), 0, "the first sample's seed (sample i: seed + i)")
    logprobs: bool = setting(BOOLEAN, True, "weigh the rating by the top logprobs where the "
                             "endpoint returns them")
    top_logprobs: int = setting(whole_number(0), 10, "alternatives asked for per token")
    max_tokens: int | None = setting(optional(whole_number(1)), None, "the longest answer",
                                     default_note="by form: 8 for score-only, 256 or 512")


@dataclass(frozen=True)
class JudgeReading(DeclaredSettings):
    """How an answer is read: the output contract of a prompt= template, decoding limits."""

    output: str | None = setting(optional(TEXT), None, "where a prompt= answer holds the "
                                 "score: rating, json:FIELD, labels:A=5|B=4, regex:...",
                                 signed="never", default_note="the template's, else rating")
    labels: str | None = setting(optional(TEXT), None, "the labels of an output=labels "
                                 "contract, e.g. A=5|B=4", signed="never")
    pair_output: str | None = setting(optional(TEXT), None, "where a pairwise answer holds "
                                      "its verdict (1, 2 or 0 for a tie)", signed="never")
    constrain: str = setting(one_of(CONSTRAINTS), "auto", "constrained decoding: a grammar, "
                             "a JSON schema, none, or auto (the best the endpoint supports)",
                             signed="never")
    allow_reasoning: bool = setting(BOOLEAN, False, "let the shipped 135M model (model=local) "
                                    "write reasoning before its score, which it rarely ends; "
                                    "refused without it", signed="never")


@dataclass(frozen=True)
class JudgeLimits(DeclaredSettings):
    """How long and how often the judge may try; none of it changes a score."""

    max_concurrency: int = setting(whole_number(1), 16, "requests in flight per endpoint",
                                   signed="never")
    timeout: float = setting(duration(), 60.0, "seconds one attempt may take",
                             signed="never")
    deadline: float = setting(duration(), 600.0, "seconds one request may take, retries "
                              "included", signed="never")
    max_attempts: int = setting(whole_number(1), 6, "attempts per request (429, 5xx, "
                                "timeouts are retried)", signed="never")
    backoff: float = setting(real(0), 0.5, "seconds before the first retry, doubling",
                             signed="never")
    max_reasks: int = setting(whole_number(0), 2, "re-asks, with a new sample index, of "
                              "answers with no usable rating")


#: the judge's groups, by the name of its constructor's keyword
GROUPS: dict[str, type[DeclaredSettings]] = {
    "endpoint": JudgeEndpoint, "ask": JudgeAsk, "sampling": JudgeSampling,
    "reading": JudgeReading, "limits": JudgeLimits}
JUDGE_PARAMS = declare_groups(**GROUPS)
