"""The attack methods by name: `adveval`, `adveval-victim` (its victim-only ablation),
`textfooler`, `bert-attack`, `rules` (every rule of paper 004's comparison) or `rule:NAME`, and
`appendix-j`; parameters as in evaluator specs (`textfooler:sim=0.8`,
`bert-attack:model=PATH`, `appendix-j:model=PATH,noise=0.15`, `adveval-victim:start=original`)."""

from __future__ import annotations

import dataclasses
import difflib
from collections import Counter
from typing import Any, Protocol

from evalstress.core.strict import check_names
from evalstress.core.text import TextParser
from evalstress.evaluators.base import parse_spec
from evalstress.llm.generate import TextGenerator
from evalstress.perturb.base import Perturbation, PerturbContext, Skip
from evalstress.studies.attack.adveval import adveval, adveval_victim_only
from evalstress.studies.attack.base import AttackRecord, AttackSetup, finish
from evalstress.studies.attack.bertattack import BertAttack
from evalstress.studies.attack.greedy import AppendixJ
from evalstress.studies.attack.rules import RULES, get_rule
from evalstress.studies.attack.textfooler import TextFooler
from evalstress.studies.attack.trajectory import Trajectory

NAMES = ("adveval", "adveval-victim", "textfooler", "bert-attack", "rules", "rule:NAME",
         "appendix-j")
RULE_PATIENCE = 10  # seeds in a row without a new variant before a rule is exhausted


class Method(Protocol):
    name: str

    def applies(self, direction: str) -> bool: ...

    def run(self, setup: AttackSetup) -> AttackRecord: ...


class AdvEvalMethod:
    name = "adveval"

    def __init__(self, generator: TextGenerator, criteria: str | None = None):
        self.generator, self.criteria = generator, criteria

    def applies(self, direction: str) -> bool:
        return True

    def run(self, setup: AttackSetup) -> AttackRecord:
        return adveval(setup, self.generator, criteria=self.criteria)


class AdvEvalVictimMethod:
    """Paper 004's Table 8 ablation: AdvEval guided by the victim's score alone."""

    name = "adveval-victim"

    def __init__(self, generator: TextGenerator, criteria: str | None = None,
                 start: str | None = None):
        if start is not None and start not in ("random", "original"):
            raise ValueError(f"adveval-victim start= must be random or original, got '{start}'")
        self.generator, self.criteria, self.start = generator, criteria, start

    def applies(self, direction: str) -> bool:
        return True

    def run(self, setup: AttackSetup) -> AttackRecord:
        return adveval_victim_only(setup, self.generator, criteria=self.criteria,
                                   start=self.start)


