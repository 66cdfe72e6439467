"""Two runs side by side (`evalstress compare RUN_A RUN_B`): two evaluators on the same suite,
or two versions of one evaluator. Verdicts of the same evaluator and test are paired, and every
changed verdict is listed (a regression when a pass became something else)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from evalstress.analyses.outcomes import Outcome, outcomes, tally
from evalstress.core.wording import plural
from evalstress.report import sections
from evalstress.report.common import esc, short_labels, table, verdict_badge
from evalstress.report.html import style


@dataclass(frozen=True)
class Change:
    analysis: str
    subject: str
    test: str
    before: str | None  # verdict in run A (None: not in A)
    after: str | None  # verdict in run B

    @property
    def kind(self) -> str:
        if self.before == "pass" and self.after not in (None, "pass"):
            return "regression"
        if self.after == "pass" and self.before not in (None, "pass"):
            return "fixed"
        if self.before is None or self.after is None:
            return "only in one run"
        return "changed"


def _key(o: Outcome) -> tuple[str, str, str]:
    return (o.analysis, o.subject, o.test)


def changes(a: list[Outcome], b: list[Outcome], *, one_sided: bool = False) -> list[Change]:
    """Verdicts that differ between two runs for the same evaluator (aspect) and test. With no
    evaluator in common (two different evaluators), nothing pairs and the list is empty. Tests
    that only one run has are listed only with `one_sided`."""
    in_a = {_key(o): o for o in a}
    in_b = {_key(o): o for o in b}
    common = {o.evaluator for o in a} & {o.evaluator for o in b}
    out = []
    for key in list(dict.fromkeys([*in_a, *in_b])):
        oa, ob = in_a.get(key), in_b.get(key)
        evaluator = (oa or ob).evaluator  # type: ignore[union-attr]
        if evaluator not in common:
            continue
        va, vb = (oa.verdict if oa else None), (ob.verdict if ob else None)
        if (va is None or vb is None) and not one_sided:
            continue
        if va != vb:
            out.append(Change(key[0], key[1], key[2], va, vb))
    return out


def unchanged_note(a: list[Outcome], b: list[Outcome]) -> str:
    """What to say when `changes` lists nothing: how many tests both runs have, or why no
    verdict pairs up (no evaluator in common, or the common ones were tested on different
    perturbations, as with two different suites)."""
    common = {o.evaluator for o in a} & {o.evaluator for o in b}
    if not common:
        return "The runs share no evaluator, so no verdict pairs up."
    shared = {_key(o) for o in a if o.evaluator in common} & {_key(o) for o in b}
    if not shared:
        return ("The runs share no test: their common evaluators were not tested on the same "
                "perturbations, so no verdict pairs up.")
    return f"No verdict changed on the {plural(len(shared), 'test')} both runs have."


def _identity(entry: Any) -> str | None:
    """The evaluator and parameters of a results.json evaluator entry (not its versions)."""
    signature = entry.get("signature") if isinstance(entry, Mapping) else None
    if not isinstance(signature, Mapping) or "evaluator" not in signature:
        return None
    return json.dumps([signature.get("evaluator"), signature.get("params")], sort_keys=True,
                      default=str)


def relabelled(results_a: Mapping[str, Any], results_b: Mapping[str, Any]) -> dict[str, str]:
    """B's labels that name, under another label, an evaluator of A with the same evaluator and
    parameters (a run from before evaluators got short labels against one after): B label ->
    A label. Labels both runs have pair as they are; an ambiguous match pairs nothing."""
    ev_a, ev_b = results_a.get("evaluators") or {}, results_b.get("evaluators") or {}
    only_a = {label: _identity(entry) for label, entry in ev_a.items() if label not in ev_b}
    only_b = {label: _identity(entry) for label, entry in ev_b.items() if label not in ev_a}
    out = {}
    for label_b, found in only_b.items():
        match_a = [a for a, other in only_a.items() if found is not None and other == found]
        match_b = [b for b, other in only_b.items() if other == found]
        if len(match_a) == 1 and len(match_b) == 1:
            out[label_b] = match_a[0]
    return out


def paired_outcomes(results_a: Mapping[str, Any], results_b: Mapping[str, Any]
                    ) -> tuple[list[Outcome], list[Outcome]]:
    """Both runs' outcomes, B's under A's label where `relabelled` pairs them."""
    renamed = relabelled(results_a, results_b)
    found_b = [replace(o, evaluator=renamed[o.evaluator]) if o.evaluator in renamed else o
               for o in outcomes(results_b)]
    return outcomes(results_a), found_b


