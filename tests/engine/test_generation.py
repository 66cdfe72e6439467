"""The generation stage on the fake server: scripted good, refused, unchanged, too long and
malformed answers; re-asks, Skip reasons, counts, cache keys, resume after a kill."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from evalstress.core.data import Example
from evalstress.core.text import TextParser
from evalstress.engine.generation import (
    REASK_STRIDE,
    USAGE_KEYS,
    GenerationError,
    GenerationOptions,
    GenerationSetup,
    estimate_generation,
    generate_variants,
    llm_units,
    read_verdict,
    sample_index,
)
from evalstress.engine.planning import plan_dataset
from evalstress.engine.variantfile import variant_table
from evalstress.llm.cache import ResponseCache
from evalstress.llm.client import ChatResponse
from evalstress.llm.fake_server import FakeServer, Reply
from evalstress.llm.generate import GenerationJob, TextGenerator
from evalstress.perturb.precision import precision_table
from evalstress.suites import Suite, custom_suite
from tests.llm_fakes import (
    answer,
    asked,
    continue_with,
    is_verifier,
    labelled_originals,
    labelled_writer,
)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = [
    Example("e1", "summarization", "", "Maria drove to the market in Lisbon on Monday. She "
            "bought bread and two kilos of oranges."),
    Example("e2", "story", "", "The ferry left the harbour at dawn. Tomas counted the gulls "
            "that followed it."),
    Example("e3", "qa", "", "Aunt Rosa planted tomatoes in April. The family ate them in "
            "September."),
]
ORIGINALS = {e.id: e.hypothesis for e in EXAMPLES}


@pytest.fixture(scope="module")
def parser() -> TextParser:
    return TextParser()


def generator(server: FakeServer, tmp_path: Path, **params: object) -> TextGenerator:
    settings = {"cache": str(tmp_path / "llm.sqlite"), "max_attempts": 1, **params}
    return TextGenerator("fake", server.base_url, **settings)  # type: ignore[arg-type]


def run(server: FakeServer, tmp_path: Path, parser: TextParser, names: list[str],
        seeds: int = 1, options: GenerationOptions | None = None, **params: object):
    suite = custom_suite(names, seeds=seeds)
    gen = generator(server, tmp_path, **params)
    try:
        return generate_variants(EXAMPLES, llm_units(EXAMPLES, suite), gen, parser,
                                 options=options), gen
    finally:
        gen.close()


def test_good_answers_become_variants_with_provenance(tmp_path: Path, parser: TextParser) -> None:
    with FakeServer(responder=continue_with()) as server:
        outcome, _ = run(server, tmp_path, parser, ["continuation"], seeds=2)
    assert server.calls == 6 and not outcome.skips
    counts = outcome.counts["continuation"]
    assert (counts.planned, counts.accepted, counts.asks, counts.reasks) == (6, 6, 6, 0)
    assert counts.acceptance_rate == 1.0 and not counts.rejections
    by_id = {e.id: e for e in EXAMPLES}
    for variant in outcome.variants:
        original = by_id[variant.example_id].hypothesis
        assert variant.text == original + " Everyone agreed to meet again the next week."
        assert variant.noise_ratio == pytest.approx(8 / len(original.split()))
        assert variant.provenance is not None
        assert variant.provenance["method"] == "llm" and variant.provenance["model"] == "fake"
        assert variant.provenance["sample"] == variant.seed * REASK_STRIDE
    # seed 1 is asked with its own sample index, which moves the sampling seed
    assert sorted(r["seed"] for r in server.requests) == [0, 0, 0, 1000, 1000, 1000]


@pytest.mark.parametrize(("reply", "category"), [
    (answer(lambda t: "I'm sorry, but I cannot help with rewriting this text."), "refusal"),
    (answer(lambda t: f"<text>{t}</text>"), "unchanged"),
    (answer(lambda t: f"<text>{t} {t} {t} {t}</text>"), "too-long"),
    (lambda r: cut_off(f"<text>{asked(r)} And then the"), "cut-off"),  # hit max_tokens
    (answer(lambda t: "<text>Sorry, I can't"), "refusal"),  # unclosed, ended on purpose
    (answer(lambda t: "Here it is: <text>"), "cut-off"),  # malformed: an empty open block
    (answer(lambda t: "<text>   </text>"), "empty"),
    (answer(lambda t: f"<text>{t.replace('.', ' again.', 1)} It rained.</text>"),
     "appends-only"),
])
def test_rejected_answers_are_reasked_then_skipped_with_the_reason(
        tmp_path: Path, parser: TextParser, reply, category: str) -> None:
    with FakeServer(responder=reply) as server:
        outcome, _ = run(server, tmp_path, parser, ["continuation"],
                         options=GenerationOptions(max_reasks=2))
    assert not outcome.variants and server.calls == 9  # 3 units x (1 ask + 2 re-asks)
    counts = outcome.counts["continuation"]
    assert (counts.planned, counts.skipped, counts.asks, counts.reasks) == (3, 3, 9, 6)
    assert counts.rejections == {category: 9} and counts.acceptance_rate == 0.0
    for skip in outcome.skips:
        assert skip.reason.startswith(f"no acceptable rewrite in 3 asks; last: {category}: ")
    # each re-ask is a new sample: sampling seeds 0, 1, 2 for every unit
    assert sorted(r["seed"] for r in server.requests) == [0, 0, 0, 1, 1, 1, 2, 2, 2]


def cut_off(content: str) -> Reply:
    """An answer that stopped at the token limit (finish_reason "length")."""
    body = {"id": "x", "object": "chat.completion", "created": 0, "model": "fake",
            "choices": [{"index": 0, "finish_reason": "length",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 768}}
    return Reply(body=json.dumps(body).encode())


def test_an_unclosed_block_the_model_ended_itself_is_read(tmp_path: Path,
                                                          parser: TextParser) -> None:
    with FakeServer(responder=answer(lambda t: f"<text>\n{t} The rest came later that day."
                                     )) as server:
        outcome, _ = run(server, tmp_path, parser, ["continuation"])
    assert outcome.counts["continuation"].accepted == 3 and server.calls == 3
    assert all(v.text.endswith("The rest came later that day.") for v in outcome.variants)


def test_a_later_ask_can_succeed(tmp_path: Path, parser: TextParser) -> None:
    def reply(request: dict) -> Reply:
        if request["seed"] == 0:  # the first ask of every unit refuses
            return Reply("Sorry, I can't do that.")
        return Reply(f"<text>{asked(request)} They went home happy.</text>")

    with FakeServer(responder=reply) as server:
        outcome, _ = run(server, tmp_path, parser, ["continuation"])
    counts = outcome.counts["continuation"]
    assert (counts.accepted, counts.asks, counts.reasks) == (3, 6, 3)
    assert counts.rejections == {"refusal": 3}
    assert all(v.provenance and v.provenance["asks"] == 2 and v.provenance["sample"] == 1
               for v in outcome.variants)


def test_preamble_and_fence_answers_are_read(tmp_path: Path, parser: TextParser) -> None:
    with FakeServer(responder=answer(
            lambda t: f"Sure! Here is the continued text:\n{t} The end came quickly.")) as server:
        outcome, _ = run(server, tmp_path, parser, ["continuation"])
    assert outcome.counts["continuation"].accepted == 3
    assert all(v.text.endswith("The end came quickly.") and not v.text.startswith("Sure")
               for v in outcome.variants)


def test_a_failed_request_is_skipped_not_reasked_and_not_cached(tmp_path: Path,
                                                                parser: TextParser) -> None:
    with FakeServer(default=Reply(body=b"{not json")) as server:
        outcome, _ = run(server, tmp_path, parser, ["continuation"],
                         options=GenerationOptions(max_reasks=2))
        assert server.calls == 3  # one attempt each (max_attempts=1), no re-ask
        counts = outcome.counts["continuation"]
        assert counts.rejections == {"request-failed": 3} and counts.skipped == 3
        assert all(s.reason.startswith("request failed: malformed") for s in outcome.skips)
        run(server, tmp_path, parser, ["continuation"])
        assert server.calls == 6  # failures are not cached: the rerun asks again


def test_cached_rerun_makes_no_call_and_gives_the_same_variants(tmp_path: Path,
                                                                parser: TextParser) -> None:
    with FakeServer(responder=continue_with()) as server:
        first, _ = run(server, tmp_path, parser, ["continuation", "fact-negation"])
        calls = server.calls
        second, gen = run(server, tmp_path, parser, ["continuation", "fact-negation"])
        assert server.calls == calls  # 0 calls: every answer comes from the response cache
    # the same rows of variants.parquet, provenance included: a run resumed or repeated from
    # the cache writes what a fresh one writes (the cache hits are counted in the usage)
    assert variant_table(second.variants).to_pylist() == variant_table(first.variants).to_pylist()
    assert [s.reason for s in second.skips] == [s.reason for s in first.skips]
    assert gen.usage.calls == 0 and gen.usage.cache_hits == first.counts["continuation"].asks \
        + first.counts["fact-negation"].asks


def test_cache_keys_follow_messages_sampling_and_sample_index(tmp_path: Path) -> None:
    suite = custom_suite(["hypernym", "abbreviation"], seeds=2)
    units = llm_units(EXAMPLES[:1], suite)
    gen = TextGenerator("fake", "http://127.0.0.1:9/v1", cache=False)
    keys = {}
    for unit in units:
        messages = unit.perturbation.messages(unit.example.hypothesis, unit.example.task,
                                              unit.severity)
        for ask in (0, 1):
            keys[(unit.name, unit.seed, ask)] = gen.key(
                GenerationJob.of(messages, sample_index(unit.seed, ask)))
    assert len(set(keys.values())) == len(keys) == 8  # attack, seed and ask all matter
    again = TextGenerator("fake", "http://127.0.0.1:9/v1", cache=False)
    unit = units[0]
    messages = unit.perturbation.messages(unit.example.hypothesis, unit.example.task, "default")
    assert again.key(GenerationJob.of(messages, 0)) == keys[(unit.name, 0, 0)]  # stable
    warmer = TextGenerator("fake", "http://127.0.0.1:9/v1", cache=False, temperature=0.9)
    assert warmer.key(GenerationJob.of(messages, 0)) != keys[(unit.name, 0, 0)]
    assert sample_index(3, 2) == 3002
    with pytest.raises(ValueError):
        sample_index(0, REASK_STRIDE)


def test_a_plan_with_llm_units_and_no_generator_stops_before_any_work() -> None:
    parser = TextParser()
    suite = custom_suite(["truncation", "passive-voice"], seeds=1)
    with pytest.raises(GenerationError, match=r"plans 3 LLM-written variants \(passive-voice\) "
                                              r"but no generator is set: pass --generator"):
        plan_dataset(EXAMPLES, suite, parser=parser)
    assert parser.parses == 0
    plan_dataset(EXAMPLES, custom_suite(["truncation"], seeds=1), parser=parser)  # rules alone: fine


def test_units_the_text_cannot_take_cost_no_call(tmp_path: Path, parser: TextParser) -> None:
    examples = [Example("p", "qa", "", "The soup was warm and the bread was fresh.")]
    suite = custom_suite(["fictional-named-entities"], seeds=1)
    with FakeServer(responder=continue_with()) as server:
        gen = generator(server, tmp_path)
        outcome = generate_variants(examples, llm_units(examples, suite), gen, parser)
    assert server.calls == 0
    counts = outcome.counts["fictional-named-entities"]
    assert (counts.planned, counts.not_applicable, counts.asks) == (2, 2, 0)
    assert outcome.skips[0].reason.startswith("not applicable: needs at least 1 named entity")


def test_the_verifier_can_veto_a_valid_rewrite(tmp_path: Path, parser: TextParser) -> None:
    writer = continue_with()

    def reply(request: dict) -> Reply:
        if is_verifier(request):  # vetoes the rewrite of e2, approves the others
            rewrite = request["messages"][-1]["content"].split("Rewrite:")[1]
            return Reply("No." if "ferry" in rewrite else "Yes, it does.")
        return writer(request)

    with FakeServer(responder=reply) as server:
        verifier = TextGenerator("fake-judge", server.base_url, cache=False, temperature=0.0)
        outcome, _ = run(server, tmp_path, parser, ["continuation"],
                         options=GenerationOptions(max_reasks=1, verifier=verifier))
    counts = outcome.counts["continuation"]
    assert counts.accepted == 2 and counts.rejections == {"verifier-rejected": 2}
    assert [s.example_id for s in outcome.skips] == ["e2"]
    assert read_verdict("Verdict: yes") is True and read_verdict("no, it adds facts") is False
    assert read_verdict("Maybe.") is None


def test_batches_give_the_same_outcome_as_one_batch(tmp_path: Path, parser: TextParser) -> None:
    with FakeServer(responder=continue_with()) as server:
        whole, _ = run(server, tmp_path / "a", parser, ["continuation"], seeds=3)
        split, _ = run(server, tmp_path / "b", parser, ["continuation"], seeds=3,
                       options=GenerationOptions(batch_size=2))
    assert [(v.id, v.text) for v in whole.variants] == [(v.id, v.text) for v in split.variants]


def test_make_plan_writes_the_results_block(tmp_path: Path) -> None:
    suite = custom_suite(["truncation", "continuation"], seeds=1)
    with FakeServer(responder=continue_with()) as server:
        gen = generator(server, tmp_path)
        setup = GenerationSetup(gen, GenerationOptions(max_reasks=1))
        plan = plan_dataset(EXAMPLES, suite, generation=setup)
    block = plan.generation
    assert block is not None
    assert block["generator"]["model"] == "fake" and set(block["usage"]) == set(USAGE_KEYS)
    assert block["usage"]["calls"] == 3
    entry = block["perturbations"]["continuation"]
    assert {"planned", "accepted", "skipped", "asks", "reasks", "acceptance_rate",
            "rejections"} <= set(entry)
    assert entry["planned"] == entry["accepted"] == 3 and entry["acceptance_rate"] == 1.0
    assert {v.perturbation for v in plan.variants} == {"truncation", "continuation"}
    json.dumps(block)  # plain JSON


def test_estimate_counts_first_asks_net_of_the_cache(tmp_path: Path, parser: TextParser) -> None:
    suite = custom_suite(["continuation"], seeds=2)
    units = llm_units(EXAMPLES, suite)
    with FakeServer(responder=continue_with()) as server:
        gen = generator(server, tmp_path)
        before = estimate_generation(units, gen, parser)
        assert before["calls"] == 6 and before["cached"] == 0 and before["prompt_tokens"] > 0
        generate_variants(EXAMPLES, units[:2], gen, parser)
        after = estimate_generation(units, gen, parser)
        assert server.calls == 2
    assert after["calls"] == 4 and after["cached"] == 2


KILLED_RUN = textwrap.dedent("""
    import sys
    from evalstress.core.data import Example
    from evalstress.engine.generation import generate_variants, llm_units
    from evalstress.llm.generate import TextGenerator
    from evalstress.suites import custom_suite
    from evalstress.core.text import TextParser
    examples = [Example(f"x{i}", "summarization", "", f"Item {i} arrived in Oslo on time. "
                        "The crew unloaded it quickly.") for i in range(20)]
    gen = TextGenerator("fake", sys.argv[1], cache=sys.argv[2], max_concurrency=2,
                        max_attempts=1)
    units = llm_units(examples, custom_suite(["continuation"], seeds=2))
    generate_variants(examples, units, gen, TextParser())
