"""`evalstress quickstart` and `evalstress run`, and `execute`: the face of
`evalstress.job.run_job` that they and `criteria-levels` share."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from evalstress.cli.common import (
    ForceOption,
    app,
    console,
    err,
    exit_if_mostly_missing,
    fail,
    make_evaluators,
    parse_shard,
    progress_bars,
    score_cache,
    use_cache_dir,
)
from evalstress.cli.guard import keeps
from evalstress.cli.settings import LEXICAL_DEFAULT, RunSettings, SettingsError
from evalstress.core.data import DataError, Example, builtin_corpus, load_examples
from evalstress.core.interrupts import set_resume_hint
from evalstress.engine.generation import GenerationSetup, build_setup
from evalstress.engine.planning import shard_examples
from evalstress.engine.result import RunResult
from evalstress.engine.rundir import staging_for
from evalstress.engine.runhealth import DEFAULT_MAX_MISSING
from evalstress.engine.scoring import configure_caches
from evalstress.evaluators.base import Evaluator
from evalstress.job import JobError, JobResult, StressJob, run_job
from evalstress.report.generation import print_generation
from evalstress.report.terminal import print_analyses, print_summary
from evalstress.suites import Suite, builtin_suites, custom_suite, load_suite, parse_seeds


def execute(examples: list[Example], suite: Suite, evaluators: list[Evaluator], out: Path, *,
            cache_dir: Path | None, no_cache: bool, rel_tol: float | None, config: dict[str, Any],
            quiet: bool = False, workers: int = 0, backend: str = "local",
            chunk_size: int | None = None, sequential: bool = False,
            generation: GenerationSetup | None = None,
            max_missing: float = DEFAULT_MAX_MISSING,
            ray_address: str | None = None, force: bool = False,
            inputs: Sequence[tuple[str, Path | None]] = ()) -> JobResult:
    """The face of `run_job` for `run`, `quickstart` and `criteria-levels`: run it, print
    what it found, exit EXIT_MOSTLY_MISSING (3) after writing when an evaluator's scores are
    mostly missing."""
    from evalstress.core.storage import StorageError

    job = StressJob(examples, suite, evaluators, out=out, cache_dir=cache_dir,
                    no_cache=no_cache,
                    options={"rel_tol": rel_tol} if rel_tol is not None else {},  # flag > suite
                    config=config, workers=workers, backend=backend, chunk_size=chunk_size,
                    sequential=sequential, generation=generation, max_missing=max_missing,
                    progress=progress_bars(enabled=not quiet), ray_address=ray_address,
                    force=force, inputs=[(what, path) for what, path in inputs
                                         if path is not None])
    try:
        use_cache_dir(cache_dir)
        keeps(out)
        set_resume_hint(f"finished chunks in {staging_for(out)}")
        done = run_job(job)
    except (JobError, StorageError) as exc:
        raise fail(str(exc)) from None
    result = done.run
    if not quiet:
        print_summary(console, result, done.analyses.get("blindspot"),
                      untrusted=[share.evaluator for share in done.untrusted
                                 if share.evaluator in result.stats])
        print_generation(console, result.plan.generation)
        print_analyses(console, done.analyses)
        console.print(wrote_line(done.paths, ("report", "results", "scores", "variants")))
    _warn_long_rows(result)
    exit_if_mostly_missing(done.untrusted, max_missing)
    return done


def wrote_line(paths: dict[str, Path], keys: tuple[str, ...]) -> str:
    """'Wrote A, B, C': the files of `keys` that were written, in that order (report.html
    first where there is one: it is the file a reader opens)."""
    from rich.markup import escape

    written = [str(paths[k]) for k in keys if k in paths and paths[k].exists()]
    return escape(f"Wrote {', '.join(written)}") if written else ""


def _warn_long_rows(result: RunResult) -> None:
    """Rows left out for their length: a warning each (five at most, then a count)."""
    from rich.markup import escape

    from evalstress.engine.runhealth import long_text_skips

    long_rows = long_text_skips(result)
    for reason in long_rows[:5]:
        err.print(f"[yellow]warning:[/] skipped {escape(reason)}")
    if len(long_rows) > 5:
        err.print(f"[yellow]warning:[/] and {len(long_rows) - 5} more rows beyond the limit")


@app.command()
def quickstart(
    out: Annotated[Path, typer.Option(help="Run directory for results.json and scores.parquet.")]
    = Path("runs/quickstart"),
    limit: Annotated[int | None, typer.Option(min=1, help="Use only the first N built-in examples.")]
    = None,
    cache_dir: Annotated[Path | None, typer.Option(help="Score cache folder.")] = None,
    no_cache: Annotated[bool, typer.Option(help="Score everything afresh.")] = False,
    quiet: Annotated[bool, typer.Option(help="No progress bars or tables.")] = False,
    workers: Annotated[int, typer.Option(
        help="Processes for perturbations and CPU-bound metrics; 0: every core.")] = 0,
    force: ForceOption = False,
) -> None:
    """Run the blind-spot suite on the built-in corpus with the lexical metrics, offline.

    Scores each of the built-in examples and their noised variants with BLEU, chrF and
    ROUGE-1/2/L, then runs the rank and monotonic tests of paper 002.
    """
    examples = builtin_corpus()[:limit] if limit else builtin_corpus()
    suite = load_suite("blindspot")
    execute(examples, suite, make_evaluators(LEXICAL_DEFAULT), out, cache_dir=cache_dir,
            no_cache=no_cache, rel_tol=None,
            config={"command": "quickstart", "evaluators": LEXICAL_DEFAULT, "suite": "blindspot",
                    "limit": limit}, quiet=quiet, workers=workers, force=force)


@app.command("run")
def run_command(
    data: Annotated[Path | None, typer.Argument(
        help="JSONL, CSV or Parquet file of examples. Without one, the run uses the built-in "
        "corpus (examples written for evalstress), as quickstart does.")] = None,
    map_: Annotated[list[str] | None, typer.Option(
        "--map", "-m", help="Field mapping, e.g. -m hypothesis=highlight -m references=references "
        "(several reference fields: references=ref_a,ref_b).")] = None,
    task: Annotated[str | None, typer.Option(help="Task of rows without a task field.")] = None,
    evaluator: Annotated[list[str] | None, typer.Option(
        "--evaluator", "-e", help="Evaluator spec, repeatable: rouge, bleu, "
        "'python:target=pkg.mod:fn', \"command:cmd='python score.py'\". Default: lexical set.")]
    = None,
    perturbation: Annotated[list[str] | None, typer.Option(
        "--perturbation", "-p", help="Perturbation name, repeatable (default grids). Overrides "
        "the suite's list.")] = None,
    suite: Annotated[str | None, typer.Option(
        help="Built-in suite name or YAML file (default: blindspot; with --protocol paper, the "
        "paper-TASK suite of the data's task).")] = None,
    protocol: Annotated[str | None, typer.Option(
        help="default, or paper: follow the suite's papers where evalstress differs (paper "
        "002's per-test rules, whole-gold-set averages and strict tests; paper 000's fixed rule "
        "attacks; paper 003's error counts; one seed for suites of papers 000 and 003). "
        "--seeds still wins.")] = None,
    seeds: Annotated[int | None, typer.Option(min=1, help="Number of seeds (0..N-1).")] = None,
    config: Annotated[Path | None, typer.Option(
        "--config", "-c", help="YAML file with any of these options; flags win.")] = None,
    out: Annotated[Path | None, typer.Option(help="Run directory.")] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Use only the first N examples.")] = None,
    shard: Annotated[str | None, typer.Option(help="Run shard i of N by example id: i/N.")] = None,
    rel_tol: Annotated[float | None, typer.Option(
        min=0.0, help="Tolerance of the blind-spot tests as a fraction of |gold|.")] = None,
    cache_dir: Annotated[Path | None, typer.Option(help="Score cache folder.")] = None,
    no_cache: Annotated[bool, typer.Option(help="Score everything afresh.")] = False,
    quiet: Annotated[bool, typer.Option(help="No progress bars or tables.")] = False,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Plan, deduplicate and look up caches; print the calls and tokens each "
        "evaluator (and the generator) would need, and score nothing.")] = False,
    workers: Annotated[int, typer.Option(
        help="Processes for rule perturbations and CPU-bound metrics (BLEU, chrF, TER, ROUGE, "
        "rep); 0: every core. Results are identical to --workers 1.")] = 0,
    backend: Annotated[str, typer.Option(
        help="'local' (this machine) or 'ray': shards of examples run as Ray tasks on the "
        "cluster named by --ray-address or RAY_ADDRESS (else a local Ray), merged by cache "
        "key.")] = "local",
    ray_address: Annotated[str | None, typer.Option(
        help="Ray cluster of --backend ray: HEAD:6379 (a node of the cluster) or "
        "ray://HEAD:10001 (Ray Client). Default: RAY_ADDRESS, else a Ray on this machine.")]
    = None,
    chunk_size: Annotated[int | None, typer.Option(
        help="Examples per chunk: memory holds one chunk; a killed run resumes at its first "
        "unfinished chunk.")] = None,
    sequential: Annotated[bool, typer.Option(
        help="Sequential design for discernment (DHP): score the examples in batches and stop "
        "a perturbation unit once its Wilcoxon result is settled (suite options "
        "sequential_looks, alpha, futility); fewer judge calls, reported in results.json.")]
    = False,
    generator: Annotated[str | None, typer.Option(
        help="LLM that writes the LLM perturbations (paper 000's attacks, paper 003's LLM "
        "half): 'model=NAME,base_url=URL,temperature=0.7,max_concurrency=16'. Same cache and "
        "retries as judges.")] = None,
    verifier: Annotated[str | None, typer.Option(
        help="Optional second LLM (same spec) asked whether each rewrite makes its attack's "
        "change and only that one; a 'no' rejects it.")] = None,
    max_reasks: Annotated[int | None, typer.Option(
        help="Re-asks after a rejected LLM rewrite, each with the next sample index (default "
        "2; they differ only at temperature > 0).")] = None,
    shots: Annotated[int | None, typer.Option(
        help="Show the generator at most N demonstrations per attack (those of the text's own "
        "task first); default all. Shorter prompts for small or costly models.")] = None,
    perturbation_prompts: Annotated[Path | None, typer.Option(
        help="YAML file overriding or adding instructions, demonstrations, bounds and checks "
        "of LLM attacks (docs/perturbation-prompts.md).")] = None,
    variants: Annotated[Path | None, typer.Option(
        help="JSONL, CSV or Parquet of ready-made perturbed texts (example_id, perturbation, "
        "severity, seed, text); they replace the suite's perturbations of the same name.")]
    = None,
    variant_map: Annotated[list[str] | None, typer.Option(
        help="Field mapping of --variants, e.g. --variant-map text=perturbed "
        "--variant-map perturbation=const:hypernym.")] = None,
    max_chars: Annotated[int | None, typer.Option(
        help="Longest text (characters) perturbed and scored; a longer row is skipped with its "
        "id (suite option max_chars; 0: no limit). Default 100000.")] = None,
    max_missing: Annotated[float | None, typer.Option(
        help="Exit 3 (after writing every output) when more than this fraction of an "
        "evaluator's scores is missing, e.g. every judge call failed; 1 turns it off. "
        "Default 0.5.")] = None,
    force: ForceOption = False,
) -> None:
    """Stress-test evaluators on your data.

    Example: `evalstress run summeval.jsonl -m hypothesis=highlight -m references=references
    -e rouge -e bleu --task summarization`. LLM-written attacks (suites criteria-full,
    dhp-full) need `--generator SPEC` or ready-made texts from `--variants FILE`. Without
    DATA, the run uses the built-in corpus, e.g. `evalstress run --suite dhp -e bleu`.
    """
    if backend not in ("local", "ray"):
        raise fail(f"--backend '{backend}': choose local or ray")
    if sequential and backend == "ray":
        raise fail("--sequential decides batch by batch on one machine: use --backend local")
    if workers < 0 or (chunk_size is not None and chunk_size < 1):
        raise fail("--workers must be >= 0 and --chunk-size >= 1")
    flags = {"data": data, "map": map_, "task": task, "suite": suite,
             "perturbations": perturbation, "evaluators": evaluator, "seeds": seeds, "out": out,
             "limit": limit, "rel_tol": rel_tol, "shard": shard, "cache_dir": cache_dir,
             "protocol": protocol, "generator": generator, "verifier": verifier,
             "max_reasks": max_reasks, "shots": shots,
             "perturbation_prompts": perturbation_prompts, "variants": variants,
             "variant_map": variant_map, "max_chars": max_chars, "max_missing": max_missing}
    try:
        settings = RunSettings.resolve(flags, config)
    except SettingsError as exc:
        raise fail(str(exc)) from None
    examples = _examples(settings)
    all_ids = [e.id for e in examples]
    examples = examples[:settings.limit] if settings.limit else examples
    examples = shard_examples(examples, parse_shard(settings.shard))
    if settings.data is None:
        err.print(f"No data given: using the built-in corpus ({_corpus_share(examples, all_ids)}"
                  ", written for evalstress); give DATA.jsonl to run on yours.", soft_wrap=True)
    prompt_file = None
    if settings.perturbation_prompts is not None:  # before the suite: it may add attacks
        from evalstress.perturb.llm import load_prompt_file

        try:
            prompt_file = load_prompt_file(settings.perturbation_prompts)
        except ValueError as exc:
            raise fail(str(exc)) from None
    the_suite = _suite(settings, examples)
    if prompt_file is not None:
        prompt_file.apply([p.perturbation for p in the_suite.perturbations])
    try:
        settings = settings.with_suite(the_suite)
    except SettingsError as exc:
        raise fail(str(exc)) from None
    if settings.max_chars is not None:  # flag > config > suite option > default
        the_suite.options["max_chars"] = settings.max_chars
    generation = _generation(the_suite, examples, all_ids, settings, no_cache, dry_run)
    specs = list(settings.evaluators)
    evaluators = make_evaluators(specs)
    if the_suite.protocol == "paper":
        _check_paper_evaluators(evaluators)
    if dry_run:
        _dry_run(examples, the_suite, evaluators, settings.cache_dir, no_cache, generation)
        return
    prompts, imports = settings.perturbation_prompts, settings.variants
    execute(examples, the_suite, evaluators, settings.run_dir(), cache_dir=settings.cache_dir,
            no_cache=no_cache, rel_tol=settings.rel_tol,
            config={"command": "run",
                    "data": str(settings.data) if settings.data else "built-in corpus",
                    "map": settings.map,
                    "suite": the_suite.name, "protocol": the_suite.protocol,
                    "evaluators": specs, "seeds": list(the_suite.seeds),
                    "limit": limit, "shard": shard,  # as given on the command line
                    "workers": workers, "backend": backend, "ray_address": ray_address,
                    "variants": str(imports) if imports else None,
                    "perturbation_prompts": str(prompts) if prompts else None,
                    "max_chars": the_suite.options.get("max_chars"),
                    "max_missing": settings.max_missing},
            quiet=quiet, workers=workers, backend=backend, chunk_size=chunk_size,
            sequential=sequential, generation=generation, max_missing=settings.max_missing,
            ray_address=ray_address, force=force,
            inputs=[("input data", settings.data), ("variants file", settings.variants),
                    ("perturbation prompts", settings.perturbation_prompts),
                    ("config file", config)])


def _examples(settings: RunSettings) -> list[Example]:
    """The data file's examples (all of them with --variants, whose ids tell "outside this run"
    from "unknown"; else the first --limit), or the built-in corpus without a data file."""
    if settings.data is None:
        return builtin_corpus()
    try:
        return load_examples(settings.data, settings.map, task=settings.task,
                             limit=None if settings.variants else settings.limit)
    except (DataError, ValueError) as exc:
        raise fail(str(exc)) from None


def _corpus_share(examples: list[Example], all_ids: list[str]) -> str:
    """'57 examples of 7 tasks', or '5 of its 57 examples' under --limit or --shard."""
    tasks = len({e.task for e in examples})
    of_tasks = f"of {tasks} task{'s' if tasks != 1 else ''}"
    if len(examples) == len(all_ids):
        return f"{len(examples)} examples {of_tasks}"
    return f"{len(examples)} of its {len(all_ids)} examples, {of_tasks}"


def _suite(settings: RunSettings, examples: list[Example]) -> Suite:
    """The run's suite: --suite (or its default) with --perturbation, --seeds and --protocol."""
    names = settings.perturbations
    chosen_protocol = settings.protocol
    suite_name = settings.suite or _default_suite(examples, chosen_protocol)
    try:
        if names:
            base = load_suite(suite_name)
            seeds: Any = settings.seeds if settings.given("seeds") else list(base.seeds)
            the_suite = custom_suite(names, seeds, base.analyses, base.protocol)  # checks seeds
            the_suite.options = dict(base.options)  # -p replaces perturbations, not settings
        else:
            the_suite = load_suite(suite_name)
        if chosen_protocol:
            the_suite = the_suite.with_protocol(str(chosen_protocol))
        if settings.given("seeds"):  # after the protocol: flags and config win
            the_suite.seeds = parse_seeds(settings.seeds, settings.where("seeds"))
    except (KeyError, ValueError) as exc:
        raise fail(str(exc.args[0] if exc.args else exc)) from None
    return the_suite


