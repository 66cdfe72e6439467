"""What a method's sequential design did, as the card states it: the texts it scored against the
exhaustive design's, and how many of its tests settled before the last example.

A model-based evaluator's blind-spot, bias and criteria tests stop once their verdict is
settled (`analyses.sequential_verdicts`); the method's run records the design in its results.json
(`sequential`). This module reads that record into the section's `design` entry of card.json
and words it once for card.md, card.html and the terminal.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: where the rule and its error guarantee are documented
DOC = "docs/methods/blind-spots.md#sequential-verdicts"
#: a method whose rule is documented on a page of its own
DOCS = {"criteria": "docs/methods/criteria-confusion.md#sequential-items-on-a-card"}
#: what futility does to a test: the four-way verdicts leave it inconclusive; a criteria item
#: gets the verdict of no effect (a directional FAIL, an invariance PASS)
FUTILE = {"criteria": "given the no-effect verdict by futility"}


def design_of(results: Mapping[str, Any]) -> dict[str, Any] | None:
    """The section's `design` entry from a run's results.json, None for an exhaustive run."""
    record = results.get("sequential")
    if not isinstance(record, Mapping) or record.get("design") != "sequential verdicts":
        return None
    cost = record.get("cost") or {}
    # a criteria item without a test (its aspect neither should move nor stay) claims nothing
    tests = [t for unit in record.get("units") or [] for t in unit.get("tests") or []
             if t.get("reason") != "no test"]
    early = [t for t in tests if t.get("reason") in ("settled", "futility")]
    stopped = [u for u in record.get("units") or [] if u.get("stopped")]
    return {"design": "sequential", "looks": record.get("looks"),
            "interim_alpha": record.get("interim_alpha"), "futility": record.get("futility"),
            "texts": cost.get("texts"), "full_texts": cost.get("full_texts"),
            "share": cost.get("share"), "tests": len(tests), "settled_early": sum(
                t.get("reason") == "settled" for t in early),
            "futile_early": sum(t.get("reason") == "futility" for t in early),
            "units_stopped": len(stopped), "units": len(record.get("units") or [])}


def design_line(section: Mapping[str, Any]) -> str | None:
    """'sequential design: 431 of the 1,618 texts the exhaustive design plans scored (27%);
    7 of 7 tests settled before the last example, 0 left inconclusive by futility; ...', None
    when the method ran exhaustively. The exhaustive design's texts count each example's
    original and every unit of the suite, variants a perturbation cannot make included."""
    design = section.get("design")
    if not isinstance(design, Mapping) or design.get("design") != "sequential":
        return None
    texts, full = design.get("texts"), design.get("full_texts")
    scored = (f"{texts:,} of the {full:,} texts the exhaustive design plans scored "
              f"({texts / full:.0%})"
              if isinstance(texts, int) and isinstance(full, int) and full
              else f"{texts} texts scored")
    return (f"sequential design: {scored}; {design.get('settled_early', 0)} of "
            f"{design.get('tests', 0)} tests settled before the last example, "
            f"{design.get('futile_early', 0)} "
            f"{FUTILE.get(str(section.get('key')), 'left inconclusive by futility')}; the others "
            f"took every example (--exhaustive: all of them do; "
            f"{DOCS.get(str(section.get('key')), DOC)})")