""")


def _stored_answers(cache: Path) -> int:
    """Answers the killed run's cache holds so far (0 before it exists), read-only."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{cache}?mode=ro", uri=True)) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])
    except sqlite3.Error:
        return 0


@pytest.mark.slow
def test_a_killed_run_resumes_without_repeating_a_call(tmp_path: Path,
                                                       parser: TextParser) -> None:
    cache = tmp_path / "llm.sqlite"
    with FakeServer(responder=continue_with(), latency=0.05) as server:
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        child = subprocess.Popen([sys.executable, "-c", KILLED_RUN, server.base_url, str(cache)],
                                 env=env, cwd=ROOT)
        deadline = time.monotonic() + 120
        # killed once 12 calls were asked and 10 answers stored: an answer reaches the cache a
        # moment after the server counts its call, so counting calls alone raced the writes
        while (server.calls < 12 or _stored_answers(cache) < 10) \
                and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.01)
        child.send_signal(signal.SIGKILL)
        child.wait()
        assert 12 <= server.calls < 40, "the run must be killed midway"
        store = ResponseCache(cache)
        done = {(json.dumps(p["messages"]), p["sample"]) for p in store.entries()}
        store.close()
        assert 10 <= len(done) < 40
        server.reset_counters()
        examples = [Example(f"x{i}", "summarization", "", f"Item {i} arrived in Oslo on time. "
                            "The crew unloaded it quickly.") for i in range(20)]
        gen = TextGenerator("fake", server.base_url, cache=str(cache), max_attempts=1)
        units = llm_units(examples, custom_suite(["continuation"], seeds=2))
        outcome = generate_variants(examples, units, gen, parser)
        gen.close()
        asked_again = {(json.dumps(r["messages"]), r["seed"]) for r in server.requests}
    assert server.calls == 40 - len(done)  # only what the killed run had not finished
    assert not asked_again & done
    assert outcome.counts["continuation"].accepted == 40


