"""Imported variants: formats, field mapping, clear errors, and a run that needs no generator."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


def test_a_name_the_suite_lacks_is_scored_when_the_suite_leaves_nothing_to_generate(
        tmp_path: Path) -> None:
    """With only rule perturbations in the suite, the import used to be counted and then never
    reached the scores: every imported row is now in the score table."""
    rows = [{"example_id": "a", "perturbation": "my-attack", "text": "The bridge shut in 1898. "
             "It has three arches."},
            {"example_id": "b", "perturbation": "my-attack", "seed": 1,
             "text": "The moss grows on walls. Fog feeds it."}]
    imported = load_variants(write(tmp_path, rows), EXAMPLES)
    assert imported.summary()["perturbations"] == {"my-attack": 2}
    suite = custom_suite(["truncation"], seeds=1)
    for workers in (1, 2):
        result = run(EXAMPLES, suite, [create_evaluator("rep")], workers=workers,
                     generation=GenerationSetup(imported=imported))
        mine = result.table[result.table["perturbation"] == "my-attack"]
        # rep has three aspects (rep-2, rep-3, rep-4): 2 variants x 3 rows
        assert sorted(set(zip(mine["example_id"], mine["seed"], strict=True))) == [("a", 0),
                                                                                  ("b", 1)]
        assert len(mine) == 6 and (mine["status"] == "ok").all()
        assert sum(v.perturbation == "my-attack" for v in result.plan.variants) == 2


@pytest.mark.parametrize(("seed", "words"), [
    (1.7, "got 1.7"), (-1, "got -1"), (True, "got True"), ("2.5", "got '2.5'"),
    ("two", "got 'two'"), ([1], "got [1]")])
def test_a_seed_must_be_a_whole_number_of_at_least_zero(tmp_path: Path, seed: object,
                                                         words: str) -> None:
    path = write(tmp_path, [ROWS[0], {**ROWS[1], "seed": seed}])
    with pytest.raises(DataError) as info:
        load_variants(path, EXAMPLES)
    assert str(info.value) == (f"{path}, line 2, field 'seed': a seed must be a whole number "
                               f">= 0, {words}")


def test_whole_number_seeds_load_as_numbers_or_text(tmp_path: Path) -> None:
    rows = [{**ROWS[0], "seed": 2.0}, {**ROWS[1], "seed": "3"}, {**ROWS[2], "seed": " 0 "}]
    assert [v.seed for v in load_variants(write(tmp_path, rows), EXAMPLES).variants] == [2, 3, 0]
    rows = [{**ROWS[0], "seed": 4}, {**ROWS[1], "seed": 5}]
    assert [v.seed for v in load_variants(write(tmp_path, rows, ".csv"), EXAMPLES).variants] == [
        4, 5]


@pytest.mark.parametrize(("field", "value", "words"), [
    ("example_id", {"doc": "a"}, "an id must be a text or a whole number, got dict"),
    ("example_id", True, "an id must be a text or a whole number, got true"),
    ("perturbation", ["hypernym"], "must be text, got list"),
    ("perturbation", "original", "'original' names the unperturbed texts"),
    ("severity", {"level": 1}, "a severity must be a text or a number, got dict"),
    ("text", 42, "must be text, got int 42"),
])
def test_fields_of_the_wrong_kind_are_refused_by_name(tmp_path: Path, field: str, value: object,
                                                      words: str) -> None:
    path = write(tmp_path, [{**ROWS[0], field: value}])
    with pytest.raises(DataError) as info:
        load_variants(path, EXAMPLES)
    assert str(info.value).startswith(f"{path}, line 1, field '{field}': {words}")


def test_a_whole_number_id_matches_the_data_id_it_names(tmp_path: Path) -> None:
    examples = [Example("7", "summarization", "", "Seven words make up this one short text.")]
    path = write(tmp_path, [{"example_id": 7, "perturbation": "x", "text": "Seven words."},
                            {"example_id": 7.0, "perturbation": "x", "seed": 1,
                             "text": "Six words."}])
    assert [v.example_id for v in load_variants(path, examples).variants] == ["7", "7"]


def test_a_text_beyond_the_length_limit_is_a_skip_with_its_reason(tmp_path: Path) -> None:
    """A 5 MB import used to pass any --max-chars (its noise ratio was in the tens of
    thousands); the data side skips a row that long, so the import is skipped the same way."""
    long_text = "word " * 40  # 200 characters, over a limit of 120
    rows = [ROWS[0], {**ROWS[1], "perturbation": "my-attack", "text": long_text}]
    path = write(tmp_path, rows)
    suite = custom_suite(["truncation"], seeds=1)
    suite.options = {"max_chars": 120}
    imported = load_variants(path, EXAMPLES)
    result = run(EXAMPLES, suite, [create_evaluator("rep")],
                 generation=GenerationSetup(imported=imported))
    assert set(result.table["perturbation"]) == {"original", "truncation", "hypernym"}
    [skip] = [s for s in result.plan.skips if s.perturbation == "my-attack"]
    assert (skip.example_id, skip.severity, skip.seed) == ("b", "default", 0)
    assert skip.reason == (f"imported variant ({path}, line 2): its text of 200 characters is "
                           "beyond the text length limit (120; raise it with --max-chars or the "
                           "suite option max_chars)")
    plan = plan_dataset(EXAMPLES, suite, generation=GenerationSetup(imported=imported))
    assert [s.reason for s in plan.skips if s.perturbation == "my-attack"] == [skip.reason]


def test_imports_of_a_row_too_long_for_the_run_are_skips_of_that_row(tmp_path: Path) -> None:
    """A row left out for its length: the suite's own names get their skips from the planning
    loop, an imported name the suite lacks gets one per imported variant (never a silent gap)."""
    examples = [EXAMPLES[0], Example("long", "summarization", "", "A long text. " * 12)]
    rows = [{"example_id": "long", "perturbation": "my-attack", "text": "A long text."},
            {"example_id": "a", "perturbation": "my-attack", "text": "The bridge shut."}]
    imported = load_variants(write(tmp_path, rows), examples)
    suite = custom_suite(["truncation"], seeds=1)
    suite.options = {"max_chars": 100}  # the long row has 156 characters
    result = run(examples, suite, [create_evaluator("rep")],
                 generation=GenerationSetup(imported=imported))
    skips = [(s.example_id, s.perturbation) for s in result.plan.skips]
    assert ("long", "my-attack") in skips and ("long", "truncation") in skips
    assert [s.reason for s in result.plan.skips if s.perturbation == "my-attack"] == [
        "row 'long': its text of 156 characters is beyond the text length limit (100; raise it "
        "with --max-chars or the suite option max_chars)"]
    mine = result.table[result.table["perturbation"] == "my-attack"]
    assert set(mine["example_id"]) == {"a"}


def test_a_folder_given_as_variants_is_named(tmp_path: Path) -> None:
    folder = tmp_path / "variants.jsonl"
    folder.mkdir()
    with pytest.raises(DataError, match=r"variants\.jsonl: is a folder, so it cannot be read as "
                                        "variants"):
        load_variants(folder, EXAMPLES)


_variant_values = st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=True) \
    | st.text(max_size=8) | st.lists(st.integers(), max_size=2) \
    | st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(rows=st.lists(st.fixed_dictionaries({}, optional={
    "example_id": st.sampled_from(["r1", "zz", 1]) | _variant_values,
    "perturbation": st.sampled_from(["negation", "my-attack", "original"]) | _variant_values,
    "severity": st.sampled_from(["default", 1, 0.5]) | _variant_values,
    "seed": st.sampled_from([0, 1, "2"]) | _variant_values,
    "text": st.sampled_from(["A changed text."]) | _variant_values}), min_size=1, max_size=3))
def test_arbitrary_imported_variant_rows(rows: list[dict[str, object]]) -> None:
    """Any row gives a usable variant or a DataError naming the file and line (deterministic
    inputs: derandomized)."""
    examples = [Example("r1", "open-ended", "", "A fine text.")]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "variants.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        try:
            imported = load_variants(path, examples)
        except DataError as exc:
            assert str(exc).startswith(f"{path}, line ") and exc.line is not None, exc
            return
    for variant in imported.variants:  # what loads is a usable variant
        assert variant.example_id == "r1" and variant.perturbation.strip()
        assert isinstance(variant.seed, int) and variant.seed >= 0 and variant.text.strip()


def test_a_severity_the_registered_perturbation_cannot_have_is_refused(tmp_path: Path) -> None:
    """`severity: banana` for truncation was stored as is, and its blind-spot curve had a
    point named banana; a perturbation of the user's own takes any severity."""
    text = "The bridge opened in 1898."
    bad = write(tmp_path, [{"example_id": "a", "perturbation": "truncation",
                            "severity": "banana", "seed": 0, "text": text}])
    with pytest.raises(DataError, match="line 1, field 'severity': 'banana' is not a severity "
                                        "of truncation, which is graded by numbers"):
        load_variants(bad, EXAMPLES)
    fine = write(tmp_path, [{"example_id": "a", "perturbation": "truncation", "severity": 0.3,
                             "seed": 0, "text": text},
                            {"example_id": "b", "perturbation": "my-attack",
                             "severity": "banana", "seed": 0, "text": "Fog feeds it."}])
    assert len(load_variants(fine, EXAMPLES).variants) == 2
