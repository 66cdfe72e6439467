"""Self-evaluation bias: the table logic on the paper's own Table 5, and the whole test on two
tiny causal LMs against GPT-PPL computed directly."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from evalstress.cli import app
from evalstress.core.data import Example
from evalstress.report.schema import schema_problems
from evalstress.studies.selfbias import Backbone, run_self_bias, self_bias, split_prompt
from tests.cli.test_command_output import last_lines, parses

# Paper 002, Table 5: GPT-PPL (negated) of evaluator rows on generator columns
TABLE5 = {
    "gpt2-small": {"small": -21.08, "med": -24.35, "large": -24.36},
    "gpt2-med": {"small": -23.20, "med": -17.48, "large": -19.06},
    "gpt2-large": {"small": -22.87, "med": -18.56, "large": -15.04},
    "opt-2.7b": {"small": -24.24, "med": -19.08, "large": -17.20},
}
OWN = {"gpt2-small": "small", "gpt2-med": "med", "gpt2-large": "large"}


def test_table5_flags_the_evaluators_that_favour_their_own_backbone() -> None:
    frame = pd.DataFrame([{"evaluator": ev, "system": sys, "example_id": "x", "score": v}
                          for ev, row in TABLE5.items() for sys, v in row.items()])
    result = self_bias(frame, OWN)
    rows = {r.evaluator: r for r in result.rows}
    # every GPT-2 row ranks its own generator first ...
    assert all(rows[e].own_rank == 1 and rows[e].self_preferred for e in OWN)
    assert rows["gpt2-small"].margin == pytest.approx(-21.08 - -24.35)
    # ... but the referee (OPT, owning no system) ranks small 3rd, med 2nd, large 1st: the
    # paper's conclusion that small and medium are biased, large is not
    assert rows["gpt2-small"].consensus_rank == 3 and rows["gpt2-med"].consensus_rank == 2
    assert rows["gpt2-large"].consensus_rank == 1
    assert result.biased == ["gpt2-small", "gpt2-med"]
    assert rows["opt-2.7b"].own_system == "" and rows["opt-2.7b"].margin is None
    json.dumps(result.to_dict())  # serialisable (no NaN)


def test_without_referee_the_other_backbones_rank() -> None:
    frame = pd.DataFrame([{"evaluator": ev, "system": sys, "example_id": "x", "score": v}
                          for ev, row in TABLE5.items() if ev in OWN for sys, v in row.items()])
    rows = {r.evaluator: r for r in self_bias(frame, OWN).rows}
    assert rows["gpt2-large"].consensus_rank == pytest.approx((3 + 2) / 2)


TEXTS = [Example(f"w{i}", "open-ended", "", text) for i, text in enumerate([
    "The old lighthouse stood on the cliff for two hundred years and guided many ships home",
    "In the spring the farmers planted barley and oats along the river that ran past the mill",
    "The museum opened a new wing for modern art and hundreds of visitors came on the first day",
])]


def _tiny_gpt(tmp_path_factory: pytest.TempPathFactory, seed: int) -> str:
    """A tiny random GPT-2 with MiniLM's vocabulary, built from a config (no download)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from evalstress.core import models

    torch.manual_seed(seed)
    config = transformers.GPT2Config(n_embd=32, n_layer=2, n_head=2, n_positions=64,
                                     vocab_size=30522, bos_token_id=101, eos_token_id=102)
    folder = tmp_path_factory.mktemp(f"gpt-{seed}")
    transformers.GPT2LMHeadModel(config).eval().save_pretrained(folder)
    transformers.AutoTokenizer.from_pretrained(models.resolve_model("minilm")).save_pretrained(
        folder)
    return str(folder)


@pytest.fixture(scope="module")
def tiny_gpt(tmp_path_factory: pytest.TempPathFactory) -> str:
    return _tiny_gpt(tmp_path_factory, 1)


@pytest.fixture(scope="module")
def other_gpt(tmp_path_factory: pytest.TempPathFactory) -> str:
    return _tiny_gpt(tmp_path_factory, 7)


