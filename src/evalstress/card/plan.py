"""What a card runs: the budgets, and which methods apply to an evaluator and its data.

A budget fixes how much each method may spend (examples, seeds, the suite and protocol of each
method, the attack's query budget). A method that cannot run for this evaluator or this data
is planned too, as not run with the reason, so the card shows every method and never leaves
one out in silence.

| method       | paper | suite (small / standard / paper)           | runs when                      |
|--------------|-------|--------------------------------------------|--------------------------------|
| blindspot    | 002   | blindspot / blindspot / blindspot-full (*) | always                         |
| discernment  | 003   | dhp / dhp / dhp (paper's error counts)     | the evaluator scores one text  |
| criteria     | 000   | criteria-rules / same / criteria-rules-paper | the evaluator scores one text |
| adversarial  | 004   | the attack study                           | a gold evaluator is given      |
| correlation  | -     | the blind-spot run's originals, or the     | the data carries human scores  |
|              |       | other systems' outputs each example lists  | (of its text or its systems')  |
| consistency  | -     | repeats and reworded criteria on a seeded  | the evaluator is an LLM judge  |
|              |       | subset (CONSISTENCY), blindspot per wording |                                |

| bias         | -     | bias (probes against placebos; self-preference | the evaluator asks a model  |
|              |       | added with the judge's model family)       | (a judge)                      |
| position     | -     | each original against a lightly damaged    | the evaluator is a judge (its  |
|              |       | copy, both orders and a re-ask             | pairwise prompt)               |

(*) data of one task that paper 002 ran (summarization, translation, open-ended) gets that
task's paper suite instead, as `evalstress run --protocol paper` picks it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from evalstress.analyses.agreement import is_rating
from evalstress.analyses.paired import quality_aspect
from evalstress.core.data import Example
from evalstress.core.extras import missing_modules
from evalstress.core.family import model_family
from evalstress.core.preferences import PreferenceData
from evalstress.core.strict import unknown_name_error
from evalstress.core.version import __version__, code_digest
from evalstress.criteria import PARAPHRASES
from evalstress.engine.ray import on_cluster
from evalstress.evaluators.base import Evaluator, parse_spec
from evalstress.job.build import default_suite
from evalstress.suites import load_suite

#: the methods of a card, in the order the card shows them
METHODS: tuple[str, ...] = ("blindspot", "discernment", "criteria", "adversarial", "correlation",
                            "bias", "position", "consistency")
TITLES = {"blindspot": "blind spots", "discernment": "discernment",
          "criteria": "criteria response", "adversarial": "adversarial search",
          "correlation": "human correlation", "bias": "bias probes",
          "position": "position bias", "consistency": "consistency"}
PAPERS: dict[str, str | None] = {"blindspot": "002", "discernment": "003", "criteria": "000",
                                 "adversarial": "004", "correlation": None, "bias": None,
                                 "position": None, "consistency": None}
#: the methods only an LLM judge runs: a card where none of them ran says so in one line
JUDGE_METHODS = ("bias", "position", "consistency")
#: why none of them ran on such a card
JUDGE_ONLY = "it asks no model: these methods test an LLM judge"
#: the suite of the bias method (every budget; the budget sets its examples and seeds)
BIAS_SUITE = "bias"
#: the field of an example's meta that holds its human scores (aspect -> number)
HUMAN_KEY = "human"
#: the field of an example's meta that lists other systems' outputs of the same input, each
#: with its human scores (SummEval's layout: {"system": ID, "summary": TEXT, ASPECT: number})
SYSTEMS_KEY = "systems"
#: the correlation method's mode when it scores those outputs itself (a study, not a part)
SYSTEMS_MODE = "systems"
#: its results, in the card's folder under runs/correlation/ (not a run directory)
SYSTEMS_FILE = "correlation.json"
#: the correlation method's mode when it scores only the pairs of a preference file
#: (`--preferences`, `card.preference`); with scored system outputs it stays SYSTEMS_MODE
PREFERENCES_MODE = "preferences"
#: the modes in which the correlation method is a study of its own (SYSTEMS_FILE)
STUDY_MODES = (SYSTEMS_MODE, PREFERENCES_MODE)
#: the fields of a system output that are not human scores
SYSTEM_FIELDS = ("system", "summary")
#: what the attack baselines need beyond the core (TextFooler: MiniLM and WordNet)
TEXTFOOLER_MODULES = ("torch", "transformers", "wn", "nltk")


@dataclass(frozen=True)
class AttackBudget:
    """How much the adversarial search may spend: examples attacked, victim queries per search,
    the search's own sizes, gold ratings averaged per text, and the attack protocol."""

    examples: int | None
    budget: int
    max_iterations: int
    candidates: int
    trajectory: int
    gold_samples: int
    protocol: str = "default"