def _generation(suite: Suite, examples: list[Example], all_ids: list[str],
                settings: RunSettings, no_cache: bool, dry_run: bool) -> GenerationSetup:
    """The run's generation stage from its settings (flag > config > suite, see RunSettings).
    Fails (before any work) when LLM perturbations have neither a generator nor imports."""
    from evalstress.engine.imported import load_variants

    imported = None
    try:
        if settings.variants is not None:
            imported = load_variants(settings.variants, examples, settings.variant_map,
                                     known_ids=all_ids)
        setup = build_setup(
            settings.generator, verifier=settings.verifier, max_reasks=settings.max_reasks,
            shots=settings.shots, imported=imported, cache_dir=settings.cache_dir,
            no_cache=no_cache, estimate_only=dry_run)
        setup.check(suite, examples)
    except (DataError, ValueError) as exc:
        raise fail(str(exc)) from None
    return setup


def _default_suite(examples: list[Example], protocol: str | None) -> str:
    """blindspot; under the paper protocol, paper-TASK when the data is of one such task."""
    if protocol == "paper":
        tasks = {e.task for e in examples}
        if len(tasks) == 1 and f"paper-{next(iter(tasks))}" in builtin_suites():
            return f"paper-{next(iter(tasks))}"
    return "blindspot"


