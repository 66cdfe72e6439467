"""Constrained decoding for the judge: a grammar or a JSON schema per answer form and scale.

`constrain=grammar` sends a GBNF `grammar` (llama.cpp's servers and the in-process local model);
`constrain=json` sends an OpenAI-style `response_format` with a JSON schema (OpenAI structured
outputs, vLLM, llama.cpp's C++ server, the local model). Either way the answer keeps the shape the
prompt asks for, and the rating can only be one of the scale's labels, so a small model cannot
wander off into prose and lose the score. The free-text parts stay free; they are bounded in lines
so the rating comes before `max_tokens` runs out in all but unusual answers.
"""

from __future__ import annotations

import re
from typing import Any

from evalstress.core.userfile import parse_json

CONSTRAINTS = ("auto", "off", "grammar", "json")

#: The JSON key of the free text and of the rating, per form (in the order they are written).
_JSON_FIELDS = {"score-only": (None, "rating"), "rate-explain": ("explanation", "rating"),
                "analyze-rate": ("analysis", "rating"), "g-eval": ("analysis", "rating"),
                "rubric": ("feedback", "result")}
_JSON_INSTRUCTION = {
    "score-only": 'Answer with JSON only: {{"rating": N}} where N is a whole number from {lo} '
                  "to {hi}.",
    "rate-explain": 'Answer with JSON only: {{"rating": N, "explanation": "..."}} where N is a '
                    "whole number from {lo} to {hi}.",
    "analyze-rate": 'Answer with JSON only: {{"analysis": "...", "rating": N}} where N is a '
                    "whole number from {lo} to {hi}.",
    "g-eval": 'Answer with JSON only: {{"analysis": "...", "rating": N}} where N is a whole '
              "number from {lo} to {hi}.",
    "rubric": 'Answer with JSON only: {{"feedback": "...", "result": N}} where N is a whole '
              "number from {lo} to {hi}.",
}


def labels(scale: tuple[int, int]) -> list[int]:
    low, high = scale
    return list(range(low, high + 1))


def gbnf(form: str, scale: tuple[int, int], max_tokens: int) -> str:
    """A GBNF grammar for the answer of `form` whose rating is one of the scale's labels."""
    rating = "rating ::= " + " | ".join(f'"{v}"' for v in sorted(labels(scale), key=str))
    lines = 8
    width = max(40, (3 * max_tokens) // (lines + 1))  # about 3 characters a token
    line = f"line ::= [^\\n]{{1,{width}}}"
    if form == "score-only":
        rules = ["root ::= rating"]
    elif form == "rate-explain":
        rules = [f'root ::= "Rating: " rating ("\\n" line){{0,{lines}}}', line]
    elif form == "rubric":
        rules = [f'root ::= "Feedback: " [^\\n\\[]{{1,{width * lines}}} "[RESULT] " rating']
    else:  # analyze-rate, g-eval: the analysis first, the rating last
        rules = [f'root ::= (line "\\n"){{0,{lines}}} "Rating: " rating', line]
    return "\n".join([*rules, rating]) + "\n"


def json_schema(form: str, scale: tuple[int, int]) -> dict[str, Any]:
    """The JSON schema of the answer of `form` (OpenAI strict mode accepts it)."""
    text_key, rating_key = _JSON_FIELDS[form]
    rating = {"type": "integer", "enum": labels(scale)}
    properties: dict[str, Any] = {}
    if form == "rate-explain":
        properties = {rating_key: rating, str(text_key): {"type": "string"}}
    elif text_key is not None:
        properties = {text_key: {"type": "string"}, rating_key: rating}
    else:
        properties = {rating_key: rating}
    return {"type": "object", "properties": properties, "required": list(properties),
            "additionalProperties": False}


def response_format(form: str, scale: tuple[int, int]) -> dict[str, Any]:
    return {"type": "json_schema",
            "json_schema": {"name": "judgment", "strict": True, "schema": json_schema(form, scale)}}


def json_instruction(form: str, scale: tuple[int, int]) -> str:
    low, high = scale
    return _JSON_INSTRUCTION[form].format(lo=low, hi=high)


_JSON_RATING = re.compile(r'"(?:rating|result|score)"\s*:\s*"?(-?\d+(?:\.\d+)?)\b(?!\.\d)',
                          re.IGNORECASE)


def json_rating(text: str) -> tuple[str, int] | None:
    """The rating of a JSON answer as (number text, offset), or None when it is not JSON.

    An answer cut off at max_tokens after its rating field (rate-explain writes the rating
    first) still gives the rating: the key is read where it stands, outside the strings (quotes
    inside a JSON string are escaped, so `"rating": N` cannot appear there)."""
    stripped = text.strip()
    if not stripped.startswith("{"):
        return None
    try:
        data = parse_json(stripped, "the answer")
    except ValueError:
        data = None  # unfinished: read the fields that are complete
    if isinstance(data, dict) and not any(k in data for k in ("rating", "result", "score")):
        return None
    matches = list(_JSON_RATING.finditer(text))
    if not matches:
        return None
    last = matches[-1]
    return last[1], last.start(1)