@dataclass(frozen=True)
class Budget:
    """A card's budget: `examples` taken from the data (None: all), the seeds of the stress
    methods (None: what the suite and protocol say), their protocol, each method's suite, and
    the attack's budget."""

    name: str
    examples: int | None
    seeds: int | None
    protocol: str
    suites: Mapping[str, str]
    attack: AttackBudget
    description: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "examples": self.examples,
                "seeds": self.seeds, "protocol": self.protocol, "suites": dict(self.suites),
                "attack": asdict(self.attack)}


#: the budgets by name. small: a look in a minute or two (one seed, a handful of examples of
#: each task). standard: the suites' own grids and seeds on up to 60 examples (the built-in
#: corpus whole); a lexical metric's card takes a few minutes on two cores. paper: the papers'
#: protocols on every example (paper 002: blindspot-full, five seeds; papers 000 and 003: one
#: perturbed text per example, as their suites' paper protocol sets it; paper 004: its stop
#: rule and query budget).
BUDGETS: dict[str, Budget] = {
    "small": Budget(
        "small", examples=8, seeds=1, protocol="default",
        suites={"blindspot": "blindspot", "discernment": "dhp", "criteria": "criteria-rules"},
        attack=AttackBudget(examples=2, budget=20, max_iterations=2, candidates=4,
                            trajectory=5, gold_samples=1),
        description="8 examples spread over the tasks, one seed; a first look"),
    "standard": Budget(
        "standard", examples=60, seeds=3, protocol="default",
        suites={"blindspot": "blindspot", "discernment": "dhp", "criteria": "criteria-rules"},
        attack=AttackBudget(examples=8, budget=100, max_iterations=10, candidates=8,
                            trajectory=10, gold_samples=3),
        description="up to 60 examples spread over the tasks, three seeds, the suites' grids"),
    "paper": Budget(
        "paper", examples=None, seeds=None, protocol="paper",
        suites={"blindspot": "blindspot-full", "discernment": "dhp",
                "criteria": "criteria-rules-paper"},
        attack=AttackBudget(examples=None, budget=300, max_iterations=30, candidates=8,
                            trajectory=10, gold_samples=8, protocol="paper"),
        description="every example under the papers' protocols (002: blindspot-full, five "
                    "seeds; 000 and 003: one seed; 004: its stop rule, 300 queries)"),
}


def get_budget(name: str) -> Budget:
    """The budget of that name; an unknown one is an error with a did-you-mean."""
    if name not in BUDGETS:
        raise unknown_name_error("budget", name, list(BUDGETS), "--budget")
    return BUDGETS[name]


