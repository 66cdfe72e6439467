"""A judge prompt of the user's own: a template file with placeholders, read once and checked.

`judge:...,prompt=FILE` replaces the built-in prompt forms by the user's wording. The file is:

- plain text (any name that is not .yaml/.yml/.json): the whole file is the user message;
- YAML or JSON, a mapping: `user` (required), `system`, `examples` (few-shot turns: a list of
  `{user: ..., assistant: ...}`), and optionally `output` and `scale` (the contract the template
  asks for, see `judge_output.py`; the spec's `output=` / `scale=` win over them);
- YAML or JSON, a list of chat messages `{role, content}` (system, user, assistant), the last
  one from the user: the shape OpenAI and promptfoo use for chat prompts.

Placeholders are single-brace names, as in Python's `str.format` and inspect_ai's model-graded
templates: `{text}`, `{source}`, `{reference}`, `{references}`, `{criterion}`, `{aspect}`,
`{scale}`, `{scale_min}`, `{scale_max}`, `{labels}`, `{task}`; pairwise templates
(`pair_prompt=`) have `{text_1}` and `{text_2}` instead of `{text}`. `{{` and `}}` write a literal
brace; any other brace is literal as written (`{"score": 4}` needs no escaping). Jinja2 is not
used: a template has no logic, so what it sends is exactly what the file says.

Checks, when the file is read: an unknown placeholder is an error with a did-you-mean (names from
other tools' conventions, such as promptfoo's `{{output}}` or inspect_ai's `{answer}`, point to
ours); when a request is judged: a placeholder whose value the example lacks (no source, no
reference) makes that judgment missing, with the placeholder named. The template's content hash
enters the evaluator signature, so a changed prompt never reuses old scores.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from evalstress.core.strict import did_you_mean
from evalstress.core.userfile import DataError, check_readable, parse_user_yaml, read_user_text

#: placeholder -> what it holds (docs and error messages list these)
PLACEHOLDERS: Mapping[str, str] = {
    "text": "the text being judged",
    "source": "the example's source (document, conversation, question...)",
    "reference": "the example's first reference",
    "references": "every reference, one per line, numbered",
    "criterion": "the aspect's criterion text (criteria.yaml or criteria=FILE, at level=)",
    "aspect": "the aspect's name",
    "scale": "the scale as LOW-HIGH, e.g. 1-5",
    "scale_min": "the lowest score",
    "scale_max": "the highest score",
    "labels": "the contract's labels, comma-separated (labels contracts only)",
    "task": "one sentence saying what the text is (a summary of the source, ...)",
}
PAIR_PLACEHOLDERS: Mapping[str, str] = {
    **{k: v for k, v in PLACEHOLDERS.items() if k != "text"},
    "text_1": "the text shown first", "text_2": "the text shown second",
}
#: names other tools use for our placeholders (inspect_ai, promptfoo, G-Eval scripts)
CONVENTIONS: Mapping[str, str] = {
    "output": "text", "answer": "text", "response": "text", "completion": "text",
    "hypothesis": "text", "summary": "text", "prediction": "text", "candidate": "text",
    "input": "source", "question": "source", "document": "source", "context": "source",
    "prompt": "source", "article": "source", "ground_truth": "reference",
    "expected": "reference", "target": "reference", "ideal": "reference",
    "rubric": "criterion", "criteria": "criterion", "instructions": "criterion",
    "metric": "aspect", "metric_name": "aspect",
}
_TOKEN = re.compile(r"\{\{|\}\}|\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}")
_DOUBLED = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
ROLES = ("system", "user", "assistant")
TEMPLATE_FIELDS = ("system", "user", "examples", "output", "scale")


class TemplateError(ValueError):
    """A template that cannot be used, or a value a request lacks; the message says where."""


@dataclass(frozen=True)
class PromptTemplate:
    """The chat turns of a user's prompt, with the placeholders they use and a content hash."""

    path: str
    turns: tuple[tuple[str, str], ...]  # (role, content), the last one from the user
    used: frozenset[str]
    digest: str
    output: str | None = None
    scale: str | None = None
    pairwise: bool = False

    def render(self, values: Mapping[str, str | None]) -> list[dict[str, str]]:
        """The chat messages with every placeholder filled; TemplateError naming a placeholder
        whose value is None (the example lacks it)."""
        for name in sorted(self.used):
            if values.get(name) is None:
                raise TemplateError(f"the prompt template {self.path} uses {{{name}}}, which "
                                    f"this example lacks ({_LACKS.get(name, 'no value')})")
        return [{"role": role, "content": _fill(content, values)} for role, content in self.turns]


