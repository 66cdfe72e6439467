"""Imported variants: formats, field mapping, clear errors, and a run that needs no generator."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from evalstress.analyses.confusion import criteria_confusion
from evalstress.core.data import DataError, Example
from evalstress.engine.generation import GenerationSetup
from evalstress.engine.imported import load_variants, parse_variant_map
from evalstress.engine.planning import plan_dataset
from evalstress.engine.runner import run
from evalstress.evaluators.base import create_evaluator
from evalstress.suites import custom_suite

EXAMPLES = [
    Example("a", "summarization", "", "The bridge opened in 1898. It has three arches."),
    Example("b", "summarization", "", "The moss grows on cliffs. Fog feeds it."),
]
ROWS = [
    {"example_id": "a", "perturbation": "hypernym", "severity": "default", "seed": 0,
     "text": "The structure opened in 1898. It has three arches."},
    {"example_id": "b", "perturbation": "hypernym", "severity": "default", "seed": 0,
     "text": "The plant grows on cliffs. Fog feeds it."},
    {"example_id": "a", "perturbation": "000:negation", "severity": "default", "seed": 0,
     "text": "The bridge did not open in 1898. It has three arches."},
]


def write(tmp_path: Path, rows: list[dict], suffix: str = ".jsonl") -> Path:
    path = tmp_path / f"variants{suffix}"
    if suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    elif suffix == ".csv":
        pd.DataFrame(rows).to_csv(path, index=False)
    else:
        pd.DataFrame(rows).to_parquet(path, index=False)
    return path


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_variants_load_from_every_format_with_provenance(tmp_path: Path, suffix: str) -> None:
    path = write(tmp_path, ROWS, suffix)
    imported = load_variants(path, EXAMPLES)
    assert [(v.example_id, v.perturbation, v.severity, v.seed) for v in imported.variants] == [
        ("a", "hypernym", "default", 0), ("b", "hypernym", "default", 0),
        ("a", "000:negation", "default", 0)]
    first = imported.variants[0]
    assert first.provenance == {"method": "imported", "file": str(path), "line": 2 if suffix ==
                                ".csv" else 1}
    assert first.noise_ratio == pytest.approx(1 / 9)  # one of nine words replaced
    assert imported.summary()["perturbations"] == {"000:negation": 1, "hypernym": 2}


def test_field_mapping_dotted_paths_and_constants(tmp_path: Path) -> None:
    rows = [{"ref": {"doc": "a"}, "perturbed": "The structure opened in 1898. It has arches.",
             "level": "minor"}]
    path = write(tmp_path, rows)
    imported = load_variants(path, EXAMPLES, ["example_id=ref.doc", "text=perturbed",
                                              "severity=level", "perturbation=const:hypernym"])
    (variant,) = imported.variants
    assert (variant.example_id, variant.perturbation, variant.severity, variant.seed) == (
        "a", "hypernym", "minor", 0)
    with pytest.raises(ValueError, match="did you mean 'text'"):
        parse_variant_map(["txt=perturbed"])


def test_an_id_matching_no_example_is_an_error_with_file_line_field(tmp_path: Path) -> None:
    path = write(tmp_path, [*ROWS[:1], {**ROWS[1], "example_id": "bb"}])
    with pytest.raises(DataError) as info:
        load_variants(path, EXAMPLES)
    assert str(info.value) == (f"{path}, line 2, field 'example_id': example id 'bb' matches no "
                               "example of the data (did you mean 'b'?)")


def test_duplicate_keys_are_an_error_naming_both_lines(tmp_path: Path) -> None:
    path = write(tmp_path, [ROWS[0], ROWS[1], {**ROWS[0], "text": "Another text."}])
    with pytest.raises(DataError, match=r"line 3, field 'example_id': duplicate variant "
                                        r"\(example 'a', perturbation 'hypernym', severity "
                                        r"'default', seed 0\); first on line 1"):
        load_variants(path, EXAMPLES)


def test_missing_fields_and_empty_files_are_errors(tmp_path: Path) -> None:
    path = write(tmp_path, [{"example_id": "a", "perturbation": "x"}])
    with pytest.raises(DataError, match=r"field 'text': is missing .* --variant-map text=FIELD"):
        load_variants(path, EXAMPLES)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", "utf-8")
    with pytest.raises(DataError, match="holds no variants"):
        load_variants(empty, EXAMPLES)


def test_a_variant_text_with_a_lone_surrogate_is_refused_where_it_is(tmp_path: Path) -> None:
    rows = [dict(ROWS[0]), {**ROWS[1], "text": "The plant \ud800 grows."}]
    with pytest.raises(DataError, match=r"line 2, field 'text': holds a lone surrogate"):
        load_variants(write(tmp_path, rows), EXAMPLES)


def test_rows_of_examples_outside_the_run_are_counted_not_errors(tmp_path: Path) -> None:
    path = write(tmp_path, ROWS)
    imported = load_variants(path, EXAMPLES[:1], known_ids=["a", "b"])
    assert len(imported.variants) == 2 and imported.outside_run == 1


def test_imported_variants_replace_llm_generation_and_reach_the_analysis(tmp_path: Path) -> None:
    """A suite with an LLM attack runs without a generator when its texts are imported; the
    imported `000:negation` variants pick paper 000's negation row."""
    imported = load_variants(write(tmp_path, ROWS), EXAMPLES)
    suite = custom_suite(["hypernym", "truncation"], seeds=1)
    plan = plan_dataset(EXAMPLES, suite, generation=GenerationSetup(imported=imported))
    names = [v.perturbation for v in plan.variants]
    assert names.count("hypernym") == 2 and names.count("000:negation") == 1
    assert "truncation" in names
    assert plan.generation is not None
    assert plan.generation["imported"]["variants"] == 3 and "generator" not in plan.generation
    result = run(EXAMPLES, suite, [create_evaluator("rouge")],
                 generation=GenerationSetup(imported=imported))
    assert [v.text for v in result.plan.variants] == [v.text for v in plan.variants]
    confusion = criteria_confusion(result.table, aspect_map={"rouge1": "informativeness"})
    tested = {(i.perturbation, i.test) for i in confusion.items}
    assert ("hypernym", "directional") in tested  # Table 21: hypernym hurts informativeness
