"""One job builder for every face: settings (and what only Python can pass) -> `StressJob`.

`evalstress run`, `quickstart`, `criteria-levels`, `evalstress.stress()` and the pytest plugin
map their flags or keyword arguments onto `RunSettings` and call `build_job`; this module holds
the one way to load the examples (a file with `limit` applied while reading, rows from Python,
or the built-in corpus), to resolve the suite (with its perturbations, seeds, protocol and text
limit), to make the evaluators (specs, Evaluator objects, plain callables), to set up the
generation stage, and to record how the run was asked for in results.json.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from evalstress.analyses.registry import check_suite
from evalstress.core.data import (
    DataError,
    Example,
    builtin_corpus,
    from_hf_dataset,
    load_examples,
)
from evalstress.core.phases import phase
from evalstress.core.records import Progress
from evalstress.core.strict import ConfigError, UnknownNameError
from evalstress.core.wording import plural
from evalstress.engine.generation import GenerationSetup, build_setup
from evalstress.engine.pipeline import execution_sizes
from evalstress.engine.planning import shard_examples
from evalstress.evaluators.base import Evaluator, create_evaluator, distinct_labels, registry
from evalstress.job.run import StressJob
from evalstress.job.settings import RunSettings, SettingsError
from evalstress.perturb.llm import load_prompt_file
from evalstress.suites import Suite, builtin_suites, custom_suite, load_suite, parse_seeds

#: what a face may pass as an evaluator: a spec, an Evaluator, or a plain function of a request
EvaluatorLike = str | Mapping[str, Any] | Evaluator | Callable[..., Any]


def build_evaluators(items: EvaluatorLike | Sequence[EvaluatorLike] | Mapping[str, Any],
                     hint: str = "give each its own name=") -> list[Evaluator]:
    """Evaluators from specs, instances, plain callables, or a mapping label -> any of those;
    labels told apart (`distinct_labels`, whose error ends in `hint`)."""
    pairs: list[tuple[str | None, Any]]
    if isinstance(items, Mapping) and not _is_spec_mapping(items):
        pairs = [(str(k), v) for k, v in items.items()]
    elif isinstance(items, str | Evaluator | Mapping) or callable(items):
        pairs = [(None, items)]
    else:
        pairs = [(None, item) for item in items]
    made = [_one_evaluator(label, item) for label, item in pairs]
    distinct_labels(made, hint)
    return made


def _is_spec_mapping(value: Mapping[str, Any]) -> bool:
    """`{"name": "rouge", ...}` or `{"evaluator": "judge", ...}` is one spec; any other mapping
    names evaluators by label."""

    return "evaluator" in value or value.get("name") in registry()


def _one_evaluator(label: str | None, item: Any) -> Evaluator:
    from evalstress.evaluators.external import CallableEvaluator

    if isinstance(item, Evaluator):
        made = item
    elif isinstance(item, str | Mapping):
        made = create_evaluator(item)
    elif callable(item):
        made = CallableEvaluator(item)
        made.display_name = getattr(item, "__name__", None) or type(item).__name__
    else:
        raise TypeError(f"cannot make an evaluator of {item!r}: give a spec string, an "
                        "Evaluator or a callable")
    if label is not None:
        made.display_name = label
    return made


def rows_to_examples(rows: Any, settings: RunSettings) -> list[Example]:
    """Examples from what Python can pass: a DataFrame, Example objects, dict rows or a
    `datasets.Dataset`, read with the settings' field mapping and task (up to `limit`)."""
    limit = settings.limit
    if hasattr(rows, "to_dict") and hasattr(rows, "columns"):  # a DataFrame
        records: Iterable[Any] = ({str(k): v for k, v in row.items()}
                                  for row in rows.to_dict(orient="records"))
        name = "dataframe"
    elif isinstance(rows, Iterable) and not isinstance(rows, str | bytes | Mapping):
        records, name = rows, "rows"
    else:
        raise TypeError(f"cannot read examples from {type(rows).__name__}: give a path, a "
                        "DataFrame, a list of Example or dict rows, or a datasets.Dataset")
    taken: list[Any] = []
    for record in records:
        taken.append(record)
        if limit is not None and len(taken) >= limit:
            break
    if taken and all(isinstance(r, Example) for r in taken):
        return taken
    return from_hf_dataset(taken, settings.map, task=settings.task, name=name)