_LACKS = {"source": "its source is empty", "reference": "it has no references",
          "references": "it has no references", "criterion": "no criterion text at this level"}


def _fill(content: str, values: Mapping[str, str | None]) -> str:
    def one(match: re.Match[str]) -> str:
        token = match[0]
        if token == "{{":
            return "{"
        if token == "}}":
            return "}"
        return str(values[match[1]])
    return _TOKEN.sub(one, content)


def _line_of(raw: str, needle: str) -> int | None:
    at = raw.find(needle)
    return None if at < 0 else raw.count("\n", 0, at) + 1


def _check(content: str, raw: str, where: str, known: Mapping[str, str]) -> set[str]:
    """The placeholders `content` uses; TemplateError for an unknown one (with its line)."""
    for doubled in _DOUBLED.finditer(content):
        name = doubled[1]
        ours = name if name in known else CONVENTIONS.get(name)
        if ours in known:
            line = _line_of(raw, doubled[0])
            raise TemplateError(
                f"{where}{f', line {line}' if line else ''}: {doubled[0]} is a literal brace "
                f"here: placeholders take single braces, write {{{ours}}}")
    used = set()
    for match in _TOKEN.finditer(content):
        name = match[1]
        if name is None:
            continue
        if name not in known:
            line = _line_of(raw, match[0])
            hint = CONVENTIONS.get(name)
            suggestion = (f" Did you mean '{hint}'?" if hint in known
                          else did_you_mean(name, known))
            raise TemplateError(
                f"{where}{f', line {line}' if line else ''}: unknown placeholder {{{name}}}."
                f"{suggestion} Known: {', '.join('{' + k + '}' for k in known)}. Write {{{{ "
                "and }} for a literal brace.")
        used.add(name)
    return used


