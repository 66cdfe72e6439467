"""The one orchestration of a stress run: load -> plan -> generate -> score -> analyse -> write.

`evalstress run`, `quickstart`, `criteria-levels`, `evalstress.stress()` and the pytest plugin
all describe their run as a `StressJob` (built by `evalstress.job.build.build_job`) and call
`run_job`; what differs between them is only how they gather the settings and what they show
afterwards. The engine plans, generates and
scores (streamed chunk by chunk into a staging folder), the analyses read the score table, and
the run directory is written (results.json, report.html) and renamed into place.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalstress.analyses.registry import (
    StudyContext,
    analysis_names,
    needs_study_context,
    run_analyses,
)
from evalstress.analyses.sequential import SequentialDesign
from evalstress.analyses.sequential_verdicts import VerdictDesign
from evalstress.core.cache import default_cache_dir
from evalstress.core.data import Example
from evalstress.core.freed import give_back
from evalstress.core.phases import phase
from evalstress.core.records import Progress
from evalstress.core.storage import StorageError, check_target
from evalstress.engine.generation import GenerationError, GenerationSetup
from evalstress.engine.outdir import OutDirError, OutLock, check_out_dir
from evalstress.engine.pipeline import execution_sizes
from evalstress.engine.planning import plan_dataset
from evalstress.engine.ray import RayError, run_on_ray  # Ray loads only when a run asks
from evalstress.engine.rayaddress import RayAddressError, check_ray_address
from evalstress.engine.result import RunResult
from evalstress.engine.rundir import staging_for
from evalstress.engine.runhealth import (
    DEFAULT_MAX_MISSING,
    Degenerate,
    MissingShare,
    above,
    degenerate_evaluators,
    mostly_missing,
    usage_share,
)
from evalstress.engine.runner import estimate_plan, run
from evalstress.engine.scoring import configure_caches, open_run_cache
from evalstress.engine.sidetask import SideTask
from evalstress.evaluators.base import Evaluator, ScoreRequest
from evalstress.job.settings import SettingsError, check_execution
from evalstress.report import write_outputs
from evalstress.report.rundir import browser_data
from evalstress.suites import Suite


class JobError(ValueError):
    """The job cannot run as described (an unknown analysis, an output that cannot be written,
    a generation stage the backend cannot run); nothing was scored."""


@dataclass
class StressJob:
    """Everything one run needs, already resolved by its face (flags, config, suite, defaults).

    `out` None keeps the run in a temporary folder (`evalstress.stress()` writes on demand);
    `options` are analysis options on top of the suite's; `config` is what results.json records
    of how the run was asked for."""

    examples: Sequence[Example]
    suite: Suite
    evaluators: Sequence[Evaluator]
    out: Path | None = None
    cache_dir: Path | None = None
    no_cache: bool = False
    options: Mapping[str, Any] = field(default_factory=dict)
    config: Mapping[str, Any] = field(default_factory=dict)
    workers: int = 1  # the CLI asks for every core; a script without a __main__ guard cannot spawn
    backend: str = "local"
    chunk_size: int | None = None
    sequential: bool = False
    generation: GenerationSetup | None = None
    max_missing: float = DEFAULT_MAX_MISSING
    progress: Progress | None = None
    ray_address: str | None = None  # --backend ray: the cluster (None: RAY_ADDRESS, else local)
    force: bool = False  # --force: `out` may hold files evalstress did not write (kept)
    #: (what, path) of the files the job reads (data, config, variants): never inside `out`
    inputs: Sequence[tuple[str, Path]] = ()
    #: what a face shows before the run (e.g. that it runs on the built-in corpus)
    notes: Sequence[str] = ()
    #: the sequential design of the four-way verdicts (a card's method: its kind, blindspot
    #: or bias, and looks, interim_alpha, futility), None: every example of every unit
    verdict_design: Mapping[str, Any] | None = None

    def check(self) -> None:
        """Refuse before any work what would fail later (a typo costs nothing)."""
        unknown = [name for name in self.suite.analyses if name not in analysis_names()]
        if unknown:
            raise JobError(f"suite '{self.suite.name}': unknown analysis {', '.join(unknown)}; "
                           f"known: {', '.join(analysis_names())}")
        try:
            check_execution(self.backend, self.sequential, self.ray_address)
            if self.backend == "ray":  # ray.init waits where nothing listens: ask first
                check_ray_address(self.ray_address)
        except (SettingsError, RayAddressError) as exc:
            raise JobError(str(exc)) from None
        if self.out is not None:
            # the shared cache is never inside --out, even with --no-cache (it is not read then,
            # but replacing the folder would still delete it)
            cache = (("cache folder", self.cache_dir or default_cache_dir()),)
            try:
                check_out_dir(self.out, force=self.force, inputs=(*self.inputs, *cache))
                check_target(self.out, "--out", folder=True)
            except StorageError as exc:
                raise JobError(str(exc)) from None
        try:  # a judge's or the generator's endpoint: down, or refusing the key
            for evaluator in self.evaluators:
                evaluator.check_reachable()
            if self.generation is not None:
                self.generation.check_reachable(self.suite, self.examples)
        except ValueError as exc:
            raise JobError(str(exc.args[0] if exc.args else exc)) from None


@dataclass
class JobResult:
    """A finished job: the scored run, its analyses, the files written (none without `out`),
    and the evaluators (or the generator) whose answers are mostly missing: their verdicts, or
    the LLM-written half of the suite, say nothing."""

    run: RunResult
    analyses: dict[str, Any]
    paths: dict[str, Path]
    untrusted: list[MissingShare]
    #: evaluator aspects whose scores (or answered labels) take one value: verdicts on nothing
    degenerate: list[Degenerate] = field(default_factory=list)


def sequential_policy(suite: Suite, examples: int) -> SequentialDesign:
    """The sequential DHP design with the suite's options (looks, alpha, futility)."""
    options = suite.options
    return SequentialDesign(examples, looks=int(options.get("sequential_looks", 5)),
                            alpha=float(options.get("alpha", 0.05)),
                            futility=float(options.get("futility", 0.10)),
                            zero_method=str(options.get("zero_method", "wilcox")))