def test_suite_yaml_carries_generator_and_generation_settings() -> None:
    suite = Suite.from_dict({"perturbations": ["continuation"], "generator":
                             "model=m,base_url=http://127.0.0.1:9/v1",
                             "generation": {"max_reasks": 4}})
    assert suite.generator == "model=m,base_url=http://127.0.0.1:9/v1"
    assert suite.generation == {"max_reasks": 4}
    with pytest.raises(ValueError, match="unknown key"):
        Suite.from_dict({"perturbations": ["continuation"], "generation": {"retries": 1}})


# --- how far accepted variants are trusted ------------------------------------------------------

LABELLED_EXAMPLES = [Example(key, *labelled_originals()[key][:1], "", labelled_originals()[key][1])
                     for key in ("library", "tunnel")]
BELOW_FLOOR = ["uncommon-phrase", "rewriting-and-insertion"]


def _labelled_run(server: FakeServer, tmp_path: Path, parser: TextParser, names: list[str],
                  options: GenerationOptions | None = None):  # type: ignore[no-untyped-def]
    gen = generator(server, tmp_path)
    try:
        suite = custom_suite(names, seeds=1)
        return generate_variants(LABELLED_EXAMPLES, llm_units(LABELLED_EXAMPLES, suite), gen,
                                 parser, options=options)
    finally:
        gen.close()


