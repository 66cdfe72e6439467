"""A judge prompt of the user's own: template files, placeholders and their errors, the content
hash in the signature, and examples that lack what a template shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalstress.evaluators.base import ScoreRequest, create_evaluator
from evalstress.evaluators.judge_prompt import TemplateError, load_template
from evalstress.llm.fake_server import FakeServer, Reply
from tests.evaluators.fake_judges import fake_judge as judge

REQ = ScoreRequest("The mill will become 300 homes.", "Harwick approved a plan on Monday.",
                   ("Harwick will turn the mill into homes.", "The mill becomes housing."),
                   "summarization")


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_plain_text_template_is_the_user_message_with_every_placeholder_filled(
        server: FakeServer, tmp_path: Path) -> None:
    prompt = write(tmp_path, "judge.txt",
                   "Source: {source}\nSummary: {text}\nGold: {reference}\nAll:\n{references}\n"
                   "Judge {aspect} ({scale}, {scale_min} to {scale_max}).\n{criterion}\n"
                   'Reply as {"score": N}, or {{literal}}.\n')
    server.default = Reply("Score: 4")
    evaluator = judge(server, tmp_path, prompt=prompt, aspect="fluency", level="term-only",
                      output="regex:Score: (?P<score>\\d)")
    [row] = evaluator.score([REQ])
    assert row["fluency"].value == 4.0
    [message] = server.requests[0]["messages"]  # no system message of ours
    assert message == {"role": "user", "content": (
        "Source: Harwick approved a plan on Monday.\nSummary: The mill will become 300 homes.\n"
        "Gold: Harwick will turn the mill into homes.\nAll:\n"
        "1. Harwick will turn the mill into homes.\n2. The mill becomes housing.\n"
        "Judge fluency (1-5, 1 to 5).\nFluency\n"
        'Reply as {"score": N}, or {literal}.')}


def test_yaml_template_with_system_part_and_few_shot_turns(server: FakeServer,
                                                           tmp_path: Path) -> None:
    prompt = write(tmp_path, "judge.yaml", (
        "system: You grade summaries.\n"
        "examples:\n"
        "  - user: 'Summary: Cats are dogs.'\n"
        "    assistant: 'Score: 1'\n"
        "user: 'Summary: {text}'\n"))
    server.default = Reply("Score: 5")
    judge(server, tmp_path, prompt=prompt, output="regex:Score: (?P<score>\\d)").score([REQ])
    assert server.requests[0]["messages"] == [
        {"role": "system", "content": "You grade summaries."},
        {"role": "user", "content": "Summary: Cats are dogs."},
        {"role": "assistant", "content": "Score: 1"},
        {"role": "user", "content": f"Summary: {REQ.text}"}]


def test_chat_message_list_template(tmp_path: Path) -> None:
    prompt = write(tmp_path, "chat.json", '[{"role": "system", "content": "Be strict."}, '
                                          '{"role": "user", "content": "Rate: {text}"}]')
    template = load_template(prompt)
    assert template.render({"text": "Hi."}) == [{"role": "system", "content": "Be strict."},
                                                {"role": "user", "content": "Rate: Hi."}]


@pytest.mark.parametrize("text, expected", [
    ("Line one.\nRate {txt} now.", r"line 2: unknown placeholder \{txt\}\. Did you mean 'text'"),
    # other tools' names point to ours
    ("Judge {output} against {text}.", r"unknown placeholder \{output\}\. Did you mean 'text'"),
    ("{question}\n{text}", r"unknown placeholder \{question\}\. Did you mean 'source'"),
    ("Use {{text}} here.", r"\{\{text\}\} is a literal brace here: .* write \{text\}"),
    ("Grade {{ output }} please.", r"write \{text\}"),
    ("Rate the text.", r"never shows the text to judge: add \{text\}"),
])
def test_template_errors_name_the_file_line_and_a_fix(tmp_path: Path, text: str,
                                                      expected: str) -> None:
    prompt = write(tmp_path, "bad.txt", text)
    with pytest.raises(TemplateError, match=expected) as info:
        load_template(prompt)
    assert prompt in str(info.value)


def test_yaml_template_fields_are_checked(tmp_path: Path) -> None:
    with pytest.raises(TemplateError, match=r"unknown field 'sytem'.* Did you mean 'system'"):
        load_template(write(tmp_path, "a.yaml", "sytem: x\nuser: '{text}'\n"))
    with pytest.raises(TemplateError, match="needs a 'user' part"):
        load_template(write(tmp_path, "b.yaml", "system: x\n"))
    with pytest.raises(TemplateError, match="last message must be the user's"):
        load_template(write(tmp_path, "c.json", '[{"role": "user", "content": "{text}"}, '
                                                '{"role": "assistant", "content": "ok"}]'))
    with pytest.raises(TemplateError, match=r"absent\.txt: does not exist"):
        load_template(tmp_path / "absent.txt")


def test_a_placeholder_the_example_lacks_makes_that_judgment_missing(
        server: FakeServer, tmp_path: Path) -> None:
    prompt = write(tmp_path, "ref.txt", "Reference: {reference}\nCandidate: {text}")
    evaluator = judge(server, tmp_path, prompt=prompt, output="number")
    server.default = Reply("3")
    bare = ScoreRequest("A text.", "", (), "summarization")
    rows = evaluator.score([bare, REQ])
    assert rows[0]["overall"].value is None
    assert "uses {reference}, which this example lacks (it has no references)" in (
        rows[0]["overall"].reason or "")
    assert rows[1]["overall"].value == 3.0
    assert server.calls == 1  # nothing was sent for the example without references
    assert evaluator.estimate([bare])["calls"] == 0


def test_the_template_content_enters_the_signature_and_the_cache_key(tmp_path: Path) -> None:
    first = write(tmp_path, "v1.txt", "Rate {text} from 1 to 5.")
    spec = "judge:model=m,base_url=https://judge.example/v1,output=number,cache=false,prompt="
    one = create_evaluator(spec + first)
    same = create_evaluator(spec + write(tmp_path, "copy.txt", "Rate {text} from 1 to 5."))
    other = create_evaluator(spec + write(tmp_path, "v2.txt", "Rate {text} from 1 to 5!"))
    # the content decides, not the file name
    assert one.cache_namespace == same.cache_namespace != other.cache_namespace
    params = one.signature()["params"]
    assert len(params["prompt"]) == 16 and params["output"] == "number scale:1-5"
    contract = create_evaluator(spec.replace("output=number", "output=number,scale=0-10") + first)
    assert contract.cache_namespace != one.cache_namespace  # the contract's scale too


@pytest.mark.parametrize("extra, message", [
    ("form=rubric", "sets the whole prompt: drop form"),
    ("with_source=false", "drop with_source"),
    ("output=vibes", "unknown output contract 'vibes'"),
])
def test_settings_that_a_template_replaces_are_refused(tmp_path: Path, extra: str,
                                                        message: str) -> None:
    prompt = write(tmp_path, "t.txt", "Rate {text}.")
    with pytest.raises(ValueError, match=message):
        create_evaluator(f"judge:model=m,cache=false,prompt={prompt},{extra}")


def test_output_without_a_template_is_refused() -> None:
    with pytest.raises(ValueError, match="give prompt=FILE too"):
        create_evaluator("judge:model=m,cache=false,output=json:score")


def test_aspects_are_free_names_unless_the_template_shows_the_criterion(tmp_path: Path) -> None:
    free = write(tmp_path, "free.txt", "Is {text} helpful? Score 1-5.")
    made = create_evaluator(f"judge:model=m,cache=false,prompt={free},aspect=helpfulness")
    assert made.aspects == ("helpfulness",)
    shown = write(tmp_path, "shown.txt", "{criterion}\n{text}")
    with pytest.raises(ValueError, match="no criterion for aspect"):
        create_evaluator(f"judge:model=m,cache=false,prompt={shown},aspect=helpfulness")


def test_labels_placeholder_needs_a_labels_contract(tmp_path: Path) -> None:
    prompt = write(tmp_path, "l.txt", "Answer with one of {labels}.\n{text}")
    with pytest.raises(ValueError, match="needs a labels contract"):
        create_evaluator(f"judge:model=m,cache=false,prompt={prompt}")
    made = create_evaluator(f"judge:model=m,cache=false,prompt={prompt},"
                            "output=labels:good=1|bad=0")
    messages = made.messages(REQ, "overall")  # type: ignore[attr-defined]
    assert messages[0]["content"].startswith("Answer with one of good, bad.")


def test_a_template_not_in_utf8_names_its_line_and_byte(tmp_path: Path) -> None:
    """It used to end the command with "error: utf-8"."""
    path = tmp_path / "latin1.txt"
    path.write_bytes("Rate this text.\nCrit\xe8re: {text}\n".encode("latin-1"))
    with pytest.raises(TemplateError) as caught:
        load_template(path)
    assert str(path) in str(caught.value) and "line 2" in str(caught.value)
    assert "not UTF-8" in str(caught.value)


def test_a_template_past_the_size_limit_is_refused_and_the_limit_can_be_raised(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "long.txt"
    path.write_text("Rate {text} on fluency. " + "More words. " * 20, encoding="utf-8")
    monkeypatch.setenv("EVALSTRESS_MAX_TEMPLATE_BYTES", "100")
    with pytest.raises(TemplateError, match=r"is 264 bytes, more than 100 .*"
                                            "EVALSTRESS_MAX_TEMPLATE_BYTES"):
        load_template(path)
    monkeypatch.setenv("EVALSTRESS_MAX_TEMPLATE_BYTES", "1000")
    assert load_template(path) is not None