def load_job_examples(settings: RunSettings, rows: Any = None,
                      say: Callable[[str], None] | None = None
                      ) -> tuple[list[Example], list[str]]:
    """The run's examples (the first `limit`, then its `shard`) and the ids of every example of
    the data (imported variants tell "outside this run" from "unknown" by them). `say`: where
    the loader's note of a default task goes (None: a warning on stderr at once)."""
    if rows is not None:
        examples = rows_to_examples(rows, settings)
        all_ids = [e.id for e in examples]
    elif settings.data is None:
        for name in settings.data_settings():
            settings.refuse_without_data(name)
        examples = builtin_corpus()
        all_ids = [e.id for e in examples]
    else:
        examples = load_examples(settings.data, settings.map, task=settings.task,
                                 limit=None if settings.variants else settings.limit, say=say)
        all_ids = [e.id for e in examples]
    examples = examples[:settings.limit] if settings.limit else examples
    if not examples:
        raise DataError("rows" if rows is not None else str(settings.data), None, None,
                        "holds no examples")
    return shard_examples(examples, parse_shard(settings.shard, settings.where("shard"))), all_ids


def parse_shard(value: str | None, where: str = "--shard") -> tuple[int, int] | None:
    """`i/N` as (i, N); None for no sharding."""
    if not value:
        return None
    index, sep, count = str(value).partition("/")
    if not sep or not index.isdigit() or not count.isdigit() or int(count) < 1:
        raise SettingsError(f"{where} '{value}' must look like i/N, e.g. 0/4")
    if int(index) >= int(count):
        raise SettingsError(f"{where} '{value}': shard {index} of {count} does not exist (i "
                            f"counts from 0 to {int(count) - 1})")
    return int(index), int(count)


def corpus_note(examples: Sequence[Example], all_ids: Sequence[str]) -> str:
    """What a run without data runs on: '57 examples of 7 tasks', or '5 of its 57 examples'
    under a limit or a shard."""
    tasks = len({e.task for e in examples})
    of_tasks = f"of {plural(tasks, 'task')}"
    share = (f"{plural(len(examples), 'example')} {of_tasks}" if len(examples) == len(all_ids)
             else f"{len(examples)} of its {plural(len(all_ids), 'example')}, {of_tasks}")
    return (f"No data given: using the built-in corpus ({share}, written for evalstress); give "
            "DATA.jsonl to run on yours.")


def resolve_suite(settings: RunSettings, examples: Sequence[Example],
                  suite: Suite | None = None) -> Suite:
    """The run's suite: `suite` (a Suite from Python) or the settings' suite (its default:
    blindspot, or paper-TASK under the paper protocol), with the settings' perturbations,
    seeds and protocol. The returned suite is the run's own (the caller's is never changed)."""
    names = settings.perturbations
    try:
        base = dataclasses.replace(suite) if suite is not None else load_suite(
            settings.suite or default_suite(examples, settings.protocol))
        if names:
            seeds: Any = settings.seeds if settings.given("seeds") else list(base.seeds)
            chosen = custom_suite(names, seeds, base.analyses, base.protocol)  # checks seeds
            chosen.options = dict(base.options)  # -p replaces perturbations, not settings
        else:
            chosen = dataclasses.replace(base, options=dict(base.options))
        if settings.protocol:
            chosen = chosen.with_protocol(str(settings.protocol))
        if settings.given("seeds"):  # after the protocol: flags and config win
            chosen.seeds = parse_seeds(settings.seeds, settings.where("seeds"))
        check_suite(chosen)
    except UnknownNameError:
        raise
    except KeyError as exc:
        raise ConfigError(str(exc.args[0] if exc.args else exc)) from None
    return chosen


def default_suite(examples: Sequence[Example], protocol: str | None) -> str:
    """blindspot; under the paper protocol, paper-TASK when the data is of one such task."""
    if protocol == "paper":
        tasks = {e.task for e in examples}
        if len(tasks) == 1 and f"paper-{next(iter(tasks))}" in builtin_suites():
            return f"paper-{next(iter(tasks))}"
    return "blindspot"


