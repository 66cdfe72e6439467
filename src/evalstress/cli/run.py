"""`evalstress run`: stress-test evaluators on your data."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from evalstress.cli.common import (
    app,
    console,
    given,
)
from evalstress.cli.jobs import execute, job_from, settings_from
from evalstress.cli.options import (
    BackendOption,
    CacheDirOption,
    ConfigOption,
    DryRunOption,
    EvaluatorsOption,
    ForceOption,
    GeneratorOption,
    LimitOption,
    MapOption,
    MaxCharsOption,
    MaxMissingOption,
    NoCacheOption,
    OptionalDataArgument,
    ProtocolOption,
    QuietOption,
    RayAddressOption,
    RunDirOption,
    SeedsOption,
    ShardOption,
    SuiteOption,
    TaskOption,
    VariantsInOption,
    WorkersOption,
)

if TYPE_CHECKING:  # the run machinery loads when a command runs: --help stays light
    from evalstress.job import StressJob


@app.command("run")
def run_command(
    ctx: typer.Context,
    data: OptionalDataArgument = None,
    map_: MapOption = None,
    task: TaskOption = None,
    evaluators: EvaluatorsOption = None,
    perturbations: Annotated[list[str] | None, typer.Option(
        "--perturbation", "-p", help="Perturbation name, repeatable (default grids). Overrides "
        "the suite's list.")] = None,
    suite: SuiteOption = None,
    protocol: ProtocolOption = None,
    seeds: SeedsOption = None,
    config: ConfigOption = None,
    out: RunDirOption = None,
    limit: LimitOption = None,
    shard: ShardOption = None,
    rel_tol: Annotated[float | None, typer.Option(
        min=0.0, help="Tolerance of the blind-spot tests as a fraction of |gold|.")] = None,
    cache_dir: CacheDirOption = None,
    no_cache: NoCacheOption = False,
    quiet: QuietOption = False,
    dry_run: DryRunOption = False,
    workers: WorkersOption = None,
    backend: BackendOption = None,
    ray_address: RayAddressOption = None,
    chunk_size: Annotated[int | None, typer.Option(
        help="Examples per chunk: memory holds one chunk; a killed run resumes at its first "
        "unfinished chunk.")] = None,
    sequential: Annotated[bool, typer.Option(
        help="Sequential design for discernment (DHP): score the examples in batches and stop "
        "a perturbation unit once its Wilcoxon result is settled (suite options "
        "sequential_looks, alpha, futility); fewer judge calls, reported in results.json.")]
    = False,
    generator: GeneratorOption = None,
    verifier: Annotated[str | None, typer.Option(
        help="Optional second LLM (same spec) that checks each accepted rewrite (uncommon-phrase: "
        "each changed sentence means the same both ways; rewriting-and-insertion: the text "
        "entails each inserted sentence; others: the attack's change and only that one); a "
        "'no' rejects it, a yes verifies it.")] = None,
    include_unverified: Annotated[bool, typer.Option(
        help="Keep the LLM-written variants nothing verified (their attack's acceptance "
        "measured below precision 0.95 and no --verifier) in the discernment and "
        "criteria-confusion verdicts; each such verdict says so. Default: set aside and "
        "counted.")] = False,
    max_reasks: Annotated[int | None, typer.Option(
        help="Re-asks after a rejected LLM rewrite, each with the next sample index (default "
        "2; they differ only at temperature > 0).")] = None,
    shots: Annotated[int | None, typer.Option(
        help="Show the generator at most N demonstrations per attack (those of the text's own "
        "task first); default all. Shorter prompts for small or costly models.")] = None,
    perturbation_prompts: Annotated[Path | None, typer.Option(
        help="YAML file overriding or adding instructions, demonstrations, bounds and checks "
        "of LLM attacks (docs/perturbation-prompts.md).")] = None,
    variants: VariantsInOption = None,
    variant_map: Annotated[list[str] | None, typer.Option(
        help="Field mapping of --variants, e.g. --variant-map text=perturbed "
        "--variant-map perturbation=const:hypernym.")] = None,
    max_chars: MaxCharsOption = None,
    max_missing: MaxMissingOption = None,
    max_units: Annotated[int | None, typer.Option(
        help="The most variants the run may plan (examples x perturbation severities x "
        "seeds); a bigger run is refused before any work. Default 50,000,000.")] = None,
    force: ForceOption = False,
) -> None:
    """Stress-test evaluators on your data.

    Example (after `evalstress data examples`): `evalstress run examples/summaries.jsonl -m
    hypothesis=highlight -m references=references -e rouge -e bleu --task summarization`.
    LLM-written attacks (suites criteria-full, dhp-full) need `--generator SPEC` or
    ready-made texts from `--variants FILE`. Without DATA, the run uses the built-in corpus,
    e.g. `evalstress run --suite dhp -e bleu`.
    """
    settings = settings_from(given(ctx, locals()), config)
    job = job_from(settings)
    if settings.dry_run:
        _dry_run(job)
        return
    execute(job, quiet=settings.quiet, then=["check", str(job.out)] if job.out else [],
            why="its expectations as a CI gate: exit 1 when one breaks")


def _dry_run(job: StressJob) -> None:
    """Print what `run` would spend, per evaluator, without calling any evaluator."""
    from rich.table import Table

    from evalstress.job.run import estimate_job

    estimate = estimate_job(job)
    table = Table(title=f"Dry run: {estimate.examples} examples, {estimate.variants} variants, "
                  f"{estimate.skips} skips")
    columns = ("evaluator", "requested", "distinct", "score_cached", "todo", "calls", "cached",
               "prompt_tokens", "completion_tokens")
    for column in columns:
        # an evaluator's name stays on one line; the figures' headers wrap between words
        table.add_column(column.replace("_", " "), justify="left" if column == "evaluator"
                         else "right", no_wrap=column == "evaluator")
    for row in estimate.evaluators:
        table.add_row(*(str(row.get(c, "")) if row.get(c) is not None else "-" for c in columns))
    generated = estimate.generator
    if generated is not None and estimate.generator_model is not None:
        table.add_row(f"generator {estimate.generator_model}", str(generated["units"]), "",
                      "", str(generated["units"] - generated["not_applicable"]),
                      str(generated["calls"]), str(generated["cached"]),
                      str(generated["prompt_tokens"]), str(generated["completion_tokens"]))
    console.print(table)
    console.print("calls = requests the evaluator would send (LLM judges: net of the response "
                  "cache, before re-asks); tokens are estimates.")
    if generated is not None:
        console.print(f"generator: {generated['units']} LLM-written variants planned, "
                      f"{generated['not_applicable']} not applicable; first asks only (re-asks "
                      "add more). Evaluator rows exclude the variants still to be written.")