@dataclass(frozen=True)
class EvaluatorTraits:
    """What the plan needs to know of the evaluator under test, read once from the built
    evaluator (which is then closed: each method builds its own from the spec)."""

    spec: str
    label: str
    name: str
    aspects: tuple[str, ...]
    level: str
    short_signature: str
    higher_is_better: Mapping[str, bool]
    #: evaluator aspect -> the quality aspect of the hierarchy it stands for (None: none)
    quality: Mapping[str, str | None]
    #: evaluator aspect -> its declared (lowest, highest) score, None when unbounded
    score_range: Mapping[str, tuple[float, float] | None] = field(default_factory=dict)
    #: it scores against references: examples without any are checked before the card runs
    needs_references: bool = False
    #: it asks an endpoint (it has its own `check_reachable`): asked before any method runs
    asks_endpoint: bool = False
    #: Ray tasks score it under --backend ray (`engine.ray.on_cluster`: not an LLM judge,
    #: not corpus-level); else the driver does, and a card needs no cluster
    on_cluster: bool = True
    #: each text it scores costs a model's time or a paid call (`calls_model`): the card's
    #: blind-spot, bias and criteria tests then stop once settled (`verdict_design`)
    model_based: bool = False

    @classmethod
    def of(cls, evaluator: Evaluator) -> EvaluatorTraits:
        aspects = tuple(evaluator.aspects)
        return cls(evaluator.spec, evaluator.label, evaluator.name, aspects,
                   str(evaluator.level), evaluator.short_signature,
                   {a: bool(evaluator.higher_is_better(a)) for a in aspects},
                   {a: quality_aspect(evaluator.label, a) for a in aspects},
                   {a: evaluator.score_range(a) for a in aspects},
                   needs_references=bool(getattr(evaluator, "needs_references", False)),
                   asks_endpoint=type(evaluator).check_reachable
                   is not Evaluator.check_reachable,
                   on_cluster=on_cluster(evaluator), model_based=calls_model(evaluator))

    @property
    def bounded(self) -> bool:
        """Whether every aspect's score has a declared range. A sequential design stops a test
        on the examples seen; with an unbounded score (perplexity) one example not yet seen
        can move the mean without limit, and on GPT-PPL it did: the design reached the
        exhaustive verdict on 27 of 36 tests."""
        return all(self.score_range.get(a) is not None for a in self.aspects)

    @property
    def aspect_aware(self) -> bool:
        """Whether its scores name aspects of the hierarchy beyond overall quality (a judge of
        fluency and coherence): then the card shows which aspects each attack moves. A score
        of overall quality alone, or a metric's own score, gets a sensitivity profile."""
        return any(q not in (None, "overall") for q in self.quality.values())

    def to_dict(self) -> dict[str, Any]:
        return {"spec": self.spec, "label": self.label, "name": self.name,
                "aspects": list(self.aspects), "level": self.level,
                "short_signature": self.short_signature,
                "higher_is_better": dict(self.higher_is_better),
                "quality_aspects": dict(self.quality), "aspect_aware": self.aspect_aware,
                "score_range": {a: list(r) if r is not None else None
                                for a, r in self.score_range.items()}}


