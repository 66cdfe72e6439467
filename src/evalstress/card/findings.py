"""The card's headline findings: three to five sentences a reader needs first, each resting on
table rows of one method, an interval and a typical before/after example.

Findings are written from the methods' sections as card.json holds them (a mapping per method
with its `results`), so they can be checked on a hand-made mapping. No finding says more than
its interval: a reversal or a blind spot only where the four-way verdict shows it
(`analyses.verdicts`), "moves least" only where that aspect's interval lies apart from every
other's. Each names the evaluator aspect and speaks in the metric's own direction and units;
a percentage only where the score has a meaningful zero. Ranks, in the order a reader needs
them (RANKS):

1. reversals: damaged text scored better;
2. blind spots: equivalence shown, the score does not move beyond the tolerance at the
   heaviest damage tested; below them, rows blind at light damage only ("blind up to
   severity s (detects from s')", `analyses.blindspot_stats.row_state`);
3. weak discernment: a DHP unit below D = 1 whose n allows D = 1;
4. other failures and misses: criteria confusion, damage not picked up, searches that fooled
   the evaluator, a judge biased beyond its placebo or moved by a reworded criterion;
5. what is undecided or irregular: inconclusive rank tests (with the examples that would
   settle them), a significant rise between severities, a minor degree above a major one, the
   aspect whose damage moves the score least;
6. what holds: the damage it ranks below every original, its correlation with people.

One finding per fact: the same verdict for one perturbation on several evaluator aspects is
one finding naming them all. At most two findings per method, five in all; findings of one rank
follow the card's order of methods. An untrusted evaluator (the sanity gate failed) gets none.
Each example is typical (`evidence.RULE`): the median change at the severity the finding cites,
with the most extreme one beside it when another example moved more.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from evalstress.analyses.blindspot_stats import PARTLY_BLIND
from evalstress.analyses.stats import discernment_ceiling, pairs_for_discernment
from evalstress.analyses.verdicts import settle_text
from evalstress.card.agreement import claims
from evalstress.card.consistency_findings import consistency_claims

MOST_FINDINGS = 5
PER_METHOD = 2
#: the fewest pairs a one-sided Wilcoxon test needs to reach p < 0.05 at all (1/2^5 = 0.031):
#: a DHP unit with fewer cannot reach D = 1 whatever the evaluator does, so it is no finding
MIN_PAIRS = pairs_for_discernment(1.0)
#: the rank of each kind of finding: lower reads first
RANKS = {"reversed": 1, "blind spot": 2, PARTLY_BLIND: 2, "weak discernment": 3,
         "confusion": 4, "missed damage": 4, "fooled": 4, "biased": 4, "inconsistent": 4,
         "wording": 4, "inconclusive": 5, "non-monotonic": 5, "minor above major": 5,
         "sensitivity": 5, "varies": 5, "holds": 6, "human correlation": 6}
#: a partly blind finding's magnitude is shifted by this, below every full blind spot's (which
#: lie in (0, 1]), so it reads after them within their rank
PARTLY_BELOW = -1.0


class ExampleSource(Protocol):
    """Finds a finding's before/after example: (method, aspect, perturbation, severity, pick)
    and, for a finding about one task, that task (`evidence.RunEvidence.before_after`)."""

    def __call__(self, method: str, aspect: str, perturbation: str, severity: str, pick: str,
                 task: str | None = None) -> dict[str, Any] | None: ...


@dataclass
class Finding:
    """One headline: what a reader should know, and what it rests on; `at` names the
    perturbation and severity it cites (its examples come from there)."""

    rank: int  # RANKS: lower reads first
    kind: str
    method: str
    text: str
    rows: list[dict[str, Any]]
    interval: dict[str, Any]
    example: dict[str, Any] | None = None
    evidence: list[str] = field(default_factory=list)
    magnitude: float = 0.0  # orders findings of one rank: larger first
    extreme: dict[str, Any] | None = None  # the most extreme example, when not the typical
    at: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("magnitude")
        return out


def finding(kind: str, method: str, text: str, rows: list[dict[str, Any]],
            span: dict[str, Any], examples: tuple[dict[str, Any] | None, dict[str, Any] | None],
            evidence: list[str], magnitude: float = 0.0,
            at: dict[str, Any] | None = None) -> Finding:
    """A finding of `kind`, ranked by RANKS, with its typical and extreme examples."""
    return Finding(RANKS[kind], kind, method, text, rows, span, examples[0], evidence,
                   magnitude, examples[1], at)


def examples_at(example: ExampleSource, method: str, aspect: str, perturbation: str,
                severity: str, task: str | None = None
                ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The typical example at the cited severity and the most extreme one (None when it is
    the typical one's example)."""
    typical = example(method, aspect, perturbation, severity, "typical", task)
    extreme = example(method, aspect, perturbation, severity, "extreme", task)
    if typical is None or extreme is None or \
            extreme.get("example_id") == typical.get("example_id"):
        extreme = None
    return typical, extreme


