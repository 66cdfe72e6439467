"""A suite's `expect:` block and `evalstress check --require` lines: what a run must show.

    expect:
      max_failures: 2                 # at most 2 failed tests over all evaluators
      min_d: 1.5                      # every evaluator's D_avg (all severities) >= 1.5
      require:                        # SUBJECT:TEST -> verdict
        bleu:truncation: pass

They are read (and refused with a did-you-mean) when the suite loads; `report.check` judges a
finished run against them.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evalstress.core.records import VERDICTS

KNOWN_KEYS = ("require", "max_failures", "min_d")


class CheckInputError(ValueError):
    """The expectations or the run cannot be read: a usage or input error (exit code 2)."""


@dataclass(frozen=True)
class Requirement:
    subject: str
    test: str
    verdict: str

    @property
    def text(self) -> str:
        return f"{self.subject}:{self.test}={self.verdict}"


@dataclass
class Expectations:
    require: list[Requirement] = field(default_factory=list)
    max_failures: int | None = None
    min_d: float | None = None

    @property
    def empty(self) -> bool:
        return not self.require and self.max_failures is None and self.min_d is None

    def merged(self, other: Expectations) -> Expectations:
        """These expectations with `other`'s added; other's limits win."""
        return Expectations([*self.require, *other.require],
                            other.max_failures if other.max_failures is not None
                            else self.max_failures,
                            other.min_d if other.min_d is not None else self.min_d)


def _verdict(value: Any, where: str) -> str:
    text = str(value).strip().lower()
    aliases = {"n/a": "not-applicable", "na": "not-applicable", "passed": "pass",
               "failed": "fail", "blind-spot": "fail"}
    text = aliases.get(text, text)
    if text not in VERDICTS:
        close = difflib.get_close_matches(text, VERDICTS, n=1)
        hint = f"; did you mean {close[0]}?" if close else ""
        raise CheckInputError(f"{where}: unknown verdict '{value}'; known: "
                              f"{', '.join(VERDICTS)}{hint}")
    return text


def parse_requirement(text: str, where: str = "--require") -> Requirement:
    """`SUBJECT:TEST=VERDICT`, e.g. `bleu:truncation=pass` or `rouge/rougeL:negation=fail`."""
    left, sep, verdict = text.rpartition("=")
    subject, sep2, test = left.rpartition(":")
    if not sep or not sep2 or not subject or not test:
        raise CheckInputError(f"{where} '{text}' must look like EVALUATOR:TEST=VERDICT, e.g. "
                              "bleu:truncation=pass")
    return Requirement(subject.strip(), test.strip(), _verdict(verdict, f"{where} '{text}'"))


def parse_expect(block: Any, where: str = "expect") -> Expectations:
    """The suite's `expect:` block; unknown keys and bad values are errors."""
    if not isinstance(block, Mapping):
        raise CheckInputError(f"{where}: must be a mapping with {', '.join(KNOWN_KEYS)}")
    unknown = [k for k in block if k not in KNOWN_KEYS]
    if unknown:
        close = difflib.get_close_matches(str(unknown[0]), KNOWN_KEYS, n=1)
        hint = f"; did you mean {close[0]}?" if close else ""
        raise CheckInputError(f"{where}: unknown key '{unknown[0]}'; known: "
                              f"{', '.join(KNOWN_KEYS)}{hint}")
    out = Expectations()
    require = block.get("require") or {}
    if isinstance(require, Mapping):
        items = [(f"{k}={v}", f"{where}.require['{k}']") for k, v in require.items()]
    elif isinstance(require, list):
        items = [(str(r), f"{where}.require[{i}]") for i, r in enumerate(require)]
    else:
        raise CheckInputError(f"{where}.require: a mapping SUBJECT:TEST -> verdict, or a list "
                              "of 'SUBJECT:TEST=VERDICT'")
    out.require = [parse_requirement(text, place) for text, place in items]
    if block.get("max_failures") is not None:
        value = block["max_failures"]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise CheckInputError(f"{where}.max_failures: a whole number >= 0, not {value!r}")
        out.max_failures = value
    if block.get("min_d") is not None:
        value = block["min_d"]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise CheckInputError(f"{where}.min_d: a number, not {value!r}")
        out.min_d = float(value)
    return out
