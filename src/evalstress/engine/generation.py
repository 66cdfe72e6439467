"""The generation stage: LLM-written perturbations become Variants, or Skips with their reasons.

It sits between planning and scoring. Units of LLM perturbations (example x perturbation x
severity x seed) are asked of the run's `TextGenerator` in batches (same client, limits,
retries and SQLite response cache as the judges). The sample index of a unit is derived from its
seed (`seed * REASK_STRIDE + ask`), so each seed is its own sample, a rejected answer is re-asked
with the next index, a rerun hits the cache for every answer (0 calls) and a killed run resumes
where it stopped. Every answer is extracted (`llm.extract`) and validated (`perturb.llm_checks`);
an optional verifier model may veto it (`perturb.verifier`: its questions, its answers kept in
the variant's provenance). After `max_reasks` re-asks the unit becomes a Skip whose reason says
what was wrong with the last answer. Every accepted variant carries how far it can be trusted
(`perturb.precision`): the measured precision of its attack's checks, and whether the checks
(precision at or above the floor), the verifier, or nothing verified it (`unverified`). Per
perturbation the stage counts planned, accepted, unverified and skipped units, asks, re-asks and
rejections by category (the `generation` block of results.json: `$defs/generation` in
docs/results.schema.json).

`generate_variants` works on one chunk of examples; `GenerationSetup` bundles what a run chose
(generator, options, imported variants) and is what `runner.plan_dataset` takes. A chunked runner
does per chunk what `plan_dataset` does once: run the rule loop on the plans `setup.handles()`
leaves to it, call `setup.run(chunk, suite, parser, progress)` for the rest (generated plus
imported variants of the chunk), `merge` the chunk outcomes, and finally put
`setup.block(total.counts)` into results.json. `setup.check(suite, examples)` fails fast when a
generator is needed and missing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evalstress.core.data import Example
from evalstress.core.extras import is_local_model
from evalstress.core.records import Progress, SkipRecord
from evalstress.core.text import ParsedText, TextParser, max_chars_option, noise_ratio
from evalstress.engine.scoring import configure_caches
from evalstress.llm.accounting import count_tokens
from evalstress.llm.client import ChatResponse, LLMError
from evalstress.llm.generate import GenerationJob, TextGenerator
from evalstress.perturb.base import Severity, Variant
from evalstress.perturb.llm import LLMPerturbation, Resolved
from evalstress.perturb.llm_checks import (
    Rejection,
    needs_parse,
    read_rewrite,
    unmet_requirement,
    validate,
)
from evalstress.perturb.precision import AttackTrust, attack_trust, table_head
from evalstress.perturb.verifier import GRAMMAR, QUESTIONS, decide, read_verdict, verifier_questions

if TYPE_CHECKING:
    from evalstress.engine.imported import ImportedVariants
    from evalstress.suites import PerturbationPlan, Suite

#: sample index = seed * REASK_STRIDE + ask: seeds never share an index however many re-asks
REASK_STRIDE = 1000
#: usage keys of results.json's `generation` block (`$defs/generation`, docs/results.schema.json)
USAGE_KEYS = ("requests", "cache_hits", "calls", "retries", "errors", "rate_limited",
              "prompt_tokens", "completion_tokens")


class GenerationError(ValueError):
    """The run cannot generate what it planned (no generator for LLM perturbations)."""


def sample_index(seed: int, ask: int) -> int:
    """The response-cache sample index of a unit's ask (0 = first ask, 1 = first re-ask...)."""
    if not 0 <= ask < REASK_STRIDE:
        raise ValueError(f"ask {ask} is outside 0..{REASK_STRIDE - 1}")
    return int(seed) * REASK_STRIDE + ask


