"""The Ray backend: shards of examples run as Ray tasks, merged by cache key.

Each task runs the whole pipeline (rule and model perturbations, CPU metrics, local models,
judges) on one shard of the examples, with the whole dataset as the pool perturbations borrow
from, into a fresh score cache of its own; it returns that cache file. The driver merges every
shard's cache into the run's cache by key, as `evalstress cache merge` does with `--shard` runs,
then makes one local streaming pass that finds every score cached: the score table, variants
and files are those of a serial run of the same command.

Connects to the cluster named by `address` or `RAY_ADDRESS`; without one, starts a local Ray.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from evalstress.core.cache import SQLiteCache
from evalstress.core.data import Example
from evalstress.core.records import Progress
from evalstress.engine.chunkwork import EvaluatorRecipe, recipe_for
from evalstress.engine.planning import shard_examples
from evalstress.engine.result import RunResult
from evalstress.engine.runner import run
from evalstress.engine.scoring import EvaluatorStats, configure_caches, open_cache
from evalstress.evaluators.base import Evaluator
from evalstress.suites import Suite


def local_runtime_env() -> dict[str, Any]:
    """Workers of a local Ray import evalstress from where this process did (a checkout too)."""
    here = str(Path(__file__).resolve().parents[2])  # src/evalstress/engine/ray.py -> src
    paths = [here, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {"env_vars": {"PYTHONPATH": os.pathsep.join(dict.fromkeys(paths))}}


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RuntimeError("the Ray backend needs the ray extra: pip install 'evalstress[ray]'"
                           ) from None
    return ray


def _shard(examples: list[Example], pool: list[Example], suite: Suite,
           evaluators: list[EvaluatorRecipe | Evaluator], chunk_size: int | None
           ) -> dict[str, Any]:
    """Body of one Ray task: run a shard into its own caches and hand back their files."""
    folder = Path(tempfile.mkdtemp(prefix="evalstress-shard-"))
    try:
        built = [e.build() if isinstance(e, EvaluatorRecipe) else e for e in evaluators]
        configure_caches(built, folder, no_cache=False)
        cache = SQLiteCache(folder / "scores.sqlite", "scores")
        try:
            result = run(examples, suite, built, cache=cache, pool=pool, chunk_size=chunk_size)
            stats = {label: asdict(s) for label, s in result.stats.items()}
        finally:
            for evaluator in built:
                evaluator.close()
            cache.close()
        files = {name: (folder / name).read_bytes() for name in ("scores.sqlite", "llm.sqlite")
                 if (folder / name).exists()}
        return {"files": files, "stats": stats, "examples": len(examples)}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run_on_ray(examples: Sequence[Example], suite: Suite, evaluators: Sequence[Evaluator], *,
               cache: SQLiteCache | None = None, progress: Progress | None = None,
               workdir: str | Path | None = None, chunk_size: int | None = None,
               shards: int | None = None, address: str | None = None,
               num_cpus: int | None = None) -> RunResult:
    """Score shards as Ray tasks, merge their caches into `cache`, then build the run locally."""
    ray = _ray()
    progress = progress or Progress()
    examples = list(examples)
    if not ray.is_initialized():
        target = address or os.environ.get("RAY_ADDRESS") or None
        ray.init(address=target, num_cpus=None if target else num_cpus,
                 runtime_env=None if target else local_runtime_env(),
                 include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    count = shards or max(1, int(ray.cluster_resources().get("CPU", 1)))
    count = max(1, min(count, len(examples)))
    recipes: list[EvaluatorRecipe | Evaluator] = [recipe_for(e) or e for e in evaluators]
    task = ray.remote(_shard)
    pool_ref = ray.put(examples)
    pending = []
    for index in range(count):
        part = shard_examples(examples, (index, count))
        if part:
            pending.append(task.remote(part, pool_ref, suite, recipes, chunk_size))
    owned = cache is None  # --no-cache: merge into a cache that lives for this run only
    scratch = Path(tempfile.mkdtemp(prefix="evalstress-ray-"))
    target_cache = cache or SQLiteCache(scratch / "scores.sqlite", "scores")
    totals: dict[str, EvaluatorStats] = {}
    progress.start("ray shards", len(pending))
    try:
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            outcome = ray.get(done[0])
            _merge(outcome["files"], target_cache, evaluators, scratch)
            for label, values in outcome["stats"].items():
                totals.setdefault(label, EvaluatorStats()).add(EvaluatorStats(**values))
            progress.advance("ray shards")
        progress.finish("ray shards")
        result = run(examples, suite, evaluators, cache=target_cache, progress=progress,
                     workdir=workdir, chunk_size=chunk_size, workers=1)
    finally:
        if owned:
            target_cache.close()
        shutil.rmtree(scratch, ignore_errors=True)
    result.summary["backend"] = {"name": "ray", "shards": count,
                                 "shard_stats": {k: asdict(v) for k, v in totals.items()}}
    return result


def _merge(files: dict[str, bytes], cache: SQLiteCache, evaluators: Sequence[Evaluator],
           scratch: Path) -> None:
    """Merge a shard's cache files by key (entries already here are kept)."""
    folder = Path(tempfile.mkdtemp(dir=scratch))
    for name, data in files.items():
        (folder / name).write_bytes(data)
    cache.merge_from(folder / "scores.sqlite")
    if "llm.sqlite" in files:
        for evaluator in evaluators:
            client = getattr(evaluator, "client", None)
            store = getattr(getattr(client, "cache", None), "store", None)
            if store is not None:
                store.merge_from(folder / "llm.sqlite")
                break
    shutil.rmtree(folder, ignore_errors=True)


__all__ = ["open_cache", "run_on_ray"]
