"""A gate for CI: does a finished run meet its expectations?

Expectations come from the suite's `expect:` block (stored in results.json) and from flags:

    expect:
      max_failures: 2                 # at most 2 failed tests over all evaluators
      min_d: 1.5                      # every evaluator's D_avg (all severities) >= 1.5
      require:                        # SUBJECT:TEST -> verdict
        bleu:truncation: pass
        rouge/rougeL:sentence-switching: fail   # a known blind spot, kept visible

SUBJECT is an evaluator (label, short label or registered name) or evaluator/aspect; TEST is a
perturbation (every severity and analysis testing it), perturbation@severity, or
analysis:test (`discernment:char-typo@minor`). A requirement holds when every matching verdict
equals the required one (pass, fail, inconclusive or not-applicable); an inconclusive verdict
never satisfies `pass`. `max_failures` counts `fail` verdicts (not-applicable and inconclusive
are not failures). With no expectation at all, every applicable test must pass.

Results: 0 when every expectation holds, 1 when one does not (one line of reason each), 2 on a
usage or input error (`CheckInputError`): a run directory that is broken or incomplete
(`rundir.read_run`), or a run with nothing to check. A run without any verdict (only study
analyses, or none) has nothing to check, and so has one whose every test is not-applicable when
only a failure count is asked for (the default): "0 tests fail" would read as a pass.
"""

from __future__ import annotations

import difflib
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalstress.analyses.outcomes import TESTED, Outcome, outcomes
from evalstress.core.wording import plural
from evalstress.report.common import short_labels
from evalstress.suites.expect import (
    CheckInputError,
    Expectations,
    Requirement,
    parse_expect,
    parse_requirement,
)

__all__ = ["CheckInputError", "CheckResult", "Expectations", "Requirement", "check_run",
           "evaluate", "junit_xml", "parse_expect", "parse_requirement", "untested"]


@dataclass(frozen=True)
class CheckResult:
    name: str  # the expectation, as written
    ok: bool
    reason: str  # one line