def test_variants_of_attacks_below_the_floor_are_unverified(tmp_path: Path,
                                                             parser: TextParser) -> None:
    with FakeServer(responder=labelled_writer()) as server:
        outcome = _labelled_run(server, tmp_path, parser, [*BELOW_FLOOR, "hypernym"])
    shipped = precision_table()["checks"]
    made = {(v.example_id, v.perturbation, v.severity): v.provenance for v in outcome.variants}
    # both texts, uncommon-phrase and hypernym once, rewriting-and-insertion minor and major:
    # every rewrite of the set passes the checks
    assert len(made) == 8 and not outcome.skips
    for (_, name, _), provenance in made.items():
        assert provenance is not None
        assert provenance["check_precision"] == shipped[name]["precision"]
        assert provenance["verification"] == ("checks" if name == "hypernym"
                                              else "unverified")
        assert "verifier" not in provenance
    counts = outcome.counts
    assert (counts["uncommon-phrase"].unverified, counts["rewriting-and-insertion"].unverified,
            counts["hypernym"].unverified) == (2, 4, 0)
    table = variant_table(outcome.variants).to_pylist()
    assert {(r["perturbation"], r["verification"], r["check_precision"]) for r in table} == {
        (name, "checks" if name == "hypernym" else "unverified",
         shipped[name]["precision"]) for name in [*BELOW_FLOOR, "hypernym"]}


