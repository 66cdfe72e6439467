"""What every attack method shares: its setting, the victim-query budget, scoring candidates
against gold and victim, and the record an attack leaves in attacks.jsonl."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evalstress.core.data import Example
from evalstress.perturb.base import derive_seed
from evalstress.studies.attack.objective import (
    AttackParams,
    Direction,
    search_feedback,
    succeeded,
)
from evalstress.studies.attack.scoring import Gold, Measured, Victim
from evalstress.studies.attack.trajectory import Candidate, Trajectory


class Budget:
    """Victim queries of one attack: every text a method hands the victim counts, the starting
    text included, whether the score came from the cache or a fresh call (so a resumed attack
    spends exactly what the first one did). A text handed over twice counts twice; a method
    that drops repeats before asking (appendix-j, within a step) spends less."""

    def __init__(self, total: int):
        self.total = int(total)
        self.used = 0

    @property
    def remaining(self) -> int:
        return max(0, self.total - self.used)

    @property
    def exhausted(self) -> bool:
        return self.used >= self.total

    def take(self, wanted: int) -> int:
        """How many of `wanted` queries fit; they count as spent."""
        granted = min(int(wanted), self.remaining)
        self.used += granted
        return granted


@dataclass
class AttackSetup:
    """One attack: an example, a victim, the gold, a direction and the parameters."""

    example: Example
    victim: Victim
    gold: Gold
    direction: Direction
    params: AttackParams
    pool: Sequence[Example] = ()  # the other examples (random starts, rule pools)
    fresh_gold: Gold | None = None  # the gold on fresh samples (`AttackParams.rescore_final`)
    budget: Budget = field(init=False)
    gold_queries: int = field(default=0, init=False)
    rejections: Counter[str] = field(default_factory=Counter, init=False)
    #: scores that came back missing, by "gold: reason" / "victim: reason" (every query, the
    #: greedy methods' probes included), so a judge that fails is counted, not read as a verdict
    missing: Counter[str] = field(default_factory=Counter, init=False)
    started: float = field(default_factory=time.perf_counter, init=False)

    def __post_init__(self) -> None:
        self.budget = Budget(self.params.victim_budget)

    def bound_budget(self, queries: int) -> None:
        """The budget of a search that bounds its own length (appendix-j): `queries` when the
        user gave no budget (`AttackParams.budget` None); a given budget stays. Call it before
        the first query."""
        if self.params.budget is None:
            self.budget = Budget(queries)

    def verdict(self, gold: float, victim: float) -> tuple[float, bool]:
        return (search_feedback(self.direction, gold, victim, self.params),
                succeeded(self.direction, gold, victim, self.params))

    def victim_scores(self, texts: Sequence[str]) -> list[Measured]:
        """Victim scores for as many texts as the budget allows (the rest are not scored)."""
        granted = self.budget.take(len(texts))
        if not granted:
            return []
        return self._counted("victim", self.victim.score(self.example, list(texts[:granted])))

    def gold_scores(self, texts: Sequence[str], gold: Gold | None = None) -> list[Measured]:
        """The gold's ratings (`gold`: another one, e.g. the fresh gold of `rescore`)."""
        self.gold_queries += len(texts)
        asked = gold if gold is not None else self.gold
        return self._counted("gold", asked.score(self.example, list(texts))) if texts else []

    def _counted(self, role: str, measured: list[Measured]) -> list[Measured]:
        for m in measured:
            if not m.ok:
                self.missing[f"{role}: {m.reason or 'no reason given'}"] += 1
        return measured

    def evaluate(self, texts: Sequence[str], iteration: int,
                 notes: Sequence[str] | None = None) -> list[Candidate]:
        """Gold first, then the victim for the texts with a gold score, within the budget.

        Texts beyond the budget are dropped before the gold sees them; texts whose gold or
        victim score is missing are dropped and counted in `rejections` by reason."""
        texts = list(texts[:self.budget.remaining])
        notes = list(notes or [""] * len(texts))
        golds = self.gold_scores(texts)
        keep = [i for i, g in enumerate(golds) if g.ok]
        for g in golds:
            if not g.ok:
                self.rejections["gold-missing"] += 1
        victims = self.victim_scores([texts[i] for i in keep])
        out = []
        for i, v in zip(keep, victims, strict=False):
            if not v.ok or v.value is None:
                self.rejections["victim-missing"] += 1
                continue
            gold = golds[i].value
            assert gold is not None
            s, ok = self.verdict(gold, v.value)
            out.append(Candidate(texts[i], iteration, gold, v.value, s, ok, v.raw,
                                 golds[i].detail, notes[i]))
        return out

    def judge_final(self, text: str, iteration: int, victim: float, victim_raw: float | None,
                    note: str, *, gold_of: Gold | None = None,
                    missing: str = "gold-missing") -> Candidate | None:
        """The gold's verdict on a text the victim already scored (the end of a victim-only
        search; `gold_of`: another gold, as `rescore` asks); None, counted in `rejections`
        under `missing`, when the gold's score is missing."""
        gold = self.gold_scores([text], gold_of)[0]
        if gold.value is None:
            self.rejections[missing] += 1
            return None
        s, ok = self.verdict(gold.value, victim)
        return Candidate(text, iteration, gold.value, victim, s, ok, victim_raw, gold.detail,
                         note)

    def rescore(self, chosen: Candidate) -> Candidate | None:
        """`chosen` with the fresh gold's rating and the verdict on it (the victim's score
        stays: asked again, a victim gives the score its cache holds); None, counted in
        `rejections`, when there is no fresh gold or its score is missing."""
        if self.fresh_gold is None:
            return None
        return self.judge_final(chosen.text, chosen.iteration, chosen.victim, chosen.victim_raw,
                                "rated again on fresh gold samples", gold_of=self.fresh_gold,
                                missing="fresh-gold-missing")

    def stopped(self, trajectory: Trajectory) -> str | None:
        """Why the search should stop now, if it should: on the first success only under the
        `first-success` rule; S above the threshold and a spent budget under both."""
        if self.params.stop_rule == "first-success" and any(c.success for c in trajectory.items):
            return "success"
        threshold = self.params.stop_threshold
        if threshold is not None and any(c.feedback > threshold for c in trajectory.items):
            return "threshold"
        if self.budget.exhausted:
            return "budget"
        return None


