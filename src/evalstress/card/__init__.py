"""The evaluator card: one command that tells where an evaluator can be trusted and where not.

It runs every method that applies (blind spots, paper 002; discernment, paper 003; criteria
response, paper 000; adversarial search, paper 004, given a gold evaluator; correlation with
human scores, given data that carries them) as jobs through `evalstress.job`, checks the
evaluator itself first (the sanity gate), and writes card.json (docs/card.schema.json),
card.md, card.html and their figures into one folder with the methods' run directories under
`runs/`.

    import evalstress
    made = evalstress.card("bleu", budget="small")        # a Card
    made.to_dict()["findings"]

Modules: `plan` (budgets, which methods apply), `data` (examples and their hash), `run` (each
method as a job, resumable), `gate` (the sanity gate), `profile` (change figures with
intervals), `sections` (each method's section), `evidence` (before/after examples),
`findings` (the headlines), `model` (the Card and card.json), `schema`, `markdown` (card.md),
`assemble` (the card from finished runs), `make` (plan and run a card), `estimate` (the dry
run), `figures` (the SVG figures), `html` and `style` (card.html), `compare` (cards side by
side), `atlas` (the cards of the evaluators that run offline, and their docs page).
"""

from __future__ import annotations

import sys
import types
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evalstress.card.make import CARDS, check_endpoints, folder_name, make_card, plan_card
from evalstress.card.model import Card
from evalstress.card.plan import BUDGETS, CardPlan
from evalstress.card.run import CardError, CardOptions, card_workers, check_same_card
from evalstress.job.studysettings import check_card_execution


def card_folders(plans: Sequence[CardPlan], out: Path | None) -> list[Path]:
    """Each card's folder: `out` for one card, `out/<label>` for several; without `out`,
    cards/<label>. Two evaluators with one label get -2, -3, ... after it."""
    seen: Counter[str] = Counter()
    names: list[str] = []
    for plan in plans:
        name = folder_name(plan.evaluator.label)
        seen[name] += 1
        names.append(name if seen[name] == 1 else f"{name}-{seen[name]}")
    if out is not None and len(plans) == 1:
        return [Path(out)]
    base = Path(out) if out is not None else CARDS
    return [base / name for name in names]


def card(spec_or_specs: str | Sequence[str], data: str | Path | None = None, *,
         mapping: Any = None, task: str | None = None, budget: str = "standard",
         gold: str | None = None, generator: str | None = None,
         out: str | Path | None = None, cache: bool = True,
         cache_dir: str | Path | None = None, workers: int | None = None, force: bool = False,
         max_chars: int | None = None, preferences: str | Path | None = None,
         say: Any = None, backend: str = "local", ray_address: str | None = None,
         exhaustive: bool = False) -> Card | list[Card]:
    """The card of an evaluator spec (a Card), or of each of several (a list, one folder
    each). `data`: a JSONL/CSV/Parquet file read with `mapping` and `task`, or None for the
    built-in corpus. `budget`: small, standard or paper. `gold` (and `generator`) add the
    adversarial search. `max_chars`: the longest text kept (None: 100,000; 0: no limit).
    `preferences`: a JSONL file of output pairs with the human preference (docs/judges.md).
    `exhaustive`: every test on every example, also for a model-based evaluator (always so
    on Ray: the sequential design decides look by look on one machine).
    Every card is planned, and every spec and endpoint checked, before any runs.
    `backend="ray"` scores the stress methods on the Ray cluster at `ray_address` (default:
    RAY_ADDRESS, else a Ray on this machine), as `evalstress card --backend ray` does."""
    check_card_execution(backend, ray_address, None, lambda key: f"card({key}=...)")
    specs = [spec_or_specs] if isinstance(spec_or_specs, str) else list(spec_or_specs)
    path = Path(data) if data is not None else None
    plans = [plan_card(spec, data=path, field_map=mapping, task=task, budget=budget,
                       gold=gold, generator=generator, max_chars=max_chars,
                       preferences=Path(preferences) if preferences is not None else None,
                       exhaustive=exhaustive)
             for spec in specs]
    tell = say or (lambda line: None)
    folders = card_folders(plans, Path(out) if out else None)
    for plan, folder in zip(plans, folders, strict=True):  # no card replaces one of others
        check_same_card(folder, plan, force=force)
    for plan in plans:
        check_endpoints(plan)
        for note in plan.notes:  # rows left out, rows without references
            tell(f"warning: {note}")
    made = [make_card(plan, CardOptions(folder, cache_dir=Path(cache_dir) if cache_dir
                                        else None, no_cache=not cache,
                                        workers=card_workers(len(plan.examples), workers),
                                        force=force, say=tell, backend=backend,
                                        ray_address=ray_address))
            for plan, folder in zip(plans, folders, strict=True)]
    return made[0] if isinstance(spec_or_specs, str) else made


class CallableModule(types.ModuleType):
    """`evalstress.card(...)` calls `card`: the package is the function's name too."""

    def __call__(self, *args: Any, **kwargs: Any) -> Card | list[Card]:
        return card(*args, **kwargs)


sys.modules[__name__].__class__ = CallableModule

__all__ = ["BUDGETS", "Card", "CardError", "CardOptions", "CardPlan", "card", "card_folders",
           "make_card", "plan_card"]