def _neg_ppl(path: str, text: str) -> float:
    import torch
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModelForCausalLM.from_pretrained(path).eval()
    ids = tokenizer(text, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        return -math.exp(float(model(ids, labels=ids).loss))


def _neg_ppls(path: str, texts: list[str]) -> list[float]:
    """Negated perplexity of each text under the causal LM at `path`, loaded once."""
    import torch
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModelForCausalLM.from_pretrained(path).eval()
    out = []
    for text in texts:
        ids = tokenizer(text, return_tensors="pt")["input_ids"]
        with torch.no_grad():
            out.append(-math.exp(float(model(ids, labels=ids).loss)))
    return out


@pytest.mark.slow
def test_run_self_bias_scores_every_system_with_every_backbone(tiny_gpt: str,
                                                               other_gpt: str) -> None:
    backbones = [Backbone("a", tiny_gpt), Backbone("b", other_gpt)]
    result, texts = run_self_bias(TEXTS, backbones, kind="lm", prompt_words=6,
                                  max_new_tokens=8, seed=3)
    assert result.systems == ["human", "a", "b"]
    by = {(t["system"], t["example_id"]): t["text"] for t in texts}
    assert by[("human", "w0")] == split_prompt(TEXTS[0].hypothesis, 6)[1]
    for row in result.rows:
        path = {"a": tiny_gpt, "b": other_gpt}[row.evaluator]
        for system in result.systems:
            written = [by[(system, e.id)] for e in TEXTS if by[(system, e.id)]]
            expected = sum(_neg_ppl(path, t) for t in written) / len(written)
            assert row.scores[system] == pytest.approx(expected, rel=1e-4)
    empty = sum(1 for t in texts if not t["text"])
    assert not empty or any(f"{empty} empty" in note for note in result.notes)
    again, texts_again = run_self_bias(TEXTS, backbones, kind="lm", prompt_words=6,
                                       max_new_tokens=8, seed=3)
    assert texts_again == texts  # seeded sampling
    assert [r.scores for r in again.rows] == [r.scores for r in result.rows]


@pytest.mark.slow
def test_self_bias_command_writes_the_table(tiny_gpt: str, other_gpt: str,
                                            tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"id": e.id, "text": e.hypothesis}) + "\n"
                            for e in TEXTS))
    out = tmp_path / "sb"
    result = CliRunner().invoke(app, [
        "self-bias", str(data), "-m", "hypothesis=text", "--task", "open-ended",
        "--model", f"a={tiny_gpt}", "--model", f"b={other_gpt}", "--prompt-words", "6",
        "--max-new-tokens", "6", "--out", str(out)], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert "Self-evaluation bias" in result.output
    # as wide as COLUMNS, but a path too long for any line, whole on its own
    assert all(len(line) <= 80 or len(line.split()) == 1 for line in result.output.splitlines())
    ending = last_lines(result.output)  # what to open, and what next
    assert ending["open:"] == str(out / "report.html")
    assert ending["next:"].startswith("evalstress correlate ")
    parses(ending["next:"].rpartition(" (")[0])
    whole = json.loads((out / "results.json").read_text())
    assert "schema_version" in whole and schema_problems(whole) == []  # the run's own layout
    saved = whole["analyses"]["self-bias"]
    assert saved["systems"] == ["human", "a", "b"] and len(saved["rows"]) == 2
    assert (out / "texts.jsonl").read_text().count("\n") == 9
    bad = CliRunner().invoke(app, ["self-bias", str(data), "--model", "nopath"])
    assert bad.exit_code == 2 and "NAME=PATH" in bad.output


def _fine_tuned(base: str, folder: Path) -> str:
    """`base` after 20 steps of training on the test texts (a stand-in for the paper's
    fine-tuning on WikiText): same base model, other weights."""
    import torch
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(base)
    model = transformers.AutoModelForCausalLM.from_pretrained(base)
    model.train()
    optimiser = torch.optim.SGD(model.parameters(), lr=0.05)
    torch.manual_seed(0)
    for _ in range(20):
        for example in TEXTS:
            ids = tokenizer(example.hypothesis, return_tensors="pt")["input_ids"]
            model(ids, labels=ids).loss.backward()
            optimiser.step()
            optimiser.zero_grad()
    model.eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


@pytest.mark.slow
def test_a_fine_tuned_generator_is_scored_by_its_off_the_shelf_base(tiny_gpt: str,
                                                                    tmp_path: Path) -> None:
    """Paper 002, sec. 5.4: the generator is the fine-tuned model, the evaluator the same base
    model off the shelf. The system's texts come from the fine-tuned weights and its evaluator
    row is GPT-PPL under the base weights, computed here directly with transformers."""
    from evalstress.studies.selfbias import continuations

    tuned = _fine_tuned(tiny_gpt, tmp_path / "tuned")
    backbones = [Backbone("small", tuned, evaluator_model=tiny_gpt)]
    result, texts = run_self_bias(TEXTS, backbones, kind="lm", prompt_words=6,
                                  max_new_tokens=8, seed=3)
    prompts = [split_prompt(e.hypothesis, 6)[0] for e in TEXTS]
    written = [t["text"] for t in texts if t["system"] == "small"]
    assert written == continuations(tuned, prompts, max_new_tokens=8, seed=3)
    row = next(r for r in result.rows if r.evaluator == "small")
    for system in ("human", "small"):
        mine = [t["text"] for t in texts if t["system"] == system and t["text"]]
        base = sum(_neg_ppls(tiny_gpt, mine)) / len(mine)
        other = sum(_neg_ppls(tuned, mine)) / len(mine)
        assert row.scores[system] == pytest.approx(base, rel=1e-4)
        assert abs(base - other) > 1e-3 * abs(base)  # the two weights do disagree
    assert result.settings["backbones"] == {"small": tuned}
    assert result.settings["evaluator_backbones"] == {"small": tiny_gpt}


def test_an_evaluator_model_for_no_backbone_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"id": "a", "text": "one two three"}) + "\n")
    bad = CliRunner().invoke(app, ["self-bias", str(data), "-m", "hypothesis=text",
                                   "--model", "small=PATH", "--evaluator-model", "smal=OTHER"])
    assert bad.exit_code == 2 and "unknown backbone 'smal'" in bad.output
    assert "did you mean 'small'" in bad.output.lower()
