"""Evaluator parameters are declared (`PARAMS`): a bad value in a spec is one line naming the
evaluator, the parameter, the value and what is allowed, before anything loads or scores; the
declaration gives the defaults, the signature (unchanged for existing specs, so cached scores
stay valid), the printable form and what `evalstress list evaluators` shows."""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from typer.testing import CliRunner

from evalstress.cli import app
from evalstress.core.registry import Registry
from evalstress.core.strict import ConfigError, UnknownNameError
from evalstress.evaluators import base
from evalstress.evaluators.base import (
    Evaluator,
    Score,
    ScoreRequest,
    ScoreRow,
    create_evaluator,
    registry,
)

JUDGE = "judge:model=m,base_url=http://judge.example/v1"
BUILTIN = sorted(registry())
SIGNATURES = Path(__file__).with_name("signatures_before.json")
runner = CliRunner()

#: each bad value a spec could hold, and the start of its error after "evaluator 'NAME': "
BAD_VALUES = [
    # before: a KeyError ~150 lines deep at scoring time
    ("chrf:word_order=two", "parameter 'word_order' = 'two': expected a whole number >= 0"),
    ("bleu:tokenize=foo", "parameter 'tokenize' = 'foo': expected one of "),
    ("bleu:tokenize=nope", "parameter 'tokenize' = 'nope': expected one of "),
    # before: ran, reading 'maybe' as true and -3 as no n-grams at all
    ("ter:case_sensitive=maybe", "parameter 'case_sensitive' = 'maybe': expected true or false"),
    ("bleu:max_ngram_order=-3", "parameter 'max_ngram_order' = -3: expected a whole number >= 1"),
    # before: accepted; every call then failed
    (f"{JUDGE},timeout=-1", "parameter 'timeout' = -1: expected a number of seconds > 0"),
    (f"{JUDGE},deadline=0", "parameter 'deadline' = 0: expected a number of seconds > 0"),
    (f"{JUDGE},max_concurrency=0", "parameter 'max_concurrency' = 0: expected a whole number "
                                   ">= 1"),
    (f"{JUDGE},max_tokens=0", "parameter 'max_tokens' = 0: expected a whole number >= 1"),
    (f"{JUDGE},temperature=-0.5", "parameter 'temperature' = -0.5: expected a number >= 0"),
    (f"{JUDGE},with_source=1", "parameter 'with_source' = 1: expected true or false"),
    ("chrf:char_order=0", "parameter 'char_order' = 0: expected a whole number >= 1"),
    ("rep:orders=0 2", "parameter 'orders' = '0 2': '0': expected a whole number >= 1"),
    # before: a bare "invalid literal for int() with base 10: 'abc'"
    (f"{JUDGE},n=abc", "parameter 'n' = 'abc': expected a whole number >= 1"),
    ("rep:orders=abc", "parameter 'orders' = 'abc': 'abc': expected a whole number >= 1"),
    # before: scored nothing, and the run ended with exit 0
    (f"{JUDGE},aspect=", "parameter 'aspect' = '': expected one or more aspect names"),
    (f"{JUDGE},aspect=fluncy", "parameter 'aspect' = 'fluncy': no criterion for aspect(s) "
                               "fluncy; expected aspects among fluency"),
]