def build_generation(suite: Suite, examples: Sequence[Example], all_ids: Sequence[str],
                     settings: RunSettings) -> GenerationSetup:
    """The run's generation stage (generator, verifier, imported variants); fails before any
    work when LLM perturbations have neither a generator nor imports."""
    from evalstress.engine.imported import load_variants

    imported = None
    if settings.variants is not None:
        imported = load_variants(settings.variants, list(examples), settings.variant_map,
                                 known_ids=list(all_ids))
    setup = build_setup(settings.generator, verifier=settings.verifier,
                        max_reasks=settings.max_reasks, shots=settings.shots, imported=imported,
                        cache_dir=settings.cache_dir, no_cache=settings.no_cache,
                        estimate_only=settings.dry_run)
    setup.check(suite, list(examples))
    return setup


def check_size(examples: Sequence[Example], suite: Suite, settings: RunSettings) -> None:
    """Refuse, before any work, a run that plans more variants than `max_units` (the product
    of examples, perturbation severities and seeds), saying which factor to lower."""
    tasks = Counter(example.task for example in examples)
    units = sum(count * suite.unit_count(task) for task, count in tasks.items())
    if units <= settings.max_units:
        return
    severities = sum(len(plan.grid) for plan in suite.perturbations)
    raise SettingsError(
        f"the run plans {units:,} variants ({len(examples):,} examples x up to {severities:,} "
        f"perturbation severities x {len(suite.seeds):,} seeds), more than "
        f"{settings.where('max_units')} {settings.max_units:,}: lower the seeds, the examples "
        f"(--limit) or the suite's grids, or raise {settings.where('max_units')}")


def check_paper_evaluators(evaluators: Sequence[Evaluator]) -> None:
    """Paper 002 never compares a set-level score against the gold set itself (appendix A)."""
    for made in evaluators:
        if getattr(made, "compares_with_gold", False):
            raise ConfigError(f"{made.label}: under --protocol paper a set-level score needs a "
                              "reference set apart from the gold set (paper 002, appendix A): "
                              "give reference_set=FILE or against=references")


def has_reference(example: Example) -> bool:
    """Whether the example carries a reference that is more than whitespace."""
    return any(reference.strip() for reference in example.references)


def reference_note(examples: Sequence[Example], labels: Sequence[str], source: str
                   ) -> str | None:
    """Check the references of the evaluators that need them (`labels`) before any work: none
    among the examples is a DataError naming the evaluators and `source` (every score would be
    missing); some rows without one give the note returned (their scores will be missing)."""
    if not labels or not examples:
        return None
    lacking = sum(not has_reference(example) for example in examples)
    names = ", ".join(labels)
    if lacking == len(examples):
        raise DataError(source, None, None, f"{names} {'needs' if len(labels) == 1 else 'need'} "
                        f"references, and none of the {plural(len(examples), 'example')} has "
                        "one: map the field that holds them (--map references=FIELD), or "
                        "choose an evaluator that needs none")
    if not lacking:
        return None
    one = lacking == 1
    return (f"{lacking} of {plural(len(examples), 'example')} of {source} "
            f"{'has' if one else 'have'} no reference: {names} "
            f"{'skips' if len(labels) == 1 else 'skip'} {'it' if one else 'them'}, and "
            f"{'its' if one else 'their'} scores are missing")


def references_needed(evaluators: Sequence[Evaluator]) -> list[str]:
    """The labels of the evaluators that score against references."""
    return [e.label for e in evaluators if getattr(e, "needs_references", False)]


