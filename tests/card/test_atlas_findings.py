"""Every finding of every committed atlas card checked against its own rows: each kind of
finding says no more than its interval, the findings come in the order a reader needs them,
one per fact, each example is the typical one at the severity the finding cites, and a
percentage appears only where the score has a meaningful zero."""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalstress.card.atlas import ATLAS
from evalstress.card.compare import read_card
from evalstress.card.findings import RANKS, can_reach, ceiling

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "docs" / "atlas"
#: the atlas on real data (`evalstress atlas --data-dir`): every committed card
REAL = ROOT / "docs" / "atlas-real"
#: cards made before these rules, each with what would remake it
ALLOWED = {"gpt-ppl": "gpt-ppl card predates the rules; remake with "
                      "`evalstress atlas --only gpt-ppl --force`"}


def _tests_at(row: Mapping[str, Any], severity: str | None) -> list[Mapping[str, Any]]:
    return [s["test"] for s in row.get("severities") or []
            if s.get("test") and (severity is None or str(s["severity"]) == severity)]


def _percentages(text: str) -> list[str]:
    """The percentages a sentence states, not counting the levels of its intervals."""
    return re.findall(r"[\d.]+%", re.sub(r"[\d.]+% (CI|interval)", "", text))


def _signed(row: Mapping[str, Any]) -> bool:
    """Whether a row's score takes negative values (no meaningful zero: no percentage)."""
    values = [row.get(k) for k in ("gold", "mean")]
    values += [s.get(k) for s in row.get("severities") or [] for k in ("gold", "mean")]
    return any(isinstance(v, int | float) and v < 0 for v in values)


def _blindspot(kind: str, finding: Mapping[str, Any], card: Mapping[str, Any]) -> list[str]:
    rows, span, text = finding["rows"], finding["interval"], finding["text"]
    at = (finding.get("at") or {}).get("severity")
    out = []
    if kind in ("reversed", "blind spot", "inconclusive"):
        want = {"reversed": "reversed", "blind spot": "blind", "inconclusive": "inconclusive"}
        for row in rows:
            if row.get("outcome") != want[kind]:
                out.append(f"{row['aspect']} {row['perturbation']}: the row's outcome is "
                           f"{row.get('outcome')}, not {want[kind]}")
            if not any(t["verdict"] == want[kind] for t in _tests_at(row, None)):
                out.append(f"{row['aspect']}: no severity's interval is {want[kind]}")
        cited = _tests_at(rows[0], at)
        if not cited or cited[0]["verdict"] != want[kind]:
            out.append(f"the cited severity {at} is not {want[kind]}")
        elif (span["low"], span["high"]) != (cited[0]["low"], cited[0]["high"]):
            out.append("the quoted interval is not the cited severity's")
        elif kind == "blind spot" and not (-cited[0]["delta"] < span["low"]
                                           and span["high"] < cited[0]["delta"]):
            out.append("a blind spot whose interval leaves the tolerance")
        elif kind == "reversed" and not span["high"] < -cited[0]["delta"]:
            out.append("a reversal whose interval does not lie beyond the tolerance")
        if kind == "blind spot" and "equivalence shown" not in text:
            out.append("a blind spot that does not say equivalence is shown")
        if kind == "blind spot":
            out += [f"{row['aspect']} {row['perturbation']}: a blind spot whose heaviest "
                    "severity is not blind" for row in rows if _graded(row)
                    and _tests_at(row, None) and _tests_at(row, None)[-1]["verdict"] != "blind"]
        if kind != "blind spot" and re.search(r"\bblind\b", text, re.IGNORECASE):
            out.append(f"'blind' said of a {kind} row")
    elif kind == "partly blind":
        out += _partly(finding)
    elif kind == "non-monotonic":
        if not any(s.get("verdict") == "detects" and s["low"] > s["delta"]
                   for row in rows for s in row.get("steps") or []):
            out.append("no step rises beyond the tolerance")
    elif kind == "holds":
        every = card["methods"]["blindspot"]["results"]["rows"]
        if not all(r.get("outcome") == "detects" for r in every):
            out.append("'ranks every perturbation below the original' with a row that does not "
                       "detect")
    else:
        out.append(f"the blind-spot method writes no '{kind}' finding")
    return out


def _graded(row: Mapping[str, Any]) -> bool:
    """Whether a row's severities are grades (ordered), not kinds."""
    return row.get("monotonic_outcome") != "not-applicable"