def _tagged(items: list[Outcome], tag: str) -> list[Outcome]:
    return [replace(o, evaluator=f"{tag} · {o.evaluator}") for o in items]


def render_compare(results_a: Mapping[str, Any], results_b: Mapping[str, Any], *,
                   name_a: str = "A", name_b: str = "B") -> str:
    """A self-contained page: both runs' verdict grids interleaved, then the changes."""
    found_a, found_b = paired_outcomes(results_a, results_b)
    renamed = relabelled(results_a, results_b)
    short_a, short_b = short_labels(results_a), short_labels(results_b)
    short_b.update({a: short_b.get(b, b) for b, a in renamed.items()})  # B's row, B's name
    short = {f"A · {k}": f"A · {v}" for k, v in short_a.items()}
    short.update({f"B · {k}": f"B · {v}" for k, v in short_b.items()})
    merged: list[Outcome] = []
    tagged_a, tagged_b = _tagged(found_a, "A"), _tagged(found_b, "B")
    for analysis in dict.fromkeys(o.analysis for o in [*found_a, *found_b]):
        subjects = list(dict.fromkeys((o.evaluator, o.aspect) for o in [*found_a, *found_b]
                                      if o.analysis == analysis))
        for evaluator, aspect in subjects:  # A's row, then B's row, for each evaluator aspect
            for tag, items in (("A", tagged_a), ("B", tagged_b)):
                merged.extend(o for o in items if o.analysis == analysis and o.aspect == aspect
                              and o.evaluator == f"{tag} · {evaluator}")
    listed = changes(found_a, found_b)
    ta, tb = tally(found_a), tally(found_b)
    rows = [[name, results.get("created"), (results.get("suite") or {}).get("name"),
             ", ".join(short_labels(results).values()), t["pass"], t["fail"], t["inconclusive"],
             t["not-applicable"]]
            for name, results, t in ((f"A: {name_a}", results_a, ta),
                                     (f"B: {name_b}", results_b, tb))]
    parts = ["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
             "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; "
             "style-src 'unsafe-inline'\">"
             f"<title>evalstress compare</title><style>{style()}</style></head>"
             "<body><main><header class='top'><h1>evalstress compare</h1></header>",
             table(["run", "created", "suite", "evaluators", "pass", "fail", "inconclusive",
                    "n/a"], rows, left=4),
             "<section id='overview'><h2>Verdicts side by side</h2>",
             sections.overview(merged, short), "</section><section id='changes'>"
             "<h2>Changed verdicts</h2>"]
    if listed:
        parts.append(table(["analysis", "evaluator / aspect", "test", "A", "B", "change"],
                           [[c.analysis, c.subject, c.test, verdict_badge(c.before),
                             verdict_badge(c.after), c.kind] for c in listed], left=3))
    else:
        parts.append(f"<p class='note'>{esc(unchanged_note(found_a, found_b))}</p>")
    for label_b, label_a in renamed.items():
        parts.append(f"<p class='note'>B's {esc(label_b)} is paired with A's {esc(label_a)}: the "
                     "same evaluator with the same parameters under another label.</p>")
    parts.append(f"<p class='note'>A = {esc(name_a)}, B = {esc(name_b)}</p></section>"
                 "</main></body></html>")
    return "".join(parts)