@dataclass
class PerturbationCounts:
    """What generating one perturbation took and gave (one entry of the results.json block)."""

    planned: int = 0
    accepted: int = 0
    unverified: int = 0  # accepted variants no measured check or verifier vouches for
    skipped: int = 0
    not_applicable: int = 0  # skipped before any ask: the text cannot take this damage
    asks: int = 0
    reasks: int = 0
    rejections: Counter[str] = field(default_factory=Counter)

    @property
    def acceptance_rate(self) -> float | None:
        return self.accepted / self.planned if self.planned else None

    def merge(self, other: PerturbationCounts) -> None:
        for name in ("planned", "accepted", "unverified", "skipped", "not_applicable", "asks",
                     "reasks"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.rejections.update(other.rejections)

    def to_json(self) -> dict[str, Any]:
        return {"planned": self.planned, "accepted": self.accepted,
                "unverified": self.unverified, "skipped": self.skipped,
                "not_applicable": self.not_applicable, "asks": self.asks, "reasks": self.reasks,
                "acceptance_rate": self.acceptance_rate,
                "rejections": dict(sorted(self.rejections.items(), key=lambda kv: (-kv[1],
                                                                                   kv[0])))}


@dataclass
class GenerationOptions:
    """How answers are asked for and judged.

    `max_reasks`: re-asks after a rejected answer (each with the next sample index; they only
    differ at temperature > 0). `verifier`: a second model asked whether the rewrite makes the
    attack's change and only that one. `require_tag`: accept only answers inside <text> tags.
    `shots`: show at most this many demonstrations (short prompts for small or costly models;
    a perturbation's own `shots` wins; default all). `batch_size`: units asked together (bounds
    memory; the endpoint limits concurrency)."""

    max_reasks: int = 2
    verifier: TextGenerator | None = None
    require_tag: bool = False
    shots: int | None = None
    batch_size: int = 1024

    def __post_init__(self) -> None:
        if not 0 <= int(self.max_reasks) < REASK_STRIDE:
            raise ValueError(f"max_reasks must be in 0..{REASK_STRIDE - 1}")
        if int(self.batch_size) < 1:
            raise ValueError("batch_size must be >= 1")
        if self.shots is not None and int(self.shots) < 1:
            raise ValueError("shots must be >= 1")


@dataclass(frozen=True)
class GenerationUnit:
    """One LLM variant to write: an example, its perturbation plan, a severity and a seed."""

    example: Example
    plan: PerturbationPlan
    severity: Severity
    seed: int

    @property
    def perturbation(self) -> LLMPerturbation:
        pert = self.plan.perturbation
        if not isinstance(pert, LLMPerturbation):
            raise TypeError(f"'{pert.name}' is not an LLM-written perturbation")
        return pert

    @property
    def name(self) -> str:
        return self.plan.name


@dataclass
class GenerationOutcome:
    """Accepted variants, skips with reasons and per-perturbation counts of one chunk (or of a
    whole run, after `merge`)."""

    variants: list[Variant] = field(default_factory=list)
    skips: list[SkipRecord] = field(default_factory=list)
    counts: dict[str, PerturbationCounts] = field(default_factory=dict)

    def merge(self, other: GenerationOutcome) -> None:
        self.variants.extend(other.variants)
        self.skips.extend(other.skips)
        for name, counts in other.counts.items():
            self.counts.setdefault(name, PerturbationCounts()).merge(counts)


def llm_units(examples: Iterable[Example], suite: Suite,
              skip_names: Iterable[str] = ()) -> list[GenerationUnit]:
    """The LLM units a suite plans for these examples (minus perturbations in `skip_names`)."""
    skip = set(skip_names)
    return [GenerationUnit(example, plan, severity, seed)
            for example in examples
            for plan, severity, seed in suite.units(example.task)
            if plan.perturbation.method == "llm" and plan.name not in skip]


# --- one unit's life: ask, read, validate, re-ask ----------------------------------------------


@dataclass
class _Work:
    unit: GenerationUnit
    resolved: Resolved
    original: ParsedText
    messages: list[dict[str, str]]
    ask: int = 0


def _read(response: ChatResponse, options: GenerationOptions) -> str | Rejection:
    """The candidate text in an answer, or why the answer is no rewrite."""
    return read_rewrite(response.text, response.finish_reason, require_tag=options.require_tag)


def _skip_record(unit: GenerationUnit, reason: str) -> SkipRecord:
    return SkipRecord(unit.example.id, unit.name, unit.severity, unit.seed, reason)


def _prepare(unit: GenerationUnit, parser: TextParser, generator: TextGenerator | None,
             shots: int | None = None) -> _Work | str:
    """The unit's work item, or why the text cannot take the attack (no call is made then)."""
    pert = unit.perturbation
    resolved = pert.resolved(unit.severity, unit.example.task)
    original = parser.parse(unit.example.hypothesis)
    unmet = unmet_requirement(original, resolved.requires)
    if unmet is not None:
        return f"not applicable: {unmet}"
    if generator is not None:
        needed = count_tokens(unit.example.hypothesis) * 2 + 16
        if needed > generator.max_tokens:
            return (f"not applicable: the text (~{needed // 2} tokens) may not fit the "
                    f"generator's max_tokens={generator.max_tokens}; raise max_tokens")
    messages = pert.messages(unit.example.hypothesis, unit.example.task, unit.severity, shots)
    return _Work(unit, resolved, original, messages)


def trust_of(perturbation: LLMPerturbation, options: GenerationOptions) -> AttackTrust:
    """How far this attack's accepted variants can be trusted with the run's verifier (or
    without one)."""
    verifier = options.verifier
    return attack_trust(perturbation.spec, None if verifier is None else verifier.model,
                        None if verifier is None else verifier.temperature)


def _verify(candidates: list[tuple[_Work, str]], verifier: TextGenerator, parser: TextParser
            ) -> list[tuple[Rejection | None, list[str]]]:
    """The verifier's verdict on each candidate with its answers (one per question). An
    in-process verifier is held to yes or no by a grammar."""
    extra = {"grammar": GRAMMAR} if is_local_model(verifier.model) else {}
    asked = [verifier_questions(w.unit.name, w.unit.example.hypothesis, text, w.resolved,
                                parser) for w, text in candidates]
    jobs = [GenerationJob.of(q, sample_index(w.unit.seed, w.ask), **extra)
            for (w, _text), questions in zip(candidates, asked, strict=True) for q in questions]
    answers = iter(verifier.generate_many(jobs))
    out: list[tuple[Rejection | None, list[str]]] = []
    for questions in asked:
        got = [next(answers) for _ in questions]
        failed = next((a for a in got if isinstance(a, LLMError)), None)
        if failed is not None:
            out.append((Rejection("verifier-failed", str(failed)), []))
            continue
        texts = [a.text.strip() for a in got if not isinstance(a, LLMError)]
        verdict = decide(texts)
        if verdict is None:
            unread = next(t for t in texts if read_verdict(t) is None)
            out.append((Rejection("verifier-unparsable", f"no yes/no in {unread[:60]!r}"),
                        texts))
        else:
            out.append((None if verdict else Rejection("verifier-rejected",
                                                       "the verifier said no"), texts))
    return out


def _provenance(work: _Work, generator: TextGenerator, trust: AttackTrust,
                answers: Sequence[str] | None) -> dict[str, Any]:
    """How the text was made and how far it is trusted (the verifier's answers, when it was
    asked). Nothing about this run's cache: a resumed or repeated run must write the same
    variants file as a fresh one (the cache hits are in the generator's usage)."""
    out = {"method": "llm", "model": generator.model,
           "sample": sample_index(work.unit.seed, work.ask), "asks": work.ask + 1,
           "prompts": work.unit.perturbation.spec.source,
           "verification": trust.verification, "check_precision": trust.check_precision}
    if answers is not None:
        out["verifier"] = list(answers)
    return out


def generate_variants(examples: Sequence[Example], units: Sequence[GenerationUnit],
                      generator: TextGenerator, parser: TextParser,
                      progress: Progress | None = None, *,
                      options: GenerationOptions | None = None) -> GenerationOutcome:
    """Write, validate and re-ask the LLM units of one chunk of examples.

    Returns the accepted Variants (with provenance), the Skip records (with reasons) and the
    per-perturbation counts. Nothing is lost on a crash: every answer is in the response cache
    as soon as it arrives, so the same call again asks nothing it already asked."""
    options = options or GenerationOptions()
    progress = progress or Progress()
    parser.parse_many([e.hypothesis for e in examples])
    outcome = GenerationOutcome()
    label = "generating"
    progress.start(label, len(units))
    try:
        for start in range(0, len(units), options.batch_size):
            batch = units[start:start + options.batch_size]
            _generate_batch(batch, generator, parser, options, outcome, progress, label)
    finally:
        progress.finish(label)
    return outcome


def _generate_batch(units: Sequence[GenerationUnit], generator: TextGenerator,
                    parser: TextParser, options: GenerationOptions, outcome: GenerationOutcome,
                    progress: Progress, label: str) -> None:
    pending: list[_Work] = []
    trusts: dict[str, AttackTrust] = {}
    for unit in units:
        counts = outcome.counts.setdefault(unit.name, PerturbationCounts())
        counts.planned += 1
        prepared = _prepare(unit, parser, generator, options.shots)
        if isinstance(prepared, str):
            counts.skipped += 1
            counts.not_applicable += 1
            outcome.skips.append(_skip_record(unit, prepared))
            progress.advance(label)
        else:
            pending.append(prepared)
    # requests of one attack and severity share their long prompt prefix: sent side by side,
    # servers with prefix caching process it once
    pending.sort(key=lambda w: (w.unit.name, str(w.unit.severity)))
    for ask in range(options.max_reasks + 1):
        if not pending:
            break
        for work in pending:
            work.ask = ask
            counts = outcome.counts[work.unit.name]
            counts.asks += 1
            counts.reasks += ask > 0
        jobs = [GenerationJob.of(w.messages, sample_index(w.unit.seed, ask)) for w in pending]
        answers = generator.generate_many(jobs)
        candidates: list[tuple[_Work, str]] = []
        verdicts: dict[int, Rejection | None] = {}
        for work, answer in zip(pending, answers, strict=True):
            if isinstance(answer, LLMError):
                verdicts[id(work)] = Rejection("request-failed", str(answer))
                continue
            read = _read(answer, options)
            if isinstance(read, Rejection):
                verdicts[id(work)] = read
            else:
                candidates.append((work, read))
        parser.parse_many([text for work, text in candidates if needs_parse(work.resolved)])
        checked: list[tuple[_Work, str]] = []
        for work, text in candidates:
            rejection = validate(work.original, text, work.resolved, parser)
            verdicts[id(work)] = rejection
            if rejection is None:
                checked.append((work, text))
        said: dict[int, list[str]] = {}
        if options.verifier is not None and checked:
            for (work, _text), (vetoed, replies) in zip(
                    checked, _verify(checked, options.verifier, parser), strict=True):
                verdicts[id(work)] = vetoed
                said[id(work)] = replies
        texts = dict((id(w), t) for w, t in candidates)
        still: list[_Work] = []
        for work in pending:
            rejection = verdicts.get(id(work))
            unit, counts = work.unit, outcome.counts[work.unit.name]
            if rejection is None:
                text = texts[id(work)]
                ratio = noise_ratio(unit.example.hypothesis, text)
                trust = trusts.get(unit.name) or trusts.setdefault(
                    unit.name, trust_of(unit.perturbation, options))
                outcome.variants.append(Variant(
                    unit.example.id, unit.name, unit.severity, unit.seed, text, ratio,
                    _provenance(work, generator, trust, said.get(id(work)))))
                counts.accepted += 1
                counts.unverified += trust.verification == "unverified"
                progress.advance(label)
                continue
            counts.rejections[rejection.category] += 1
            final = rejection.category in ("request-failed", "verifier-failed")
            if final or ask == options.max_reasks:
                counts.skipped += 1
                asks = ask + 1
                reason = (f"request failed: {rejection.detail}" if final else
                          f"no acceptable rewrite in {asks} ask{'s' * (asks > 1)}; last: "
                          f"{rejection}")
                outcome.skips.append(_skip_record(unit, reason))
                progress.advance(label)
            else:
                still.append(work)
        pending = still


def estimate_generation(units: Sequence[GenerationUnit], generator: TextGenerator,
                        parser: TextParser, shots: int | None = None) -> dict[str, Any]:
    """What generating these units would cost (first asks only, net of the response cache)."""
    works = [w for w in (_prepare(u, parser, generator, shots) for u in units)
             if isinstance(w, _Work)]
    jobs = [GenerationJob.of(w.messages, sample_index(w.unit.seed, 0)) for w in works]
    typical = (sum(count_tokens(w.unit.example.hypothesis) for w in works) // len(works) + 16
               if works else 0)
    estimate = generator.estimate(jobs, completion_tokens=typical)
    return {"units": len(units), "not_applicable": len(units) - len(works), **estimate}


# --- the run's setup, as runner.plan_dataset sees it -----------------------------------------------


@dataclass
class GenerationSetup:
    """What a run chose for its generation stage: the generator (None: none given), options,
    and imported variants, which take the place of the suite's perturbations of the same name.
    With `estimate_only` (the dry run) nothing is generated and `estimate` is filled instead."""

    generator: TextGenerator | None = None
    options: GenerationOptions = field(default_factory=GenerationOptions)
    imported: ImportedVariants | None = None
    estimate_only: bool = False
    estimate: dict[str, Any] | None = None
    #: how far each LLM attack of the suite can be trusted (noted by `check`, for `block`)
    trust: dict[str, AttackTrust] = field(default_factory=dict)

    @property
    def imported_names(self) -> set[str]:
        return set(self.imported.names) if self.imported is not None else set()

    def handles(self, plan: PerturbationPlan) -> bool:
        """Whether this stage (not the rule loop) makes the plan's variants."""
        return plan.perturbation.method == "llm" or plan.name in self.imported_names

    def note_attacks(self, suite: Suite) -> None:
        """Note how far each LLM attack the suite leaves to this stage can be trusted."""
        for plan in suite.perturbations:
            pert = plan.perturbation
            if isinstance(pert, LLMPerturbation) and plan.name not in self.imported_names:
                self.trust[plan.name] = trust_of(pert, self.options)

    def check(self, suite: Suite, examples: Sequence[Example]) -> None:
        """Stop before any work when LLM units would need a generator that is not there (and
        note the suite's attacks: every run checks before it generates)."""
        self.note_attacks(suite)
        if self.generator is not None:
            return
        units = llm_units(examples, suite, self.imported_names)
        if not units:
            return
        names = sorted({u.name for u in units})
        raise GenerationError(
            f"suite '{suite.name}' plans {len(units)} LLM-written variants "
            f"({', '.join(names)}) but no generator is set: pass --generator "
            "'model=NAME,base_url=URL' (or `generator:` in the suite or --config), import "
            "their texts with --variants FILE, or leave these perturbations out")

    def check_reachable(self, suite: Suite, examples: Sequence[Example]) -> None:
        """The generator's and the verifier's endpoints answer (`llm.probe`), asked before any
        work when the suite leaves LLM-written variants to them; a ValueError otherwise."""
        if self.generator is None or not llm_units(examples, suite, self.imported_names):
            return
        self.generator.check_reachable("--generator")
        if self.options.verifier is not None:
            self.options.verifier.check_reachable("--verifier")

    @property
    def adds_variants(self) -> bool:
        """Whether `run` may add variants of names the suite does not list (imported ones), so
        a chunk needs the stage even when the suite leaves none of its plans to it."""
        return self.imported is not None

    def run(self, examples: Sequence[Example], suite: Suite, parser: TextParser,
            progress: Progress | None = None) -> GenerationOutcome:
        """Imported variants of these examples (a text beyond the run's length limit a skip)
        plus the generated ones."""
        outcome = GenerationOutcome()
        if self.imported is not None:
            variants, skips = self.imported.of_chunk(examples, max_chars_option(suite.options))
            outcome.variants.extend(variants)
            outcome.skips.extend(skips)
        units = llm_units(examples, suite, self.imported_names)
        if not units:
            return outcome
        self.note_attacks(suite)
        if self.generator is None:
            self.check(suite, examples)
        assert self.generator is not None
        if self.estimate_only:
            self.estimate = estimate_generation(units, self.generator, parser,
                                                self.options.shots)
            return outcome
        outcome.merge(generate_variants(examples, units, self.generator, parser, progress,
                                        options=self.options))
        return outcome

    def long_row_skips(self, examples: Sequence[Example], too_long: Mapping[str, str],
                       suite: Suite) -> list[SkipRecord]:
        """Skips for the imported variants of rows the run leaves out for their length
        (`too_long`: the reason by id) under names the suite does not plan for the row: the
        planning loop records the skips of the suite's own units."""
        if self.imported is None or not too_long:
            return []
        return self.imported.of_long_rows(
            [e for e in examples if e.id in too_long], too_long,
            lambda task, name: any(p.name == name and p.applies_to(task) and p.grid
                                   for p in suite.perturbations))

    def block(self, counts: Mapping[str, PerturbationCounts]) -> dict[str, Any] | None:
        """The `generation` block of results.json (None when nothing was generated or
        imported)."""
        return self.block_json({name: c.to_json() for name, c in counts.items()})

    def block_json(self, perturbations: Mapping[str, Mapping[str, Any]]
                   ) -> dict[str, Any] | None:
        """The block from per-perturbation counts already in JSON form (a streamed run sums
        them chunk by chunk)."""
        if not perturbations and self.imported is None:
            return None
        out: dict[str, Any] = {}
        if self.generator is not None:
            usage = self.generator.usage.to_json()
            out["generator"] = self.generator.signature()
            out["usage"] = {k: usage[k] for k in USAGE_KEYS}
            out["max_reasks"] = self.options.max_reasks
            out["shots"] = self.options.shots
            if self.options.verifier is not None:
                verifier_usage = self.options.verifier.usage.to_json()
                out["verifier"] = {**self.options.verifier.signature(),
                                   "usage": {k: verifier_usage[k] for k in USAGE_KEYS}}
        out["perturbations"] = {
            name: {**dict(c), **(self.trust[name].to_json() if name in self.trust else {})}
            for name, c in sorted(perturbations.items())}
        if any(name in self.trust for name in perturbations):
            out["precision"] = table_head()
            if "verifier" in out:
                out["verifier"]["questions"] = dict(QUESTIONS)
        if self.imported is not None:
            out["imported"] = self.imported.summary()
        return out

    def close(self) -> None:
        for gen in (self.generator, self.options.verifier):
            if gen is not None:
                gen.close()


def build_setup(generator: str | Mapping[str, Any] | None = None, *,
                verifier: str | Mapping[str, Any] | None = None, max_reasks: int | None = None,
                shots: int | None = None,
                imported: ImportedVariants | None = None, cache_dir: Any = None,
                no_cache: bool = False, estimate_only: bool = False) -> GenerationSetup:
    """A run's GenerationSetup from specs (command line, config or suite); the generators follow
    the run's --cache-dir / --no-cache like the judges do."""
    def open_generator(spec: str | Mapping[str, Any] | None) -> TextGenerator | None:
        if spec is None or (isinstance(spec, str) and not spec.strip()):
            return None
        gen = TextGenerator.from_spec(spec)
        configure_caches([gen], cache_dir, no_cache)
        return gen

    options = GenerationOptions(
        max_reasks=GenerationOptions.max_reasks if max_reasks is None else int(max_reasks),
        verifier=open_generator(verifier), shots=None if shots is None else int(shots))
    return GenerationSetup(open_generator(generator), options, imported,
                           estimate_only=estimate_only)
