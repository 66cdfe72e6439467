"""Output contracts of a user's judge prompt: where the answer holds its score, and what it means.

A template of the user's own (`judge:...,prompt=FILE`, see `judge_prompt.py`) asks for its answer
in its own format; `output=` says how to read it:

- `rating` (the default): the last `Rating: N` / `Score: N` (or a JSON `rating` key), as the
  built-in forms are read;
- `number`: the answer is a number and nothing else (`4`, ` 4.5 `, `4/5`);
- `regex:PATTERN`: the last match of PATTERN, whose named group `score` holds a number, or whose
  named group `label` holds one of the `labels=` (e.g. `regex:Grade: (?P<label>[A-E])`);
- `json:FIELD`: a JSON object whose FIELD holds a number, or a label of `labels=`;
  `json:reasoning|score` names free-text fields written before the score field (the last one),
  which matters for the schema sent under `constrain=json`;
- `labels:A=5|B=4|C=3`: the answer's last line is one of the labels (a `Verdict:`-style prefix,
  quotes, emphasis and a final full stop aside), worth the number it maps to.

An answer the contract cannot read is missing with the reason; a value outside the scale too.
Never a default score.

Constrained decoding follows the contract (`constrain=grammar|json`): labels and `number` get a
GBNF grammar whose only strings are the scale's labels (the choice), `rating` a grammar that ends
in `Rating: N`, `json:` a JSON schema whose score field is an enum of the labels. A `regex:`
contract has no grammar. When the score is one token of the answer and the endpoint returns top
logprobs there, the score is the expected value over the labels' probabilities (as for the
built-in forms).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evalstress.core.strict import unknown_name_error
from evalstress.core.userfile import parse_json
from evalstress.evaluators import judge_constraints as constraints
from evalstress.llm.client import ChatResponse

KINDS = ("rating", "number", "regex", "json", "labels")
_NUMBER = re.compile(r"^\W*?(-?\d+(?:\.\d+)?)\s*(?:/\s*\d+(?:\.\d+)?)?\W*$")
_PREFIX = re.compile(r"^[^:\n]{0,40}:\s*")  # "Verdict: ", "Final answer: "
_DECOR = " \t*_`\"'“”‘’[]()<>"
_RATING = re.compile(
    r"(?:rating|score|\[result\]|result)\s*(?:\(\s*\d+\s*-\s*\d+\s*\))?\s*[:=]?\s*\**\s*"
    r"(-?\d+(?:\.\d+)?)", re.IGNORECASE)
_BARE = re.compile(r"^\W*(-?\d+(?:\.\d+)?)\s*(?:/\s*\d+)?\W*$")


def find_rating(text: str, form: str = "analyze-rate") -> tuple[str, int] | None:
    """The last 'Rating: N' (or '[RESULT] N') as (number text, offset); the rating key of a
    JSON answer; a bare number for score-only answers. Shared by the built-in forms and the
    `rating` contract."""
    from_json = constraints.json_rating(text)
    if from_json is not None:
        return from_json
    matches = list(_RATING.finditer(text))
    if matches:
        last = matches[-1]
        return last[1], last.start(1)
    if form == "score-only":
        bare = _BARE.match(text)
        if bare:
            return bare[1], bare.start(1)
    return None


class ContractError(ValueError):
    """An `output=` / `labels=` setting that cannot work; the message names the setting."""


@dataclass(frozen=True)
class Reading:
    """What the contract found in one answer: the value and where its text starts, or why not."""

    value: float | None
    reason: str = ""
    offset: int = -1  # where the score's text starts in the answer (-1: unknown)
    matched: str = ""  # the score's text as written (a number or a label)


def parse_labels(text: str, where: str = "labels") -> dict[str, float]:
    """`A=5|B=4|C=3` -> {"A": 5.0, ...}: each label once, each worth a number."""
    out: dict[str, float] = {}
    for part in str(text).split("|"):
        label, sep, value = part.rpartition("=")
        label = label.strip()
        if not sep or not label:
            raise ContractError(f"{where}: '{part}' must look like LABEL=NUMBER "
                                "(e.g. labels:A=5|B=4|C=3)")
        try:
            number = float(value)
        except ValueError:
            raise ContractError(f"{where}: label '{label}' maps to '{value}', not a number") \
                from None
        if label in out:
            raise ContractError(f"{where}: label '{label}' is given twice")
        out[label] = number
    if len(out) < 2:
        raise ContractError(f"{where}: give at least two labels")
    return out


def _shown(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else str(number)


@dataclass(frozen=True)
class OutputContract:
    """How to read a score out of an answer to a user's template (see the module docstring)."""

    kind: str = "rating"
    pattern: str = ""  # regex kind
    fields: tuple[str, ...] = ()  # json kind: free-text fields, then the score field
    labels: Mapping[str, float] = field(default_factory=dict)
    scale: tuple[float, float] = (1.0, 5.0)

    # --- building -----------------------------------------------------------------------------

    @classmethod
    def parse(cls, output: str, labels: str | None, scale: tuple[float, float] | None
              ) -> OutputContract:
        """The contract of `output=` (with `labels=` and `scale=` as given, None when not)."""
        text = str(output).strip()
        kind, _, arg = text.partition(":")
        kind = kind.strip()
        if kind not in KINDS:
            raise unknown_name_error("output contract", kind, KINDS, f"output={text}")
        mapping = parse_labels(labels, "labels=") if labels else {}
        if kind == "labels":
            if labels:
                raise ContractError("output=labels:... already lists the labels; drop labels=")
            mapping = parse_labels(arg, "output=labels:")
        elif kind in ("rating", "number"):
            if arg:
                raise ContractError(f"output={kind} takes nothing after it (got '{text}')")
            if mapping:
                raise ContractError(f"output={kind} reads a number: labels= needs output=regex:"
                                    "... with a (?P<label>...) group, output=json:FIELD or "
                                    "output=labels:...")
        pattern = ""
        fields: tuple[str, ...] = ()
        if kind == "regex":
            pattern = arg
            try:
                compiled = re.compile(pattern)
            except re.error as exc:
                raise ContractError(f"output=regex:{pattern}: not a regular expression ({exc})") \
                    from None
            groups = set(compiled.groupindex)
            if "score" in groups and "label" in groups:
                raise ContractError("output=regex: name one group, score or label, not both")
            if "score" not in groups and "label" not in groups:
                raise ContractError(f"output=regex:{pattern}: the pattern needs a named group "
                                    "(?P<score>...) for a number or (?P<label>...) for a label")
            if "label" in groups and not mapping:
                raise ContractError("output=regex with a (?P<label>...) group needs labels=A=5|"
                                    "B=4|... to say what each label is worth")
            if "score" in groups and mapping:
                raise ContractError("output=regex with a (?P<score>...) group reads a number: "
                                    "drop labels= or name the group label")
        if kind == "json":
            fields = tuple(f.strip() for f in arg.split("|"))
            if not arg or not all(fields):
                raise ContractError("output=json:FIELD names the field that holds the score "
                                    "(e.g. output=json:score, or json:reasoning|score)")
            if len(set(fields)) != len(fields):
                raise ContractError(f"output=json:{arg} names a field twice")
        if mapping:
            values = list(mapping.values())
            low, high = min(values), max(values)
            if scale is not None:
                if not all(scale[0] <= v <= scale[1] for v in values):
                    raise ContractError(f"labels worth {_shown(low)}..{_shown(high)} fall outside "
                                        f"scale={_shown(scale[0])}-{_shown(scale[1])}")
                low, high = scale
            if high <= low:
                raise ContractError("the labels must not all be worth the same")
            scale = (low, high)
        return cls(kind, pattern, fields, dict(mapping), scale or (1.0, 5.0))

    def describe(self) -> str:
        """A canonical text of the contract, for the evaluator signature and cache key."""
        if self.kind == "regex":
            head = f"regex:{self.pattern}"
        elif self.kind == "json":
            head = "json:" + "|".join(self.fields)
        else:
            head = self.kind
        if self.labels:
            head += " labels:" + "|".join(f"{k}={_shown(v)}" for k, v in self.labels.items())
        return f"{head} scale:{_shown(self.scale[0])}-{_shown(self.scale[1])}"

    # --- reading ------------------------------------------------------------------------------

    @property
    def score_field(self) -> str:
        return self.fields[-1] if self.fields else ""

    def label_values(self) -> dict[str, float]:
        """Text -> value of every answer a single token could carry: the labels, or the whole
        numbers of a scale whose labels are single digits (for logprob weighting)."""
        if self.labels:
            return dict(self.labels)
        low, high = self.scale
        if low >= 0 and high <= 9 and float(low).is_integer() and float(high).is_integer():
            return {str(v): float(v) for v in range(int(low), int(high) + 1)}
        return {}

    def read(self, text: str) -> Reading:
        """The score in one answer, or why there is none (a value outside the scale included)."""
        found = self._find(text)
        if found.value is None:
            return found
        low, high = self.scale
        if not low <= found.value <= high:
            return Reading(None, f"{found.matched or _shown(found.value)} is outside the "
                                 f"{_shown(low)}-{_shown(high)} scale")
        return found

    def _find(self, text: str) -> Reading:
        if self.kind == "rating":
            got = find_rating(text, "analyze-rate")
            if got is None:
                return Reading(None, f"no 'Rating: N' in the answer: {_clip(text)}")
            return Reading(float(got[0]), offset=got[1], matched=got[0])
        if self.kind == "number":
            match = _NUMBER.match(text)
            if match is None:
                return Reading(None, f"the answer is not a number alone: {_clip(text)}")
            return Reading(float(match[1]), offset=match.start(1), matched=match[1])
        if self.kind == "regex":
            return self._regex(text)
        if self.kind == "json":
            return self._json(text)
        return self._last_line(text)

    def _value(self, raw: str, offset: int, what: str) -> Reading:
        """A number, or a label's number, from the text the contract picked out."""
        if self.labels:
            label = raw.strip()
            if label in self.labels:
                return Reading(self.labels[label], offset=offset, matched=label)
            folded = {k.casefold(): k for k in self.labels}
            if len(folded) == len(self.labels) and label.casefold() in folded:
                key = folded[label.casefold()]
                return Reading(self.labels[key], offset=offset, matched=label)
            return Reading(None, f"{what} '{_clip(label, 40)[1:-1]}' is none of the labels "
                                 f"{', '.join(self.labels)}")
        try:
            return Reading(float(raw), offset=offset, matched=raw.strip())
        except ValueError:
            return Reading(None, f"{what} '{_clip(raw, 40)[1:-1]}' is not a number")

    def _regex(self, text: str) -> Reading:
        matches = list(re.finditer(self.pattern, text))
        if not matches:
            return Reading(None, f"no match of the output pattern in the answer: {_clip(text)}")
        last = matches[-1]
        group = "label" if self.labels else "score"
        if last[group] is None:
            return Reading(None, f"the output pattern matched without its '{group}' group")
        return self._value(last[group], last.start(group), f"the matched {group}")

    def _json(self, text: str) -> Reading:
        body = text.strip()
        fence = re.search(r"```(?:json)?\s*\n(.*?)```", body, re.DOTALL)
        if fence:
            body = fence[1].strip()
        start, end = body.find("{"), body.rfind("}")
        try:
            data = parse_json(body[start:end + 1], "the answer") if 0 <= start < end else None
        except ValueError:
            data = None
        if not isinstance(data, dict):
            return Reading(None, f"the answer holds no JSON object: {_clip(text)}")
        path = self.score_field.split(".")
        value: Any = data
        for key in path:
            if not isinstance(value, dict) or key not in value:
                return Reading(None, f"the JSON answer has no field '{self.score_field}' "
                                     f"(fields: {', '.join(map(str, data)) or 'none'})")
            value = value[key]
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            return Reading(None, f"the JSON field '{self.score_field}' holds {value!r}, not a "
                                 f"{'label' if self.labels else 'number'}")
        raw = value if isinstance(value, str) else json.dumps(value)
        offset = -1
        if len(path) == 1:  # where the value is written, for logprob weighting
            spots = list(re.finditer(rf'"{re.escape(path[0])}"\s*:\s*"?', text))
            if spots:
                offset = spots[-1].end()
        return self._value(raw, offset, f"the JSON field '{self.score_field}'")

    def _last_line(self, text: str) -> Reading:
        lines = [line for line in text.splitlines() if line.strip(_DECOR + ".!")]
        if not lines:
            return Reading(None, "empty answer")
        line = lines[-1]
        core = line.strip(_DECOR).rstrip(".!").strip(_DECOR)
        if core not in self.labels:
            prefix = _PREFIX.match(core)
            if prefix:
                core = core[prefix.end():].strip(_DECOR).rstrip(".!").strip(_DECOR)
        offset = text.rfind(core) if core else -1
        found = self._value(core, offset, "the last line")
        if found.value is None:
            return Reading(None, f"the last line {_clip(line, 60)} is none of the labels "
                                 f"{', '.join(self.labels)}")
        return found

    # --- logprob weighting ------------------------------------------------------------------

    def weighted(self, response: ChatResponse, reading: Reading
                 ) -> tuple[float, float, float] | None:
        """(expected value, label mass, top label's share) from the top logprobs of the token
        that carries the score, when that token is the whole label; else None."""
        values = self.label_values()
        if not response.logprobs or not values or reading.offset < 0:
            return None
        position = 0
        for item in response.logprobs:
            token = str(item.get("token", ""))
            if position <= reading.offset < position + len(token):
                if _bare(token) != reading.matched:
                    return None
                found: dict[float, list[float]] = {}
                for candidate, logprob in sorted((item.get("top") or {}).items()):
                    label = _bare(candidate)
                    if label in values and logprob is not None:
                        found.setdefault(values[label], []).append(math.exp(logprob))
                by_value = {v: math.fsum(ps) for v, ps in sorted(found.items())}
                mass = math.fsum(by_value.values())
                if mass <= 0:
                    return None
                # shares first, so a single label's score is that label's value exactly
                expected = math.fsum(v * (p / mass) for v, p in by_value.items())
                return expected, mass, max(by_value.values()) / mass
            position += len(token)
        return None

    # --- constrained decoding -----------------------------------------------------------------

    def choices(self) -> list[str]:
        """The strings a constrained answer may hold as its score."""
        if self.labels:
            return list(self.labels)
        low, high = self.scale
        if not (float(low).is_integer() and float(high).is_integer()):
            raise ContractError(f"constrained decoding needs whole-number scale ends (got "
                                f"{_shown(low)}-{_shown(high)})")
        return [str(v) for v in range(int(low), int(high) + 1)]

    def supports(self, constrain: str) -> str | None:
        """None when `constrain` fits this contract, else why not."""
        if constrain == "grammar" and self.kind in ("regex", "json"):
            return (f"output={self.kind} has no grammar" + (
                "; use constrain=json (a JSON schema)" if self.kind == "json" else
                "; use constrain=off"))
        if constrain == "json" and self.kind != "json":
            return f"constrain=json sends a JSON schema, which needs output=json:FIELD (not " \
                   f"output={self.kind})"
        return None

    def gbnf(self, max_tokens: int) -> str:
        """A GBNF grammar whose score can only be one of the labels (`choices`)."""
        quoted = " | ".join(json.dumps(c) for c in sorted(self.choices(), key=str))
        if self.kind == "rating":
            lines = 8
            width = max(40, (3 * max_tokens) // (lines + 1))
            return (f'root ::= (line "\\n"){{0,{lines}}} "Rating: " score\n'
                    f"line ::= [^\\n]{{1,{width}}}\nscore ::= {quoted}\n")
        return f"root ::= score\nscore ::= {quoted}\n"

    def json_schema(self) -> dict[str, Any]:
        """The JSON schema of a `json:` contract: free-text fields, then the score field."""
        if len(self.score_field.split(".")) != 1:
            raise ContractError(f"output=json:{self.score_field}: a schema is sent for "
                                "top-level fields only; use constrain=off")
        score: dict[str, Any]
        if self.labels:
            score = {"type": "string", "enum": list(self.labels)}
        else:
            score = {"type": "integer", "enum": [int(c) for c in self.choices()]}
        properties: dict[str, Any] = {f: {"type": "string"} for f in self.fields[:-1]}
        properties[self.score_field] = score
        return {"type": "object", "properties": properties, "required": list(properties),
                "additionalProperties": False}

    def response_format(self) -> dict[str, Any]:
        return {"type": "json_schema", "json_schema": {"name": "judgment", "strict": True,
                                                       "schema": self.json_schema()}}

    def request_params(self, constrain: str, max_tokens: int) -> dict[str, Any]:
        """The constraint parameters of a request (none under constrain=off)."""
        if constrain == "grammar":
            return {"grammar": self.gbnf(max_tokens)}
        if constrain == "json":
            return {"response_format": self.response_format()}
        return {}


def auto_constraint(contract: OutputContract, local: bool) -> str:
    """`constrain=auto`: in-process models follow the contract where it has a constraint;
    endpoints get none unless asked (not every server understands grammars or schemas)."""
    if not local:
        return "off"
    if contract.kind == "json":
        return "json"
    return "off" if contract.kind == "regex" else "grammar"


def _bare(token: str) -> str:
    return token.strip().strip("\"'").strip()


def _clip(text: str, width: int = 80) -> str:
    return repr(text.strip().replace("\n", " ")[:width])


def typical_completion(contract: OutputContract, constrain: str) -> int:
    """Tokens a typical answer takes, for --dry-run estimates only."""
    if constrain == "grammar" and contract.kind != "rating":
        return 2
    return 100

