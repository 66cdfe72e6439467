"""Perturbation parameters: every built-in takes the ones it reads, and nothing else."""

from __future__ import annotations

import pytest

from evalstress.perturb.base import get_perturbation, known_params
from evalstress.strict import UnknownNameError


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
                                 "mean 'k'? Known: k.")


def test_a_perturbation_without_parameters_says_so() -> None:
    with pytest.raises(UnknownNameError, match=r"unknown parameter 'colour'\. No parameter is "
                                               r"known here"):
        get_perturbation("sentence-replacement", colour=1)


def test_llm_attacks_take_shots() -> None:
    assert get_perturbation("hypernym", shots=2).params == {"shots": 2}
    with pytest.raises(KeyError, match="shots"):
        get_perturbation("hypernym", shot=2)