def _text(value: Any, where: str, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise TemplateError(f"{where}: '{name}' must be a non-empty text")
    return value


def _turns_of(raw: Any, where: str) -> tuple[list[tuple[str, str]], str | None, str | None]:
    """(turns, output, scale) of a parsed YAML/JSON template."""
    turns: list[tuple[str, str]] = []
    if isinstance(raw, list):
        for i, item in enumerate(raw):
            if not isinstance(item, Mapping) or set(item) - {"role", "content"} or \
                    "role" not in item or "content" not in item:
                raise TemplateError(f"{where}: message {i + 1} must be a mapping with role and "
                                    "content only")
            role = str(item["role"])
            if role not in ROLES:
                raise TemplateError(f"{where}: message {i + 1} has role '{role}'; roles are "
                                    f"{', '.join(ROLES)}")
            turns.append((role, _text(item["content"], where, f"message {i + 1} content")))
        return turns, None, None
    if not isinstance(raw, Mapping):
        raise TemplateError(f"{where}: a YAML/JSON template is a mapping (system, user, "
                            "examples, output, scale) or a list of {role, content} messages")
    for key in raw:
        if key not in TEMPLATE_FIELDS:
            raise TemplateError(f"{where}: unknown field '{key}'."
                                f"{did_you_mean(str(key), TEMPLATE_FIELDS)} Known: "
                                f"{', '.join(TEMPLATE_FIELDS)}.")
    if "user" not in raw:
        raise TemplateError(f"{where}: the template needs a 'user' part (the message that "
                            "carries the text)")
    if "system" in raw:
        turns.append(("system", _text(raw["system"], where, "system")))
    examples = raw.get("examples") or []
    if not isinstance(examples, list):
        raise TemplateError(f"{where}: 'examples' must be a list of {{user, assistant}} turns")
    for i, shot in enumerate(examples):
        if not isinstance(shot, Mapping) or set(shot) != {"user", "assistant"}:
            raise TemplateError(f"{where}: examples[{i}] must have exactly 'user' and "
                                "'assistant'")
        turns.append(("user", _text(shot["user"], where, f"examples[{i}].user")))
        turns.append(("assistant", _text(shot["assistant"], where, f"examples[{i}].assistant")))
    turns.append(("user", _text(raw["user"], where, "user")))
    output = None if raw.get("output") is None else str(raw["output"])
    scale = None if raw.get("scale") is None else str(raw["scale"])
    return turns, output, scale


#: the largest prompt template read (bytes): a template goes with every request, and a bigger
#: file is a wrong path more often than a prompt; EVALSTRESS_MAX_TEMPLATE_BYTES raises it
MAX_TEMPLATE_BYTES = 1_000_000


def template_limit() -> int:
    """MAX_TEMPLATE_BYTES, or the user's EVALSTRESS_MAX_TEMPLATE_BYTES."""
    given = os.environ.get("EVALSTRESS_MAX_TEMPLATE_BYTES", "").strip()
    return int(given) if given.isdigit() else MAX_TEMPLATE_BYTES


def load_template(path: str | Path, *, pairwise: bool = False) -> PromptTemplate:
    """Read and check a template file (see the module docstring); errors name the file."""
    file = Path(str(path)).expanduser()
    where = str(path)
    try:
        size = check_readable(file, "a prompt template").stat().st_size
        if size > template_limit():
            raise TemplateError(f"{where}: the prompt template is {size:,} bytes, more than "
                                f"{template_limit():,} (a template is sent with every request; "
                                "raise the limit with EVALSTRESS_MAX_TEMPLATE_BYTES if you "
                                "mean it)")
        raw_text = read_user_text(file, "a prompt template")
    except DataError as exc:  # missing, a folder, not UTF-8 (its line and byte)
        raise TemplateError(str(exc)) from None
    output = scale = None
    if file.suffix.lower() in (".yaml", ".yml", ".json"):
        try:
            parsed = parse_user_yaml(raw_text)
        except yaml.YAMLError as exc:
            raise TemplateError(f"{where}: invalid YAML/JSON ({exc})") from None
        turns, output, scale = _turns_of(parsed, where)
    else:
        if not raw_text.strip():
            raise TemplateError(f"{where}: the prompt template is empty")
        turns = [("user", raw_text.strip("\n"))]
    if turns[-1][0] != "user":
        raise TemplateError(f"{where}: the last message must be the user's (it carries the text)")
    known = PAIR_PLACEHOLDERS if pairwise else PLACEHOLDERS
    used: set[str] = set()
    for _role, content in turns:
        used |= _check(content, raw_text, where, known)
    needed = ("text_1", "text_2") if pairwise else ("text",)
    missing = [n for n in needed if n not in used]
    if missing:
        raise TemplateError(f"{where}: the template never shows the text to judge: add "
                            f"{' and '.join('{' + n + '}' for n in missing)}")
    canonical = json.dumps({"turns": turns, "output": output, "scale": scale,
                            "pairwise": pairwise}, ensure_ascii=False, separators=(",", ":"))
    digest = hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]
    return PromptTemplate(where, tuple(turns), frozenset(used), digest, output, scale, pairwise)


def numbered(items: Sequence[str]) -> str:
    """References as the `{references}` placeholder shows them."""
    if len(items) == 1:
        return items[0]
    return "\n".join(f"{i}. {item}" for i, item in enumerate(items, 1))