@pytest.mark.parametrize(("spec", "message"), BAD_VALUES)
def test_a_bad_value_is_one_line_naming_the_evaluator_and_parameter(spec: str,
                                                                    message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        create_evaluator(spec)
    said = str(caught.value)
    assert said.startswith(f"evaluator '{spec.split(':')[0]}': {message}"), said
    assert "\n" not in said


def test_the_tokenizers_are_sacrebleus_own(monkeypatch: pytest.MonkeyPatch) -> None:
    from sacrebleu.metrics import BLEU

    with pytest.raises(ConfigError) as caught:
        create_evaluator("bleu:tokenize=intll")
    listed = re.search(r"expected one of (.*?)\. Did you mean 'intl'\?$", str(caught.value))
    assert listed is not None and listed[1].split(", ") == list(BLEU.TOKENIZERS)
    # the list is read from sacreBLEU when a spec is checked: a tokenizer it adds is accepted
    monkeypatch.setattr(BLEU, "TOKENIZERS", [*BLEU.TOKENIZERS, "brand-new"])
    assert create_evaluator("bleu:tokenize=brand-new").spec_params == {"tokenize": "brand-new"}


def test_every_built_in_evaluator_declares_its_parameters() -> None:
    undeclared = [name for name, cls in registry().items() if getattr(cls, "PARAMS", None) is None]
    assert undeclared == []
    assert len(BUILTIN) >= 21


def _wrong_values(param: Any) -> list[Any]:
    """Values of the wrong type for a parameter, from its declared default: a list and a
    mapping (no evaluator parameter takes one), and a value of another type than the default's
    (a word for a number, a number that is no 0/1 for a flag, a flag for a text)."""
    wrong: list[Any] = [["x", 1], {"k": 1}]
    default = param.default
    if isinstance(default, bool):
        wrong.append(2)
    elif isinstance(default, int | float):
        wrong.append("abc")
    elif isinstance(default, str):
        wrong.append(True)
    return wrong


#: what an evaluator needs besides the parameter under test to pass its spec check
REQUIRED_GIVEN = {"python": {"target": "os.path:basename"}, "command": {"cmd": "true"}}
FUZZ = [(name, key, value) for name in BUILTIN
        for key, param in (getattr(registry()[name], "PARAMS", None) or {}).items()
        for value in _wrong_values(param)]


@pytest.mark.parametrize(("name", "key", "value"), FUZZ,
                         ids=[f"{n}.{k}={v!r}" for n, k, v in FUZZ])
def test_a_wrong_typed_value_of_any_declared_parameter_is_refused_by_name(
        name: str, key: str, value: Any) -> None:
    spec = {"evaluator": name, **REQUIRED_GIVEN.get(name, {}), key: value}
    with pytest.raises(ConfigError) as caught:
        create_evaluator(spec)
    said = str(caught.value)
    assert said.startswith(f"evaluator '{name}': parameter '{key}' = {value!r}: "), said
    assert "\n" not in said


def test_a_required_parameter_left_out_is_named() -> None:
    with pytest.raises(ConfigError, match=r"evaluator 'command': parameter 'cmd' is required"):
        create_evaluator("command:aspects=a")


def test_declared_defaults_are_values_of_their_kind() -> None:
    from evalstress.core.params import REQUIRED

    for name, cls in registry().items():
        for key, param in (cls.PARAMS or {}).items():
            if param.default is not REQUIRED:
                assert param.kind.parse(param.default) == param.default, (name, key)


@pytest.mark.parametrize("name", ["bleu", "chrf", "ter"])
def test_sacrebleu_metrics_declare_exactly_sacrebleus_settings(name: str) -> None:
    from sacrebleu.metrics import BLEU, CHRF, TER

    metric = {"bleu": BLEU, "chrf": CHRF, "ter": TER}[name]
    theirs = {key: p.default for key, p in inspect.signature(metric).parameters.items()
              if key not in ("references", "effective_order")}  # effective order is always on
    ours = {key: p.default for key, p in (getattr(registry()[name], "PARAMS", None) or {}).items()}
    assert ours == theirs


def test_values_are_normalised_before_the_constructor_sees_them() -> None:
    made = create_evaluator({"name": "rouge", "use_stemmer": "false", "measure": "recall"})
    assert made.spec_params == {"use_stemmer": False, "measure": "recall"}
    assert made.signature()["settings"]["stemmer"] == "none"
    assert create_evaluator({"name": "rep", "orders": 2}).aspects == ("rep-2",)


def _signature_entry(spec: str) -> dict[str, Any]:
    # the recorded command spec names a program 'x' that no machine has: only its signature
    # is compared, so the check that the program exists is answered yes
    with mock.patch("evalstress.evaluators.external.shutil.which", return_value="/bin/x"):
        signature = json.loads(json.dumps(create_evaluator(spec).signature(), default=str))
    entry = {"params": signature["params"]}
    if "settings" in signature:
        settings = dict(signature["settings"])
        if "sacrebleu_signature" in settings:  # sacreBLEU's version is the environment's
            settings["sacrebleu_signature"] = re.sub(r"\|version:[^|]*", "",
                                                     settings["sacrebleu_signature"])
        entry["settings"] = settings
    return entry


RECORDED = json.loads(SIGNATURES.read_text("utf-8"))["specs"]


@pytest.mark.parametrize("spec", list(RECORDED))
def test_existing_specs_keep_their_signature_and_so_their_cached_scores(spec: str) -> None:
    # signatures_before.json was written by the code before the declarations; the signature
    # is the cache key's content besides library and model versions
    assert _signature_entry(spec) == RECORDED[spec]


def test_the_printable_form_reads_like_sacrebleus() -> None:
    from sacrebleu import __version__

    for spec in ("bleu", "bleu:tokenize=intl,smooth_method=floor", "bleu:trg_lang=zh"):
        made = create_evaluator(spec)
        theirs = dict(part.split(":", 1) for part in  # sacreBLEU's own signature string
                      made.signature()["settings"]["sacrebleu_signature"].split("|"))
        assert made.short_signature == (f"bleu|tok:{theirs['tok']}|smooth:{theirs['smooth']}"
                                        f"|v{__version__}")
    assert create_evaluator("bleu:trg_lang=zh").short_signature.startswith("bleu|tok:zh|")
    assert create_evaluator("chrf:word_order=2").short_signature == f"chrf|nc:6|nw:2|v{__version__}"
    judge = create_evaluator(f"{JUDGE},preset=paper-000")
    assert judge.short_signature == ("judge|model:m|aspect:overall|form:analyze-rate|"
                                     "level:detailed|scale:1-5|n:10|t:1.0")


def test_list_evaluators_shows_each_parameter_its_kind_and_default() -> None:
    result = runner.invoke(app, ["list", "evaluators", "--json"])
    assert result.exit_code == 0, result.output
    listed = json.loads(result.output)
    tokenize = listed["bleu"]["params"]["tokenize"]
    assert "13a" in tokenize["kind"] and "intl" in tokenize["kind"]
    assert listed["bleu"]["params"]["max_ngram_order"] == {
        "kind": "a whole number >= 1", "default": "4", "help": "the longest n-gram counted",
        "signed": "given"}
    assert listed["judge"]["params"]["timeout"]["kind"] == "a number of seconds > 0"
    assert listed["judge"]["params"]["timeout"]["default"] == "60.0"
    assert listed["chrf"]["signature"].startswith("chrf|nc:6|nw:0|v")
    table = runner.invoke(app, ["list", "evaluators"], terminal_width=200)
    assert table.exit_code == 0
    shown = " ".join(table.output.replace("│", " ").split())
    assert "max_ngram_order = 4 (a whole number >= 1)" in shown
    assert "timeout = 60.0 (a number of seconds > 0)" in shown


@pytest.mark.parametrize(("spec", "message"), BAD_VALUES[:9] + BAD_VALUES[13:])
def test_the_cli_ends_a_bad_value_in_one_line_with_exit_2(spec: str, message: str,
                                                         tmp_path: Path) -> None:
    result = runner.invoke(app, ["run", "--limit", "1", "-p", "truncation", "--seeds", "1",
                                 "-e", spec, "--quiet", "--out", str(tmp_path / "out"),
                                 "--cache-dir", str(tmp_path / "cache")])
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert f"error: evaluator '{spec.split(':')[0]}': {message}" in said
    assert said.count("error:") == 1 and "Traceback" not in said
    assert not (tmp_path / "out").exists()


def test_a_plugin_without_declarations_takes_its_constructor_keywords(
        monkeypatch: pytest.MonkeyPatch) -> None:
    class Length(Evaluator):
        def __init__(self, unit: str = "chars", scale: float = 1.0):
            super().__init__(unit=unit, scale=scale)
            self.scale = scale

        @property
        def aspects(self) -> tuple[str, ...]:
            return ("length",)

        def score_batch(self, requests: Any) -> list[ScoreRow]:
            return [{"length": Score(len(r.text) * self.scale)} for r in requests]

    plugins: Registry[type[Evaluator]] = Registry("evaluator", builtin=())
    plugins.register("length")(Length)
    monkeypatch.setattr(base, "EVALUATORS", plugins)
    made = create_evaluator("length:scale=2")
    assert made.score([ScoreRequest("abc")])[0]["length"].value == 6.0
    assert made.params == {"unit": "chars", "scale": 2}
    with pytest.raises(UnknownNameError, match="Did you mean 'scale'"):
        create_evaluator("length:scal=2")


def test_a_judge_takes_settings_objects_and_a_flat_spec_maps_onto_them() -> None:
    from evalstress.core.params import ParamValueError
    from evalstress.evaluators.judge import JudgeEvaluator
    from evalstress.evaluators.judge_settings import (
        JudgeEndpoint,
        JudgeLimits,
        JudgeSampling,
    )

    from_spec = create_evaluator(f"{JUDGE},temperature=0,timeout=30,max_concurrency=2")
    assert isinstance(from_spec, JudgeEvaluator)
    built = JudgeEvaluator(endpoint=JudgeEndpoint(model="m", base_url="http://judge.example/v1"),
                           sampling=JudgeSampling(temperature=0),
                           limits=JudgeLimits(timeout=30, max_concurrency=2))
    assert built.cache_namespace == from_spec.cache_namespace
    assert from_spec.temperature == 0.0 and from_spec.client.timeout == 30
    assert len(inspect.signature(JudgeEvaluator.__init__).parameters) <= 6
    with pytest.raises(ParamValueError, match=r"parameter 'timeout' = -1: expected a number "
                                              r"of seconds > 0"):
        JudgeLimits(timeout=-1)


def test_a_template_without_the_criterion_names_its_own_aspects(tmp_path: Path) -> None:
    template = tmp_path / "t.yaml"
    template.write_text("user: |\n  Is this text about cooking? {text}\n  Answer 1 to 5.\n",
                        encoding="utf-8")
    made = create_evaluator(f"{JUDGE},prompt={template},aspect=cooking")
    assert made.aspects == ("cooking",)