def number(value: float) -> str:
    """Two decimals, without a minus sign on zero."""
    return f"{value + 0.0:.2f}".replace("-0.00", "0.00")


def interval(what: str, low: float | None, high: float | None,
             unit: str = "share") -> dict[str, Any]:
    """An interval a finding quotes; `unit` says how to read its bounds: share (a fraction of
    the original score: a drop), score (the evaluator's own units), rate, or correlation."""
    return {"what": what, "low": low, "high": high, "level": 0.95, "unit": unit}


def _files(section: Mapping[str, Any], *names: str) -> list[str]:
    files = section.get("files") or {}
    return [str(files[n]) for n in names if n in files]


def units(value: float) -> str:
    return f"{value + 0.0:.3g}"


def tidy(value: float, scale: float = 1.0) -> float:
    """Zero for floating-point dust (|value| below 1e-9 of the scale): '-1.39e-17' reads 0."""
    return 0.0 if abs(value) < 1e-9 * max(1.0, abs(scale)) else value


def moves(gold: float, mean: float) -> str:
    """'rises', 'falls' or 'stays': the raw score's direction, not the oriented drop's."""
    return "rises" if mean > gold else "falls" if mean < gold else "stays"


def before_after(gold: float, mean: float) -> str:
    """'falls from 49.5 to 49.46', 'stays at 0.507': the raw score's move, with as many
    digits as it takes to tell the two apart (up to six)."""
    if tidy(mean - gold, gold) == 0:
        return f"stays at {units(gold)}"
    a, b = apart(gold, mean)
    return f"{moves(gold, mean)} from {a} to {b}"


def apart(gold: float, mean: float) -> tuple[str, str]:
    """Both numbers with three significant digits, or up to six where three read alike."""
    a, b = units(gold), units(mean)
    if tidy(mean - gold, gold) == 0:
        return a, a
    for digits in range(4, 7):
        if a != b:
            break
        a, b = f"{gold + 0.0:.{digits}g}", f"{mean + 0.0:.{digits}g}"
    return a, b


def raw_span(low: float, high: float, higher_is_better: bool, scale: float = 1.0
             ) -> tuple[float, float]:
    """An interval of the oriented drop (positive = worse) as the raw score's change."""
    sign = 1.0 if higher_is_better else -1.0
    a, b = sorted((tidy(-sign * low, scale) + 0.0, tidy(-sign * high, scale) + 0.0))
    return a, b


def percent(value: float) -> str:
    """'+4.2%', '-0.7%', and '+0.0%' for what rounds to zero (never '-0.0%')."""
    return f"{value + 0.0:+.1%}" if abs(value) >= 0.0005 else "+0.0%"