def test_a_verifier_verifies_or_rejects_each_variant(tmp_path: Path, parser: TextParser) -> None:
    writer, asked_verifier = labelled_writer(), []

    def reply(request: dict) -> Reply:
        if is_verifier(request):  # yes about the library, no about the tunnel
            said = request["messages"][-1]["content"]
            asked_verifier.append(said)
            return Reply("no" if "Tunnel" in said or "tunnel" in said else "Yes.")
        return writer(request)

    with FakeServer(responder=reply) as server:
        verifier = TextGenerator("fake-judge", server.base_url, cache=False, temperature=0.0)
        outcome = _labelled_run(server, tmp_path, parser, ["uncommon-phrase"],
                                GenerationOptions(max_reasks=0, verifier=verifier))
    [variant] = outcome.variants
    assert variant.example_id == "library" and variant.provenance is not None
    # each of the library's two changed sentences was asked about both ways
    assert variant.provenance["verifier"] == ["Yes."] * 4
    assert variant.provenance["verification"] == "verifier"
    assert sum("Sentence A: The Wexley library does not open" in a for a in asked_verifier) == 1
    [skip] = outcome.skips
    assert skip.example_id == "tunnel" and "verifier-rejected" in skip.reason
    counts = outcome.counts["uncommon-phrase"]
    assert counts.unverified == 0 and counts.rejections == {"verifier-rejected": 1}


