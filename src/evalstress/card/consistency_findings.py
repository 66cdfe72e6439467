"""The consistency method's findings, as the arguments of `findings.finding` (which ranks and
builds them; this module stays below it, so the findings module imports it and not the
other way round).

No finding says more than its interval:

- "wording": a rewording moved the score: its corrected interval over items lies wholly
  beyond the tolerance (the four-way verdict "moves up" or "moves down");
- "wording": some blind-spot verdicts differ between wordings (counted, with the Wilson
  interval of the share that changed);
- "inconsistent": the k answers to one request vary: the bootstrap interval of the mean
  within-item SD lies wholly above the tolerance (0.2 x the SD of the ratings across items;
  a logprob-weighted rating that moves by a trace is no finding). At temperature 0 that is
  the endpoint answering one request in several ways (ranked with the failures); above it,
  the sampling the judge asked for (ranked with what is irregular).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalstress.core.proportions import wilson

#: (kind, method, text, rows, interval, evidence, magnitude)
Claim = tuple[str, str, str, list[dict[str, Any]], dict[str, Any], list[str], float]


def _span(what: str, low: Any, high: Any, unit: str, level: float = 0.95) -> dict[str, Any]:
    return {"what": what, "low": low, "high": high, "level": level, "unit": unit}


def shift_claims(results: Mapping[str, Any], evidence: list[str]) -> list[Claim]:
    out: list[Claim] = []
    items = results.get("items")
    for row in results.get("shift_rows") or []:
        if row["outcome"] not in ("moves up", "moves down"):
            continue
        way = "raises" if row["outcome"] == "moves up" else "lowers"
        out.append(("wording", "consistency",
                    f"Rewording the {row['aspect']} criterion (rewording {row['variant']}) "
                    f"{way} the score by {abs(row['shift']):.2f} on average "
                    f"({float(row['level']):.1%} interval {row['low']:.2f} to "
                    f"{row['high']:.2f} over {row['n']} of {items} items, beyond the "
                    f"tolerance ±{row['delta']:.2g}): its numbers depend on how the criterion "
                    "is worded.",
                    [dict(row)], _span(f"shift under rewording {row['variant']}", row["low"],
                                       row["high"], "score", float(row["level"])),
                    evidence, abs(float(row["shift"]))))
    return out


def verdict_claims(results: Mapping[str, Any], evidence: list[str]) -> list[Claim]:
    verdicts = results.get("verdicts") or {}
    changed, compared = list(verdicts.get("changed") or []), int(verdicts.get("compared") or 0)
    if not changed or not compared:
        return []
    low, high = wilson(len(changed), compared)
    first = changed[0]
    return [("wording", "consistency",
             f"{len(changed)} of {compared} blind-spot verdicts change when the criteria are "
             f"reworded (95% CI {low:.0%} to {high:.0%} of them), e.g. "
             f"{first['perturbation']} on {first['aspect']}: {first['written']} as written, "
             f"{first['reworded']} under rewording {first['variant']}.",
             changed, _span("share of verdicts that change", low, high, "rate"), evidence,
             len(changed) / compared)]


def repeat_claims(results: Mapping[str, Any], evidence: list[str]) -> list[Claim]:
    out: list[Claim] = []
    hot = float(results.get("temperature") or 0) > 0
    for row in results.get("repeat_rows") or []:
        if row.get("sd_low") is None or not row["sd_low"] > float(row.get("delta") or 0):
            continue
        why = (f"at temperature {results['temperature']:g}, as it samples" if hot
               else "at temperature 0: the endpoint does not answer one request the same way")
        out.append(("varies" if hot else "inconsistent", "consistency",
                    f"Asked the same {row['aspect']} question {row['k']} times, it gave "
                    f"identical answers on {row['identical']} of {row['items']} items "
                    f"({row['identical_low']:.0%} to {row['identical_high']:.0%}); its ratings "
                    f"of one item spread by {row['mean_sd']:.2f} SD on average (95% CI "
                    f"{row['sd_low']:.2f} to {row['sd_high']:.2f}, above the tolerance "
                    f"{row['delta']:.2g}) {why}.",
                    [dict(row)], _span("mean within-item SD", row["sd_low"], row["sd_high"],
                                       "score"), evidence, float(row["mean_sd"])))
    return out


def consistency_claims(section: Mapping[str, Any]) -> list[Claim]:
    """Every finding the section supports, strongest kinds first."""
    results = section.get("results") or {}
    evidence = [str(p) for p in (section.get("files") or {}).values()]
    return [*shift_claims(results, evidence), *verdict_claims(results, evidence),
            *repeat_claims(results, evidence)]