def share_text(figures: Mapping[str, Any]) -> str:
    """'; -16.4% of the original score, 95% CI -18.0% to -14.7%': the relative change in the
    raw score's direction, where the score has a meaningful zero (a relative interval of the
    drop, `profile.relative_drop`), else ''."""
    change = figures.get("relative_change")
    low, high = figures.get("relative_ci_low"), figures.get("relative_ci_high")
    if change is None or low is None or high is None:
        return ""
    sign = -1.0 if figures.get("higher_is_better", True) else 1.0
    a, b = sorted((sign * low + 0.0, sign * high + 0.0))
    return (f"; {percent(sign * change)} of the original score, 95% CI {percent(a)} to "
            f"{percent(b)}")


def _tested(row: Mapping[str, Any], severity: Mapping[str, Any]) -> str:
    """'from 88 to 73.6 (lower is better; the change -16.1 to -12.9, 99.1% interval, beyond the
    tolerance +-3.2 on 57 examples; -16.4%, -18.0% to -14.7%)': a severity's change in the
    metric's own direction and units, with its interval and, where the score has a meaningful
    zero, the relative change."""
    test = severity["test"]
    higher = bool(row.get("higher_is_better", True))
    low, high = raw_span(test["low"], test["high"], higher, severity["gold"])
    where = {"detects": "beyond", "reversed": "beyond", "blind": "inside"}.get(
        test["verdict"], "straddling")
    gold, mean = apart(severity["gold"], severity["mean"])
    text = (f"from {gold} to {mean} ("
            + ("" if higher else "lower is better; ")
            + f"the change {low:+.3g} to {high:+.3g}, {test['level']:.1%} interval, "
            f"{where} the tolerance \u00b1{units(test['delta'])} on {test['n']} examples")
    relative = severity.get("relative")
    if relative:
        text += (f"; {percent(relative['change'])}, {percent(relative['low'])} to "
                 f"{percent(relative['high'])}")
    return text + ")"


def _tested_interval(severity: Mapping[str, Any]) -> dict[str, Any]:
    test = severity["test"]
    out = interval(f"mean change at {severity['severity']} (positive = scored worse)",
                   test["low"], test["high"], "score")
    out["level"] = test["level"]
    return out


