"""The one registry shape behind perturbations, evaluators and analyses."""

from __future__ import annotations

import pytest

from evalstress.analyses.registry import ANALYSES, analysis_names
from evalstress.core.registry import Registry
from evalstress.core.strict import UnknownNameError
from evalstress.evaluators.base import EVALUATORS, create_evaluator
from evalstress.perturb.base import PERTURBATIONS, get_perturbation_class


def test_every_kind_suggests_the_name_the_user_meant() -> None:
    with pytest.raises(UnknownNameError, match=r"'truncation'.*evalstress list perturbations"):
        get_perturbation_class("truncaton")
    with pytest.raises(UnknownNameError, match=r"'rouge'.*evalstress list evaluators"):
        create_evaluator("rogue")
    with pytest.raises(UnknownNameError, match="'blindspot'"):
        ANALYSES.get("blindspt")


def test_the_three_registries_hold_the_built_in_catalogue() -> None:
    assert {"truncation", "negation", "char-typo"} <= set(PERTURBATIONS.names())
    assert {"bleu", "chrf", "rouge", "bertscore", "judge"} <= set(EVALUATORS.names())
    assert {"blindspot", "discernment", "criteria-confusion", "description-types"} <= set(
        analysis_names())


def test_a_second_entry_under_a_taken_name_is_refused() -> None:
    reg: Registry[type] = Registry("widget", builtin="evalstress")

    @reg.register("knob")
    class Knob:
        pass

    assert reg.get("knob") is Knob and Knob.name == "knob"  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="widget 'knob' is registered twice"):
        reg.register("knob")(type("Other", (), {}))
    reg.register("knob")(Knob)  # the same class again (a module imported twice) is fine
    with pytest.raises(ValueError, match="registered twice"):
        PERTURBATIONS.register("truncation")(type("Fake", (), {}))
