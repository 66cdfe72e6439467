"""results.json against its JSON Schema, as one line per problem.

The schema ships inside the package (`evalstress/report/results.schema.json`), so an installed
evalstress validates without the repository; `docs/results.schema.json` is its documented copy
and a test keeps the two identical. A problem reads `JSON.PATH: what is wrong`, e.g.
`analyses: missing (a run always has it)` or `analyses.blindspot.rows[0].verdict: 'maybe' is
not one of pass, fail, inconclusive`, so the reader can find it in the file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources
from typing import Any

SCHEMA_FILE = "results.schema.json"

#: why a key must be there, said after "missing" (by JSON path)
WHY = {"analyses": "a run always has it",
       "evalstress": "a run always records the version that wrote it",
       "schema_version": "a stress-test run always has it"}


@cache
def results_schema() -> dict[str, Any]:
    """The JSON Schema of results.json, read from the installed package."""
    text = (resources.files("evalstress.report") / SCHEMA_FILE).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def json_path(parts: Sequence[str | int]) -> str:
    """`analyses.blindspot.rows[0].verdict` for the keys and indices leading to a value."""
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(the whole file)"


def _short(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + "…"


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def _evaluators_why(results: Mapping[str, Any]) -> str:
    listed = (results.get("config") or {}).get("evaluators") if isinstance(
        results.get("config"), Mapping) else None
    if isinstance(listed, list) and listed:
        return f"config.evaluators lists {', '.join(map(str, listed))}: the run scored them"
    return "a stress-test run always records the evaluators it scored"


def _describe(error: Any, results: Mapping[str, Any]) -> str:
    """One line for one jsonschema error: where, then what is wrong."""
    path = list(error.absolute_path)
    kind, expected, value = error.validator, error.validator_value, error.instance
    if kind == "required":
        missing = [k for k in expected if isinstance(value, Mapping) and k not in value]
        # one error per missing key, named only in its message ("'x' is a required property")
        name = next((k for k in missing if error.message.startswith(repr(k))),
                    missing[0] if missing else str(expected))
        where = json_path([*path, name])
        why = _evaluators_why(results) if where == "evaluators" else WHY.get(where)
        return f"{where}: missing" + (f" ({why})" if why else "")
    where = json_path(path)
    if kind == "minProperties" and expected == 1:
        why = _evaluators_why(results) if where == "evaluators" else None
        return f"{where}: empty" + (f" ({why})" if why else "")
    if kind == "type":
        wanted = " or ".join(expected) if isinstance(expected, list) else expected
        shown = "" if value is None else f" {_short(value)}"
        return f"{where}: expected {wanted}, got {_json_type(value)}{shown}"
    if kind == "enum":
        return f"{where}: {_short(value)} is not one of {', '.join(map(str, expected))}"
    if kind == "const":
        return f"{where}: {_short(value)} should be {_short(expected)}"
    if kind == "pattern":
        return f"{where}: {_short(value)} does not match {expected}"
    if kind in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        return f"{where}: {_short(value)} is out of range ({kind} {expected})"
    if kind in ("oneOf", "anyOf"):
        return f"{where}: {_short(value)} matches none of the allowed forms"
    return f"{where}: {error.message[:200]}"


def schema_problems(results: Mapping[str, Any]) -> list[str]:
    """Every way `results` departs from the schema, one line each, in file order of their
    JSON paths (empty when it follows the schema)."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(results_schema())
    errors = sorted(validator.iter_errors(results), key=lambda e: [
        (0, str(p), 0) if isinstance(p, str) else (1, "", p) for p in e.absolute_path])
    return list(dict.fromkeys(_describe(e, results) for e in errors))
