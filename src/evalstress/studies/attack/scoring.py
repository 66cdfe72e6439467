"""The two scorers of an attack: the victim (the evaluator under test) and the gold judge.

Both go through the runner's `Scorer` and the score cache, so a text is scored once per
evaluator whatever the number of attacks, methods and reruns; LLM judges also keep their answers
in the response cache. Scores come back on 0-100 (see `normalise`).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalstress.core.cache import SQLiteCache
from evalstress.core.data import Example
from evalstress.core.records import Progress
from evalstress.core.redact import redact
from evalstress.engine.scoring import Scorer
from evalstress.evaluators.base import Evaluator, Score, ScoreRequest, create_evaluator, parse_spec
from evalstress.evaluators.judge import JudgeEvaluator
from evalstress.studies.attack.normalise import Scale, ScaleReference, choose_scale, known_range
from evalstress.studies.attack.paper_scales import PaperScale

REFERENCE_MODES = ("example", "original")


def split_victim_spec(spec: str) -> tuple[str, str | None]:
    """`rouge@rougeL` -> ("rouge", "rougeL"); a spec without a trailing @ASPECT is returned as is."""
    head, sep, tail = spec.rpartition("@")
    if sep and head and re.fullmatch(r"[\w.\-]+", tail):
        return head, tail
    return spec, None


@dataclass
class Measured:
    """One score on 0-100 with the raw value, or the reason there is none."""

    value: float | None
    raw: float | None = None
    reason: str = ""
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.value is not None


class Victim:
    """An evaluator aspect under attack, scoring on 0-100 once `calibrate` has set its scale.

    `reference_mode="original"` scores a candidate against the example's original hypothesis
    instead of its references (what paper 004's released code does for reference-based metrics,
    and paper 002's appendix J for BERTScore).
    """

    def __init__(self, evaluator: Evaluator, aspect: str | None = None, *,
                 cache: SQLiteCache | None = None, progress: Progress | None = None,
                 reference_mode: str = "example"):
        aspects = evaluator.aspects
        if aspect is None:
            if len(aspects) != 1:
                raise ValueError(f"{evaluator.label} reports {', '.join(aspects)}: pick one to "
                                 f"attack, e.g. {evaluator.name}@{aspects[-1]}")
            aspect = aspects[0]
        if aspect not in aspects:
            raise ValueError(f"{evaluator.label} has no aspect '{aspect}'; it reports "
                             f"{', '.join(aspects)}")
        if reference_mode not in REFERENCE_MODES:
            raise ValueError(f"reference mode must be one of {', '.join(REFERENCE_MODES)}")
        if evaluator.level != "segment":
            raise ValueError(f"{evaluator.label} scores whole sets of texts; an attack needs a "
                             "per-text evaluator")
        self.evaluator, self.aspect = evaluator, aspect
        self.reference_mode = reference_mode
        self.scorer = Scorer(evaluator, cache, progress)
        self.scale: Scale | PaperScale | None = None
        self.clipped = 0

    @classmethod
    def from_spec(cls, spec: str, **kwargs: Any) -> Victim:
        head, aspect = split_victim_spec(spec)
        return cls(create_evaluator(head), aspect, **kwargs)

    @property
    def label(self) -> str:
        if len(self.evaluator.aspects) == 1:
            return self.evaluator.label
        return f"{self.evaluator.label}@{self.aspect}"

    def request(self, example: Example, text: str) -> ScoreRequest:
        references = ((example.hypothesis,) if self.reference_mode == "original"
                      else example.references)
        return ScoreRequest(text, example.source, tuple(references), example.task)

    def raw(self, example: Example, texts: Sequence[str]) -> list[Score]:
        requests = [self.request(example, t) for t in texts]
        rows = self.scorer.score(requests)
        return [rows[r.key].get(self.aspect) or Score.missing("no score for this aspect")
                for r in requests]

    def calibrate(self, examples: Sequence[Example],
                  given: tuple[float, float] | None = None, *,
                  named: ScaleReference | None = None,
                  shared: ScaleReference | None = None,
                  paper: PaperScale | None = None) -> Scale | PaperScale:
        """Fix the 0-100 map (`normalise`): given, a reference set named for this victim,
        paper 004's code's rule (`paper`, under `--protocol paper`), declared, the reference
        set for every undeclared victim, or min-max over the originals.

        A reference set is scored as it stands (each example's hypothesis against its own
        references), whatever `reference_mode`: it measures how the evaluator's scores spread
        over real pairs of texts, which comparing an original with itself would not."""
        if paper is not None and given is None and named is None:
            self.scale = paper
            return paper
        declared = known_range(self.evaluator, self.aspect) is not None
        use = None if given is not None else named if named is not None else (
            shared if not declared else None)
        reference = None
        if use is not None:
            reference = use.scale(self.evaluator, self.aspect, self._values(
                [ScoreRequest(e.hypothesis, e.source, tuple(e.references), e.task)
                 for e in use.examples]), label=self.label)
        values: list[float] = []
        if given is None and reference is None and not declared:
            values = self._values([self.request(e, e.hypothesis) for e in examples])
        self.scale = choose_scale(self.evaluator, self.aspect, values, given=given,
                                  reference=reference, label=self.label)
        return self.scale

    def _values(self, requests: Sequence[ScoreRequest]) -> list[float]:
        rows = self.scorer.score(requests)
        return [s.value for r in requests
                if (s := rows[r.key].get(self.aspect)) is not None and s.value is not None]

    def score(self, example: Example, texts: Sequence[str]) -> list[Measured]:
        if self.scale is None:
            raise RuntimeError(f"victim {self.label} has no scale yet: call calibrate first")
        out = []
        for score in self.raw(example, texts):
            if score.value is None:
                out.append(Measured(None, reason=redact(score.reason or "missing")))
                continue
            self.clipped += self.scale.clips(score.value)
            detail = {"samples": list(score.extra["samples"])} if "samples" in score.extra else {}
            out.append(Measured(self.scale(score.value), float(score.value), detail=detail))
        return out

    def describe(self) -> dict[str, Any]:
        return {"label": self.label, "evaluator": self.evaluator.label, "aspect": self.aspect,
                "reference_mode": self.reference_mode,
                "scale": self.scale.to_dict() if self.scale else None,
                "clipped": self.clipped, "signature": self.evaluator.signature()}


GOLD_JUDGE_DEFAULTS = {"scale": "0-100", "form": "score-only", "temperature": 0.5}


#: what a gold judge with the user's own prompt (prompt=FILE) keeps of those defaults: the
#: template and its output contract decide the wording and the scale
GOLD_TEMPLATE_DEFAULTS = {"temperature": 0.5}


def gold_evaluator(spec: str | Mapping[str, Any], samples: int) -> Evaluator:
    """A gold evaluator from its spec; LLM judges default to paper 004's way of rating: the
    number only, on 0-100, `samples` ratings at temperature 0.5, averaged. A gold judge with
    its own prompt template (`prompt=FILE`) keeps its template's wording and scale, and is
    sampled the same way."""
    name, params = parse_spec(spec)
    if name == "judge":
        defaults = GOLD_TEMPLATE_DEFAULTS if "prompt" in params else GOLD_JUDGE_DEFAULTS
        for key, value in defaults.items():
            params.setdefault(key, value)
        params.setdefault("n", samples)
    gold = create_evaluator({"name": name, **params})  # every value checked, as declared
    if isinstance(gold, JudgeEvaluator) and gold.n > 1 and gold.temperature <= 0:
        raise ValueError("the gold judge samples several ratings: give it a temperature "
                         "above 0")
    return gold


#: how far a fresh gold judge's seeds lie from the search's (sample i of the search asks with
#: seed + i, re-asks included): far enough that no search-time sample is drawn again
FRESH_SEED_SHIFT = 1_000_000


def fresh_gold_evaluator(spec: str | Mapping[str, Any], samples: int,
                         search_gold: Evaluator | None = None) -> Evaluator:
    """The gold of `spec` drawing fresh samples: a judge with its seed moved by
    `FRESH_SEED_SHIFT` (so neither the response cache nor the score cache returns the search's
    ratings); any other evaluator would give the same score again, so it is `search_gold`
    itself where given (no second model load for a BERTScore or COMET gold)."""
    name, params = parse_spec(spec)
    if name == "judge":
        params["seed"] = int(params.get("seed", 0)) + FRESH_SEED_SHIFT
    elif search_gold is not None:
        return search_gold
    return gold_evaluator({"name": name, **params}, samples)


class Gold:
    """The human proxy: one evaluator or the mean of several (an ensemble), each on 0-100."""

    def __init__(self, evaluators: Sequence[Evaluator], *, cache: SQLiteCache | None = None,
                 progress: Progress | None = None):
        if not evaluators:
            raise ValueError("an attack needs a gold evaluator (--gold)")
        self.members = [Victim(e, None if len(e.aspects) == 1 else e.aspects[0], cache=cache,
                               progress=progress) for e in evaluators]

    @property
    def label(self) -> str:
        return " + ".join(m.label for m in self.members)

    def calibrate(self, examples: Sequence[Example], *,
                  shared: ScaleReference | None = None) -> None:
        for member in self.members:
            member.calibrate(examples, shared=shared)

    def adopt_scales(self, other: Gold) -> None:
        """Take `other`'s 0-100 maps member by member (a fresh gold rates on the search gold's
        scale, not on one fitted to its own ratings)."""
        for mine, theirs in zip(self.members, other.members, strict=True):
            mine.scale = theirs.scale

    def score(self, example: Example, texts: Sequence[str]) -> list[Measured]:
        per_member = [m.score(example, texts) for m in self.members]
        out = []
        for i in range(len(texts)):
            parts = [scores[i] for scores in per_member]
            missing = [f"{m.label}: {p.reason}" for m, p in zip(self.members, parts, strict=True)
                       if not p.ok]
            if missing:
                out.append(Measured(None, reason="; ".join(missing)))
                continue
            values = [p.value for p in parts if p.value is not None]
            out.append(Measured(statistics.fmean(values),
                                detail={m.label: {"value": p.value, "raw": p.raw, **p.detail}
                                        for m, p in zip(self.members, parts, strict=True)}))
        return out

    def describe(self) -> list[dict[str, Any]]:
        return [m.describe() for m in self.members]