@dataclass
class AttackRecord:
    """One line of attacks.jsonl: an example attacked in one direction by one method."""

    example_id: str
    victim: str
    direction: str
    method: str
    original: str
    start: str  # "original" or "random:<example id>" (where the search began)
    text: str | None
    gold: float | None
    victim_score: float | None
    victim_raw: float | None
    gold_original: float | None
    victim_original: float | None
    feedback: float | None
    success: bool
    iterations: int
    queries: int
    gold_queries: int
    stop: str
    seconds: float
    trajectory: list[dict[str, Any]]
    rejections: dict[str, int] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    #: missing scores of this attack by "gold: reason" / "victim: reason" (see AttackSetup)
    missing: dict[str, int] = field(default_factory=dict)
    #: what chose the returned text: a stop rule of `AttackParams` (first-success,
    #: highest-feedback) or `final-text` for the greedy methods, which return where they ended
    stop_rule: str = "first-success"

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["extra"] = dict(self.extra)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AttackRecord:
        return cls(**data)


def finish(setup: AttackSetup, method: str, trajectory: Trajectory, *, start: str,
           start_text: str, stop: str, iterations: int, result: Candidate | None = None,
           extra: dict[str, Any] | None = None, rule: str | None = None) -> AttackRecord:
    """The record of a finished attack. The result is `result` when the method has one final
    text (the greedy attacks), else the trajectory's best candidate under `rule` (default: the
    attack's stop rule; see `Trajectory.best`)."""
    first = trajectory.items[0] if trajectory.items and trajectory.items[0].iteration == 0 \
        else None
    rule = rule or setup.params.stop_rule
    best = result or trajectory.best(rule)
    return AttackRecord(
        example_id=setup.example.id, victim=setup.victim.label, direction=setup.direction,
        method=method, original=start_text, start=start,
        text=best.text if best else None, gold=best.gold if best else None,
        victim_score=best.victim if best else None, victim_raw=best.victim_raw if best else None,
        gold_original=first.gold if first else None,
        victim_original=first.victim if first else None,
        feedback=best.feedback if best else None, success=bool(best and best.success),
        iterations=iterations, queries=setup.budget.used, gold_queries=setup.gold_queries,
        stop=stop, seconds=round(time.perf_counter() - setup.started, 3),
        trajectory=trajectory.to_list(), rejections=dict(setup.rejections),
        extra=dict(extra or {}), missing=dict(setup.missing), stop_rule=rule)


def start_point(setup: AttackSetup, mode: str) -> tuple[str, str]:
    """(start label, text): the original, or another example's hypothesis drawn by the seed
    (paper 004 starts TextFooler's bad-direction search from a random response)."""
    if mode == "original":
        return "original", setup.example.hypothesis
    if mode != "random":
        raise ValueError(f"start must be original or random, got '{mode}'")

    others = [e for e in setup.pool if e.id != setup.example.id
              and e.hypothesis != setup.example.hypothesis]
    if not others:
        raise ValueError("a random start needs at least two examples")
    pick = others[derive_seed(setup.params.seed, setup.example.id, "start") % len(others)]
    return f"random:{pick.id}", pick.hypothesis