def _partly(finding: Mapping[str, Any]) -> list[str]:
    """A row blind at light damage only: its cited severity is the heaviest blind one, with
    its interval inside the tolerance; every severity it says detects does; the heaviest is
    not blind; and the text says where the blindness ends."""
    out = []
    at = (finding.get("at") or {}).get("severity")
    for row in finding["rows"]:
        tests = [(str(s["severity"]), s["test"]) for s in row.get("severities") or []
                 if s.get("test")]
        verdicts = [t["verdict"] for _, t in tests]
        if row.get("outcome") != "partly blind" or not verdicts or verdicts[-1] == "blind":
            out.append(f"{row['aspect']} {row['perturbation']}: not blind at light damage only")
            continue
        up_to, start = row.get("blind_up_to"), row.get("detects_from")
        blind = [name for name, t in tests if t["verdict"] == "blind"]
        if not blind or blind[-1] != up_to:
            out.append(f"{row['aspect']}: blind up to {up_to}, the heaviest blind is {blind}")
        if f"up to severity {up_to}" not in finding["text"]:
            out.append(f"{row['aspect']}: the text does not say 'up to severity {up_to}'")
        names = [name for name, _ in tests]
        if start is not None and (start not in names or any(
                t["verdict"] != "detects" for _, t in tests[names.index(start):])):
            out.append(f"{row['aspect']}: 'detects from {start}' where a heavier one does not")
        if start is None and "detects from" in finding["text"]:
            out.append(f"{row['aspect']}: 'detects from' with no severity that does")
    cited = [t for name, t in ((str(s["severity"]), s["test"])
                               for s in finding["rows"][0].get("severities") or []
                               if s.get("test")) if name == at]
    span = finding["interval"]
    if not cited or cited[0]["verdict"] != "blind":
        out.append(f"the cited severity {at} is not blind")
    elif not -cited[0]["delta"] < span["low"] <= span["high"] < cited[0]["delta"]:
        out.append("a partly blind finding whose interval leaves the tolerance")
    return out


def _discernment(kind: str, finding: Mapping[str, Any], card: Mapping[str, Any]) -> list[str]:
    rows, text = finding["rows"], finding["text"]
    threshold = float(card["methods"]["discernment"]["results"].get("threshold") or 1.0)
    if kind == "weak discernment":
        unit = rows[0]
        if not (can_reach(unit, threshold) and unit["d"] < threshold):
            return ["a weak unit that could not reach the threshold, or reached it"]
        return [] if f"allow up to {ceiling(unit):.2f}" in text else ["no ceiling quoted"]
    if kind == "minor above major":
        minor, major = rows
        same = all(minor[k] == major[k] for k in ("task", "perturbation", "aspect"))
        if not same or (minor["severity"], major["severity"]) != ("minor", "major"):
            return ["minor and major of different units"]
        if not minor["relative_ci_low"] > major["relative_ci_high"]:
            return ["minor above major with overlapping intervals"]
        return []
    return [f"the discernment method writes no '{kind}' finding"]


def _criteria(kind: str, finding: Mapping[str, Any], card: Mapping[str, Any]) -> list[str]:
    rows, span, text = finding["rows"], finding["interval"], finding["text"]
    if kind == "reversed":
        return [] if rows[0]["ci_high"] < 0 and span["high"] < 0 else [
            "a reversal whose interval reaches the worse side"]
    if kind == "sensitivity":
        weakest = rows[0]
        if not text.startswith("Moves least"):
            return []
        profile = card["methods"]["criteria"]["results"]["sensitivity"]["aspects"]
        # a damage the score rewards (its interval wholly on the better side) is a reversal
        # of its own, not an aspect that moves the score more
        others = [a for a in profile if a.get("probed") and a["aspect"] == weakest["aspect"]
                  and a["quality_aspect"] != weakest["quality_aspect"]
                  and a.get("ci_low") is not None and not a["ci_high"] < 0]
        return [] if all(weakest["ci_high"] < a["ci_low"] for a in others) else [
            "'moves least' where another aspect's interval overlaps"]
    if kind in ("confusion", "missed damage"):
        test = "invariance" if kind == "confusion" else "directional"
        item = rows[0]
        return [] if item.get("test") == test and item.get("passed") is False else [
            f"a {kind} finding on an item that passed its {test} test"]
    return [f"the criteria method writes no '{kind}' finding"]


