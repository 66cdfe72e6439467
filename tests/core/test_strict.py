"""The one did-you-mean helper every name lookup goes through."""

from __future__ import annotations

import pytest

from evalstress.core.strict import (
    ConfigError,
    UnknownNameError,
    check_names,
    split_params,
    unknown_name_error,
)


def test_a_near_miss_is_suggested_and_the_known_names_listed() -> None:
    error = unknown_name_error("suite key", "seed", ["seeds", "name", "analyses"], "my.yaml")
    assert str(error) == ("my.yaml: unknown suite key 'seed'. Did you mean 'seeds'? "
                          "Known: analyses, name, seeds.")


def test_a_name_close_to_nothing_gets_only_the_list() -> None:
    error = unknown_name_error("option", "zzz", ["rel_tol", "abs_tol"])
    assert str(error) == "unknown option 'zzz'. Known: abs_tol, rel_tol."


def test_the_error_is_caught_as_value_error_and_as_key_error() -> None:
    # callers that caught lookups by KeyError, and loaders that catch ValueError, both see it
    for kind in (ValueError, KeyError, ConfigError, UnknownNameError):
        with pytest.raises(kind):
            check_names("parameter", ["ratoi"], ["rule"], "perturbation 'truncation'")


def test_known_names_pass() -> None:
    check_names("suite key", ["seeds", "name"], ["name", "seeds", "analyses"])


def test_a_spec_with_a_quote_that_never_closes_is_refused() -> None:
    """`cmd='python x.py` used to lose its quote and run `python x.py` as if nothing was
    wrong; a forgotten closing quote can also swallow the parameters after it."""
    with pytest.raises(ValueError, match="never closed"):
        split_params("cmd='python x.py")
    with pytest.raises(ValueError, match="never closed"):
        split_params('cmd="python x.py, timeout=5')
    assert split_params("cmd='python x.py --flag=1,2',timeout=5") == [
        "cmd=python x.py --flag=1,2", "timeout=5"]
