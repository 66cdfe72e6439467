"""Make the judge-persona card that docs/judges.md quotes, and write it into the page.

The card is `evalstress card` of a fake-server judge with planted biases of known strength
(`PERSONA`), on 20 examples of the built-in corpus with one seed (`BUDGET`: the whole card
takes well under a minute). Its card.md goes into docs/judges.md between the markers, with what
changes from run to run (the server's port, the card's folder, durations) written the same
way every time.

Run: `PYTHONPATH=src python bench/persona_card.py [--check]`; `--check` fails when the page
is out of date instead of rewriting it (tests/test_persona_card_doc.py runs it).
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

from evalstress.card.make import make_card, plan_card
from evalstress.card.plan import BUDGETS, Budget
from evalstress.card.run import CardOptions
from evalstress.llm.fake_server import FakeServer
from evalstress.llm.personas import persona

PAGE = Path(__file__).resolve().parents[1] / "docs" / "judges.md"
START, END = "<!-- persona-card:start -->", "<!-- persona-card:end -->"
#: the judge: verbosity and authority biases of 0.4 points, a pull of 0.5 towards the text shown
#: first, and noise of sd 0.3 on every answer
PERSONA = "verbosity:0.4+authority:0.4+position:0.5+noisy:0.3"
MODEL = "gpt-4o-mini"
#: the standard budget's suites and sizes on 20 examples with one seed (a budget of the card's
#: schema keeps one of its names, as the real-data atlas's capped paper budget does)
BUDGET = Budget("standard", examples=20, seeds=1, protocol="default",
                suites=BUDGETS["standard"].suites, attack=BUDGETS["standard"].attack,
                description="the standard budget's suites on 20 examples spread over the "
                            "tasks, one seed (the persona card of docs/judges.md)")
#: where the quoted card says it was made, and the port its spec names
SHOWN_FOLDER, SHOWN_PORT = "cards/persona", "8080"


def normalise(text: str, folder: Path, port: int) -> str:
    """The card's text with the run's own folder, port, date and durations written one way."""
    text = text.replace(str(folder), SHOWN_FOLDER).replace(f":{port}/", f":{SHOWN_PORT}/")
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", "YYYY-MM-DDTHH:MM:SS+00:00", text)
    text = re.sub(r"\b\d+(\.\d+)? s\b", "N s", text)
    return re.sub(r"\b\d+(\.\d+)? min\b", "N min", text)


def persona_card() -> str:
    """Make the card in a temporary folder and return its card.md, normalised."""
    with tempfile.TemporaryDirectory() as tmp, \
            FakeServer(responder=persona(PERSONA), models=(MODEL,)) as server:
        folder = Path(tmp) / "card"
        spec = f"judge:model={MODEL},base_url={server.base_url},form=score-only"
        plan = plan_card(spec, budget=BUDGET)
        card = make_card(plan, CardOptions(out=folder, cache_dir=Path(tmp) / "cache",
                                           workers=1))
        text = (folder / "card.md").read_text(encoding="utf-8")
        assert card.out == folder
        return normalise(text, folder, int(server.base_url.rsplit(":", 1)[1].split("/")[0]))


def quoted(card: str) -> str:
    """The card as the page quotes it: a Markdown block between the markers."""
    return f"{START}\n\n````markdown\n{card.rstrip()}\n````\n\n{END}"


def with_card(page: str, card: str) -> str:
    """The page with the card between its markers (a ValueError when they are missing)."""
    start, end = page.find(START), page.find(END)
    if start < 0 or end < start:
        raise ValueError(f"{PAGE} has no {START} ... {END} block")
    return page[:start] + quoted(card) + page[end + len(END):]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="only check the page is current")
    args = parser.parse_args()
    page = PAGE.read_text(encoding="utf-8")
    text = with_card(page, persona_card())
    if args.check:
        if text != page:
            print(f"{PAGE} is out of date: run python bench/persona_card.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