def run_record(settings: RunSettings, suite: Suite, evaluators: Sequence[Evaluator], *,
               command: str, rows: Any = None, objects: bool = False) -> dict[str, Any]:
    """How the run was asked for, as results.json's `config` records it: the evaluators'
    specs, or their labels when Python passed the evaluators themselves (`objects`)."""
    if settings.data is not None:
        data = str(settings.data)
    else:
        data = type(rows).__name__ if rows is not None else "built-in corpus"
    return {"command": command, "data": data, "map": settings.map, "task": settings.task,
            "suite": suite.name, "protocol": suite.protocol,
            "evaluators": ([e.label for e in evaluators] if objects
                           else list(settings.evaluators)),
            "seeds": list(suite.seeds), "limit": settings.limit, "shard": settings.shard,
            "workers": settings.workers, "backend": settings.backend,
            "ray_address": settings.ray_address,
            "variants": str(settings.variants) if settings.variants else None,
            "perturbation_prompts": (str(settings.perturbation_prompts)
                                     if settings.perturbation_prompts else None),
            "max_chars": suite.options.get("max_chars"), "max_missing": settings.max_missing,
            "include_unverified": settings.include_unverified}


def build_job(settings: RunSettings, *, rows: Any = None,
              evaluators: EvaluatorLike | Sequence[EvaluatorLike] | Mapping[str, Any] | None
              = None, suite: Suite | None = None, analyses: Sequence[str] | None = None,
              options: Mapping[str, Any] | None = None, command: str | None = None,
              record: Mapping[str, Any] | None = None,
              progress: Progress | None = None) -> StressJob:
    """The job the settings describe. What only Python can pass comes beside them: `rows`
    (examples not in a file), `evaluators` (objects or callables, in place of the settings'
    specs), `suite` (a Suite object); a face that runs one analysis of its own
    (criteria-levels) passes `analyses` and `options`, and what results.json should record
    beside the settings (`record`). Raises ConfigError, DataError or
    SettingsError (ValueErrors naming the setting) before any work."""
    loaded: list[str] = []  # the loader's notes, said with the job's once it is built
    with phase("load examples"):
        examples, all_ids = load_job_examples(
            settings, rows, say=lambda line: loaded.append(f"warning: {line}"))
    prompt_file = None
    if settings.perturbation_prompts is not None:  # before the suite: it may add attacks

        prompt_file = load_prompt_file(settings.perturbation_prompts)
    the_suite = resolve_suite(settings, examples, suite)
    if prompt_file is not None:
        prompt_file.apply([p.perturbation for p in the_suite.perturbations])
    settings = settings.with_suite(the_suite)
    if settings.max_chars is not None:  # flag > config > suite option > default
        the_suite.options["max_chars"] = settings.max_chars
    if analyses is not None:
        the_suite.analyses = tuple(analyses)
    check_size(examples, the_suite, settings)
    for plan in the_suite.perturbations:  # a model a perturbation needs: before any work
        missing = plan.perturbation.unmet()
        if missing is not None:
            raise ConfigError(missing)
    generation = build_generation(the_suite, examples, all_ids, settings)
    with phase("build evaluators (models load)"):
        made = build_evaluators(evaluators if evaluators is not None
                                else list(settings.evaluators))
    if the_suite.protocol == "paper":
        check_paper_evaluators(made)
    source = str(settings.data) if settings.data is not None else (
        "rows" if rows is not None else "the built-in corpus")
    references = reference_note(examples, references_needed(made), source)
    processes, chunk_size = execution_sizes(len(examples), settings.workers, settings.chunk_size)
    job_options = {**dict(settings.options or {}), **dict(options or {}),
                   **({"rel_tol": settings.rel_tol} if settings.rel_tol is not None else {}),
                   **({"include_unverified": True} if settings.include_unverified else {})}
    return StressJob(
        examples, the_suite, made, out=settings.run_dir(),
        cache_dir=settings.cache_dir, no_cache=settings.no_cache, options=job_options,
        config={**run_record(settings, the_suite, made, command=command or settings.face,
                             rows=rows, objects=evaluators is not None), **dict(record or {})},
        workers=processes, backend=settings.backend, chunk_size=chunk_size,
        sequential=settings.sequential, generation=generation,
        max_missing=settings.max_missing, progress=progress, ray_address=settings.ray_address,
        force=settings.force,
        inputs=[(what, path) for what, path in (
            ("input data", settings.data), ("variants file", settings.variants),
            ("perturbation prompts", settings.perturbation_prompts),
            ("config file", settings.config)) if path is not None],
        notes=[*([corpus_note(examples, all_ids)]  # without data (quickstart says what it is)
                 if settings.data is None and rows is None and settings.face == "run" else []),
               *loaded, *([references] if references else [])])
