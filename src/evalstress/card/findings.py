"""The card's headline findings: three to five sentences a reader needs first, each resting on
table rows of one method, an interval and one concrete before/after example.

Findings are written from the methods' sections as card.json holds them (a mapping per method
with its `results`), so they can be checked on a hand-made mapping. Candidates, in the order a
reader needs them:

1. failures: a blind spot (the rank test fails: the damage does not lower the score), an aspect
   moved by damage to another aspect (criteria confusion);
2. misses: damage to an aspect that leaves its score still, a unit DHP cannot tell from the
   original (D < 1) although its n allows D = 1 (units of too few examples are no finding),
   searches that fooled the evaluator;
3. inversions: the minor degree of a perturbation lowering the score more than its major
   degree (one perturbation, task and aspect; the two intervals apart), a score that rises
   again as damage grows;
4. what holds: the damage it ranks below every original, its correlation with people.

At most two findings per method (the most needed), five in all; findings of one rank follow
the card's order of methods. No composite score: each finding is one
measured effect with its interval. An untrusted evaluator (the sanity gate failed) gets none.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from evalstress.analyses.stats import discernment_ceiling, pairs_for_discernment

#: a change below this share of the original score reads as "no change" in a finding
BLIND = 0.01
MOST_FINDINGS = 5
PER_METHOD = 2
#: the fewest pairs a one-sided Wilcoxon test needs to reach p < 0.05 at all (1/2^5 = 0.031):
#: a DHP unit with fewer cannot reach D = 1 whatever the evaluator does, so it is no finding
MIN_PAIRS = pairs_for_discernment(1.0)
#: (method, aspect, perturbation, severity, pick) -> a before/after example, or None
class ExampleSource(Protocol):
    """Finds a finding's before/after example: (method, aspect, perturbation, severity, pick)
    and, for a finding about one task, that task."""

    def __call__(self, method: str, aspect: str, perturbation: str, severity: str, pick: str,
                 task: str | None = None) -> dict[str, Any] | None: ...


@dataclass
class Finding:
    """One headline: what a reader should know, and what it rests on."""

    rank: int  # 1 failures .. 4 what holds: lower reads first
    kind: str
    method: str
    text: str
    rows: list[dict[str, Any]]
    interval: dict[str, Any]
    example: dict[str, Any] | None = None
    evidence: list[str] = field(default_factory=list)
    magnitude: float = 0.0  # orders findings of one rank: larger first

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("magnitude")
        return out


def pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.1%}"


def drop(relative: float | None) -> str:
    """'drops 4.2%', 'rises 0.6%' or 'does not move': a relative change (positive = scored
    worse) in words."""
    if relative is None:
        return "has no measured change"
    if abs(relative) < 0.0005:
        return "does not move"
    return f"drops {relative:.1%}" if relative > 0 else f"rises {-relative:.1%}"


def number(value: float) -> str:
    """Two decimals, without a minus sign on zero."""
    return f"{value + 0.0:.2f}".replace("-0.00", "0.00")


def interval(what: str, low: float | None, high: float | None,
             unit: str = "share") -> dict[str, Any]:
    """An interval a finding quotes; `unit` says how to read its bounds: share (a fraction of
    the original score: a drop), score (the evaluator's own units), rate, or correlation."""
    return {"what": what, "low": low, "high": high, "level": 0.95, "unit": unit}


def _relative_interval(row: Mapping[str, Any]) -> str:
    """'; 95% CI of the drop -1.0% to +2.0%', to close a parenthesis (empty without one)."""
    low, high = row.get("relative_ci_low"), row.get("relative_ci_high")
    return "" if low is None or high is None else \
        f"; 95% CI of the drop {pct(low)} to {pct(high)}"


def _bracketed_interval(row: Mapping[str, Any]) -> str:
    """' (95% CI of the drop -1.0% to +2.0%)' (empty without an interval)."""
    inside = _relative_interval(row)
    return f" ({inside[2:]})" if inside else ""


def _files(section: Mapping[str, Any], *names: str) -> list[str]:
    files = section.get("files") or {}
    return [str(files[n]) for n in names if n in files]


def _units(value: float) -> str:
    return f"{value + 0.0:.3g}"


def _tested(row: Mapping[str, Any], severity: Mapping[str, Any]) -> str:
    """'from 88 to 73.6 (lower is better; the change -16.1 to -12.9, 99.1% interval, beyond the
    tolerance +-3.2 on 57 examples; -16.4%, -18.0% to -14.7%)': a severity's change in the
    metric's own direction and units, with its interval and, where the score has a meaningful
    zero, the relative change."""
    test = severity["test"]
    sign = 1.0 if row.get("higher_is_better", True) else -1.0
    raw = sorted((-sign * test["low"] + 0.0, -sign * test["high"] + 0.0))  # no "-0"
    where = {"detects": "beyond", "reversed": "beyond", "blind": "inside"}.get(
        test["verdict"], "straddling")
    text = (f"from {_units(severity['gold'])} to {_units(severity['mean'])} ("
            + ("" if sign > 0 else "lower is better; ")
            + f"the change {raw[0]:+.3g} to {raw[1]:+.3g}, {test['level']:.1%} interval, "
            f"{where} the tolerance \u00b1{_units(test['delta'])} on {test['n']} examples")
    relative = severity.get("relative")
    if relative:
        text += (f"; {relative['change']:+.1%}, {relative['low']:+.1%} to "
                 f"{relative['high']:+.1%}")
    return text + ")"


def _moves(row: Mapping[str, Any], severity: Mapping[str, Any]) -> str:
    return "rises" if severity["mean"] > severity["gold"] else "falls"


def _tested_interval(severity: Mapping[str, Any]) -> dict[str, Any]:
    test = severity["test"]
    out = interval(f"mean change at {severity['severity']} (positive = scored worse)",
                   test["low"], test["high"], "score")
    out["level"] = test["level"]
    return out


def tested_blindspot_findings(section: Mapping[str, Any], example: ExampleSource
                              ) -> list[Finding]:
    """The blind-spot findings from the four-way verdicts (docs/methods/blind-spots.md): a
    reversal, a blind spot only where equivalence is shown, an undecided rank failure with
    the examples that would settle it, a significant rise between severities; or, when every
    row detects the damage, the weakest as what holds."""
    rows = (section.get("results") or {}).get("rows") or []
    evidence = _files(section, "results", "scores", "variants")
    out: list[Finding] = []
    for row in rows:
        tested = [s for s in row.get("severities") or [] if s.get("test") and
                  s["test"].get("low") is not None and s.get("mean") is not None]
        if not tested:
            continue
        name, aspect, outcome = row["perturbation"], row["aspect"], row.get("outcome")

        def cite(kind: str, rank: int, text: str, at: Mapping[str, Any], pick: str,
                 magnitude: float, row: dict[str, Any] = row) -> None:
            out.append(Finding(rank, kind, "blindspot", text, [row], _tested_interval(at),
                               example("blindspot", row["aspect"], row["perturbation"],
                                       str(at["severity"]), pick),
                               evidence, magnitude=magnitude))

        by = {v: [s for s in tested if s["test"]["verdict"] == v] for v in
              ("reversed", "blind", "inconclusive")}
        if outcome == "reversed":
            at = max(by["reversed"], key=lambda s: -s["test"]["estimate"])
            cite("reversed", 1, f"Rates {name}-damaged text better on {aspect}: at severity "
                 f"{at['severity']} the score {_moves(row, at)} {_tested(row, at)}.", at,
                 "reversed", 2 - at["test"]["estimate"] / at["test"]["delta"])
        elif outcome == "blind":
            at = max(by["blind"], key=lambda s: s["severity_rank"])
            cite("blind spot", 1, f"Blind to {name} on {aspect} at severity {at['severity']}: "
                 f"the score moves {_tested(row, at)}; equivalence shown.", at, "least",
                 1 - abs(at["test"]["estimate"]) / at["test"]["delta"])
        elif outcome == "inconclusive" and by["inconclusive"] and not row.get("rank_pass"):
            at = max(by["inconclusive"], key=lambda s: s["test"].get("n_to_settle") or 10**9)
            need = row.get("n_to_settle")
            settle = (f"about {need} examples would settle it" if need else
                      "no sample size would settle it: the estimate sits on the tolerance")
            cite("inconclusive", 2, f"Undecided whether {aspect} ranks {name} below the "
                 f"original: at severity {at['severity']} the score moves {_tested(row, at)}; "
                 f"{settle}.", at, "least", 0.0)
        rises = [s for s in row.get("steps") or [] if s.get("verdict") == "detects"]
        if row.get("monotonic_outcome") == "rises" and rises:
            step = max(rises, key=lambda s: s["estimate"])
            heavier = next((s for s in tested if s["severity"] == step["to"]), tested[-1])
            cite("non-monotonic", 3, f"Scores heavier {name} better on {aspect}: from severity "
                 f"{step['from']} to {step['to']} the score moves back toward the original by "
                 f"{_units(step['estimate'])} ({step['level']:.1%} interval {_units(step['low'])}"
                 f" to {_units(step['high'])}, beyond the tolerance "
                 f"\u00b1{_units(step['delta'])}).", heavier, "least", step["estimate"])
    if out or not rows:
        return out
    if all(r.get("outcome") == "detects" for r in rows):
        tops: list[tuple[dict[str, Any], dict[str, Any]]] = []
        for r in rows:
            tested = [s for s in r.get("severities") or [] if s.get("test")
                      and s["test"].get("low") is not None and s.get("mean") is not None]
            if tested:
                tops.append((r, max(tested, key=lambda s: s["severity_rank"])))
        if tops:
            row, top = min(tops, key=lambda item: item[1]["test"]["low"] / item[1]["test"][
                "delta"])
            out.append(Finding(
                4, "holds", "blindspot",
                f"Ranks every one of the {len(rows)} blind-spot perturbations below the "
                f"original beyond the tolerance at every severity; the least clear at full "
                f"severity is {row['perturbation']} on {row['aspect']}: the score moves "
                f"{_tested(row, top)}.", [row], _tested_interval(top),
                example("blindspot", row["aspect"], row["perturbation"],
                        str(top["severity"]), "least"), evidence))
    return out


def blindspot_findings(section: Mapping[str, Any], example: ExampleSource) -> list[Finding]:
    """Rank failures (blind spots) and monotonic failures; or, when every perturbation is
    ranked below the original, the weakest of them as what holds. Rows with four-way verdicts
    (`outcome`) are written by `tested_blindspot_findings`; the point-estimate rules below read
    cards made before them."""
    rows = (section.get("results") or {}).get("rows") or []
    if any("outcome" in row for row in rows):
        return tested_blindspot_findings(section, example)
    out: list[Finding] = []
    evidence = _files(section, "results", "scores", "variants")
    for row in rows:
        severities = [s for s in row.get("severities") or [] if s.get("relative_change")
                      is not None]
        if not severities:
            continue
        top = max(severities, key=lambda s: s["severity_rank"])
        largest = max(severities, key=lambda s: abs(s["relative_change"]))
        name, aspect = row["perturbation"], row["aspect"]
        if row.get("rank_pass") is False:
            if abs(largest["relative_change"]) < BLIND:
                text = (f"Blind to {name} at every severity: the score changes by less than "
                        f"{BLIND:.0%} (at most {abs(largest['relative_change']):.1%}, at "
                        f"severity {largest['severity']}{_relative_interval(largest)}).")
            else:
                weakest = min(severities, key=lambda s: s["relative_change"])
                text = (f"Does not rank {name} below the original: at severity "
                        f"{weakest['severity']} the score {drop(weakest['relative_change'])}"
                        f"{_bracketed_interval(weakest)}"
                        "; the rank test needs a drop beyond its tolerance at every severity.")
            chosen = largest if abs(largest["relative_change"]) < BLIND else min(
                severities, key=lambda s: s["relative_change"])
            out.append(Finding(
                1, "blind spot", "blindspot", text, [row],
                interval(f"relative change at {chosen['severity']}",
                         chosen.get("relative_ci_low"), chosen.get("relative_ci_high")),
                example("blindspot", aspect, name, str(top["severity"]), "least"), evidence,
                magnitude=1 - abs(largest["relative_change"])))
        elif row.get("monotonic_pass") is False:
            out.append(Finding(
                3, "non-monotonic", "blindspot",
                f"Rises again as {name} grows: below the original at every severity, but not "
                f"lower at each heavier one (at {top['severity']} the score "
                f"{drop(top['relative_change'])}{_relative_interval(top)}).", [row],
                interval(f"relative change at {top['severity']}", top.get("relative_ci_low"),
                         top.get("relative_ci_high")),
                example("blindspot", aspect, name, str(top["severity"]), "least"), evidence,
                magnitude=abs(top["relative_change"])))
    if out or not rows:
        return out
    tops = [(row, max(row["severities"], key=lambda s: s["severity_rank"])) for row in rows
            if row.get("verdict") == "pass" and row.get("severities")]
    tops = [(row, top) for row, top in tops if top.get("relative_change") is not None]
    if len(tops) == len(rows) and tops:
        row, top = min(tops, key=lambda item: item[1]["relative_change"])
        out.append(Finding(
            4, "holds", "blindspot",
            f"Ranks every one of the {len(rows)} blind-spot perturbations below the original; "
            f"the smallest drop at full severity is {row['perturbation']}'s: the score "
            f"{drop(top['relative_change'])}{_bracketed_interval(top)}.",
            [row], interval(f"relative change at {top['severity']}",
                            top.get("relative_ci_low"), top.get("relative_ci_high")),
            example("blindspot", row["aspect"], row["perturbation"], str(top["severity"]),
                    "least"), evidence))
    return out


def ceiling(unit: Mapping[str, Any], alpha: float = 0.05) -> float:
    """The largest D a unit's test could give for its n (`stats.discernment_ceiling`); the
    card's `d_ceiling` where written, else from its n."""
    given = unit.get("d_ceiling")
    return float(given) if given is not None else discernment_ceiling(int(unit.get("n") or 0),
                                                                      alpha)


def can_reach(unit: Mapping[str, Any], threshold: float = 1.0) -> bool:
    """Whether the unit has the examples to reach D = threshold at all; one that cannot is
    "too few examples", never a failure of the evaluator (small tolerance: 2^-n is exact)."""
    return ceiling(unit) >= threshold - 1e-9


def minor_above_major(units: list[dict[str, Any]], threshold: float = 1.0
                      ) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Pairs (minor, major) of ONE perturbation, task and aspect (paper 003 grades each method
    minor and major) where the minor degree lowers the score more than the major one beyond
    both intervals: the minor's 95% interval of the relative drop lies wholly above the
    major's (two 95% intervals that do not overlap: a conservative test of the difference).
    Units whose n cannot reach D = threshold take no part."""
    keyed = {(u.get("task"), u.get("perturbation"), u.get("aspect"), u.get("severity")): u
             for u in units if can_reach(u, threshold)}
    out = []
    for (task, pert, aspect, severity), minor in keyed.items():
        major = keyed.get((task, pert, aspect, "major"))
        if severity != "minor" or major is None:
            continue
        low, high = minor.get("relative_ci_low"), major.get("relative_ci_high")
        if low is not None and high is not None and low > high:
            out.append((minor, major))
    return out


def discernment_findings(section: Mapping[str, Any], example: ExampleSource) -> list[Finding]:
    """Units DHP cannot tell from the original (D < 1) among those whose n allows D = 1, and a
    minor degree of a perturbation lowering the score more than its major degree."""
    results = section.get("results") or {}
    units = results.get("units") or []
    threshold = float(results.get("threshold") or 1.0)
    evidence = _files(section, "results", "scores", "variants")
    out: list[Finding] = []
    weak = [u for u in units if can_reach(u, threshold) and u.get("d") is not None
            and u["d"] < threshold]
    if weak:  # the weakest unit; the section's table holds the rest
        unit = min(weak, key=lambda u: u["d"])
        out.append(Finding(
            2, "weak discernment", "discernment",
            f"Cannot reliably tell {unit['perturbation']} ({unit['severity']}) from the "
            f"original on {unit['task']} ({unit['aspect']}): D = {number(unit['d'])}, below "
            f"{threshold:g}, where its {unit['n']} examples allow up to "
            f"{number(ceiling(unit))} (p = {unit['pvalue']:.3g}; the score "
            f"{drop(unit.get('relative_change'))}{_relative_interval(unit)}).",
            [unit], interval("relative change", unit.get("relative_ci_low"),
                             unit.get("relative_ci_high")),
            example("discernment", unit["aspect"], unit["perturbation"], unit["severity"],
                    "least", unit.get("task")), evidence, magnitude=threshold - unit["d"]))
    inverted = minor_above_major(units, threshold)
    if inverted:
        minor, major = max(inverted, key=lambda p: p[0]["relative_ci_low"]
                           - p[1]["relative_ci_high"])
        out.append(Finding(
            3, "minor above major", "discernment",
            f"Drops more on minor than on major {minor['perturbation']} on {minor['task']} "
            f"({minor['aspect']}): the score {drop(minor['relative_change'])} at minor"
            f"{_bracketed_interval(minor)} against {drop(major['relative_change'])} at major"
            f"{_bracketed_interval(major)}; D {number(minor['d'])} and {number(major['d'])}.",
            [minor, major], interval(f"relative change under minor {minor['perturbation']}",
                                     minor.get("relative_ci_low"),
                                     minor.get("relative_ci_high")),
            example("discernment", minor["aspect"], minor["perturbation"], minor["severity"],
                    "most", minor.get("task")), evidence,
            magnitude=minor["relative_ci_low"] - major["relative_ci_high"]))
    return out


def criteria_findings(section: Mapping[str, Any], example: ExampleSource) -> list[Finding]:
    """Confusion (an aspect moved by damage aimed at another) and misses for an aspect-aware
    evaluator; for a single score, the aspect whose damage moves it least."""
    results = section.get("results") or {}
    evidence = _files(section, "results", "scores", "variants")
    out: list[Finding] = []
    if results.get("mode") == "confusion":
        items = (results.get("confusion") or {}).get("items") or []
        confused = [i for i in items if i.get("test") == "invariance" and i.get("passed") is False]
        missed = [i for i in items if i.get("test") == "directional" and i.get("passed") is False]
        if confused:
            item = max(confused, key=lambda i: abs(i.get("rank_biserial") or 0))
            out.append(Finding(
                1, "confusion", "criteria",
                f"Confuses {item['quality_aspect']} with {item.get('intended') or 'another aspect'}: "
                f"its {item['aspect']} score moves ({item['change']:+.3g}, r = "
                f"{item['rank_biserial']:+.2f}) under {item['perturbation']}, which damages "
                f"{item.get('intended') or 'another aspect'} only.", [item],
                interval("mean change", item.get("ci_low"), item.get("ci_high"), "score"),
                example("criteria", item["aspect"], item["perturbation"], item["severity"],
                        "most"), evidence, magnitude=abs(item.get("rank_biserial") or 0)))
        if missed:
            item = min(missed, key=lambda i: i.get("rank_biserial") or 0)
            out.append(Finding(
                2, "missed damage", "criteria",
                f"Misses damage to {item['quality_aspect']}: its {item['aspect']} score hardly "
                f"moves under {item['perturbation']} ({item['severity']}): change "
                f"{item['change']:+.3g}, r = {(item.get('rank_biserial') or 0):+.2f}.", [item],
                interval("mean change", item.get("ci_low"), item.get("ci_high"), "score"),
                example("criteria", item["aspect"], item["perturbation"], item["severity"],
                        "least"), evidence, magnitude=1 - (item.get("rank_biserial") or 0)))
        return out
    profile = [a for a in (results.get("sensitivity") or {}).get("aspects") or []
               if a.get("probed") and a.get("relative_change") is not None]
    if not profile:
        return out
    weakest = min(profile, key=lambda a: a["relative_change"])
    strongest = max(profile, key=lambda a: a["relative_change"])
    first = (weakest.get("perturbations") or ["?@?"])[0].rsplit("@", 1)
    rank = 2 if weakest["relative_change"] < BLIND else 4
    text = (f"Moves least when {weakest['quality_aspect']} is damaged: under "
            f"{', '.join(weakest['perturbations'])} the score "
            f"{drop(weakest['relative_change'])}{_bracketed_interval(weakest)}")
    if strongest is not weakest:
        text += (f", against a score that {drop(strongest['relative_change'])} when "
                 f"{strongest['quality_aspect']} is damaged")
    out.append(Finding(rank, "sensitivity", "criteria", text + ".", [weakest, strongest],
                       interval(f"relative change, {weakest['quality_aspect']}",
                                weakest.get("relative_ci_low"), weakest.get("relative_ci_high")),
                       example("criteria", weakest["aspect"], first[0], first[-1], "least"),
                       evidence, magnitude=1 - weakest["relative_change"]))
    return out


def adversarial_findings(section: Mapping[str, Any], example: ExampleSource) -> list[Finding]:
    """The attack row with the highest success rate, when any search succeeded."""
    results = section.get("results") or {}
    rows = [r for r in results.get("asr") or [] if r.get("asr") is not None]
    winners = [r for r in rows if (r.get("successes") or 0) > 0]
    if not winners:
        return []
    row = max(winners, key=lambda r: r["asr"])
    sense = ("rated low a text the gold rated high" if row["direction"] == "good"
             else "rated high a text the gold rated low")
    return [Finding(
        2, "fooled", "adversarial",
        f"Fooled by {row['method']} in {row['successes']} of {row['attempts']} searches "
        f"({row['asr']:.0%}, 95% CI {row['ci_low']:.0%}-{row['ci_high']:.0%}): it {sense}.",
        [row], interval("attack success rate", row.get("ci_low"), row.get("ci_high"), "rate"),
        results.get("example"), _files(section, "results", "attacks"), magnitude=row["asr"])]


#: what a correlation row's n counts, by its level
CORRELATION_UNITS = {"segment-global": "texts", "segment-doc": "documents", "system": "systems"}
#: how a finding names a correlation's level
CORRELATION_LEVELS = {"segment-global": "",
                      "segment-doc": " at summary level (per document, across its systems)",
                      "system": " at system level (each system's mean)"}


def correlation_findings(section: Mapping[str, Any], example: ExampleSource) -> list[Finding]:
    """Per level, the correlation with people on the human aspect it follows best (Kendall):
    'follows' only where the whole interval lies above zero, else undecided."""
    rows = [r for r in (section.get("results") or {}).get("rows") or []
            if r.get("method") == "kendall" and r.get("value") is not None]
    found = []
    for level in dict.fromkeys(r.get("level") for r in rows):
        row = max((r for r in rows if r.get("level") == level), key=lambda r: r["value"])
        low, high = row.get("ci_low"), row.get("ci_high")
        where = CORRELATION_LEVELS.get(str(level), f" ({level})")
        unit = CORRELATION_UNITS.get(str(level), "texts")
        bounds = ("no interval" if low is None or high is None
                  else f"95% CI {low:.2f} to {high:.2f}")
        follows = low is not None and low > 0
        lead = (f"Follows human {row['human']} ratings{where}" if follows else
                f"Undecided whether it follows human {row['human']} ratings{where}")
        found.append(Finding(
            4, "human correlation", "correlation",
            f"{lead}: Kendall tau {row['value']:.2f} ({bounds}, {row['n']} {unit}"
            f"{', resampling documents' if level != 'segment-global' else ''}).",
            [row], interval("Kendall tau", low, high, "correlation"), None,
            _files(section, "results"), magnitude=float(row["value"])))
    return found


WRITERS: dict[str, Callable[[Mapping[str, Any], ExampleSource], list[Finding]]] = {
    "blindspot": blindspot_findings, "discernment": discernment_findings,
    "criteria": criteria_findings, "adversarial": adversarial_findings,
    "correlation": correlation_findings}


def headline_findings(sections: Mapping[str, Mapping[str, Any]], gate: Mapping[str, Any],
                      example: ExampleSource) -> list[Finding]:
    """The findings of the methods that ran, most needed first; none when the gate says the
    evaluator's scores cannot be trusted (a constant or missing score has no blind spots)."""
    if not gate.get("trusted", False):
        return []
    found: list[Finding] = []
    for key, section in sections.items():
        writer = WRITERS.get(key)
        if writer is None or section.get("status") != "run":
            continue
        mine = sorted(writer(section, example), key=lambda f: (f.rank, -f.magnitude))
        found.extend(mine[:PER_METHOD])
    order = list(WRITERS)  # one rank: in the card's order of methods
    return sorted(found, key=lambda f: (f.rank, order.index(f.method)))[:MOST_FINDINGS]