def _other(kind: str, finding: Mapping[str, Any], card: Mapping[str, Any]) -> list[str]:
    row = finding["rows"][0]
    if kind == "fooled":
        return [] if (row.get("successes") or 0) > 0 else ["fooled with no success"]
    if finding["method"] == "correlation" and "statistic" in row:  # the agreement block
        low, high = row.get("low"), row.get("high")
        agrees, against = low is not None and low > 0, high is not None and high < 0
        wanted = {"human correlation": (agrees, "Agrees"), "reversed": (against, "Ranks against"),
                  "inconclusive": (not agrees and not against, "Undecided")}.get(kind)
        return [] if wanted and wanted[0] and finding["text"].startswith(wanted[1]) and \
            finding["interval"]["level"] == row.get("conf") else [
                f"an agreement finding '{kind}' its corrected interval does not support"]
    if finding["method"] == "correlation":
        low = row.get("ci_low")
        follows = low is not None and low > 0
        if kind == "human correlation":
            return [] if follows and finding["text"].startswith("Follows") else [
                "'follows' where the correlation's interval reaches zero"]
        if kind == "inconclusive":
            return [] if not follows and finding["text"].startswith("Undecided") else [
                "undecided where the correlation's interval lies above zero"]
    return [f"no method writes a '{kind}' finding"]


CHECKS = {"blindspot": _blindspot, "discernment": _discernment, "criteria": _criteria,
          "adversarial": _other, "correlation": _other}


def overclaims(card: Mapping[str, Any]) -> list[str]:
    """What a card's findings say beyond their rows ([] when nothing)."""
    out = []
    findings = card.get("findings") or []
    ranks = [f["rank"] for f in findings]
    if ranks != sorted(ranks):
        out.append(f"findings out of order: ranks {ranks}")
    seen: set[tuple[Any, ...]] = set()
    for number, finding in enumerate(findings, 1):
        kind, method = finding["kind"], finding["method"]
        problems = CHECKS[method](kind, finding, card)
        if kind not in RANKS or finding["rank"] != RANKS[kind]:
            problems.append(f"rank {finding['rank']} for a '{kind}' finding")
        at = finding.get("at") or {}
        fact = (kind, method, at.get("perturbation"), at.get("task"))
        if at and fact in seen:
            problems.append("a second finding of the same fact")
        seen.add(fact)
        example = finding.get("example")
        cites = method in ("blindspot", "discernment", "criteria")  # a severity, an example
        if cites and (not at or (example is None and method != "criteria")):
            problems.append("no cited severity or no example")
        for shown, pick in ((example, "typical"), (finding.get("extreme"), "extreme")):
            if shown and (shown.get("pick") != pick
                          or str(shown.get("severity")) != str(at.get("severity"))):
                problems.append(f"the {pick} example is not the {pick} one at the cited "
                                f"severity {at.get('severity')}")
        if any(_signed(row) for row in finding["rows"]) and _percentages(finding["text"]):
            problems.append("a percentage of a score without a meaningful zero")
        for row in finding["rows"]:
            low, high = row.get("relative_ci_low"), row.get("relative_ci_high")
            higher = row.get("higher_is_better", True)
            if (higher and high is not None and high > 1 + 1e-9) or (
                    not higher and low is not None and low < -1 - 1e-9):
                problems.append("a relative interval beyond all of the score")
        out += [f"finding {number} ({kind}): {p}" for p in problems]
    return out


def test_every_finding_of_every_atlas_card_says_no_more_than_its_rows() -> None:
    found = {}
    for entry in ATLAS:
        problems = overclaims(read_card(PUBLISHED / entry.name))
        if problems:
            found[entry.name] = problems
    allowed = {name: problems for name, problems in found.items() if name in ALLOWED}
    assert {name: p for name, p in found.items() if name not in ALLOWED} == {}
    assert set(allowed) == set(ALLOWED), (
        "an allowed card now holds: take it off ALLOWED", sorted(set(ALLOWED) - set(allowed)))


def test_every_finding_of_every_real_data_atlas_card_says_no_more_than_its_rows() -> None:
    folders = sorted(p.parent for p in REAL.glob("*/card.json"))
    assert len(folders) >= 15  # the lexical cards on SummEval, WMT21 and TED at least
    found = {f.name: problems for f in folders if (problems := overclaims(read_card(f)))}
    assert found == {}