def _check_paper_evaluators(evaluators: list[Evaluator]) -> None:
    """Paper 002 never compares a set-level score against the gold set itself (appendix A)."""
    for ev in evaluators:
        if getattr(ev, "compares_with_gold", False):
            raise fail(f"{ev.label}: under --protocol paper a set-level score needs a reference "
                       "set apart from the gold set (paper 002, appendix A): give "
                       "reference_set=FILE or against=references")


def _dry_run(examples: list[Example], suite: Suite, evaluators: list[Evaluator],
             cache_dir: Path | None, no_cache: bool,
             generation: GenerationSetup | None = None) -> None:
    """Print what `run` would spend, per evaluator, without calling any evaluator."""
    from evalstress.engine.planning import plan_dataset
    from evalstress.engine.runner import estimate_plan

    plan = plan_dataset(examples, suite, generation=generation)
    cache = score_cache(cache_dir, no_cache)
    configure_caches(evaluators, cache_dir, no_cache)
    try:
        rows = estimate_plan(plan, evaluators, cache=cache)
    finally:
        for evaluator in evaluators:
            evaluator.close()
        if cache is not None:
            cache.close()
    table = Table(title=f"Dry run: {len(plan.examples)} examples, {len(plan.variants)} variants, "
                  f"{len(plan.skips)} skips")
    columns = ("evaluator", "requested", "distinct", "score_cached", "todo", "calls", "cached",
               "prompt_tokens", "completion_tokens")
    for column in columns:
        table.add_column(column.replace("_", " "), justify="left" if column == "evaluator"
                         else "right")
    for row in rows:
        table.add_row(*(str(row.get(c, "")) if row.get(c) is not None else "-" for c in columns))
    estimate = generation.estimate if generation is not None else None
    if estimate is not None and generation is not None and generation.generator is not None:
        table.add_row(f"generator {generation.generator.model}", str(estimate["units"]), "",
                      "", str(estimate["units"] - estimate["not_applicable"]),
                      str(estimate["calls"]), str(estimate["cached"]),
                      str(estimate["prompt_tokens"]), str(estimate["completion_tokens"]))
    if generation is not None:
        generation.close()
    console.print(table)
    console.print("calls = requests the evaluator would send (LLM judges: net of the response "
                  "cache, before re-asks); tokens are estimates.")
    if estimate is not None:
        console.print(f"generator: {estimate['units']} LLM-written variants planned, "
                      f"{estimate['not_applicable']} not applicable; first asks only (re-asks "
                      "add more). Evaluator rows exclude the variants still to be written.")
