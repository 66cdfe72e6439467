"""The Ray backend on a local Ray with 2 workers: the score table of a serial run, by cache key."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from evalstress.core.data import builtin_corpus
from evalstress.engine.runner import run
from evalstress.engine.scoring import open_cache
from evalstress.evaluators.base import create_evaluator
from evalstress.suites import custom_suite

ray = pytest.importorskip("ray", reason="the ray extra is not installed")

LEXICAL = ["bleu", "chrf", "rouge"]
SUITE = ["truncation", "sentence-replacement", "char-typo"]


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    from evalstress.engine.ray import local_runtime_env

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env=local_runtime_env())
    try:
        yield
    finally:
        ray.shutdown()


@pytest.mark.slow
def test_ray_run_gives_the_serial_score_table(local_ray: None, tmp_path: Path) -> None:
    from evalstress.engine.ray import run_on_ray

    examples = builtin_corpus()[:8]
    serial = run(examples, custom_suite(SUITE, seeds=2), [create_evaluator(n) for n in LEXICAL],
                 cache=open_cache(tmp_path / "serial.sqlite"), chunk_size=3)
    cache = open_cache(tmp_path / "ray.sqlite")
    on_ray = run_on_ray(examples, custom_suite(SUITE, seeds=2),
                        [create_evaluator(n) for n in LEXICAL], cache=cache, chunk_size=3,
                        shards=2)
    pd.testing.assert_frame_equal(serial.table, on_ray.table)
    assert serial.files.path("variants.parquet").read_bytes() == \
        on_ray.files.path("variants.parquet").read_bytes()
    # the shards scored everything: the local pass found every score in the merged cache
    assert all(s.scored == 0 for s in on_ray.stats.values())
    shard_stats = on_ray.summary["backend"]["shard_stats"]
    assert shard_stats["rouge"]["scored"] == serial.stats["rouge"].scored
    assert on_ray.summary["backend"]["shards"] == 2
