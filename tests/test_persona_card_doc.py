"""docs/judges.md quotes the card of a judge persona top to bottom: the card made again by
bench/persona_card.py, with the port, folder, date and durations written one way, is the one
the page quotes."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("persona_card",
                                                  ROOT / "bench" / "persona_card.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.long_run  # makes the persona's card: about 10 s
def test_the_page_quotes_the_persona_card_as_it_is_made_today() -> None:
    module = bench()
    page = module.PAGE.read_text(encoding="utf-8")
    made = module.persona_card()
    assert module.with_card(page, made) == page, (
        "docs/judges.md is out of date: run PYTHONPATH=src python bench/persona_card.py")
    # what the walk-through under it relies on
    assert "1. **Biased toward padding" in made
    assert "2. **Biased toward the position" in made
    assert "| authority | probe | overall | 0.375 |" in made
    assert "20 of 57 examples" in made and "http://127.0.0.1:8080/v1" in made


def test_the_normalising_writes_port_folder_date_and_durations_one_way(tmp_path: Path) -> None:
    module = bench()
    text = (f"spec base_url=http://127.0.0.1:41234/v1 in {tmp_path}/runs · "
            "2026-12-06T13:36:37+00:00 · done in 12.5 s, 3 min")
    assert module.normalise(text, tmp_path, 41234) == (
        "spec base_url=http://127.0.0.1:8080/v1 in cards/persona/runs · "
        "YYYY-MM-DDTHH:MM:SS+00:00 · done in N s, N min")


def test_a_page_without_the_markers_is_refused() -> None:
    with pytest.raises(ValueError, match="persona-card:start"):
        bench().with_card("no markers here", "card")
