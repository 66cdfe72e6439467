"""The card as data: what card.json holds (its layout: docs/card.schema.json), and the files it
is written to.

Top-level keys, in order: `card_version`, `evalstress`, `created`, `evaluator` (spec, label,
signature and its printable form, aspects), `data` (where the examples came from and their
sha256), `budget`, `cost` (calls, tokens, seconds per method), `gate` (the sanity gate),
`findings` (with `evidence_rule`, how their examples were chosen, `power_rule`, and
`preliminary`, true on a budget too small for its findings to stand, with
`preliminary_reason`), `methods` (one section per method, run or not run with the reason, each
with the paths of its run directory's files) and `files` (the card's own files: card.json, card.md,
card.html, the figures, and the runs).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evalstress.analyses.verdicts import MDE_RULE
from evalstress.card.agreement import preference_missing
from evalstress.card.evidence import RULE
from evalstress.card.figures import figure_plans
from evalstress.card.findings import Finding
from evalstress.card.gate import Gate
from evalstress.core.redact import redact_value
from evalstress.core.storage import atomic_write_text
from evalstress.core.version import __version__
from evalstress.core.wording import plural
from evalstress.engine.runhealth import MissingShare

#: the layout of card.json; keys are only added within a major version
CARD_VERSION = "1.2"
CARD_JSON = "card.json"
CARD_MD = "card.md"
CARD_HTML = "card.html"
#: fewer examples than this and a card's findings are preliminary: an interval test's
#: normal-theory power (the smallest detectable change) and its percentile bootstrap are
#: rough below about 30 examples, and the small budget's 8 examples decide no interval test
PRELIMINARY_BELOW = 30


def preliminary(budget: Mapping[str, Any], data: Mapping[str, Any]) -> str:
    """Why a card's findings are preliminary ('' when they are not): the small budget, or
    fewer than PRELIMINARY_BELOW examples."""
    examples = int(data.get("examples") or 0)
    if budget.get("name") == "small" or examples < PRELIMINARY_BELOW:
        return (f"made on the '{budget.get('name')}' budget with {examples} examples (fewer "
                f"than {PRELIMINARY_BELOW}): its findings are preliminary; a standard budget "
                "may decide them otherwise")
    return ""


@dataclass
class MethodCost:
    """What one method spent in this card: seconds of wall time (0 when its run directory was
    reused from an earlier card), and whether it was."""

    seconds: float
    reused: bool
    first_seconds: float | None = None  # the wall time of the run that made a reused result

    def to_dict(self) -> dict[str, Any]:
        return {"seconds": round(self.seconds, 2), "reused": self.reused,
                "first_seconds": (round(self.first_seconds, 2)
                                  if self.first_seconds is not None else None)}


def build_seconds(cost: Mapping[str, Any]) -> float:
    """How long a card's methods took when they ran (a reused method: its first run), where
    the card's own `seconds` counts only this card's wall time."""
    return sum(float(m.get("first_seconds") or m.get("seconds") or 0)
               for m in (cost.get("methods") or {}).values())


def count_text(data: Mapping[str, Any]) -> str:
    """The card's count of its examples: '4 of 5 examples', with the rows left out for their
    length ('; 1 skipped: longer than 100,000 characters')."""
    text = f"{data['examples']} of {data['available']} examples"
    skipped = data.get("skipped")
    if skipped:
        text += f"; {skipped['rows']} skipped: {skipped['reason']}"
    return text


def cost_text(cost: Mapping[str, Any]) -> str:
    """The cost line of card.md and card.html: a card whose methods were all reused names
    what they took when they ran, not the near-nothing this card spent on them."""
    calls = f", {cost['calls']} calls" if cost.get("calls") is not None else ""
    tokens = f", {cost['tokens']} tokens" if cost.get("tokens") is not None else ""
    methods = list((cost.get("methods") or {}).values())
    reused = [m for m in methods if m.get("reused")]
    seconds = f"{cost['seconds']:.0f} s"
    if methods and len(reused) == len(methods):
        seconds = (f"{build_seconds(cost):.0f} s when its methods ran (this card reused "
                   "them)")
    elif reused:
        seconds += (f" ({plural(len(reused), 'method')} reused from an "
                    f"earlier run; {build_seconds(cost):.0f} s in all when they ran)")
    return f"{seconds}{calls}{tokens}"


@dataclass
class Card:
    """One evaluator's card: everything card.json and card.md say."""

    evaluator: dict[str, Any]
    data: dict[str, Any]
    budget: dict[str, Any]
    gate: Gate
    findings: list[Finding]
    methods: dict[str, dict[str, Any]]
    timings: dict[str, MethodCost]
    out: Path
    created: str = field(default_factory=lambda: datetime.now(UTC).isoformat(
        timespec="seconds"))

    @property
    def trusted(self) -> bool:
        return self.gate.trusted

    @property
    def mostly_missing(self) -> bool:
        return bool(self.missing_shares())

    def missing_shares(self) -> list[MissingShare]:
        """What makes the card's run unhealthy (the command exits 3): the gate's missing score
        rows over every stress run, and each preference test whose picks are missing for more
        than the same share of the pairs people decided."""
        check = self.gate.missing
        out = [MissingShare(self.evaluator["label"], check.missing, check.rows,
                            check.top_reason)] if check.mostly_missing else []
        block = ((self.methods.get("correlation") or {}).get("results") or {}).get("agreement")
        out += [MissingShare(what, missing, decided, reason)
                for what, missing, decided, reason in preference_missing(block)
                if not decided or missing / decided > check.max_missing]
        return out

    def cost(self) -> dict[str, Any]:
        """Per method its counts (calls, tokens where known) and wall time; the totals."""
        per_method: dict[str, Any] = {}
        for key, timing in self.timings.items():  # the methods that ran (or failed) here
            section = self.methods.get(key) or {}
            per_method[key] = {**dict(section.get("cost") or {}), **timing.to_dict()}
        seconds = sum(t.seconds for t in self.timings.values())
        calls = [m.get("calls") for m in per_method.values() if m.get("calls") is not None]
        tokens = [(m.get("prompt_tokens") or 0) + (m.get("completion_tokens") or 0)
                  for m in per_method.values() if m.get("prompt_tokens") is not None]
        return {"seconds": round(seconds, 2), "calls": sum(calls) if calls else None,
                "tokens": sum(tokens) if tokens else None, "methods": per_method,
                "note": "calls and tokens as each method's run recorded them (an LLM judge's "
                        "calls: net of its response cache; a reused method's were spent when "
                        "it first ran); tokens where the backend reports them; seconds: wall "
                        "time of this card (a reused method took none: first_seconds is what "
                        "its run took)"}

    def files(self, figures: list[str]) -> dict[str, Any]:
        """The card's own files (`figures`: relative to its folder) and its runs."""
        runs = {key: s["run_dir"] for key, s in self.methods.items() if s.get("run_dir")}
        return {"card_json": str(self.out / CARD_JSON), "card_md": str(self.out / CARD_MD),
                "card_html": str(self.out / CARD_HTML), "figures": figures, "runs": runs}

    def to_dict(self) -> dict[str, Any]:
        untrusted = "; ".join(self.gate.reasons()) if not self.trusted else ""
        methods = {key: {**section, "trusted": self.trusted if section["status"] == "run"
                         else None, "trust_note": untrusted if section["status"] == "run"
                         else ""}
                   for key, section in self.methods.items()}
        card = {"card_version": CARD_VERSION, "evalstress": __version__,
                "created": self.created, "evaluator": redact_value(self.evaluator),
                "data": self.data, "budget": self.budget, "cost": self.cost(),
                "gate": self.gate.to_dict(), "findings": [f.to_dict() for f in self.findings],
                "evidence_rule": RULE, "power_rule": MDE_RULE,
                "preliminary": bool(preliminary(self.budget, self.data)),
                "preliminary_reason": preliminary(self.budget, self.data),
                "methods": methods}
        return {**card, "files": self.files([plan.path for plan in figure_plans(card)])}


def write_atomic(path: Path, text: str) -> None:
    """Write `path` whole or not at all: a temporary file of a new name (never a link
    followed), renamed over it; a failed write leaves no temporary file."""
    atomic_write_text(path, text)


def write_card_json(card: Mapping[str, Any], out: Path) -> Path:
    path = out / CARD_JSON
    write_atomic(path, json.dumps(card, indent=2, ensure_ascii=False, default=str) + "\n")
    return path
