"""The fake server's judge personas answer evalstress's judge prompts with known ratings."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalstress.core import biascues
from evalstress.evaluators.base import ScoreRequest, create_evaluator
from evalstress.llm.fake_server import FakeServer
from evalstress.llm.personas import Request, coverage, parse_persona, persona

SOURCE = ("The harbour council voted to rebuild the northern pier after storms damaged its "
          "wooden supports. Fishermen welcomed the decision because boats currently anchor "
          "offshore.")
TEXT = "The council will rebuild the damaged pier, which fishermen welcomed."


def judge(tmp: Path, url: str = "http://127.0.0.1:9/v1", model: str = "gpt-4o-mini",
          form: str = "score-only"):  # type: ignore[no-untyped-def]
    return create_evaluator(f"judge:model={model},base_url={url},form={form},backoff=0.01,"
                            f"cache={tmp / 'llm.sqlite'}")


def body(tmp: Path, text: str, form: str = "score-only") -> dict:  # type: ignore[type-arg]
    made = judge(tmp, form=form)
    try:
        messages = made.messages(ScoreRequest(text, SOURCE, (), "summarization"), "overall")
    finally:
        made.close()
    return {"model": "gpt-4o-mini", "messages": messages}


def rated(reply) -> float:  # type: ignore[no-untyped-def]
    """The expected rating of a persona's reply, as a judge weighing logprobs reads it."""
    probs = reply.label_probs
    return sum(int(k) * p for k, p in probs.items()) / sum(probs.values())


def test_the_coverage_is_the_share_of_the_sources_content_words_the_text_uses() -> None:
    # source content words (4+ letters, not function words nor probe words): harbour, council,
    # voted, rebuild, northern, pier, storms, damaged, wooden, supports, fishermen, welcomed,
    # decision, boats, currently, anchor, offshore -> 17 ("after" is a function word); the
    # text uses council, rebuild, damaged, pier, fishermen, welcomed -> 6
    assert coverage(SOURCE, TEXT) == pytest.approx(6 / 17)


@pytest.mark.parametrize("form", ["score-only", "analyze-rate", "g-eval"])
def test_the_fair_persona_reads_the_prompt_and_rates_the_coverage(tmp_path: Path,
                                                                   form: str) -> None:
    request = Request.of(body(tmp_path, TEXT, form))
    assert request.texts == (TEXT,) and request.source == SOURCE and request.scale == (1, 5)
    reply = persona("fair")(body(tmp_path, TEXT, form))
    assert rated(reply) == pytest.approx(1 + 4 * (0.1 + 0.7 * 6 / 17))
    assert reply.content in ("Rating: 2", "Rating: 3")


@pytest.mark.parametrize("kind", ["verbosity", "authority", "bandwagon", "sycophancy"])
def test_a_biased_persona_adds_its_strength_only_when_its_cue_is_present(tmp_path: Path,
                                                                         kind: str) -> None:
    cue = {"verbosity": biascues.FILLER[0], "authority": biascues.AUTHORITY.format(
        authors="A", year=2020, journal="B"), "bandwagon": biascues.BANDWAGON[0],
        "sycophancy": biascues.SYCOPHANCY[0]}[kind]
    fair = rated(persona("fair")(body(tmp_path, TEXT)))
    biased = persona(f"{kind}:0.6")
    assert rated(biased(body(tmp_path, TEXT))) == pytest.approx(fair)
    assert rated(biased(body(tmp_path, f"{TEXT} {cue}"))) == pytest.approx(fair + 0.6)
    assert rated(biased(body(tmp_path, f"{TEXT} {biascues.NEUTRAL[3]}"))) == pytest.approx(fair)


def test_self_preference_rewards_only_its_own_models_family(tmp_path: Path) -> None:
    fair = rated(persona("fair")(body(tmp_path, TEXT)))
    biased = persona("self-preference:1")
    own = f"{TEXT} {biascues.self_cue('gpt')}"
    other = f"{TEXT} {biascues.self_cue('claude')}"
    assert rated(biased(body(tmp_path, own))) == pytest.approx(fair + 1)
    assert rated(biased(body(tmp_path, other))) == pytest.approx(fair)


def test_noisy_is_seeded_by_the_request_and_constant_never_moves(tmp_path: Path) -> None:
    noisy = persona("noisy:0.5")
    first = rated(noisy(body(tmp_path, TEXT)))
    assert rated(noisy(body(tmp_path, TEXT))) == first
    assert rated(noisy(body(tmp_path, TEXT + "\n"))) != first
    assert rated(persona("constant")(body(tmp_path, "anything at all"))) == 3


def test_pairwise_fair_prefers_more_coverage_and_ties_whatever_the_order(tmp_path: Path) -> None:
    with FakeServer(responder=persona("fair")) as server:
        made = judge(tmp_path, server.base_url)
        try:
            better = ScoreRequest(TEXT, SOURCE, (), "summarization")
            worse = ScoreRequest("The pier is old.", SOURCE, (), "summarization")
            twin = ScoreRequest(TEXT + " ", SOURCE, (), "summarization")
            results = made.compare([better, better], [worse, twin])
        finally:
            made.close()
    assert (results[0].ab, results[0].ba) == ("a", "a")
    assert (results[1].ab, results[1].ba) == ("tie", "tie")


def test_pairwise_position_prefers_the_first_text_when_the_gap_is_below_its_strength(
        tmp_path: Path) -> None:
    with FakeServer(responder=persona("position:2")) as server:
        made = judge(tmp_path, server.base_url)
        try:
            better = ScoreRequest(TEXT, SOURCE, (), "summarization")
            worse = ScoreRequest("The pier is old.", SOURCE, (), "summarization")
            result = made.compare([better], [worse])[0]
        finally:
            made.close()
    assert (result.ab, result.ba) == ("a", "b")  # the first shown wins both times


def test_a_persona_spec_names_its_parts_and_refuses_an_unknown_one() -> None:
    parts = parse_persona("authority:0.5+noisy:0.3")
    assert [(p.kind, p.strength) for p in parts] == [("authority", 0.5), ("noisy", 0.3)]
    with pytest.raises(ValueError, match="unknown persona 'authorty'"):
        parse_persona("authorty:1")
