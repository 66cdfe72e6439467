"""The acceptance checks of LLM-written attacks, measured as the classifier they are.

A labelled answer is what a generator might reply when asked for an attack on an original text,
with a kind: `correct` (the attack, done right) or one of the ways to get it wrong: `unchanged`,
`over-rewritten`, `wrong-attack`, `cut-off`, `refusal`, `preamble` (the model's own remarks
left in the text) and `new-fact` (a fact the attack did not ask for). `measure` runs every
answer through `llm_checks.judge_answer` (the answer read out of the reply, then validated,
exactly as the generation stage decides) and counts, per attack, the accepted correct answers
(true positives), the accepted wrong ones (false positives) and the rejected correct ones (false
negatives): precision of "accept" and recall.

The project keeps two sets of labelled answers, each a folder of one YAML file per attack and
`_originals.yaml` with the texts they rewrite: `tests/perturb/labelled/`, the tuning set the
checks were tightened on (so its figures are partly fitted), and `tests/perturb/heldout/`,
written afterwards on other originals and never used to change a check. The held-out figures
are the ones the product quotes: `entry` turns a measurement into a row of the shipped table
(`perturb/validator_precision.json`, read by `perturb.precision`). `bench/bench_validators.py`
prints both sets with Wilson 95% intervals; `tests/perturb/test_labelled.py` and
`tests/perturb/test_heldout.py` hold the floors and the shipped table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from evalstress.core.data import builtin_corpus
from evalstress.core.proportions import wilson
from evalstress.core.text import TextParser
from evalstress.perturb.llm import AttackSpec, Resolved
from evalstress.perturb.llm_checks import Rejection, judge_answer, read_rewrite

KINDS = ("correct", "unchanged", "over-rewritten", "wrong-attack", "cut-off", "refusal",
         "preamble", "new-fact")
CASE_FIELDS = ("original", "level", "kind", "answer", "finish", "note")


class LabelledError(ValueError):
    """A labelled file that cannot be read; the message names the file, the case and the field."""


@dataclass(frozen=True)
class LabelledAnswer:
    """One reply to an attack on an original, and whether it is the attack done right."""

    attack: str
    original: str  # the original's key
    text: str  # the original's text
    task: str
    level: str | None
    kind: str
    answer: str
    finish: str = "stop"
    where: str = ""

    @property
    def correct(self) -> bool:
        return self.kind == "correct"


def _originals(folder: Path) -> dict[str, tuple[str, str]]:
    path = folder / "_originals.yaml"
    raw = yaml.safe_load(path.read_text("utf-8"))
    if not isinstance(raw, Mapping):
        raise LabelledError(f"{path}: must map keys to {{task, text}}")
    return {str(k): (str(v["task"]), " ".join(str(v["text"]).split())) for k, v in raw.items()}


def _corpus(key: str) -> tuple[str, str] | None:

    for example in builtin_corpus():
        if example.id == key:
            return example.task, example.hypothesis
    return None


def load_labelled(folder: str | Path) -> dict[str, list[LabelledAnswer]]:
    """Every labelled file of a folder, by attack name (the file's `attack`)."""
    base = Path(folder)
    originals = _originals(base)
    out: dict[str, list[LabelledAnswer]] = {}
    for path in sorted(base.glob("*.yaml")):
        if path.name.startswith("_"):
            continue
        raw = yaml.safe_load(path.read_text("utf-8"))
        if not isinstance(raw, Mapping) or "attack" not in raw or "cases" not in raw:
            raise LabelledError(f"{path}: needs `attack` and a list of `cases`")
        attack = str(raw["attack"])
        cases = []
        for i, case in enumerate(raw["cases"]):
            where = f"{path.name}, case {i + 1}"
            if not isinstance(case, Mapping):
                raise LabelledError(f"{where}: must be a mapping")
            unknown = sorted(set(map(str, case)) - set(CASE_FIELDS))
            if unknown:
                raise LabelledError(f"{where}: unknown field '{unknown[0]}'; fields: "
                                    f"{', '.join(CASE_FIELDS)}")
            kind = str(case.get("kind", ""))
            if kind not in KINDS:
                raise LabelledError(f"{where}, field 'kind': '{kind}' is not one of "
                                    f"{', '.join(KINDS)}")
            key = str(case.get("original", ""))
            found = (_corpus(key.removeprefix("corpus:")) if key.startswith("corpus:")
                     else originals.get(key))
            if found is None:
                raise LabelledError(f"{where}, field 'original': no original '{key}'")
            if not isinstance(case.get("answer"), str):
                raise LabelledError(f"{where}, field 'answer': must be a text")
            level = case.get("level")
            cases.append(LabelledAnswer(attack, key, found[1], found[0],
                                        None if level is None else str(level), kind,
                                        str(case["answer"]), str(case.get("finish", "stop")),
                                        where))
        out[attack] = cases
    return out


@dataclass
class Measurement:
    """How one attack's acceptance classifies its labelled answers."""

    attack: str
    true_positives: int = 0
    false_positives: int = 0
    false_negatives: int = 0
    true_negatives: int = 0
    errors: list[tuple[LabelledAnswer, str]] = field(default_factory=list)  # (case, why wrong)

    @property
    def correct(self) -> int:
        return self.true_positives + self.false_negatives

    @property
    def wrong(self) -> int:
        return self.false_positives + self.true_negatives

    @property
    def precision(self) -> float | None:
        accepted = self.true_positives + self.false_positives
        return self.true_positives / accepted if accepted else None

    @property
    def recall(self) -> float | None:
        return self.true_positives / self.correct if self.correct else None

    @property
    def accepted(self) -> int:
        return self.true_positives + self.false_positives

    @property
    def precision_interval(self) -> tuple[float | None, float | None]:
        """Wilson 95% interval of the precision (over the accepted answers)."""
        return wilson(self.true_positives, self.accepted)

    @property
    def recall_interval(self) -> tuple[float | None, float | None]:
        """Wilson 95% interval of the recall (over the correct answers)."""
        return wilson(self.true_positives, self.correct)

    def add(self, other: Measurement) -> None:
        """Count `other`'s outcomes into this one (a total over attacks)."""
        self.true_positives += other.true_positives
        self.false_positives += other.false_positives
        self.false_negatives += other.false_negatives
        self.true_negatives += other.true_negatives

    def to_dict(self) -> dict[str, Any]:
        return {"attack": self.attack, "correct": self.correct, "wrong": self.wrong,
                "tp": self.true_positives, "fp": self.false_positives,
                "fn": self.false_negatives, "tn": self.true_negatives,
                "precision": self.precision, "recall": self.recall}


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def entry(result: Measurement) -> dict[str, Any]:
    """One attack's row of the shipped precision table: precision and recall with their Wilson
    95% intervals (rounded to 4 places) and the counts behind them."""
    return {"precision": _rounded(result.precision),
            "precision_ci": [_rounded(v) for v in result.precision_interval],
            "recall": _rounded(result.recall),
            "recall_ci": [_rounded(v) for v in result.recall_interval],
            "n": result.correct + result.wrong, "correct": result.correct,
            "wrong": result.wrong, "accepted": result.accepted, "tp": result.true_positives,
            "fp": result.false_positives, "fn": result.false_negatives,
            "tn": result.true_negatives}


#: a second opinion on an accepted answer (the verifier model): True accept, False veto
Verdict = Callable[[LabelledAnswer, str, Resolved], bool]


def measure(cases: Mapping[str, Sequence[LabelledAnswer]], attacks: Mapping[str, AttackSpec],
            parser: TextParser | None = None, verdict: Verdict | None = None
            ) -> dict[str, Measurement]:
    """Run every labelled answer through the attack's acceptance (and `verdict`, when given,
    on the answers the checks accept) and count the outcomes per attack."""

    parser = parser or TextParser()
    out = {}
    for name, answers in cases.items():
        if name not in attacks:
            raise LabelledError(f"labelled answers for '{name}', which is no LLM attack")
        spec = attacks[name]
        result = Measurement(name)
        for case in answers:
            resolved = spec.resolve(case.level or spec.grid[0])
            rejection = judge_answer(parser.parse(case.text), case.answer, resolved, parser,
                                     finish_reason=case.finish)
            if rejection is None and verdict is not None:
                text = read_rewrite(case.answer, case.finish)
                if isinstance(text, str) and not verdict(case, text, resolved):
                    rejection = Rejection("verifier-rejected", "the verifier said no")
            accepted = rejection is None
            if case.correct and accepted:
                result.true_positives += 1
            elif case.correct:
                result.false_negatives += 1
                result.errors.append((case, f"rejected: {rejection}"))
            elif accepted:
                result.false_positives += 1
                result.errors.append((case, f"accepted a {case.kind} answer"))
            else:
                result.true_negatives += 1
        out[name] = result
    return out


def checks_table(results: Mapping[str, Measurement]) -> dict[str, dict[str, Any]]:
    """The `checks` part of the shipped precision table: `entry` per attack, by name."""
    return {name: entry(result) for name, result in sorted(results.items())}