@dataclass(frozen=True)
class MethodPlan:
    """One method of the card: whether it runs and, if not, why; the suite, seeds and
    protocol of a stress method; the analyses its job runs; the settings of an attack."""

    key: str
    runs: bool
    reason: str = ""
    suite: str | None = None
    seeds: int | None = None
    protocol: str = "default"
    analyses: tuple[str, ...] = ()
    #: criteria: "confusion" (aspect-aware evaluators) or "sensitivity"; correlation: where
    #: its numbers come from
    mode: str | None = None
    attack: Mapping[str, Any] = field(default_factory=dict)
    #: perturbations of the suite left out, each with what it still needs (`Perturbation.unmet`)
    left_out: tuple[tuple[str, str], ...] = ()
    #: a method's own sizes (consistency: items, repeats, rewordings), in card.json when set
    settings: Mapping[str, Any] = field(default_factory=dict)
    #: the sequential design of its four-way verdicts (`verdict_design`); empty: exhaustive
    design: Mapping[str, Any] = field(default_factory=dict)

    @property
    def title(self) -> str:
        return TITLES[self.key]

    def left_out_lines(self) -> list[str]:
        """'bert-diverge not run: needs a masked LM: ...', one per perturbation left out."""
        return [f"{name} not run: {reason.removeprefix(name + ' ')}"
                for name, reason in self.left_out]

    @property
    def paper(self) -> str | None:
        return PAPERS[self.key]

    @property
    def kind(self) -> str:
        """job (a stress run through `evalstress.job`), study (the attack, or the correlation
        that scores the systems' outputs the data lists), or part (read from another method's
        run: the correlation of the blind-spot run's originals)."""
        if self.key in ("adversarial", "position", "consistency") or self.mode in STUDY_MODES:
            return "study"
        return "part" if self.key == "correlation" else "job"

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "title": self.title, "paper": self.paper, "runs": self.runs,
                "reason": self.reason, "kind": self.kind, "suite": self.suite,
                "seeds": self.seeds, "protocol": self.protocol,
                "analyses": list(self.analyses), "mode": self.mode,
                "attack": dict(self.attack),
                "left_out": [{"perturbation": name, "reason": reason}
                             for name, reason in self.left_out],
                **({"settings": dict(self.settings)} if self.settings else {}),
                **({"design": dict(self.design)} if self.design else {})}


@dataclass(frozen=True)
class CardPlan:
    """Everything a card will do, decided before any work."""

    evaluator: EvaluatorTraits
    budget: Budget
    examples: Sequence[Example]
    data: Mapping[str, Any]  # where the examples came from (`card.data.describe`)
    methods: tuple[MethodPlan, ...]
    gold: str | None = None
    generator: str | None = None
    data_path: Path | None = None  # the data file the examples were read from (None: built-in)
    #: the text length limit as given (--max-chars; None: the default)
    max_chars: int | None = None
    #: what the face shows before the card runs (rows left out, rows without references)
    notes: tuple[str, ...] = ()
    #: pairs of outputs with the human preference (--preferences), for the correlation method
    preferences: PreferenceData | None = None
    #: a judge's identity (`card.identity.planned_identity`), recorded before any method
    #: runs; None for another evaluator. The card completes it with the names answers gave
    identity: Mapping[str, Any] | None = None

    def method(self, key: str) -> MethodPlan:
        return next(m for m in self.methods if m.key == key)

    def exhaustive(self) -> CardPlan:
        """The same card with every test on every example: no sequential design (a card on
        Ray, whose shards score every example at once)."""
        return replace(self, methods=tuple(replace(m, design={}) for m in self.methods))

    def fingerprint(self, key: str) -> str:
        """What decides a method's results, hashed: a finished run directory with the same
        fingerprint is the method's result (a resumed card skips it). The code's digest is part
        of it: a card made again after the code changed runs its methods again (the score cache
        still spares the scoring), so a fixed analysis never hides behind an old result."""
        method = self.method(key)
        record = {"method": method.to_dict(), "evaluator": self.evaluator.spec,
                  "data": self.data.get("sha256"), "evalstress": __version__,
                  "code": code_digest(),
                  "gold": self.gold if key == "adversarial" else None,
                  "generator": self.generator if key == "adversarial" else None,
                  **({"max_chars": self.max_chars} if self.max_chars is not None else {})}
        text = json.dumps(record, sort_keys=True, default=str)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class JudgeMethodsNote:
    """The judge's methods said in one line, where none of them ran (a metric's card)."""

    at: str  # the method in whose place the line stands (the first of them on the card)
    titles: str  # "bias probes, position bias and consistency"
    reason: str = JUDGE_ONLY

    def covers(self, key: str) -> bool:
        """Whether method `key` is said in this line (so it gets no section of its own)."""
        return key in JUDGE_METHODS

    @property
    def line(self) -> str:
        return f"{self.titles}: not run: {self.reason}"