def _tested_severities(row: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [s for s in row.get("severities") or [] if s.get("test") and
            s["test"].get("low") is not None and s.get("mean") is not None]


def _aspects(names: Sequence[str]) -> str:
    """'f', 'recall and f', 'p, r and f'."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def blindspot_findings(section: Mapping[str, Any], example: ExampleSource) -> list[Finding]:
    """The blind-spot findings from the four-way verdicts (docs/methods/blind-spots.md): a
    reversal, a blind spot only where equivalence is shown at the heaviest severity (below it,
    one blind at light severities only: partly blind), an undecided rank failure with
    the examples that would settle it, a significant rise between severities; or, when every
    row detects the damage, the weakest as what holds. One verdict for one perturbation on
    several evaluator aspects is one finding. Rows of cards made before the four-way verdicts
    (no `outcome`) give none."""
    rows = [r for r in (section.get("results") or {}).get("rows") or [] if "outcome" in r]
    evidence = _files(section, "results", "scores", "variants")
    cited: dict[tuple[str, str], list[tuple[dict[str, Any], dict[str, Any], float]]] = {}
    for row in rows:
        tested = _tested_severities(row)
        if not tested:
            continue
        outcome = row.get("outcome")
        by = {v: [s for s in tested if s["test"]["verdict"] == v] for v in
              ("reversed", "blind", "inconclusive")}
        if outcome == "reversed":
            at = max(by["reversed"], key=lambda s: -s["test"]["estimate"])
            cited.setdefault(("reversed", row["perturbation"]), []).append(
                (row, at, 2 - at["test"]["estimate"] / at["test"]["delta"]))
        elif outcome == "blind":
            at = max(by["blind"], key=lambda s: s["severity_rank"])
            cited.setdefault(("blind spot", row["perturbation"]), []).append(
                (row, at, 1 - abs(at["test"]["estimate"]) / at["test"]["delta"]))
        elif outcome == PARTLY_BLIND and by["blind"]:
            at = next((s for s in by["blind"] if str(s["severity"]) == str(
                row.get("blind_up_to"))), max(by["blind"], key=lambda s: s["severity_rank"]))
            cited.setdefault((PARTLY_BLIND, row["perturbation"]), []).append(
                (row, at, PARTLY_BELOW + 1 - abs(at["test"]["estimate"]) / at["test"]["delta"]))
        elif outcome == "inconclusive" and by["inconclusive"] and not row.get("rank_pass"):
            at = max(by["inconclusive"], key=lambda s: s["test"].get("n_to_settle") or 10**9)
            cited.setdefault(("inconclusive", row["perturbation"]), []).append((row, at, 0.0))
        rises = [s for s in row.get("steps") or [] if s.get("verdict") == "detects"]
        if row.get("monotonic_outcome") == "rises" and rises:
            step = max(rises, key=lambda s: s["estimate"])
            heavier = next((s for s in tested if s["severity"] == step["to"]), tested[-1])
            cited.setdefault(("non-monotonic", row["perturbation"]), []).append(
                (row, {**heavier, "step": step}, float(step["estimate"])))
    out = [_blindspot_finding(kind, name, group, example, evidence)
           for (kind, name), group in cited.items()]
    if out or not rows:
        return out
    return _holds(rows, example, evidence)


def _blindspot_finding(kind: str, name: str,
                       group: list[tuple[dict[str, Any], dict[str, Any], float]],
                       example: ExampleSource, evidence: list[str]) -> Finding:
    """One finding for one perturbation and verdict, on every evaluator aspect it holds for
    (their severities and intervals each named)."""
    names = [row["aspect"] for row, _, _ in group]
    first_row, first, magnitude = group[0]
    several = len(group) > 1

    def each(say: Callable[[dict[str, Any], dict[str, Any]], str]) -> str:
        return "; ".join((f"{row['aspect']}: " if several else "") + say(row, at)
                         for row, at, _ in group)

    if kind == "reversed":
        text = (f"Rates {name}-damaged text better on {_aspects(names)}: " + each(
            lambda row, at: f"at severity {at['severity']} the score "
                            f"{moves(at['gold'], at['mean'])} {_tested(row, at)}") + ".")
    elif kind == "blind spot":
        text = (f"Blind to {name} on {_aspects(names)}"
                + (f" at severity {first['severity']}" if not several else "") + ": "
                + each(lambda row, at: (f"at severity {at['severity']} " if several else "")
                       + f"the score moves {_tested(row, at)}") + "; equivalence shown.")
    elif kind == PARTLY_BLIND:
        text = (f"Blind to {name} "
                + (f"on {_aspects(names)} up to severity {first['severity']} only "
                   f"({_beyond(first_row)}): " if not several else
                   f"at light severities only, on {_aspects(names)}: ")
                + each(lambda row, at: (f"up to severity {at['severity']} ({_beyond(row)}), "
                                        if several else "")
                       + f"at severity {at['severity']} the score moves {_tested(row, at)}")
                + "; equivalence shown there, not at heavier damage.")
    elif kind == "inconclusive":
        need = max((row.get("n_to_settle") or 0) for row, _, _ in group)
        never = any(not row.get("n_to_settle") for row, _, _ in group)
        settle = settle_text(None if never else need)
        mde = first["test"].get("mde")
        power = (f"; at its n the test tells apart only a change of {units(mde)} or more"
                 if mde is not None else "")
        text = (f"Undecided whether {_aspects(names)} ranks {name} below the original: "
                + each(lambda row, at: f"at severity {at['severity']} the score moves "
                                       f"{_tested(row, at)}") + f"; {settle}{power}.")
    else:
        step = first["step"]
        text = (f"Scores heavier {name} better on {_aspects(names)}: " + each(
            lambda row, at: f"from severity {at['step']['from']} to {at['step']['to']} the "
                            f"score moves back toward the original by "
                            f"{units(at['step']['estimate'])} ({at['step']['level']:.1%} "
                            f"interval {units(at['step']['low'])} to "
                            f"{units(at['step']['high'])}, beyond the tolerance "
                            f"\u00b1{units(at['step']['delta'])})") + ".")
        span = interval(f"rise from {step['from']} to {step['to']} (positive = scored better)",
                        step["low"], step["high"], "score")
        span["level"] = step["level"]
        return finding(kind, "blindspot", text, [row for row, _, _ in group], span,
                       examples_at(example, "blindspot", first_row["aspect"], name,
                                   str(first["severity"])), evidence, magnitude,
                       {"aspect": first_row["aspect"], "perturbation": name,
                        "severity": str(first["severity"])})
    return finding(kind, "blindspot", text, [row for row, _, _ in group],
                   _tested_interval(first),
                   examples_at(example, "blindspot", first_row["aspect"], name,
                               str(first["severity"])), evidence, magnitude,
                   {"aspect": first_row["aspect"], "perturbation": name,
                    "severity": str(first["severity"])})


def _beyond(row: Mapping[str, Any]) -> str:
    """'detects from 0.3' or 'undecided above it': a partly blind row past its blindness."""
    return (f"detects from {row['detects_from']}" if row.get("detects_from")
            else "undecided above it")


def _holds(rows: list[dict[str, Any]], example: ExampleSource, evidence: list[str]
           ) -> list[Finding]:
    """When every row detects its damage: the least clear of them at full severity."""
    if not all(r.get("outcome") == "detects" for r in rows):
        return []
    tops = [(r, max(t, key=lambda s: s["severity_rank"])) for r in rows
            if (t := _tested_severities(r))]
    if not tops:
        return []
    row, top = min(tops, key=lambda item: item[1]["test"]["low"] / item[1]["test"]["delta"])
    return [finding(
        "holds", "blindspot",
        f"Ranks every one of the {len(rows)} blind-spot perturbations below the original "
        f"beyond the tolerance at every severity; the least clear at full severity is "
        f"{row['perturbation']} on {row['aspect']}: the score moves {_tested(row, top)}.",
        [row], _tested_interval(top),
        examples_at(example, "blindspot", row["aspect"], row["perturbation"],
                    str(top["severity"])), evidence,
        at={"aspect": row["aspect"], "perturbation": row["perturbation"],
            "severity": str(top["severity"])})]


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


def _change_text(figures: Mapping[str, Any], subject: str = "the score") -> str:
    """'the score moves from 20.3 to 20.1 (95% CI of the change -0.3 to +0.1; drops 0.8%,
    95% CI of the drop -0.7% to +2.7%)': a row of change figures in the metric's own direction
    and units (`profile.change_figures`); the percentage only where the score has a
    meaningful zero."""
    higher = bool(figures.get("higher_is_better", True))
    head = subject
    if figures.get("gold") is not None and figures.get("mean") is not None:
        head += f" {before_after(figures['gold'], figures['mean'])}"
    elif figures.get("change") is not None:  # a row without its means: the oriented change
        head += (f" changes by {units(float(figures['change']))} (positive = scored worse)"
                 if higher else f" changes by {units(-float(figures['change']))}")
    inside = [] if higher else ["lower is better"]
    if figures.get("ci_low") is not None and figures.get("ci_high") is not None:
        low, high = raw_span(figures["ci_low"], figures["ci_high"], higher,
                             figures.get("gold") or 1.0)
        inside.append(f"95% CI of the change {low:+.3g} to {high:+.3g}")
    share = share_text(figures)
    if share:
        inside.append(share[2:])
    return head + (f" ({'; '.join(inside)})" if inside else "")


def discernment_findings(section: Mapping[str, Any], example: ExampleSource) -> list[Finding]:
    """Units DHP cannot tell from the original (D < 1) among those whose n allows D = 1, and a
    minor degree of a perturbation lowering the score more than its major degree."""
    results = section.get("results") or {}
    units_ = results.get("units") or []
    threshold = float(results.get("threshold") or 1.0)
    evidence = _files(section, "results", "scores", "variants")
    out: list[Finding] = []
    weak = [u for u in units_ if can_reach(u, threshold) and u.get("d") is not None
            and u["d"] < threshold]
    if weak:  # the weakest unit; the section's table holds the rest
        unit = min(weak, key=lambda u: u["d"])
        same = sorted({u["aspect"] for u in weak if u is not unit and all(
            u.get(k) == unit.get(k) for k in ("task", "perturbation", "severity"))})
        also = f"; also below {threshold:g} on {_aspects(same)}" if same else ""
        out.append(finding(
            "weak discernment", "discernment",
            f"Does not tell {unit['perturbation']} ({unit['severity']}) from the original on "
            f"{unit['task']} ({unit['aspect']}): D = {number(unit['d'])}, below "
            f"{threshold:g}, where its {unit['n']} examples allow up to "
            f"{number(ceiling(unit))} (p = {unit['pvalue']:.3g}); {_change_text(unit)}{also}.",
            [unit], interval("relative change", unit.get("relative_ci_low"),
                             unit.get("relative_ci_high")) if unit.get("relative_change")
            is not None else interval("mean change (positive = scored worse)",
                                      unit.get("ci_low"), unit.get("ci_high"), "score"),
            examples_at(example, "discernment", unit["aspect"], unit["perturbation"],
                        unit["severity"], unit.get("task")), evidence,
            threshold - unit["d"], _at(unit)))
    inverted = minor_above_major(units_, threshold)
    if inverted:
        minor, major = max(inverted, key=lambda p: p[0]["relative_ci_low"]
                           - p[1]["relative_ci_high"])
        out.append(finding(
            "minor above major", "discernment",
            f"Drops more on minor than on major {minor['perturbation']} on {minor['task']} "
            f"({minor['aspect']}): at minor {_change_text(minor)}; at major "
            f"{_change_text(major)}; the two intervals of the drop lie apart; D "
            f"{number(minor['d'])} and {number(major['d'])}.",
            [minor, major], interval(f"relative change under minor {minor['perturbation']}",
                                     minor.get("relative_ci_low"),
                                     minor.get("relative_ci_high")),
            examples_at(example, "discernment", minor["aspect"], minor["perturbation"],
                        minor["severity"], minor.get("task")), evidence,
            minor["relative_ci_low"] - major["relative_ci_high"], _at(minor)))
    return out


def _at(row: Mapping[str, Any], perturbation: str | None = None,
        severity: str | None = None) -> dict[str, Any]:
    """What a finding cites: evaluator aspect, perturbation, severity (and task)."""
    out = {"aspect": row.get("aspect"), "perturbation": perturbation or row.get("perturbation"),
           "severity": str(severity if severity is not None else row.get("severity"))}
    if row.get("task"):
        out["task"] = row["task"]
    return out


def criteria_findings(section: Mapping[str, Any], example: ExampleSource) -> list[Finding]:
    """Confusion (an aspect moved by damage aimed at another) and misses for an aspect-aware
    evaluator; for a single score, a reversal (damage to an aspect the score rewards) and the
    aspect whose damage moves it least."""
    results = section.get("results") or {}
    evidence = _files(section, "results", "scores", "variants")
    out: list[Finding] = []
    if results.get("mode") == "confusion":
        items = (results.get("confusion") or {}).get("items") or []
        confused = [i for i in items if i.get("test") == "invariance" and i.get("passed") is False]
        missed = [i for i in items if i.get("test") == "directional" and i.get("passed") is False]
        if confused:
            item = max(confused, key=lambda i: abs(i.get("rank_biserial") or 0))
            other = item.get("intended") or "another aspect"
            out.append(finding(
                "confusion", "criteria",
                f"Confuses {item['quality_aspect']} with {other}: its {item['aspect']} score "
                f"moves by {item['change']:+.3g} (positive = scored worse; 95% CI "
                f"{_span(item)}, r = {item['rank_biserial']:+.2f}) under "
                f"{item['perturbation']} ({item['severity']}), which damages {other} only.",
                [item], interval("mean change", item.get("ci_low"), item.get("ci_high"),
                                 "score"),
                examples_at(example, "criteria", item["aspect"], item["perturbation"],
                            item["severity"]), evidence,
                abs(item.get("rank_biserial") or 0), _at(item)))
        if missed:
            item = min(missed, key=lambda i: i.get("rank_biserial") or 0)
            out.append(finding(
                "missed damage", "criteria",
                f"Does not clearly pick up damage to {item['quality_aspect']}: its "
                f"{item['aspect']} score changes by {item['change']:+.3g} under "
                f"{item['perturbation']} ({item['severity']}) (positive = scored worse; 95% CI "
                f"{_span(item)}, r = {(item.get('rank_biserial') or 0):+.2f}), short of a "
                "significant moderate drop.", [item],
                interval("mean change", item.get("ci_low"), item.get("ci_high"), "score"),
                examples_at(example, "criteria", item["aspect"], item["perturbation"],
                            item["severity"]), evidence,
                1 - (item.get("rank_biserial") or 0), _at(item)))
        return out
    return _sensitivity_findings(results, example, evidence)


def _span(item: Mapping[str, Any]) -> str:
    low, high = item.get("ci_low"), item.get("ci_high")
    return "n/a" if low is None or high is None else f"{low:+.3g} to {high:+.3g}"


def _sensitivity_findings(results: Mapping[str, Any], example: ExampleSource,
                          evidence: list[str]) -> list[Finding]:
    """Per evaluator aspect: a quality aspect whose damage the score rewards (the interval of
    the change wholly on the better side), and the one whose damage moves it least ("least"
    only where its interval lies below every other's)."""
    profile = [a for a in (results.get("sensitivity") or {}).get("aspects") or []
               if a.get("probed") and a.get("change") is not None]
    out: list[Finding] = []
    by_aspect: dict[str, list[dict[str, Any]]] = {}
    for a in profile:
        by_aspect.setdefault(a["aspect"], []).append(a)
    said: set[tuple[str, str]] = set()
    for aspect, rows in by_aspect.items():
        rewarded = [a for a in rows if a.get("ci_high") is not None and a["ci_high"] < 0]
        for a in rewarded:
            if ("reversed", a["quality_aspect"]) in said:
                continue
            said.add(("reversed", a["quality_aspect"]))
            name, severity = _first_attack(a)
            out.append(finding(
                "reversed", "criteria",
                f"Rates text better when its {a['quality_aspect']} is damaged: under "
                f"{', '.join(a['perturbations'])}, {_change_text(a, aspect)}; the interval "
                "lies wholly on the better side.", [a],
                interval(f"mean change, {a['quality_aspect']} (positive = scored worse)",
                         a.get("ci_low"), a.get("ci_high"), "score"),
                examples_at(example, "criteria", aspect, name, severity), evidence,
                -float(a["ci_high"]), _at(a, name, severity)))
        rest = [a for a in rows if a not in rewarded]
        if len(rest) < 2:
            continue
        key = "relative_change" if all(a.get("relative_change") is not None for a in rest) \
            else "change"
        weakest = min(rest, key=lambda a: a[key])
        if ("sensitivity", weakest["quality_aspect"]) in said:
            continue
        said.add(("sensitivity", weakest["quality_aspect"]))
        others = [a for a in rest if a is not weakest]
        apart = weakest.get("ci_high") is not None and all(
            a.get("ci_low") is not None and weakest["ci_high"] < a["ci_low"] for a in others)
        strongest = max(others, key=lambda a: a[key])
        head = (f"Moves least when {weakest['quality_aspect']} is damaged" if apart else
                f"Its smallest measured change is when {weakest['quality_aspect']} is "
                "damaged, though the intervals do not settle that it moves least")
        name, severity = _first_attack(weakest)
        out.append(finding(
            "sensitivity", "criteria",
            f"{head}: under {', '.join(weakest['perturbations'])}, "
            f"{_change_text(weakest, aspect)}; when {strongest['quality_aspect']} is damaged, "
            f"{_change_text(strongest, aspect)}.", [weakest, strongest],
            interval(f"mean change, {weakest['quality_aspect']} (positive = scored worse)",
                     weakest.get("ci_low"), weakest.get("ci_high"), "score"),
            examples_at(example, "criteria", aspect, name, severity), evidence,
            1.0 if apart else 0.0, _at(weakest, name, severity)))
    return out


def _first_attack(row: Mapping[str, Any]) -> tuple[str, str]:
    """The first pooled perturbation of a profile row and its severity ('name@severity')."""
    name, _, severity = (row.get("perturbations") or ["?@?"])[0].rpartition("@")
    return name, severity


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
    return [finding(
        "fooled", "adversarial",
        f"Fooled by {row['method']} in {row['successes']} of {row['attempts']} searches "
        f"({row['asr']:.0%}, 95% CI {row['ci_low']:.0%}-{row['ci_high']:.0%}): it {sense}.",
        [row], interval("attack success rate", row.get("ci_low"), row.get("ci_high"), "rate"),
        (results.get("example"), None), _files(section, "results", "attacks"), row["asr"])]


#: what a correlation row's n counts, by its level
CORRELATION_UNITS = {"segment-global": "texts", "segment-doc": "documents", "system": "systems"}
#: how a finding names a correlation's level
CORRELATION_LEVELS = {"segment-global": "",
                      "segment-doc": " at summary level (per document, across its systems)",
                      "system": " at system level (each system's mean)"}


def correlation_findings(section: Mapping[str, Any], example: ExampleSource) -> list[Finding]:
    """Per level, the correlation with people on the human aspect it follows best (Kendall):
    'follows' only where the whole interval lies above zero, else undecided. A section with
    the agreement block speaks from it instead (`agreement_findings`)."""
    block = (section.get("results") or {}).get("agreement")
    if block:
        return agreement_findings(section, block)
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
        found.append(finding(
            "human correlation" if follows else "inconclusive", "correlation",
            f"{lead}: Kendall tau {row['value']:.2f} ({bounds}, {row['n']} {unit}"
            f"{', resampling documents' if level != 'segment-global' else ''}).",
            [row], interval("Kendall tau", low, high, "correlation"), (None, None),
            _files(section, "results"), float(row["value"])))
    return found


def consistency_findings(section: Mapping[str, Any], example: ExampleSource) -> list[Finding]:
    """An LLM judge's consistency: wordings that move it, verdicts that change between
    wordings, answers that vary (`card.consistency_findings`); no example texts."""
    return [finding(kind, method, text, rows, span, (None, None), evidence, magnitude)
            for kind, method, text, rows, span, evidence, magnitude
            in consistency_claims(section)]


def agreement_findings(section: Mapping[str, Any], block: Mapping[str, Any]) -> list[Finding]:
    """Per level, the claim of the agreement block (`card.agreement.claims`): read off tau-b's
    Holm-corrected interval, which the finding quotes at its own level."""
    found = []
    for claim in claims(block):
        span = {**interval(claim.statistic, claim.low, claim.high, claim.unit),
                "level": claim.conf}
        found.append(finding(claim.kind, "correlation", claim.text, [claim.row], span,
                             (None, None), _files(section, "results"), claim.magnitude))
    return found


def judge_findings(section: Mapping[str, Any], example: ExampleSource) -> list[Finding]:
    """The bias and position findings, written in `card.biasfind` (which imports this one)."""
    from evalstress.card import biasfind

    write = biasfind.bias_findings if section["key"] == "bias" else biasfind.position_findings
    return write(section, example)


WRITERS: dict[str, Callable[[Mapping[str, Any], ExampleSource], list[Finding]]] = {
    "blindspot": blindspot_findings, "discernment": discernment_findings,
    "criteria": criteria_findings, "adversarial": adversarial_findings,
    "correlation": correlation_findings, "bias": judge_findings, "position": judge_findings,
    "consistency": consistency_findings}


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
