"""Evaluator specs: an unknown key is an error with a did-you-mean before anything loads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalstress.core.strict import ConfigError, UnknownNameError
from evalstress.evaluators.base import create_evaluator, parse_spec


@pytest.mark.parametrize(("spec", "message"), [
    # before: "Rouge.__init__() got an unexpected keyword argument 'use_stemer'"
    ("rouge:use_stemer=true", "evaluator 'rouge': unknown parameter 'use_stemer'. Did you mean "
                              "'use_stemmer'?"),
    # before: accepted, and sacreBLEU failed on it at scoring time
    ("bleu:tokenise=13a", "evaluator 'bleu': unknown parameter 'tokenise'. Did you mean "
                          "'tokenize'?"),
    ("chrf:wordorder=2", "Did you mean 'word_order'"),
    ("judge:modl=m", "Did you mean 'model'?"),
])
def test_unknown_spec_keys_suggest_the_known_one(spec: str, message: str) -> None:
    with pytest.raises(UnknownNameError) as caught:
        create_evaluator(spec)
    assert message in str(caught.value)


def test_sacrebleu_settings_reach_the_metric() -> None:
    assert create_evaluator("chrf:word_order=2").metric.word_order == 2
    assert create_evaluator("bleu:tokenize=char").metric.tokenizer.signature() == "char"


@pytest.mark.parametrize(("spec", "message"), [
    ("rouge:types=rouge1,types=rouge2", "'types' is given twice"),
    ("rouge:=3", "must look like key=value"),
    (":x=1", "names no evaluator"),
])
def test_malformed_specs_are_config_errors(spec: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_spec(spec)


def test_a_mapping_spec_without_a_name_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="names no evaluator"):
        parse_spec({"measure": "recall"})


def test_a_missing_idf_corpus_is_named_at_construction(tmp_path: Path) -> None:
    missing = tmp_path / "nope.txt"
    with pytest.raises(ValueError, match=f"'idf_corpus' = '{missing}': no such file"):
        create_evaluator(f"bertscore:idf=true,idf_corpus={missing}")


@pytest.mark.parametrize(("spec", "message"), [
    ("rouge:types=true", "evaluator 'rouge': parameter 'types' = True: expected space-separated "
                         "words"),
    ({"name": "rouge", "types": ["rouge1", "rougeL"]},
     "evaluator 'rouge': parameter 'types' = \\['rouge1', 'rougeL'\\]: expected space-separated"),
])
def test_a_yes_no_or_list_value_for_a_text_parameter_fails_at_the_spec(
        spec: str | dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        create_evaluator(spec)