def test_the_check_fails_a_finding_whose_wording_is_stronger_than_its_interval() -> None:
    card = read_card(PUBLISHED / "bleu")
    assert overclaims(card) == []
    blind = next(i for i, f in enumerate(card["findings"]) if f["kind"] == "blind spot")
    # the cited severity's interval no longer shows equivalence: "Blind" says too much
    weaker = copy.deepcopy(card)
    row = weaker["findings"][blind]["rows"][0]
    row["outcome"] = "inconclusive"
    for severity in row["severities"]:
        if severity.get("test"):
            severity["test"]["verdict"] = "inconclusive"
    assert any("not blind" in p for p in overclaims(weaker))
    # the example of another severity than the finding cites
    elsewhere = copy.deepcopy(card)
    elsewhere["findings"][blind]["example"]["severity"] = "not-cited"
    assert any("cited severity" in p for p in overclaims(elsewhere))
    # a percentage of a score that can be negative
    signed = copy.deepcopy(card)
    signed["findings"][blind]["rows"][0]["gold"] = -3.0
    signed["findings"][blind]["text"] += " It drops 12.0%."
    assert any("meaningful zero" in p for p in overclaims(signed))
    # a bounded score said to lose more than all of itself
    beyond = copy.deepcopy(card)
    beyond["findings"][blind]["rows"][0]["relative_ci_high"] = 1.56
    assert any("beyond all of the score" in p for p in overclaims(beyond))
    # out of order
    flipped = copy.deepcopy(card)
    flipped["findings"] = flipped["findings"][::-1]
    assert len(flipped["findings"]) < 2 or any("out of order" in p
                                               for p in overclaims(flipped))


def test_the_check_fails_moves_least_where_the_intervals_overlap() -> None:
    profile = [{"aspect": "m", "quality_aspect": q, "probed": True, "ci_low": lo,
                "ci_high": hi} for q, lo, hi in (("coherence", 0.1, 0.5),
                                                 ("fluency", 0.4, 0.9))]
    finding = {"rank": 5, "kind": "sensitivity", "method": "criteria",
               "text": "Moves least when coherence is damaged: ...", "rows": [profile[0]],
               "interval": {"low": 0.1, "high": 0.5}, "example": None,
               "at": {"aspect": "m", "perturbation": "x", "severity": "2"}}
    card = {"findings": [finding], "methods": {"criteria": {"results": {
        "sensitivity": {"aspects": profile}}}}}
    assert any("moves least" in p for p in overclaims(card))
    profile[1]["ci_low"] = 0.6
    assert overclaims(card) == []


def test_the_check_fails_a_blind_spot_resting_on_light_damage_only() -> None:
    from evalstress.card.findings import headline_findings

    def severity(name: str, rank: int, verdict: str, low: float, high: float
                 ) -> dict[str, Any]:
        return {"severity": name, "severity_rank": rank, "gold": 20.0, "mean": 19.0,
                "test": {"verdict": verdict, "estimate": (low + high) / 2, "low": low,
                         "high": high, "level": 0.96, "delta": 1.0, "n": 57,
                         "pvalue": 0.001, "mde": 0.5}}

    row = {"aspect": "bleu", "perturbation": "stopword-removal", "verdict": "fail",
           "rank_pass": False, "monotonic_pass": True, "higher_is_better": True,
           "outcome": "partly blind", "blind_up_to": "0.1", "detects_from": "0.3",
           "monotonic_outcome": "no significant rise",
           "severities": [severity("0.1", 0, "blind", -0.2, 0.4),
                          severity("0.2", 1, "inconclusive", 0.5, 1.5),
                          severity("0.3", 2, "detects", 4.0, 6.0)]}
    section = {"status": "run", "files": {"results": "r.json"}, "results": {"rows": [row]}}

    def example(*args: Any, **kwargs: Any) -> dict[str, Any]:
        return {"example_id": "e", "pick": "typical", "severity": args[3]}

    findings = headline_findings({"blindspot": section}, {"trusted": True}, example)
    card = {"findings": [f.to_dict() for f in findings],
            "methods": {"blindspot": section}}
    assert [f["kind"] for f in card["findings"]] == ["partly blind"]
    assert overclaims(card) == []
    # the same row worded as a headline blind spot: its heaviest severity detects
    headline = copy.deepcopy(card)
    headline["findings"][0].update(kind="blind spot", rank=RANKS["blind spot"])
    headline["findings"][0]["rows"][0]["outcome"] = "blind"
    assert any("heaviest severity is not blind" in p for p in overclaims(headline))
    # "detects from 0.2" where 0.2 is undecided
    early = copy.deepcopy(card)
    early["findings"][0]["rows"][0]["detects_from"] = "0.2"
    assert any("'detects from 0.2'" in p for p in overclaims(early))