#: the suite options the four-way verdicts' design takes from the analysis it stands for
VERDICT_OPTIONS = ("alpha", "tol_share", "n_boot", "seed")
#: the criteria analysis's own options its sequential design takes as well
CRITERIA_VERDICT_OPTIONS = ("min_effect", "aspect_map")


def verdict_policy(suite: Suite, examples: Sequence[Example],
                   design: Mapping[str, Any]) -> VerdictDesign:
    """The sequential design of a card method's four-way verdicts, with the analysis's own
    alpha, tolerance share, resamples and seed (suite options), and the texts the exhaustive
    design would score (each example's original and its units)."""
    options = suite.options
    full = sum(1 + sum(1 for _ in suite.units(e.task)) for e in examples)
    taken = (*VERDICT_OPTIONS,
             *(CRITERIA_VERDICT_OPTIONS if design.get("kind") == "criteria" else ()))
    return VerdictDesign(len(examples), full_texts=full, tolerance=options.get("tolerance"),
                         **{k: options[k] for k in taken if k in options},
                         **dict(design))


def score_job(job: StressJob) -> RunResult:
    """Plan, generate and score the job's examples into a run (no analysis, nothing written
    outside the staging folder); the evaluators and the generator are closed afterwards."""
    cache = open_run_cache(job.cache_dir, job.no_cache)
    configure_caches(job.evaluators, job.cache_dir, job.no_cache)
    workdir = staging_for(job.out) if job.out is not None else None
    policy: SequentialDesign | VerdictDesign | None = (
        sequential_policy(job.suite, len(job.examples)) if job.sequential else None)
    if job.verdict_design is not None and job.backend != "ray":
        policy = verdict_policy(job.suite, job.examples, job.verdict_design)
    chunk_size = policy.chunk_size if policy is not None else job.chunk_size
    try:
        if job.backend == "ray":
            return run_on_ray(job.examples, job.suite, job.evaluators, cache=cache,
                              progress=job.progress, workdir=workdir, chunk_size=chunk_size,
                              address=job.ray_address, workers=job.workers,
                              generation=job.generation)
        return run(job.examples, job.suite, job.evaluators, cache=cache, progress=job.progress,
                   workdir=workdir, workers=job.workers, chunk_size=chunk_size, policy=policy,
                   generation=job.generation)
    finally:
        for evaluator in job.evaluators:
            evaluator.close()
        if job.generation is not None:
            job.generation.close()
        if cache is not None:
            cache.close()


@dataclass
class JobEstimate:
    """What a job would spend, found without scoring (`--dry-run`): the plan's size, per
    evaluator the texts to score and the calls and tokens that takes, and the generator's
    share (None without one)."""

    examples: int
    variants: int
    skips: int
    evaluators: list[dict[str, Any]]
    generator: dict[str, Any] | None
    generator_model: str | None