def judge_methods_note(methods: Mapping[str, Mapping[str, Any]]) -> JudgeMethodsNote | None:
    """The one line for the judge's methods when none of them ran, else None: then each
    says its own status."""
    keys = [k for k in JUDGE_METHODS if k in methods]
    if not keys or any(methods[k]["status"] != "not run" for k in keys):
        return None
    titles = [str(methods[k]["title"]) for k in keys]
    joined = titles[0] if len(titles) == 1 else ", ".join(titles[:-1]) + " and " + titles[-1]
    return JudgeMethodsNote(keys[0], joined)


def has_human_scores(examples: Sequence[Example], key: str = HUMAN_KEY) -> bool:
    """Whether any example carries human scores: a mapping of aspect -> number (or a list of
    the raters' numbers) in meta[key]."""
    for example in examples:
        scores = (example.meta or {}).get(key)
        if isinstance(scores, Mapping) and any(is_rating(v) for v in scores.values()):
            return True
    return False


def system_score_fields(examples: Sequence[Example], key: str = SYSTEMS_KEY
                        ) -> tuple[str, ...]:
    """The human score fields of the system outputs the examples list in meta[key] (SummEval:
    coherence, consistency, fluency, relevance): the numeric fields, other than the system's
    id and text, that every output of the first example carries (a number, or a list of the
    raters' numbers); () when the data lists no
    scored outputs (WMT21's `systems` maps system to text and has no scores)."""
    for example in examples:
        outputs = (example.meta or {}).get(key)
        if not isinstance(outputs, list) or not outputs:
            return ()
        if not all(isinstance(o, Mapping) and "system" in o and isinstance(o.get("summary"), str)
                   for o in outputs):
            return ()
        common = [f for f in outputs[0] if f not in SYSTEM_FIELDS and all(
            is_rating(o.get(f)) for o in outputs)]
        return tuple(common)
    return ()


def attack_methods(generator: str | None) -> tuple[list[str], str]:
    """The attack's methods: AdvEval with a generator, else the rule baselines and TextFooler
    (when its models are installed); and a note on what was left out and why."""
    if generator:
        return ["adveval"], ""
    missing = missing_modules(TEXTFOOLER_MODULES)
    if missing:
        return ["rules"], (f"TextFooler left out: it needs {', '.join(missing)} (pip install "
                           "'evalstress[models,attack]')")
    return ["rules", "textfooler"], ""


def blindspot_suite(budget: Budget, examples: Sequence[Example]) -> str:
    """The blind-spot suite: the budget's; under the paper protocol, data of one task that
    paper 002 ran gets that task's suite (its code's grids, as `evalstress run --protocol
    paper` picks it), other data the budget's (blindspot-full). A budget that names a paper
    suite itself keeps it (the real-data atlas's TED budget: paper-translation-ted)."""
    if budget.suites["blindspot"].startswith("paper-"):
        return budget.suites["blindspot"]
    if budget.protocol == "paper":
        chosen = default_suite(examples, "paper")
        if chosen.startswith("paper-"):
            return chosen
    return budget.suites["blindspot"]


def unmet_perturbations(suite: str, protocol: str) -> tuple[tuple[str, str], ...]:
    """The suite's perturbations that cannot run here under `protocol` (a masked LM or a
    separate corpus that does not ship), each with what it needs: the card leaves them out and
    says so, where `evalstress run` refuses the whole suite (`Perturbation.unmet`)."""
    out = []
    for plan in load_suite(suite).with_protocol(protocol).perturbations:
        missing = plan.perturbation.unmet()
        if missing is not None:
            out.append((plan.name, missing))
    return tuple(out)