class RuleMethod:
    """One rule on the victim budget: its grid over seeds 0, 1, ... until the budget is spent,
    the attack succeeds, or `RULE_PATIENCE` seeds in a row bring no new text."""

    def __init__(self, rule: str, parser: TextParser):
        self.rule, self.parser = rule, parser
        self.name = f"rule:{rule}"
        self.perturbation: Perturbation = get_rule(rule)  # an unknown rule fails here
        self.direction = RULES[rule][0]

    def applies(self, direction: str) -> bool:
        return direction == self.direction

    def _applicable(self, ctx: PerturbContext) -> Counter[str] | None:
        """None when some seed gives a variant; else the skip reasons (nothing is scored)."""
        reasons: Counter[str] = Counter()
        for seed in range(RULE_PATIENCE):
            for severity in self.perturbation.grid:
                result = self.perturbation.apply(ctx, severity, seed)
                if not isinstance(result, Skip):
                    return None
                reasons[result.reason] += 1
        return reasons

    def run(self, setup: AttackSetup) -> AttackRecord:
        example = setup.example
        ctx = PerturbContext(example, self.parser, setup.pool)
        reasons = self._applicable(ctx)
        if reasons is not None:
            return finish(setup, self.name, Trajectory(), start="original",
                          start_text=example.hypothesis, stop="not-applicable", iterations=0,
                          extra={"skips": dict(reasons)})
        trajectory = Trajectory(setup.evaluate([example.hypothesis], 0, ["original"]))
        if not trajectory.items:
            return finish(setup, self.name, trajectory, start="original",
                          start_text=example.hypothesis, stop="original-unscored", iterations=0)
        skips: Counter[str] = Counter()
        seed, idle, variants = 0, 0, 0
        stop = setup.stopped(trajectory)
        while stop is None:
            texts, notes = [], []
            for severity in self.perturbation.grid:
                result = self.perturbation.apply(ctx, severity, seed)
                if isinstance(result, Skip):
                    skips[result.reason] += 1
                elif result.text not in trajectory and result.text not in texts:
                    texts.append(result.text)
                    notes.append(f"severity {severity}, seed {seed}")
            seed += 1
            variants += len(texts)
            for candidate in setup.evaluate(texts, seed, notes):
                trajectory.add(candidate)
            idle = 0 if texts else idle + 1
            stop = setup.stopped(trajectory)
            if stop is None and idle >= RULE_PATIENCE:
                stop = "exhausted"
        return finish(setup, self.name, trajectory, start="original",
                      start_text=example.hypothesis, stop=stop, iterations=seed,
                      extra={"variants": variants, "skips": dict(skips)})


class _Wrapped:
    """A dataclass method (TextFooler, BertAttack, AppendixJ) under its record name."""

    def __init__(self, name: str, impl: Any):
        self.name, self.impl = name, impl

    def applies(self, direction: str) -> bool:
        return bool(self.impl.applies(direction))

    def run(self, setup: AttackSetup) -> AttackRecord:
        record: AttackRecord = self.impl.run(setup)
        return record


def _build(cls: Any, name: str, params: dict[str, Any]) -> Any:
    check_names("parameter", params, [f.name for f in dataclasses.fields(cls) if f.init],
                f"method {name}")
    return cls(**params)


def make_methods(specs: list[str], *, generator: TextGenerator | None = None,
                 criteria: str | None = None, parser: TextParser | None = None) -> list[Method]:
    """Methods from their specs; an unknown name or parameter is an error with a suggestion."""
    parser = parser or TextParser()
    out: list[Method] = []
    for spec in specs:
        if spec.startswith("rule:"):
            out.append(RuleMethod(spec.removeprefix("rule:"), parser))
            continue
        name, params = parse_spec(spec)
        if name == "adveval":
            if params:
                raise ValueError("adveval takes its settings from the attack options "
                                 "(--budget, --candidates, ...), not from the method spec")
            if generator is None:
                raise ValueError("adveval needs a generator: --generator 'model=NAME,"
                                 "base_url=URL'")
            out.append(AdvEvalMethod(generator, criteria))
        elif name == "adveval-victim":
            check_names("parameter", params, ["start"], f"method {name}")
            if generator is None:
                raise ValueError("adveval-victim needs a generator: --generator 'model=NAME,"
                                 "base_url=URL'")
            out.append(AdvEvalVictimMethod(generator, criteria, **params))
        elif name == "rules":
            out.extend(RuleMethod(rule, parser) for rule in RULES)
        elif name == "textfooler":
            out.append(_Wrapped("textfooler", _build(TextFooler, name, params)))
        elif name == "bert-attack":
            out.append(_Wrapped("bert-attack", _build(BertAttack, name, params)))
        elif name == "appendix-j":
            out.append(_Wrapped("appendix-j", _build(AppendixJ, name, params)))
        else:
            close = difflib.get_close_matches(name, [n for n in NAMES if n != "rule:NAME"],
                                              n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise ValueError(f"unknown attack method '{name}'{hint} Methods: {', '.join(NAMES)} "
                             f"(rules: {', '.join(RULES)})")
    return out