def estimate_job(job: StressJob, todo_out: dict[str, list[ScoreRequest]] | None = None
                 ) -> JobEstimate:
    """Plan the whole job (the same loop as a run) and ask each evaluator what scoring it would
    cost; nothing is scored, the caches are only read. `todo_out`: see `estimate_plan`."""

    plan = plan_dataset(job.examples, job.suite, generation=job.generation)
    cache = open_run_cache(job.cache_dir, job.no_cache)
    configure_caches(job.evaluators, job.cache_dir, job.no_cache)
    try:
        rows = estimate_plan(plan, job.evaluators, cache=cache, todo_out=todo_out)
    finally:
        for evaluator in job.evaluators:
            evaluator.close()
        if cache is not None:
            cache.close()
        if job.generation is not None:
            job.generation.close()
    generation = job.generation
    generator = generation.generator if generation is not None else None
    return JobEstimate(len(plan.examples), len(plan.variants), len(plan.skips), rows,
                       generation.estimate if generation is not None else None,
                       generator.model if generator is not None else None)


def analysis_options(job: StressJob) -> dict[str, Any]:
    """Options the analyses see: the suite's, then the job's, and the suite's protocol."""
    # a sequential design's rows stop on different examples: their tolerance comes from every
    # original the run scored, as the design's own interim intervals take it; the criteria
    # method's inter-aspect matrices take the examples every unit scored
    design = ({"tolerance_over": "run", "matrices_over": "common"}
              if job.verdict_design is not None and job.backend != "ray" else {})
    return {**job.suite.options, **design, **dict(job.options), "protocol": job.suite.protocol}


def analyse(job: StressJob, result: RunResult) -> dict[str, Any]:
    """The suite's analyses on the scored run; a study among them (it scores texts itself)
    gets the job's caches and the run's folder."""
    if not needs_study_context(job.suite.analyses):
        return run_analyses(job.suite.analyses, result, analysis_options(job))
    cache = open_run_cache(job.cache_dir, job.no_cache)
    try:
        return run_analyses(job.suite.analyses, result, analysis_options(job),
                            StudyContext(cache, job.cache_dir, job.no_cache,
                                         result.files.root))
    finally:
        if cache is not None:
            cache.close()


def run_job(job: StressJob) -> JobResult:
    """Run the job from its examples to its run directory (see the module docstring)."""
    job.check()
    lock = OutLock(job.out) if job.out is not None else None
    if lock is not None:
        try:
            lock.acquire()
        except OutDirError as exc:  # another run writes `out`
            raise JobError(str(exc)) from None
    try:
        return _run_checked(job)
    finally:
        if lock is not None:
            lock.release()


def _run_checked(job: StressJob) -> JobResult:
    try:
        with phase("score (plan, perturb, score, join parts)"):
            result = score_job(job)
    except (GenerationError, RayError) as exc:
        raise JobError(str(exc)) from None
    aside = browser_aside(job, result)
    try:
        return _finish(job, result, aside.result if aside is not None else None)
    finally:
        if aside is not None:
            aside.close()


#: score rows from which a pooled run reads the report's variant browser data in a process of
#: its own while this one runs the analyses. Below a million rows that process's start-up
#: (Python and pyarrow) eats what it would save (bench/README.md, "Figures behind the code").
ASIDE_MIN_ROWS = 1_000_000


def browser_aside(job: StressJob, result: RunResult) -> SideTask[dict[str, Any] | None] | None:
    """The report's variant browser data being read in a process of its own, or None where
    this process reads it after the analyses: a serial run (`--workers 1`) keeps to one
    process, and a small run gains nothing."""
    if job.out is None or job.backend != "local":
        return None
    processes, _ = execution_sizes(len(job.examples), job.workers, job.chunk_size)
    if processes < 2 or len(result.scores) < ASIDE_MIN_ROWS:
        return None
    return SideTask(browser_data, result.files.root)


def _finish(job: StressJob, result: RunResult,
            browser_reader: Callable[[], dict[str, Any] | None] | None) -> JobResult:
    """Analyses, health and outputs of a scored run; `browser_reader` gives the report's variant
    browser data when it is read elsewhere (`browser_aside`)."""
    try:
        with phase("analyses"):
            analyses = analyse(job, result)
    except ValueError as exc:  # an analysis refused its options or data: say so, exit 2
        raise JobError(str(exc)) from None
    degenerate = degenerate_evaluators(result.scores)
    give_back()  # the score tables the analyses and this check read are freed
    health = {"degenerate": [{**d.to_dict(), "analyses": list(analyses)} for d in degenerate]}
    with phase("write outputs (results.json, report.html, rename)"):
        paths = (write_outputs(result, analyses, job.out, config=job.config, force=job.force,
                               health=health, browser_reader=browser_reader)
                 if job.out is not None else {})
    untrusted = mostly_missing(result, {e.label: list(e.aspects) for e in job.evaluators},
                               job.max_missing)
    generator = job.generation.generator if job.generation is not None else None
    share = usage_share("generator", generator.usage if generator is not None else None)
    if share is not None:  # a dead generator leaves the LLM half of the suite skipped
        untrusted += above([share], job.max_missing)
    return JobResult(result, analyses, paths, untrusted, degenerate)