class _Subjects:
    """Resolves the names a user writes to the evaluator labels of a run."""

    def __init__(self, results: Mapping[str, Any], found: Sequence[Outcome]):
        self.labels = list(dict.fromkeys(o.evaluator for o in found))
        short = short_labels(results)
        self.alias: dict[str, set[str]] = {}
        for label in self.labels:
            registered = label.partition(":")[0].partition("(")[0]  # judge:... / judge(local)
            for name in (label, short.get(label, label), registered):
                self.alias.setdefault(name, set()).add(label)
        self.aspects = {(o.evaluator, o.aspect) for o in found if o.aspect}

    def resolve(self, subject: str) -> tuple[set[str], str | None]:
        """(labels, aspect) for SUBJECT or SUBJECT/ASPECT."""
        if subject in self.alias:
            return self.alias[subject], None
        head, sep, aspect = subject.rpartition("/")
        if sep and head in self.alias:
            labels = self.alias[head]
            if not any((label, aspect) in self.aspects for label in labels):
                known = sorted({a for label, a in self.aspects if label in labels})
                raise CheckInputError(f"'{subject}': {head} has no aspect '{aspect}'; known: "
                                      f"{', '.join(known)}")
            return labels, aspect
        close = difflib.get_close_matches(subject, list(self.alias), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise CheckInputError(f"unknown evaluator '{subject}' in this run; known: "
                              f"{', '.join(sorted(self.alias))}{hint}")


def _matches(o: Outcome, test: str) -> bool:
    analysis, sep, rest = test.partition(":")
    if sep and analysis in ("blindspot", "discernment", "criteria-confusion"):
        return o.analysis == analysis and rest in (o.test, o.perturbation)
    return test in (o.test, o.perturbation)


def untested(results: Mapping[str, Any], found: Sequence[Outcome], *,
             applicable: bool = True) -> str | None:
    """Why a run gives a verdict-reading command nothing to read: it has no verdict at all, or
    (with `applicable`) only not-applicable ones. None when it has something to read."""
    if not found:
        analyses = ", ".join(map(str, results.get("analyses") or {})) or "none"
        return (f"the run has no test verdicts (its analyses: {analyses}; verdicts come from "
                f"{', '.join(TESTED)})")
    if applicable and all(o.verdict == "not-applicable" for o in found):
        return (f"none of the run's {plural(len(found), 'test')} applies to its evaluators (every "
                "verdict is not-applicable)")
    return None


def evaluate(results: Mapping[str, Any], expectations: Expectations, *,
             where: str = "this run") -> list[CheckResult]:
    """Check each expectation against a run's results; raises CheckInputError when one names
    an evaluator, aspect or test the run does not have, or when the run has nothing to check:
    no verdict, or (when only a failure count is asked for) no applicable one, which would
    otherwise read as "0 tests fail"."""
    found = outcomes(results)
    counted_only = not expectations.require and expectations.min_d is None
    reason = untested(results, found, applicable=counted_only)
    if reason:
        raise CheckInputError(f"nothing to check in {where}: {reason}")
    checks: list[CheckResult] = []
    expect = expectations
    if expect.empty:
        expect = Expectations(max_failures=0)
    subjects = _Subjects(results, found)
    for req in expect.require:
        labels, aspect = subjects.resolve(req.subject)
        chosen = [o for o in found if o.evaluator in labels
                  and (aspect is None or o.aspect == aspect) and _matches(o, req.test)]
        if not chosen:
            tests = sorted({o.perturbation for o in found if o.evaluator in labels}
                           | {o.test for o in found if o.evaluator in labels})
            close = difflib.get_close_matches(req.test, tests, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise CheckInputError(f"--require {req.text}: no test '{req.test}' for "
                                  f"{req.subject} in this run{hint}")
        wrong = [o for o in chosen if o.verdict != req.verdict]
        if wrong:
            first = wrong[0]
            more = f" (and {len(wrong) - 1} more)" if len(wrong) > 1 else ""
            checks.append(CheckResult(req.text, False, (
                f"{req.text}: expected {req.verdict}, got {first.verdict} on "
                f"{first.analysis} {first.subject} {first.test}: {first.detail}{more}")))
        else:
            checks.append(CheckResult(req.text, True, f"{req.text}: "
                                                      f"{plural(len(chosen), 'verdict is', 'verdicts are')} "
                                                      f"{req.verdict}"))
    if expect.max_failures is not None:
        failed = [o for o in found if o.verdict == "fail"]
        name = f"max_failures={expect.max_failures}"
        if len(failed) > expect.max_failures:
            listed = ", ".join(f"{o.subject}:{o.test}" for o in failed[:6])
            more = f", … ({len(failed) - 6} more)" if len(failed) > 6 else ""
            checks.append(CheckResult(name, False, (
                f"{plural(len(failed), 'test fails', 'tests fail')}, more than the "
                f"{expect.max_failures} allowed: "
                f"{listed}{more}")))
        else:
            checks.append(CheckResult(name, True, f"{plural(len(failed), 'test fails', 'tests fail')} "
                                                  f"(at most {expect.max_failures} allowed)"))
    if expect.min_d is not None:
        checks.extend(_min_d(results, expect.min_d))
    return checks


def _min_d(results: Mapping[str, Any], min_d: float) -> list[CheckResult]:
    data = (results.get("analyses") or {}).get("discernment")
    if not isinstance(data, Mapping):
        raise CheckInputError(f"min_d={min_d:g}: this run has no discernment analysis")
    out = []
    summaries = [s for s in data.get("summaries") or [] if s.get("group") == "all"]
    if not summaries:
        raise CheckInputError(f"min_d={min_d:g}: the discernment analysis has no summary")
    for s in summaries:
        name = f"min_d={min_d:g}: {s['evaluator']}" + (
            f" ({s['task']})" if s.get("task") not in (None, "*") else "")
        d = s.get("d_avg")
        if d is None:
            out.append(CheckResult(name, False, f"{name}: D_avg is undefined (no testable "
                                                "perturbation)"))
        elif d < min_d:
            out.append(CheckResult(name, False, f"{name}: D_avg = {d:.2f} < {min_d:g} (weakest: "
                                                f"{s.get('d_min_at')}, D = {s.get('d_min')})"))
        else:
            out.append(CheckResult(name, True, f"{name}: D_avg = {d:.2f}"))
    return out


def junit_xml(checks: Sequence[CheckResult], *, suite: str = "evalstress check",
              properties: Mapping[str, Any] | None = None) -> str:
    """JUnit XML (the format CI systems read): one test case per expectation."""
    failures = sum(1 for c in checks if not c.ok)
    root = ET.Element("testsuites", name="evalstress", tests=str(len(checks)),
                      failures=str(failures), errors="0")
    node = ET.SubElement(root, "testsuite", name=suite, tests=str(len(checks)),
                         failures=str(failures), errors="0", skipped="0")
    if properties:
        props = ET.SubElement(node, "properties")
        for key, value in properties.items():
            ET.SubElement(props, "property", name=str(key), value=str(value))
    for check in checks:
        case = ET.SubElement(node, "testcase", classname="evalstress.report.check", name=check.name)
        if check.ok:
            ET.SubElement(case, "system-out").text = check.reason
        else:
            failure = ET.SubElement(case, "failure", message=check.reason, type="expectation")
            failure.text = check.reason
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def check_run(run_dir: str | Path, expectations: Expectations | None = None, *,
              use_suite: bool = True) -> tuple[list[CheckResult], dict[str, Any]]:
    """Read a run directory and check it against its suite's `expect:` block merged with
    `expectations` (flags win on limits)."""
    from evalstress.report.rundir import RunDirError, read_run

    try:
        results = read_run(run_dir)
    except RunDirError as exc:
        raise CheckInputError(str(exc)) from None
    base = Expectations()
    block = ((results.get("suite") or {}).get("expect") or {}) if use_suite else {}
    if block:
        base = parse_expect(block, where=f"{run_dir}: suite 'expect'")
    merged = base.merged(expectations or Expectations())
    return evaluate(results, merged, where=str(run_dir)), results
