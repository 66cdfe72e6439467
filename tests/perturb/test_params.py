"""Perturbation parameters: every built-in takes the ones it reads, and nothing else, and each
value is of the kind its parameter declares (checked when the suite is loaded)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, ClassVar

import pytest

from evalstress.core.params import ParamValueError
from evalstress.core.strict import ConfigError, UnknownNameError
from evalstress.perturb.base import (
    PERTURBATIONS,
    Perturbation,
    PerturbContext,
    Severity,
    get_perturbation,
    known_params,
    param_kinds,
)
from evalstress.suites import load_suite
from tests.perturb.conftest import run, text_of


def test_the_parameters_each_perturbation_documents_are_accepted() -> None:
    # the names in each description's "(params: ...)" and the paper-002 rule
    assert get_perturbation("wrong-ending", field="ending", replace="all").params == {
        "field": "ending", "replace": "all"}
    assert get_perturbation("positioned-error", span=5, mode="shuffle").params["span"] == 5
    assert get_perturbation("frequent-ngram", n=3, where="set=b", length=2).params["n"] == 3
    assert get_perturbation("truncation", rule="paper").params == {"rule": "paper"}
    assert set(known_params(get_perturbation("sentence-switching").__class__)) == {
        "keep_last", "rule"}


def test_an_unknown_parameter_is_an_error_naming_the_perturbation() -> None:
    with pytest.raises(UnknownNameError) as caught:
        get_perturbation("char-typo", kk=2)
    assert str(caught.value) == ("perturbation 'char-typo': unknown parameter 'kk'. Did you "
                                 "mean 'k'? Known: dataset, k.")


def test_a_perturbation_without_parameters_says_so() -> None:
    with pytest.raises(UnknownNameError, match=r"unknown parameter 'colour'\. No parameter is "
                                               r"known here"):
        get_perturbation("sentence-replacement", colour=1)


def test_llm_attacks_take_shots() -> None:
    assert get_perturbation("hypernym", shots=2).params == {"shots": 2}
    with pytest.raises(KeyError, match="shots"):
        get_perturbation("hypernym", shot=2)
    with pytest.raises(ParamValueError, match=r"'shots' = -1: expected a whole number >= 0"):
        get_perturbation("hypernym", shots=-1)


def test_every_built_in_parameter_declares_its_kind() -> None:
    # a parameter added without a kind would take any value again
    untyped = [(name, param) for name, cls in PERTURBATIONS.all().items()
               for param, kind in param_kinds(cls).items() if kind is None]
    assert untyped == []


@pytest.mark.parametrize(("entry", "said"), [
    # k of a DHP level perturbation is a mapping; "many" was silently ignored before
    ("char-deletion: {grid: minor, k: many}",
     "parameter 'k' = 'many': expected a mapping of minor and/or major to a whole number >= 1"),
    ("char-typo: {k: {minor: 0}}", "parameter 'k' = {'minor': 0}: level 'minor': 0 is not a whole "
                                  "number >= 1"),
    ("word-span-deletion: {k: {minr: 2}}", "unknown level 'minr' (expected minor or major) Did "
                                           "you mean 'minor'?"),
    ("sentence-switching: {keep_last: maybe}", "parameter 'keep_last' = 'maybe': expected true "
                                               "or false"),
    ("positioned-error: {span: -3}", "parameter 'span' = -3: expected a whole number >= 1"),
    ("positioned-error: {mode: shufle}", "parameter 'mode' = 'shufle': expected one of random, "
                                         "shuffle. Did you mean 'shuffle'?"),
    ("frequent-ngram: {n: 2.5}", "parameter 'n' = 2.5: expected a whole number >= 1"),
    ("repetition: {n: true}", "parameter 'n' = True: expected a whole number >= 1"),
    ("wrong-ending: {replace: first}", "parameter 'replace' = 'first': expected one of last, all"),
    ("injection: {text: ''}", "parameter 'text' = '': expected a non-empty text"),
    ("bert-diverge: {top_k: ten}", "parameter 'top_k' = 'ten': expected a whole number >= 1"),
])
def test_a_value_of_the_wrong_kind_is_refused_when_the_suite_loads(tmp_path: Path, entry: str,
                                                                   said: str) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(f"perturbations:\n  {entry}\n", encoding="utf-8")
    name = entry.split(":")[0]
    with pytest.raises(ConfigError) as caught:
        load_suite(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: field 'perturbations.{name}': ")
    assert said in message


def test_a_string_false_no_longer_reads_as_true() -> None:
    # two sentences of an open-ended text: keeping the last one in place leaves nothing to move
    text = "The storm passed at noon. Everyone went back outside."
    kept = run("sentence-switching", text, 1, params={"keep_last": "true"}, task="open-ended")
    moved = run("sentence-switching", text, 1, params={"keep_last": "false"}, task="open-ended")
    assert not hasattr(kept, "text")  # a Skip
    assert text_of(moved) == "Everyone went back outside. The storm passed at noon."
    assert get_perturbation("sentence-switching", keep_last="False").params == {
        "keep_last": False}


def test_a_level_count_is_applied() -> None:
    text = "Harbour cranes unloaded grain from three ships before the evening tide."
    letters = sum(c.isalnum() for c in text)
    for k in (2, 7):
        made = text_of(run("char-deletion", text, "minor", params={"k": {"minor": str(k)}}))
        assert sum(c.isalnum() for c in made) == letters - k
        assert len(made) == len(text) - k


class _Plugin(Perturbation):
    """A third-party perturbation that declares its parameters as a plain tuple of names."""

    PARAMS: ClassVar[Any] = ("colour",)

    def transform(self, ctx: PerturbContext, severity: Severity, rng: random.Random) -> str:
        return ctx.text + " " + str(self.params.get("colour"))


def test_a_plugin_tuple_of_names_still_declares_parameters_of_any_value() -> None:
    assert _Plugin(colour=["red", 3]).params == {"colour": ["red", 3]}
    with pytest.raises(UnknownNameError, match="Did you mean 'colour'"):
        _Plugin(color="red")


@pytest.mark.parametrize("name", ["abbreviation", "truncation"])
def test_a_parameter_named_self_is_unknown_not_a_crash(name: str) -> None:
    # the constructor's own first argument must not swallow a user's `self=` setting
    with pytest.raises(UnknownNameError, match="unknown parameter 'self'"):
        get_perturbation(name, self=None)
