"""Fuzzed configuration: arbitrary suite mappings, suite YAML, perturbation parameters and
evaluator specs give a valid object or a clear error (a ValueError or KeyError whose message
says something), never another exception: no TypeError, AttributeError or bare traceback."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalstress.analyses.registry import known_options
from evalstress.evaluators.base import create_evaluator, parse_spec
from evalstress.perturb.base import get_perturbation, known_params, registry
from evalstress.suites import GENERATION_KEYS, SUITE_KEYS, Suite, load_suite

FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

PERTURBATIONS = sorted(registry())
#: evaluators cheap to build (no model, no import of user code); others are fuzzed by name only
CHEAP_EVALUATORS = ("bleu", "chrf", "ter", "rouge", "rep")

scalars = st.one_of(st.none(), st.booleans(), st.integers(-10, 1000),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=10)


def _names(known: list[str] | tuple[str, ...]) -> st.SearchStrategy[str]:
    """Mostly known names, sometimes near misses or noise."""
    return st.one_of(st.sampled_from(list(known)),
                     st.sampled_from(list(known)).map(lambda name: name[:-1] + "x"),
                     st.text(max_size=10))


perturbation_options = st.dictionaries(
    st.one_of(st.sampled_from(["grid", "tasks", "rule", "k", "n", "ratio", "shots"]),
              st.text(max_size=8)),
    st.one_of(values, st.lists(st.one_of(st.floats(0.01, 1.0), st.integers(1, 5),
                                         st.sampled_from(["minor", "major", "paper"])),
                               min_size=1, max_size=3)),
    max_size=3)
perturbation_block = st.one_of(
    st.dictionaries(_names(PERTURBATIONS), st.one_of(st.none(), perturbation_options, values),
                    max_size=3),
    st.lists(st.one_of(_names(PERTURBATIONS),
                       st.fixed_dictionaries({"name": _names(PERTURBATIONS)}),
                       values), max_size=3),
    values)
#: near-valid suites: known perturbations whose grids, tasks and parameters are sometimes
#: good and sometimes fuzzed, plus known keys with good or fuzzed values
good_grids = st.lists(st.one_of(st.floats(0.01, 1.0), st.integers(1, 5),
                                st.sampled_from(["minor", "major", "paper", "default"])),
                      min_size=1, max_size=3)
plan_options = st.fixed_dictionaries({}, optional={
    "grid": st.one_of(good_grids, values),
    "tasks": st.one_of(st.sampled_from([["summarization"], "translation", ["open-ended"]]),
                       values),
    "rule": st.one_of(st.sampled_from(["default", "paper"]), values),
    "k": st.one_of(st.integers(1, 4), values),
})
near_valid = st.fixed_dictionaries(
    {"perturbations": st.dictionaries(st.sampled_from(PERTURBATIONS),
                                      st.one_of(st.none(), plan_options), min_size=1,
                                      max_size=3)},
    optional={
        "seeds": st.one_of(st.integers(-1, 4), st.lists(st.integers(-1, 9), max_size=3), values),
        "analyses": st.one_of(st.sampled_from(["blindspot", ["blindspot", "style"],
                                               ["discernment"]]), values),
        "options": st.one_of(st.dictionaries(_names(known_options()), values, max_size=2),
                             values),
        "protocol": st.one_of(st.sampled_from(["default", "paper"]), values),
        "generation": st.one_of(st.dictionaries(_names(GENERATION_KEYS), values, max_size=2),
                                values),
        "name": values, "description": values,
    })
suite_mappings = st.one_of(
    near_valid,
    st.dictionaries(_names(SUITE_KEYS), st.one_of(values, perturbation_block), max_size=5),
    st.builds(lambda extra, block: {**extra, "perturbations": block},
              st.dictionaries(_names(SUITE_KEYS), values, max_size=3), perturbation_block),
    values)


def _clear_error_or_value(make: Callable[[], Any]) -> Any:
    """`make()`'s value, or None after a ValueError/KeyError with a message; anything else fails."""
    try:
        return make()
    except (ValueError, KeyError) as exc:
        message = str(exc.args[0]) if exc.args else ""
        assert message.strip(), f"{type(exc).__name__} without a message"
        return None


@FUZZ
@given(suite_mappings)
def test_any_suite_mapping_is_a_suite_or_a_clear_error(data: Any) -> None:
    suite = _clear_error_or_value(lambda: Suite.from_dict(data, where="fuzz.yaml"))
    if suite is not None:  # a valid suite can be planned: every unit names a real severity
        assert suite.perturbations and suite.seeds
        for plan, severity, seed in suite.units():
            assert isinstance(seed, int) and severity in plan.grid


@FUZZ
@given(st.text(max_size=200))
def test_any_suite_text_is_a_suite_or_a_clear_error(tmp_path_factory: pytest.TempPathFactory,
                                                    text: str) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "fuzz.yaml"
    path.write_text(text, encoding="utf-8")
    _clear_error_or_value(lambda: load_suite(path))


@FUZZ
@given(st.sampled_from(PERTURBATIONS), st.dictionaries(st.text(max_size=10), values,
                                                       max_size=3))
def test_any_perturbation_parameters_are_taken_or_a_clear_error(name: str,
                                                                params: dict[str, Any]) -> None:
    made = _clear_error_or_value(lambda: get_perturbation(name, **params))
    if made is None:
        assert set(params) - set(known_params(type(registry()[name])))


spec_keys = st.one_of(st.sampled_from(["measure", "use_stemmer", "types", "tokenize",
                                       "word_order", "lowercase", "orders", "name"]),
                      st.text(alphabet=st.characters(blacklist_characters=",=:'\""), max_size=8))
spec_values = st.one_of(st.sampled_from(["true", "false", "2", "0.5", "rouge1", "13a", "x"]),
                        st.text(alphabet=st.characters(blacklist_characters=",'\""), max_size=8))
spec_strings = st.builds(
    lambda name, pairs, tail: name + (":" + ",".join(f"{k}={v}" for k, v in pairs) if pairs
                                      else "") + tail,
    st.one_of(st.sampled_from(CHEAP_EVALUATORS),
              st.text(alphabet=st.characters(blacklist_characters=":"), max_size=10)
              .filter(lambda n: n.strip() not in registry_names() or n.strip() in CHEAP_EVALUATORS)),
    st.lists(st.tuples(spec_keys, spec_values), max_size=3),
    st.sampled_from(["", ",", ":", "=", ",x"]))


def registry_names() -> set[str]:
    from evalstress.evaluators.base import registry as evaluators

    return set(evaluators())


@FUZZ
@given(spec_strings)
def test_any_spec_string_is_an_evaluator_or_a_clear_error(spec: str) -> None:
    parsed = _clear_error_or_value(lambda: parse_spec(spec))
    if parsed is not None and parsed[0] in CHEAP_EVALUATORS:
        evaluator = _clear_error_or_value(lambda: create_evaluator(spec))
        if evaluator is not None:
            assert evaluator.name == parsed[0]


def test_the_fuzzed_suites_reach_both_outcomes(tmp_path: Path) -> None:
    """The strategies are not all-error: a known-good mapping from the same alphabet loads."""
    suite = Suite.from_dict({"perturbations": {"truncation": {"grid": [0.5]}}, "seeds": 2,
                             "analyses": "blindspot", "options": {"rel_tol": 0.1}})
    assert [plan.grid for plan in suite.perturbations] == [(0.5,)] and suite.seeds == (0, 1)
