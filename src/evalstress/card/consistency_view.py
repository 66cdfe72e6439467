"""What card.md and card.html show of a judge's consistency and identity: the tables as
headers and rows of text, written once for both pages (each escapes them its own way)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

REPEAT_HEAD = ["aspect", "items", "k", "all k identical", "share", "95% CI (Wilson)",
               "mean SD", "95% CI"]
SHIFT_HEAD = ["aspect", "rewording", "n", "shift", "interval", "tolerance", "verdict"]
CHANGE_HEAD = ["aspect", "perturbation", "rewording", "as written", "reworded"]


def number(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return "0" if abs(value) < 1e-9 else f"{value:.3g}"
    return str(value)


def share(value: Any) -> str:
    return "–" if value is None else f"{float(value):.0%}"


def span(low: Any, high: Any, percent: bool = False) -> str:
    if low is None or high is None:
        return "–"
    return f"{share(low)} to {share(high)}" if percent else f"{number(low)} to {number(high)}"


def repeat_rows(results: Mapping[str, Any]) -> list[list[str]]:
    return [[str(r["aspect"]), str(r["items"]), str(r["k"]), str(r["identical"]),
             share(r.get("identical_share")),
             span(r.get("identical_low"), r.get("identical_high"), percent=True),
             number(r.get("mean_sd")), span(r.get("sd_low"), r.get("sd_high"))]
            for r in results.get("repeat_rows") or []]


def shift_rows(results: Mapping[str, Any]) -> list[list[str]]:
    rows = []
    for r in results.get("shift_rows") or []:
        level = f" ({float(r['level']):.1%})" if r.get("level") is not None else ""
        verdict = str(r["outcome"])
        if r["outcome"] == "inconclusive" and r.get("n_to_settle"):
            verdict += f" (about {r['n_to_settle']} items would settle it)"
        rows.append([str(r["aspect"]), str(r["variant"]), str(r["n"]), number(r.get("shift")),
                     span(r.get("low"), r.get("high")) + level, f"±{number(r.get('delta'))}",
                     verdict])
    return rows


def verdict_line(results: Mapping[str, Any]) -> str:
    verdicts = results.get("verdicts") or {}
    compared = int(verdicts.get("compared") or 0)
    if not compared:
        return "No blind-spot verdicts were compared between wordings."
    changed = len(verdicts.get("changed") or [])
    return (f"Blind-spot verdicts that change between wordings: {changed} of {compared} "
            f"(suite {verdicts.get('suite')}, one seed, on the same "
            f"{results.get('items')} items; each rewording against the criteria as written).")


def change_rows(results: Mapping[str, Any]) -> list[list[str]]:
    return [[str(c["aspect"]), str(c["perturbation"]), str(c["variant"]), str(c["written"]),
             str(c["reworded"])] for c in (results.get("verdicts") or {}).get("changed") or []]


def identity_facts(evaluator: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(name, value) of the judge's identity; [] for an evaluator that has none."""
    identity = evaluator.get("identity") or {}
    if not identity.get("model"):
        return []
    sampling = identity.get("sampling") or {}
    served = ", ".join(identity.get("served") or []) or "no name in its answers"
    templates = ", ".join(f"{k} {v}" for k, v in (identity.get("templates") or {}).items())
    return [("model asked", str(identity["model"])), ("model answering", served),
            ("endpoint", f"{identity.get('base_url') or 'in this process'} (cache key "
                         f"{identity.get('endpoint')})"),
            ("prompt sha256", str(identity.get("prompt_sha256"))
             + (f" (templates: {templates})" if templates else "")),
            ("output contract sha256", str(identity.get("contract_sha256"))),
            ("sampling", ", ".join(f"{k} {number(v)}" for k, v in sampling.items())),
            ("evalstress", str(identity.get("evalstress")))]


def identity_warnings(evaluator: Mapping[str, Any]) -> list[str]:
    return [str(w) for w in (evaluator.get("identity") or {}).get("warnings") or []]
