"""card.json against its JSON Schema, one line per problem.

The schema ships inside the package (`evalstress/card/card.schema.json`) so an installed
evalstress validates cards without the repository; `docs/card.schema.json` is its documented
copy, kept identical by a test (as `report.schema` does for results.json).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any

from evalstress.report.schema import json_path

SCHEMA_FILE = "card.schema.json"


@cache
def card_schema() -> dict[str, Any]:
    """The JSON Schema of card.json, read from the installed package."""
    text = (resources.files("evalstress.card") / SCHEMA_FILE).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def card_problems(card: Mapping[str, Any]) -> list[str]:
    """Every way `card` departs from the schema, as 'JSON.PATH: what is wrong' (empty when it
    follows it)."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(card_schema())
    errors = sorted(validator.iter_errors(card), key=lambda e: [str(p) for p in e.absolute_path])
    return [f"{json_path(list(e.absolute_path))}: {e.message[:200]}" for e in errors]
