"""card.json follows docs/card.schema.json; the schema rejects broken cards; the packaged copy
is the documented one."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

jsonschema = pytest.importorskip("jsonschema")

DOCS = Path(__file__).parents[2] / "docs" / "card.schema.json"


def test_the_schema_is_a_valid_2020_12_schema() -> None:
    schema = json.loads(DOCS.read_text(encoding="utf-8"))
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)


def test_the_packaged_schema_is_the_documented_one() -> None:
    from importlib import resources

    from evalstress.card.schema import SCHEMA_FILE, card_schema

    packaged = resources.files("evalstress.card") / SCHEMA_FILE
    assert packaged.read_bytes() == DOCS.read_bytes()
    assert card_schema() == json.loads(DOCS.read_text(encoding="utf-8"))


def test_a_wheel_ships_the_card_schema() -> None:
    import fnmatch
    import tomllib

    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text("utf-8"))
    patterns = project["tool"]["setuptools"]["package-data"]["evalstress"]
    assert any(fnmatch.fnmatch("card/card.schema.json", pattern) for pattern in patterns)


def _methods(card: dict[str, Any]) -> dict[str, Any]:
    return card["methods"]


BROKEN: list[tuple[str, Callable[[dict[str, Any]], Any], str]] = [
    ("no findings", lambda c: c.pop("findings"), "(the whole file)"),
    ("a status nobody knows", lambda c: _methods(c)["blindspot"].__setitem__("status", "maybe"),
     "methods.blindspot.status"),
    ("not run without a reason",
     lambda c: _methods(c)["adversarial"].__setitem__("reason", ""), "methods.adversarial"),
    ("a method left out", lambda c: _methods(c).pop("criteria"), "methods"),
    ("a gate without its verdict", lambda c: c["gate"].pop("verdict"), "gate"),
    ("a finding without its interval", lambda c: c["findings"][0].pop("interval"),
     "findings[0]"),
    ("a data hash that is not one", lambda c: c["data"].__setitem__("sha256", "abc"),
     "data.sha256"),
    ("a ran method without its run directory",
     lambda c: _methods(c)["blindspot"].__setitem__("run_dir", None), "methods.blindspot"),
]


def test_the_card_of_a_real_run_follows_the_schema(bleu_card: tuple[Path, str]) -> None:
    from evalstress.card.schema import card_problems

    card = json.loads((bleu_card[0] / "card.json").read_text(encoding="utf-8"))
    assert card_problems(card) == []


@pytest.mark.parametrize(("what", "damage", "where"), BROKEN, ids=[b[0] for b in BROKEN])
def test_a_broken_card_is_rejected_naming_where(bleu_card: tuple[Path, str], what: str,
                                                damage: Callable[[dict[str, Any]], Any],
                                                where: str) -> None:
    from evalstress.card.schema import card_problems

    card = copy.deepcopy(json.loads((bleu_card[0] / "card.json").read_text(encoding="utf-8")))
    damage(card)
    problems = card_problems(card)
    assert problems, what
    assert any(p.startswith(where) for p in problems), problems
