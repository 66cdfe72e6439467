"""The bias method's findings: each probe whose effect above its placebo the interval decides.

A finding says "biased" only where the four-way verdict of `analyses.bias` does (the whole
interval beyond the tolerance), "no bias beyond placebo" only where the interval lies inside
it, and otherwise that the test is undecided with the examples that would settle it. One
finding per verdict kind: the probes that share a verdict are named together.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalstress.card.findings import ExampleSource, Finding, examples_at, finding, number

#: the finding kind of each verdict of a bias test
KINDS = {"detects": "biased", "reversed": "biased", "inconclusive": "inconclusive",
         "blind": "holds"}


def _name(row: Mapping[str, Any]) -> str:
    return row["probe"] + (f" ({row['arm']})" if row.get("arm") != "probe" else "")


def _span(row: Mapping[str, Any]) -> dict[str, Any]:
    return {"what": "effect above placebo (probe - placebo score, by example)",
            "low": row.get("low"), "high": row.get("high"),
            "level": row.get("level") or 0.95, "unit": "score"}


def _files(section: Mapping[str, Any]) -> list[str]:
    files = section.get("files") or {}
    return [str(files[n]) for n in ("results", "scores", "variants") if n in files]


def _bounds(row: Mapping[str, Any]) -> str:
    low, high = row.get("low"), row.get("high")
    if low is None or high is None:
        return "no interval"
    return f"{float(row.get('level') or 0.95):.1%} CI {number(low)} to {number(high)}"


def bias_findings(section: Mapping[str, Any], example: ExampleSource) -> list[Finding]:
    """The strongest bias, the undecided probes and those without bias beyond placebo."""
    results = section.get("results") or {}
    rows = [r for r in results.get("rows") or [] if r.get("effect") is not None]
    correction = str(results.get("correction") or "holm")
    found: list[Finding] = []
    biased = sorted((r for r in rows if KINDS.get(r.get("outcome", "")) == "biased"),
                    key=lambda r: -abs(float(r["effect"])))
    for row in biased:
        toward = "toward" if row["outcome"] == "detects" else "against"
        found.append(finding(
            "biased", "bias",
            f"Biased {toward} {row['toward']} ({_name(row)}, {row['aspect']}): the score moves "
            f"{number(row['effect'])} above the placebo's move ({_bounds(row)}, "
            f"{row['n']} examples, {correction} over {results.get('n_tests')} tests; "
            f"tolerance ±{row['tolerance']:.3g}).",
            [dict(row)], _span(row),
            examples_at(example, "bias", row["aspect"], row["probe"], row["arm"]),
            _files(section), abs(float(row["effect"])),
            {"perturbation": row["probe"], "severity": row["arm"]}))
    undecided = [r for r in rows if r.get("outcome") == "inconclusive"]
    if undecided:
        need = max((int(r["n_to_settle"]) for r in undecided if r.get("n_to_settle")),
                   default=None)
        widest = max(undecided, key=lambda r: float(r.get("high") or 0) - float(r.get("low")
                                                                              or 0))
        found.append(finding(
            "inconclusive", "bias",
            f"Undecided whether it is biased by {', '.join(_name(r) for r in undecided)}: "
            f"the widest interval, {_name(widest)}, runs {_bounds(widest)} across the "
            f"tolerance ±{widest['tolerance']:.3g}"
            + (f"; about {need} examples would settle them" if need else "") + ".",
            [dict(r) for r in undecided], _span(widest), (None, None), _files(section)))
    fair = [r for r in rows if r.get("outcome") == "blind"]
    if fair:
        widest = max(fair, key=lambda r: float(r["high"]) - float(r["low"]))
        found.append(finding(
            "holds", "bias",
            f"No bias beyond placebo from {', '.join(_name(r) for r in fair)}: every interval "
            f"lies within ±tolerance (the widest, {_name(widest)}, {_bounds(widest)}).",
            [dict(r) for r in fair], _span(widest), (None, None), _files(section)))
    return found


def position_findings(section: Mapping[str, Any], example: ExampleSource) -> list[Finding]:
    """The position test's one finding: position-biased, none beyond re-asking, or undecided."""
    row = dict(section.get("results") or {})
    if row.get("effect") is None:
        return []
    kind = KINDS.get(str(row.get("outcome")), "inconclusive")
    share = row.get("first_win_share")
    first = ("" if share is None else f"; the first-shown text wins {share:.0%} of decisive "
             f"verdicts (95% CI {row['first_win_low']:.0%}-{row['first_win_high']:.0%})")
    text = (f"{str(row['verdict'])[:1].upper()}{str(row['verdict'])[1:]}: verdicts flip in "
            f"{row['swap_flip_rate']:.0%} of {row['pairs']} pairs when the order is swapped, "
            f"{row['reask_flip_rate']:.0%} when asked again (difference {number(row['effect'])},"
            f" {_bounds(row)}){first}.")
    span = {"what": "swap flip rate - re-ask flip rate, by pair", "low": row.get("low"),
            "high": row.get("high"), "level": row.get("level") or 0.95, "unit": "rate"}
    files = section.get("files") or {}
    return [finding(kind, "position", text, [row], span, (None, None),
                    [str(files["results"])] if "results" in files else [],
                    abs(float(row["effect"])))]
