"""The Ray backend: on a Ray inside this process, and on a real two-node cluster started with
`ray start`. Either way the score table, variants and generation block are a local run's, the
LLM-written variants are generated once (by the driver) and scored once (by the shards)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from evalstress.cli import app
from evalstress.core.data import Example, builtin_corpus
from evalstress.engine.generation import GenerationSetup, build_setup
from evalstress.engine.imported import load_variants
from evalstress.engine.runner import run
from evalstress.engine.scoring import open_cache
from evalstress.evaluators.base import Evaluator, Score, ScoreRequest, ScoreRow, create_evaluator
from evalstress.job import JobError, StressJob, run_job
from evalstress.llm.fake_server import FakeServer, Reply
from evalstress.suites import custom_suite
from tests.llm_fakes import continue_with

ray = pytest.importorskip("ray", reason="the ray extra is not installed")
jsonschema = pytest.importorskip("jsonschema")

LEXICAL = ["bleu", "chrf", "rouge"]
SUITE = ["truncation", "sentence-replacement", "char-typo"]
SRC = Path(__file__).resolve().parents[2] / "src"
SCHEMA = json.loads((SRC.parent / "docs" / "results.schema.json").read_text(encoding="utf-8"))


def test_the_drivers_pass_replays_the_generation_made_before_the_shards(tmp_path: Path
                                                                        ) -> None:
    """No Ray needed: what the driver generates ahead is what a local run writes, and its own
    pass then asks nothing again; a shard's copy carries its examples' variants only."""
    from evalstress.engine.ray import pregenerate

    suite = custom_suite(["truncation", "continuation"], seeds=1)
    examples = builtin_corpus()[:5]
    with FakeServer(responder=continue_with()) as server:
        spec = f"model=fake,base_url={server.base_url},max_attempts=1"
        local = run(examples, suite, [create_evaluator("rouge")], chunk_size=2,
                    generation=build_setup(spec, cache_dir=tmp_path / "local"))
        setup = build_setup(spec, cache_dir=tmp_path / "ahead")
        premade = pregenerate(examples, suite, setup, 2)
        asked = server.calls
        assert premade is not None and asked == 10  # 5 asked by the local run, 5 ahead
        replayed = run(examples, suite, [create_evaluator("rouge")], chunk_size=2,
                       generation=premade)
        assert server.calls == asked
    assert local.files.path("variants.parquet").read_bytes() == \
        replayed.files.path("variants.parquet").read_bytes()
    assert local.plan.generation == replayed.plan.generation
    shard = premade.for_shard(examples[:2])
    assert shard.generator is None and shard.variants is not None
    assert {v.example_id for v in shard.variants} == {e.id for e in examples[:2]}
    assert {v.perturbation for v in shard.variants} == {"continuation"}


@pytest.fixture(scope="module", autouse=True)
def one_auth_mode(ray_without_tokens: None) -> None:
    """Every Ray of this module without token authentication (`ray_without_tokens`)."""


@pytest.mark.usefixtures("in_process_ray")
class TestInProcess:
    """A Ray started in this process (2 CPUs), shared by the tests of this class."""

    @pytest.mark.slow
    def test_ray_run_gives_the_serial_score_table(self, tmp_path: Path) -> None:
        from evalstress.engine.ray import run_on_ray

        examples = builtin_corpus()[:8]
        serial = run(examples, custom_suite(SUITE, seeds=2),
                     [create_evaluator(n) for n in LEXICAL],
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
        # the same command again sends no shard: each merged shard left its marker
        again = run_on_ray(examples, custom_suite(SUITE, seeds=2),
                           [create_evaluator(n) for n in LEXICAL], cache=cache, chunk_size=3,
                           shards=2)
        assert [p["reused"] for p in again.summary["backend"]["placement"]] == [True, True]
        pd.testing.assert_frame_equal(serial.table, again.table)
        cache.close()

    @pytest.mark.slow
    def test_the_driver_reads_the_shards_units_and_never_perturbs_again(
            self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """BLEU + chrF: the Ray run's table, variants and skips are a local run's, and the
        driver applied no perturbation (the shards' worker processes did all of it)."""
        from evalstress.engine.ray import run_on_ray
        from evalstress.perturb.base import Perturbation

        calls = []
        apply = Perturbation.apply

        def counted(self: Perturbation, *args: Any) -> Any:
            calls.append(self.name)
            return apply(self, *args)

        monkeypatch.setattr(Perturbation, "apply", counted)
        corpus = builtin_corpus()[:7]
        # one sentence: sentence-switching cannot apply, a skip the shard records
        short = Example("short-1", corpus[0].task, corpus[0].source, "The team found a shrimp.",
                        corpus[0].references)
        examples = [*corpus[:3], short, *corpus[3:]]
        suite = ["truncation", "char-typo", "sentence-replacement", "sentence-switching"]
        local = run(examples, custom_suite(suite, seeds=2),
                    [create_evaluator(n) for n in ("bleu", "chrf")],
                    cache=open_cache(tmp_path / "local.sqlite"), chunk_size=3)
        assert len(calls) > 8 * 2 * 3  # the local run made its units here
        calls.clear()
        on_ray = run_on_ray(examples, custom_suite(suite, seeds=2),
                            [create_evaluator(n) for n in ("bleu", "chrf")],
                            cache=open_cache(tmp_path / "ray.sqlite"), chunk_size=3, shards=2)
        assert calls == []
        pd.testing.assert_frame_equal(local.table, on_ray.table)
        assert set(local.table["evaluator"]) == {"bleu", "chrf"}
        for name in ("variants.parquet", "skips.jsonl", "examples.jsonl"):
            assert local.files.path(name).read_bytes() == on_ray.files.path(name).read_bytes()
        assert {s.example_id for s in on_ray.plan.skips} == {"short-1"}
        assert on_ray.plan.parses == local.plan.parses

    @pytest.mark.slow
    def test_llm_written_variants_are_a_local_runs_generated_once(self, tmp_path: Path
                                                                   ) -> None:
        suite = custom_suite(["truncation", "continuation"], seeds=2)
        examples = builtin_corpus()[:6]
        done = {}
        calls = {}
        with FakeServer(responder=continue_with()) as server:
            for backend in ("local", "ray"):
                cache_dir = tmp_path / backend
                setup = build_setup(f"model=fake,base_url={server.base_url},max_attempts=1",
                                    cache_dir=cache_dir)
                before = server.calls
                done[backend] = run_job(StressJob(
                    examples, suite, [create_evaluator("rouge")], cache_dir=cache_dir,
                    generation=setup, workers=1, backend=backend, chunk_size=4))
                calls[backend] = server.calls - before
        local, on_ray = done["local"].run, done["ray"].run
        assert calls["local"] == calls["ray"] == 12  # 6 examples x 2 seeds, each asked once
        assert "continuation" in set(local.table["perturbation"])
        pd.testing.assert_frame_equal(local.table, on_ray.table)
        assert local.files.path("variants.parquet").read_bytes() == \
            on_ray.files.path("variants.parquet").read_bytes()
        # counts and the generator's usage are those of the local run, not doubled
        block = on_ray.plan.generation
        assert block is not None and block == local.plan.generation
        assert block["usage"]["requests"] == 12
        # the shards scored the generated variants too, each once; the driver found them cached
        shard_stats = on_ray.summary["backend"]["shard_stats"]["rouge"]
        assert shard_stats["scored"] == local.stats["rouge"].scored
        assert on_ray.stats["rouge"].scored == 0

    @pytest.mark.slow
    def test_imported_variants_and_a_judge_give_a_local_runs_table(self, tmp_path: Path
                                                                    ) -> None:
        """Imported texts (one under a name outside the suite) are scored by the shards; the
        judge is asked by the driver only, as often as in a local run."""
        examples = builtin_corpus()[:4]
        rows = [{"example_id": examples[0].id, "perturbation": "fact-negation",
                 "text": "Nothing of the kind happened."},
                {"example_id": examples[1].id, "perturbation": "000:negation",
                 "text": "It did not happen that way at all."}]
        variants = tmp_path / "variants.jsonl"
        variants.write_text("".join(json.dumps(r) + "\n" for r in rows))
        suite = custom_suite(["truncation", "fact-negation"], [0])
        done, calls = {}, {}
        with FakeServer(default=Reply("Rating: 4")) as server:
            for backend in ("local", "ray"):
                judge = create_evaluator(f"judge:model=fake,base_url={server.base_url}")
                before = server.calls
                done[backend] = run_job(StressJob(
                    examples, suite, [create_evaluator("rouge"), judge],
                    cache_dir=tmp_path / backend, workers=1, backend=backend,
                    generation=GenerationSetup(imported=load_variants(variants, examples))))
                calls[backend] = server.calls - before
        local, on_ray = done["local"].run, done["ray"].run
        pd.testing.assert_frame_equal(local.table, on_ray.table)
        assert {"fact-negation", "000:negation"} <= set(on_ray.table["perturbation"])
        assert calls["ray"] == calls["local"] > 0
        label = judge.label  # its response cache is the job's --cache-dir
        assert on_ray.usage[label].calls == local.usage[label].calls == calls["local"]
        shard_stats = on_ray.summary["backend"]["shard_stats"]
        assert set(shard_stats) == {"rouge"}  # the judge never left the driver
        assert shard_stats["rouge"]["scored"] == local.stats["rouge"].scored

    @pytest.mark.slow
    def test_a_shard_that_fails_on_its_node_fails_the_job_with_the_reason(
            self, tmp_path: Path) -> None:
        evaluator = NodeBound(home=os.getpid())
        assert evaluator.score([ScoreRequest("two words")])[0]["words"].value == 2.0
        job = StressJob(builtin_corpus()[:2], custom_suite(["truncation"], [0]), [evaluator],
                        cache_dir=tmp_path, backend="ray", workers=1)
        with pytest.raises(JobError, match=r"(?s)shard \d of 2 failed on the cluster: .*"
                                           "model files not found on this node"):
            run_job(job)

    @pytest.mark.slow
    def test_a_dead_generator_makes_the_ray_job_untrusted_too(self, tmp_path: Path) -> None:
        suite = custom_suite(["truncation", "fact-negation"], [0], ["blindspot"])
        with FakeServer(default=Reply(status=401, error="invalid api key")) as server:
            setup = build_setup(f"model=m,base_url={server.base_url},max_attempts=1",
                                cache_dir=tmp_path / "cache")
            done = run_job(StressJob(builtin_corpus()[:2], suite, [create_evaluator("rouge")],
                                     cache_dir=tmp_path / "cache", generation=setup,
                                     backend="ray"))
            asked = server.calls
        shares = {share.evaluator: share for share in done.untrusted}
        assert set(shares) == {"generator"}
        assert shares["generator"].missing == shares["generator"].rows == asked == 2


class NodeBound(Evaluator):
    """Scores in the process it was made in and fails anywhere else, as an evaluator whose
    model files exist on the driver's machine only would."""

    name = "node-bound"

    def __init__(self, home: int):
        super().__init__(home=home)
        self.home = home

    @property
    def aspects(self) -> tuple[str, ...]:
        return ("words",)

    def score_batch(self, requests: Sequence[ScoreRequest]) -> list[ScoreRow]:
        if os.getpid() != self.home:
            raise FileNotFoundError("model files not found on this node")
        return [{"words": Score(float(len(r.text.split())))} for r in requests]


# --- a real cluster: a head and a second node (the `cluster` fixture of tests/conftest.py) ---


def _corpus() -> Path:
    with resources.as_file(resources.files("evalstress") / "corpus" / "sample.jsonl") as path:
        return Path(path)


@pytest.mark.slow
def test_a_run_on_a_two_node_cluster_is_a_local_run(cluster: str, tmp_path: Path) -> None:
    assert not ray.is_initialized()  # the driver joins the cluster itself, then leaves
    runner = CliRunner()
    with FakeServer(responder=continue_with()) as server:
        def evalstress_run(name: str, cache: str, *flags: str,
                           env: dict[str, str] | None = None) -> tuple[dict[str, Any], int]:
            before = server.calls
            started = time.perf_counter()
            result = runner.invoke(app, [
                "run", str(_corpus()), "--limit", "8", "-p", "truncation", "-p", "char-typo",
                "-p", "continuation", "--seeds", "2", "-e", "rouge", "-e", "chrf",
                "--generator", f"model=fake,base_url={server.base_url},max_attempts=1",
                "--out", str(tmp_path / name), "--cache-dir", str(tmp_path / cache),
                "--chunk-size", "3", "--quiet", *flags], env=env)
            assert result.exit_code == 0, result.output
            print(f"{name}: {time.perf_counter() - started:.1f} s")
            return json.loads((tmp_path / name / "results.json").read_text()), \
                server.calls - before

        on_cluster = ["--backend", "ray", "--ray-address", cluster, "--workers", "1"]
        serial, serial_calls = evalstress_run("serial", "serial-cache", "--workers", "1")
        evalstress_run("pooled", "pooled-cache", "--workers", "2")
        on_ray, ray_calls = evalstress_run("ray", "ray-cache", *on_cluster)
        # again, same cache, the cluster named by Ray's own RAY_ADDRESS: every shard and
        # generated text is there already
        again, again_calls = evalstress_run("ray-again", "ray-cache", "--backend", "ray",
                                            "--workers", "1", env={"RAY_ADDRESS": cluster})
    table = pd.read_parquet(tmp_path / "serial" / "scores.parquet")
    assert "continuation" in set(table["perturbation"])
    for other in ("pooled", "ray", "ray-again"):
        pd.testing.assert_frame_equal(table, pd.read_parquet(tmp_path / other / "scores.parquet"))
        assert (tmp_path / "serial" / "variants.parquet").read_bytes() == \
            (tmp_path / other / "variants.parquet").read_bytes()
    assert ray_calls == serial_calls == 16  # 8 examples x 2 seeds, asked once, by the driver
    assert on_ray["generation"] == serial["generation"]
    placement = on_ray["backend"]["placement"]
    # SPREAD placement put one shard on each node; their workers ran this checkout's code
    assert on_ray["backend"]["shards"] == 2 and len({p["node"] for p in placement}) == 2
    assert all(Path(p["module"]) == SRC / "evalstress" for p in placement)
    assert on_ray["backend"]["shard_stats"]["rouge"]["scored"] == \
        serial["evaluators"]["rouge"]["stats"]["scored"]
    assert [p["reused"] for p in again["backend"]["placement"]] == [True, True]
    for results in (on_ray, again):  # the backend block as docs/results.schema.json says
        jsonschema.validate(results, SCHEMA, cls=jsonschema.Draft202012Validator)
    assert again_calls == 0 and again["generation"]["usage"]["calls"] == 0