def plan_methods(traits: EvaluatorTraits, budget: Budget, examples: Sequence[Example], *,
                 gold: str | None = None, generator: str | None = None,
                 preferences: PreferenceData | None = None, exhaustive: bool = False
                 ) -> tuple[MethodPlan, ...]:
    """Every method of the card, planned to run or not with the reason; a model-based
    evaluator's blind-spot, bias and criteria tests stop once settled unless `exhaustive` or
    a score is unbounded (`EvaluatorTraits.bounded`; the criteria method only when it has
    items to settle, `settles_criteria`)."""
    methods = plan_all_methods(traits, budget, examples, gold=gold, generator=generator,
                               preferences=preferences)
    if exhaustive or not traits.model_based or not traits.bounded:
        return methods
    return tuple(replace(m, design=verdict_design(m.key)) if m.runs and m.key in SEQUENTIAL
                 and (m.key != "criteria" or settles_criteria(traits)) else m
                 for m in methods)


def settles_criteria(traits: EvaluatorTraits) -> bool:
    """Whether any of the evaluator's aspects stands for a quality aspect: only those get a
    criteria test to settle. A metric's own scores (BERTScore's P, R, F; GPT-PPL's) stand for
    none, so its criteria method is its sensitivity profile alone, which takes every example."""
    return any(q is not None for q in traits.quality.values())


def plan_all_methods(traits: EvaluatorTraits, budget: Budget, examples: Sequence[Example], *,
                     gold: str | None = None, generator: str | None = None,
                     preferences: PreferenceData | None = None) -> tuple[MethodPlan, ...]:
    """Every method of the card, each test on every example."""
    corpus = traits.level == "corpus"
    single = ("it scores whole sets of texts, not single texts: there are no per-example "
              "pairs of original and variant to test")
    seeds = budget.seeds
    human = has_human_scores(examples)
    suite = blindspot_suite(budget, examples)
    methods = [MethodPlan("blindspot", True, suite=suite, seeds=seeds, protocol=budget.protocol,
                          analyses=("blindspot", "correlation") if human else ("blindspot",),
                          left_out=unmet_perturbations(suite, budget.protocol))]
    for key in ("discernment", "criteria"):
        analyses = ("discernment",) if key == "discernment" else ("criteria-confusion",)
        mode = None if key == "discernment" else (
            "confusion" if traits.aspect_aware else "sensitivity")
        methods.append(MethodPlan(key, not corpus, single if corpus else "",
                                  suite=budget.suites[key], seeds=seeds,
                                  protocol=budget.protocol, analyses=analyses, mode=mode,
                                  left_out=unmet_perturbations(budget.suites[key],
                                                               budget.protocol)))
    if not gold:
        methods.append(MethodPlan("adversarial", False, "needs --gold: a gold evaluator that "
                                  "stands in for human readers (paper 004)"))
    elif corpus:
        methods.append(MethodPlan("adversarial", False, single))
    else:
        names, note = attack_methods(generator)
        attack = {**asdict(budget.attack), "methods": names, "direction": "both",
                  "note": note}
        methods.append(MethodPlan("adversarial", True, protocol=budget.attack.protocol,
                                  attack=attack, mode="adveval" if generator else "baselines"))
    if preferences is not None and corpus:
        methods.append(MethodPlan("correlation", False, single))
    elif preferences is not None:
        systems = bool(system_score_fields(examples))
        methods.append(MethodPlan(
            "correlation", True, analyses=("correlation", "agreement", "preference")
            if systems else ("preference",), mode=SYSTEMS_MODE if systems else PREFERENCES_MODE,
            settings={"preferences": preferences.describe()}))
    elif system_score_fields(examples) and not corpus:
        methods.append(MethodPlan("correlation", True, analyses=("correlation", "agreement"),
                                  mode=SYSTEMS_MODE))
    elif human:
        methods.append(MethodPlan("correlation", True, analyses=("correlation",),
                                  mode="originals of the blind-spot run"))
    else:
        methods.append(MethodPlan("correlation", False, f"the data carries no human scores "
                                  f"(a mapping of aspect to number in each example's "
                                  f"meta.{HUMAN_KEY})"))
    methods.append(bias_method(traits, budget))
    methods.append(MethodPlan("position", True) if traits.name == "judge" else MethodPlan(
        "position", False, "not a judge (it needs a pairwise prompt)"))
    methods.append(consistency_method(traits, budget, examples))
    return tuple(methods)


