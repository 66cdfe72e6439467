"""The Ray backend: shards of examples are perturbed and scored as Ray tasks, merged by cache key.

What runs where:
- the driver (this process) loads the data, writes the LLM-written variants (the generation
  stage, once, through its own response cache, chunk by chunk as a local run does) and keeps
  the run's score cache;
- each Ray task takes one shard of the examples (by id hash, `planning.shard_examples`), with
  the whole dataset as the pool perturbations borrow from and the shard's generated or imported
  variants, makes its rule and model-made variants and scores them with the evaluators that
  need no shared state (CPU metrics, local models, `python:`/`command:` evaluators) into a
  fresh score cache on its node, and returns that cache file with where it ran;
- the driver merges each returned cache into the run's cache by key (`evalstress cache merge`
  does the same with `--shard` runs) and keeps the rule and model-made units each shard made
  (its variants and skips: `replay.UnitReplay`), then makes one local streaming pass that
  looks those units up instead of making them again (nothing is parsed or perturbed twice),
  finds every shard score cached, scores the LLM judges (their response cache, rate limits and
  usage stay in one place) and the corpus-level evaluators (MAUVE needs whole sets), and
  writes the run directory. The score table, variants and files are those of a local run of
  the same command. A rerun whose shards were merged before has their scores but not their
  units: its pass makes the units again.

Workers on other machines never see the driver's SQLite files: they read nothing from them,
and everything they compute comes back in the returned cache. A shard merged into the run's
cache leaves a marker there, so a rerun (or a run killed after some shards) sends only the
shards not done yet.

Connects to the cluster named by `address` (or `RAY_ADDRESS`); without one, starts a Ray on
this machine for the run and stops it afterwards.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from evalstress.core.cache import SQLiteCache
from evalstress.core.data import Example
from evalstress.core.records import Progress
from evalstress.core.text import TextParser
from evalstress.core.version import __version__
from evalstress.engine import variantfile
from evalstress.engine.chunkwork import EvaluatorRecipe, recipe_for
from evalstress.engine.generation import GenerationOutcome, GenerationSetup
from evalstress.engine.pipeline import chunk_positions, execution_sizes, fingerprint
from evalstress.engine.planning import long_rows, shard_examples
from evalstress.engine.rayaddress import RayAddressError, check_ray_address
from evalstress.engine.replay import UnitReplay
from evalstress.engine.result import RunResult
from evalstress.engine.runner import run
from evalstress.engine.scoring import EvaluatorStats, open_cache
from evalstress.evaluators.base import Evaluator
from evalstress.perturb.base import Variant
from evalstress.suites import PerturbationPlan, Suite

#: cache namespace of the markers of shards already merged into a run's cache
SHARD_MARKERS = "ray-shards"


class RayError(RuntimeError):
    """The Ray backend cannot run: Ray is not installed, or the cluster's workers run another
    evalstress than the driver."""


def local_runtime_env() -> dict[str, Any]:
    """Workers of a local Ray import evalstress from where this process did (a checkout too)."""
    here = str(Path(__file__).resolve().parents[2])  # src/evalstress/engine/ray.py -> src
    paths = [here, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {"env_vars": {"PYTHONPATH": os.pathsep.join(dict.fromkeys(paths))}}


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RayError("the Ray backend needs the ray extra: pip install 'evalstress[ray]'"
                       ) from None
    return ray


def on_cluster(evaluator: Evaluator) -> bool:
    """Whether Ray tasks score this evaluator: not an LLM judge (its response cache, rate limits
    and usage stay with the driver) and not a corpus-level one (it needs whole sets)."""
    return evaluator.level != "corpus" and not hasattr(evaluator, "usage")


@dataclass
class PremadeGeneration(GenerationSetup):
    """The generation stage's outcome, made before the shards leave: per chunk of the driver's
    pass (`made`, keyed by the chunk's example ids), with the counts and the generator's usage
    of a local run. A shard's copy holds no generator, only its examples' `variants`."""

    made: dict[tuple[str, ...], GenerationOutcome] = field(default_factory=dict)
    handled: frozenset[str] = frozenset()
    variants: list[Variant] | None = None  # a shard's copy: the variants of its examples

    def handles(self, plan: PerturbationPlan) -> bool:
        return plan.name in self.handled

    def check(self, suite: Suite, examples: Sequence[Example]) -> None:
        """Nothing to check: the driver's setup checked before generating."""

    @property
    def adds_variants(self) -> bool:
        return self.imported is not None or bool(self.variants)

    def run(self, examples: Sequence[Example], suite: Suite, parser: TextParser,
            progress: Progress | None = None) -> GenerationOutcome:
        key = tuple(e.id for e in examples)
        if key in self.made:
            return self.made[key]
        if self.variants is None:  # the driver, a chunk it did not foresee: run the stage
            return super().run(examples, suite, parser, progress)
        ids = set(key)
        return GenerationOutcome(variants=[v for v in self.variants if v.example_id in ids])

    def for_shard(self, examples: Sequence[Example]) -> PremadeGeneration:
        """What a shard needs: the variants of its examples, without the generator."""
        ids = {e.id for e in examples}
        return PremadeGeneration(handled=self.handled, variants=[
            v for outcome in self.made.values() for v in outcome.variants
            if v.example_id in ids])

    def close(self) -> None:
        """The generator belongs to the run's own setup, which closes it."""


def pregenerate(examples: Sequence[Example], suite: Suite, setup: GenerationSetup | None,
                chunk_size: int, progress: Progress | None = None) -> PremadeGeneration | None:
    """Run the generation stage over the examples chunk by chunk, as a local run's pass does
    (rows too long for the run left out), so its variants, counts and usage are a local run's."""
    if setup is None:
        return None
    handled = frozenset(p.name for p in suite.perturbations if setup.handles(p))
    if not handled and setup.imported is None:  # (imported names may be outside the suite)
        return None
    setup.check(suite, examples)
    parser = TextParser()
    made: dict[tuple[str, ...], GenerationOutcome] = {}
    for positions in chunk_positions(len(examples), chunk_size):
        chunk = [examples[i] for i in positions]
        too_long = long_rows(chunk, suite)
        fitting = [e for e in chunk if e.id not in too_long]
        made[tuple(e.id for e in fitting)] = setup.run(fitting, suite, parser, progress)
        parser.forget()
    return PremadeGeneration(setup.generator, setup.options, setup.imported,
                             trust=dict(setup.trust), made=made, handled=handled)


def _shard(examples: list[Example], pool: list[Example], suite: Suite,
           evaluators: list[EvaluatorRecipe | Evaluator], chunk_size: int,
           generation: PremadeGeneration | None) -> dict[str, Any]:
    """Body of one Ray task: run a shard into a score cache of its own and hand back its file."""
    folder = Path(tempfile.mkdtemp(prefix="evalstress-shard-"))
    try:
        built = [e.build() if isinstance(e, EvaluatorRecipe) else e for e in evaluators]
        cache = SQLiteCache(folder / "scores.sqlite", "scores")
        try:
            result = run(examples, suite, built, cache=cache, pool=pool, chunk_size=chunk_size,
                         generation=generation)
            stats = {label: asdict(s) for label, s in result.stats.items()}
        finally:
            for evaluator in built:
                evaluator.close()
            cache.close()
        return {"scores": (folder / "scores.sqlite").read_bytes(), "stats": stats,
                # the units it made, so the driver's pass looks them up instead of making them
                "variants": result.files.path(variantfile.FILE).read_bytes(),
                "skips": result.files.path("skips.jsonl").read_bytes(),
                "parses": result.plan.parses,
                "examples": len(examples), "version": __version__,
                "module": str(Path(__file__).resolve().parents[1]),  # the evalstress it ran
                "node": _node_id(), "host": socket.gethostname(), "pid": os.getpid()}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _node_id() -> str:
    return str(_ray().get_runtime_context().get_node_id())


def _connect(ray: Any, address: str | None, num_cpus: int | None,
             runtime_env: dict[str, Any] | None) -> bool:
    """Join the cluster (or start a local Ray); True when this call did, so it also leaves."""
    if ray.is_initialized():
        return False
    target = address or os.environ.get("RAY_ADDRESS") or None
    if target:
        try:
            check_ray_address(address)
        except RayAddressError as exc:
            raise RayError(str(exc)) from None
        try:
            ray.init(address=target, runtime_env=runtime_env, log_to_driver=False)
        except ConnectionError as exc:
            raise RayError(f"cannot join the Ray cluster at {target}: {exc}") from None
    else:
        ray.init(num_cpus=num_cpus, runtime_env=runtime_env or local_runtime_env(),
                 include_dashboard=False, log_to_driver=False)
    return True


@contextmanager
def ray_session(address: str | None = None) -> Iterator[None]:
    """One Ray for several runs (a card's methods, the atlas's cards): joined (or started on
    this machine) once, left at the end; the runs inside find it started and keep it. A Ray
    already started by the caller is kept as it is."""
    ray = _ray()
    started = _connect(ray, address, None, None)
    try:
        yield
    finally:
        if started:
            ray.shutdown()


def _shard_key(run_key: str, index: int, count: int,
               generation: PremadeGeneration | None) -> str:
    """What a shard's scores depend on: the run (data, suite, evaluators, version), its place,
    and the generated or imported variants it was given."""
    digest = hashlib.sha256(f"{run_key}:{index}/{count}".encode())
    for v in (generation.variants or []) if generation is not None else []:
        digest.update(json.dumps([v.example_id, v.perturbation, str(v.severity), v.seed,
                                  v.text], ensure_ascii=False).encode())
    return digest.hexdigest()


def run_on_ray(examples: Sequence[Example], suite: Suite, evaluators: Sequence[Evaluator], *,
               cache: SQLiteCache | None = None, progress: Progress | None = None,
               workdir: str | Path | None = None, chunk_size: int | None = None,
               shards: int | None = None, address: str | None = None,
               num_cpus: int | None = None, workers: int = 1,
               generation: GenerationSetup | None = None,
               runtime_env: dict[str, Any] | None = None) -> RunResult:
    """Perturb and score shards as Ray tasks, merge their caches into `cache`, then build the
    run here (see the module docstring). `workers` is the driver's pass (0: every core);
    `runtime_env` is Ray's, for the tasks (default: none on a cluster, whose nodes have
    evalstress installed; this checkout's source on a local Ray)."""
    ray = _ray()
    progress = progress or Progress()
    examples = list(examples)
    processes, chunk = execution_sizes(len(examples), workers, chunk_size)
    premade = pregenerate(examples, suite, generation, chunk, progress)
    owned = cache is None  # --no-cache: merge into a cache that lives for this run only
    scratch = Path(tempfile.mkdtemp(prefix="evalstress-ray-"))
    target_cache = cache or open_cache(scratch / "scores.sqlite")
    remote = [e for e in evaluators if on_cluster(e)]
    started = False
    try:
        backend: dict[str, Any] = {"name": "ray", "shards": 0, "placement": [],
                                   "shard_stats": {}}
        replay = None
        if remote:
            started = _connect(ray, address, num_cpus, runtime_env)
            replay = UnitReplay(premade.handled if premade is not None else frozenset())
            backend = _run_shards(ray, examples, suite, remote, chunk, shards, premade,
                                  target_cache, scratch, progress, replay)
            if any(p["reused"] for p in backend["placement"]):
                replay = None  # a shard merged by an earlier run left its scores, not its units
        result = run(examples, suite, evaluators, cache=target_cache, progress=progress,
                     workdir=workdir, chunk_size=chunk, workers=processes,
                     generation=premade or generation, replay=replay)
        if replay is not None:  # the driver parsed nothing: the texts parsed are the shards'
            result.plan.parses = result.summary["parses"] = replay.parses
    finally:
        if started:
            ray.shutdown()
        if owned:
            target_cache.close()
        shutil.rmtree(scratch, ignore_errors=True)
    result.summary["backend"] = backend
    return result


def _chunk_of(part: list[Example], suite: Suite, chunk: int) -> dict[str, int]:
    """The chunk of a shard's run each of its examples is in (those within the run's length
    limit: the others' units are never looked up)."""
    too_long = long_rows(part, suite)
    return {part[i].id: c for c, positions in enumerate(chunk_positions(len(part), chunk))
            for i in positions if part[i].id not in too_long}


def _run_shards(ray: Any, examples: list[Example], suite: Suite, remote: list[Evaluator],
                chunk: int, shards: int | None, premade: PremadeGeneration | None,
                cache: SQLiteCache, scratch: Path, progress: Progress,
                replay: UnitReplay) -> dict[str, Any]:
    """Send the shards not merged before, merge each one's cache as it comes back, and add
    the units each made to `replay`."""
    count = shards or max(1, int(ray.cluster_resources().get("CPU", 1)))
    count = max(1, min(count, len(examples)))
    run_key = fingerprint(examples, suite, remote, 0, None)
    parts = {index: shard_examples(examples, (index, count)) for index in range(count)}
    given = {index: premade.for_shard(part) if premade is not None else None
             for index, part in parts.items()}
    keys = {index: _shard_key(run_key, index, count, given[index]) for index in parts}
    merged = cache.get_many(SHARD_MARKERS, list(keys.values()))
    recipes: list[EvaluatorRecipe | Evaluator] = [recipe_for(e) or e for e in remote]
    task = ray.remote(_shard).options(scheduling_strategy="SPREAD")
    pool_ref = ray.put(examples)
    pending: dict[Any, int] = {}
    placement = []
    for index, part in parts.items():
        if not part:
            continue
        if keys[index] in merged:
            placement.append({"shard": index, "examples": len(part), "reused": True})
            continue
        pending[task.remote(part, pool_ref, suite, recipes, chunk, given[index])] = index
    totals: dict[str, EvaluatorStats] = {}
    progress.start("ray shards", len(pending))
    try:
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            index = pending.pop(done[0])
            try:
                outcome = ray.get(done[0])
            except ray.exceptions.RayError as exc:  # the remote traceback is in its text
                raise RayError(f"shard {index} of {count} failed on the cluster: {exc}"
                               ) from exc
            if outcome["version"] != __version__:
                raise RayError(f"the Ray worker on {outcome['host']} runs evalstress "
                               f"{outcome['version']} ({outcome['module']}), this driver "
                               f"{__version__}: install the same version on every node")
            path = scratch / f"shard-{index}.sqlite"
            path.write_bytes(outcome["scores"])
            cache.merge_from(path)
            path.unlink()
            made = scratch / f"shard-{index}.{variantfile.FILE}"
            made.write_bytes(outcome["variants"])
            skipped = scratch / f"shard-{index}.skips.jsonl"
            skipped.write_bytes(outcome["skips"])  # both read as the driver's pass goes
            replay.add_shard(made, skipped, _chunk_of(parts[index], suite, chunk),
                             int(outcome["parses"]))
            cache.put(SHARD_MARKERS, keys[index], {"examples": outcome["examples"]})
            for label, values in outcome["stats"].items():
                totals.setdefault(label, EvaluatorStats()).add(EvaluatorStats(**values))
            placement.append({"shard": index, "examples": outcome["examples"],
                              "reused": False, "node": outcome["node"],
                              "host": outcome["host"], "pid": outcome["pid"],
                              "module": outcome["module"]})
            progress.advance("ray shards")
    finally:
        for ref in pending:
            ray.cancel(ref)
        progress.finish("ray shards")
    return {"name": "ray", "shards": count,
            "placement": sorted(placement, key=lambda p: p["shard"]),
            "shard_stats": {k: asdict(v) for k, v in totals.items()}}


__all__ = ["RayError", "local_runtime_env", "on_cluster", "pregenerate", "ray_session",
           "run_on_ray"]