class _RecordingVerifier:
    """A stand-in for an in-process verifier: records the jobs it is given, answers yes."""

    def __init__(self, model: str) -> None:
        self.model, self.temperature, self.jobs = model, 0.0, []  # type: ignore[var-annotated]

    def generate_many(self, jobs):  # type: ignore[no-untyped-def]
        self.jobs.extend(jobs)
        return [ChatResponse("yes") for _ in jobs]


@pytest.mark.parametrize(("model", "grammar"), [("local", True), ("fake-judge", False)])
def test_an_in_process_verifier_is_held_to_yes_or_no(tmp_path: Path, parser: TextParser,
                                                    model: str, grammar: bool) -> None:
    recording = _RecordingVerifier(model)
    with FakeServer(responder=labelled_writer()) as server:
        outcome = _labelled_run(server, tmp_path, parser, ["rewriting-and-insertion"],
                                GenerationOptions(verifier=recording))  # type: ignore[arg-type]
    assert recording.jobs and len(outcome.variants) == 4
    extras = {dict(job.extra).get("grammar") for job in recording.jobs}
    assert extras == ({'root ::= "yes" | "no"\n'} if grammar else {None})


def test_the_results_block_shows_each_attacks_verification(tmp_path: Path,
                                                           parser: TextParser) -> None:
    suite = custom_suite([*BELOW_FLOOR, "hypernym"], seeds=1)
    with FakeServer(responder=labelled_writer()) as server:
        setup = GenerationSetup(generator(server, tmp_path))
        setup.check(suite, LABELLED_EXAMPLES)
        outcome = setup.run(LABELLED_EXAMPLES, suite, parser)
        block = setup.block(outcome.counts)
        setup.close()
    assert block is not None
    shipped = precision_table()["checks"]
    rows = block["perturbations"]
    assert rows["uncommon-phrase"]["verification"] == "unverified"
    assert rows["uncommon-phrase"]["unverified"] == 2
    assert rows["rewriting-and-insertion"]["check_precision"] == \
        shipped["rewriting-and-insertion"]["precision"]
    assert rows["hypernym"]["verification"] == "checks"
    assert rows["hypernym"]["below_floor"] is False
    assert block["precision"]["floor"] == 0.95
    assert block["precision"]["measured"] == precision_table()["measured"]