def judge_family(spec: str) -> str | None:
    """The model family of a judge spec's model (`gpt-4o-mini` -> `gpt`; the shipped local
    model is SmolLM2), for the self-preference probe; None when the spec names no model."""
    model = str(parse_spec(spec)[1].get("model") or "")
    if model == "local":
        return "smollm"
    return model_family(model) or None


def bias_method(traits: EvaluatorTraits, budget: Budget) -> MethodPlan:
    """The bias probes: run for an evaluator that asks a model; `mode` names the model family
    the self-preference probe is given (none: that probe is left out, with the reason)."""
    if not traits.asks_endpoint and traits.name != "judge":
        return MethodPlan("bias", False, "it asks no model (bias probes test a judge)")
    family = judge_family(traits.spec)
    left_out = () if family else (("self-preference", "self-preference needs the judge's "
                                   "model family: the spec names no model"),)
    return MethodPlan("bias", True, suite=BIAS_SUITE, seeds=budget.seeds,
                      protocol=budget.protocol, analyses=("bias",),
                      mode=f"self-preference family {family}" if family else None,
                      left_out=left_out)


#: the consistency method's sizes by budget: (items, repeats k); the blind-spot suite each
#: wording runs on those items, with one seed. Another budget (the real-data atlas's) gets
#: the standard sizes.
CONSISTENCY = {"small": (8, 3), "standard": (30, 5), "paper": (60, 5)}
CONSISTENCY_SUITE = "blindspot"
#: its results, in the card's folder under runs/consistency/
CONSISTENCY_FILE = "consistency.json"


def consistency_method(traits: EvaluatorTraits, budget: Budget,
                       examples: Sequence[Example]) -> MethodPlan:
    """The consistency method: run for an LLM judge (the same request asked k times, and its
    criteria reworded), planned as not run with the reason for any other evaluator."""
    if traits.name != "judge":
        return MethodPlan("consistency", False, "for LLM judges: this evaluator asks no "
                          "model, so nothing varies between asks or wordings")
    if "criterion_variant" in parse_spec(traits.spec)[1]:
        return MethodPlan("consistency", False, "its spec fixes criterion_variant: the "
                          "method compares the wordings itself, from the criteria as written")
    items, repeats = CONSISTENCY.get(budget.name, CONSISTENCY["standard"])
    return MethodPlan("consistency", True, suite=CONSISTENCY_SUITE, seeds=1,
                      settings={"items": min(items, len(examples)), "repeats": repeats,
                                "rewordings": PARAPHRASES})


#: the methods whose four-way verdicts a model-based evaluator's card settles sequentially
SEQUENTIAL = ("blindspot", "bias", "criteria")
#: the design's settings (`analyses.sequential_verdicts.VerdictDesign`): looks over the
#: examples, the error the interim looks may spend, the futility threshold
VERDICT_DESIGN = {"looks": 6, "interim_alpha": 0.01, "futility": 0.10}
#: the libraries of evaluators that score without a model: their texts cost next to nothing,
#: so their cards stay exhaustive
FREE_LIBRARIES = ("", "sacrebleu", "rouge-score")


def calls_model(evaluator: Evaluator) -> bool:
    """Whether each text the evaluator scores costs a model's time or a call (a judge,
    GPT-PPL, BERTScore, any evaluator built on a model library); lexical metrics, scorers of
    the user's own code and corpus-level evaluators do not count."""
    if evaluator.level == "corpus":
        return False
    asks = type(evaluator).check_reachable is not Evaluator.check_reachable
    return asks or evaluator.name == "judge" or evaluator.library not in FREE_LIBRARIES


def verdict_design(key: str) -> dict[str, Any]:
    """The design a method's job runs under: its kind and VERDICT_DESIGN."""
    return {"kind": key, **VERDICT_DESIGN}
