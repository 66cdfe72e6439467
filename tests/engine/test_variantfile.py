"""variants.parquet gives back every variant exactly; older runs' variants.jsonl still reads;
`export_variants` writes what the perturbations made, in a form `--variants` loads back."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstress.core.data import DataError, Example, builtin_corpus
from evalstress.core.text import TextParser
from evalstress.engine import variantfile
from evalstress.engine.imported import load_variants
from evalstress.engine.planning import plan_dataset
from evalstress.engine.rundir import RunFiles, StoredSequence
from evalstress.engine.runner import run
from evalstress.engine.variantfile import (
    export_variants,
    join_parts,
    read_records,
    read_variants,
    variant_table,
    write_part,
)
from evalstress.evaluators.base import create_evaluator
from evalstress.perturb.base import Variant
from evalstress.report import write_outputs
from evalstress.report.rundir import browser_payload
from evalstress.suites import custom_suite

# texts a perturbation may leave: any unicode (no lone surrogates: they are not UTF-8), runs of
# spaces, tabs and newlines, carriage returns, NUL, an empty text
TEXTS = st.text(st.characters(blacklist_categories=("Cs",)), max_size=200) | st.sampled_from(
    ["", " ", "a  b\t\tc\n\n\nd", "line\r\nline\r", "nul\x00inside", "e\u0301 \U0001f600 \u200b"])
SEVERITIES = st.one_of(st.integers(-5, 50), st.floats(allow_nan=False, allow_infinity=False),
                       st.sampled_from(["low", "random-start", "major"]))
PROVENANCE = st.none() | st.fixed_dictionaries(
    {"method": st.sampled_from(["llm", "imported"]), "line": st.integers(1, 99),
     "model": st.text(max_size=10)})
VARIANTS = st.builds(Variant, st.text(st.characters(blacklist_categories=("Cs",)), min_size=1,
                                      max_size=8),
                     st.sampled_from(["truncation", "char-typo", "my-llm-rewrite"]), SEVERITIES,
                     st.integers(0, 2**40), TEXTS, st.floats(0, 1), PROVENANCE)


@settings(max_examples=60, deadline=None)
@given(parts=st.lists(st.lists(VARIANTS, max_size=6), min_size=1, max_size=4))
def test_every_variant_comes_back_exactly(tmp_path_factory: pytest.TempPathFactory,
                                          parts: list[list[Variant]]) -> None:
    folder = tmp_path_factory.mktemp("v")
    paths = []
    for index, variants in enumerate(parts):
        paths.append(folder / f"{index}.parquet")
        write_part(paths[-1], variant_table(variants))
    join_parts(paths, folder / variantfile.FILE)
    back = list(read_variants(folder / variantfile.FILE))
    expected = [v for variants in parts for v in variants]
    assert back == expected  # text, severity (with its type), seed, noise ratio
    assert [v.provenance for v in back] == [v.provenance for v in expected]
    assert [r["id"] for r in read_records(folder / variantfile.FILE)] == [v.id for v in expected]
    keys = list(variantfile.read_keys(folder / variantfile.FILE))  # what a report samples from
    assert [i for ids, _, _ in keys for i in ids] == [v.id for v in expected]
    assert [(p, s) for _, ps, ss in keys for p, s in zip(ps, ss, strict=True)] == [
        (v.perturbation, str(v.severity)) for v in expected]


def test_small_parts_are_joined_into_larger_row_groups(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(variantfile, "ROWS_PER_GROUP", 10)
    paths = []
    for index in range(7):  # 7 parts of 4 variants
        paths.append(tmp_path / f"{index}.parquet")
        write_part(paths[-1], variant_table(
            Variant("e", "p", 1, index * 4 + k, f"text {index} {k}", 0.5) for k in range(4)))
    join_parts(paths, tmp_path / "all.parquet")
    file = pq.ParquetFile(tmp_path / "all.parquet")
    assert [file.metadata.row_group(g).num_rows for g in range(file.num_row_groups)] == [12, 12, 4]
    assert [v.seed for v in read_variants(tmp_path / "all.parquet")] == list(range(28))


def test_a_run_directory_of_the_old_layout_is_read(tmp_path: Path) -> None:
    lines = [{"id": "a|truncation|0.5|0", "example_id": "a", "perturbation": "truncation",
              "severity": 0.5, "seed": 0, "noise_ratio": 0.5, "text": "The cat",
              "diff": "[-sat.-]"},
             {"id": "a|my-rewrite|default|1", "example_id": "a", "perturbation": "my-rewrite",
              "severity": "default", "seed": 1, "noise_ratio": 0.2, "text": "A cat sat.",
              "method": "imported", "provenance": {"method": "imported", "line": 3}}]
    (tmp_path / "variants.jsonl").write_text("".join(json.dumps(d) + "\n" for d in lines))
    (tmp_path / "examples.jsonl").write_text(json.dumps(
        {"id": "a", "task": "open-ended", "hypothesis": "The cat sat.", "references": []}) + "\n")
    stored = list(StoredSequence(RunFiles(tmp_path), "variants.parquet", 2, "variant"))
    assert stored == [Variant("a", "truncation", 0.5, 0, "The cat", 0.5),
                      Variant("a", "my-rewrite", "default", 1, "A cat sat.", 0.2)]
    assert stored[1].provenance == {"method": "imported", "line": 3}
    payload = browser_payload(tmp_path)
    assert payload is not None and sorted(row[6] for row in payload["variants"]) == [
        "A cat sat.", "The cat"]
    out = tmp_path / "export.jsonl"
    assert export_variants(tmp_path, out, originals=True) == 2
    exported = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["id"], r["text"], r["original"]) for r in exported] == [
        ("a|truncation|0.5|0", "The cat", "The cat sat."),
        ("a|my-rewrite|default|1", "A cat sat.", "The cat sat.")]


def test_an_old_layout_line_without_its_text_names_file_line_and_field(tmp_path: Path) -> None:
    (tmp_path / "variants.jsonl").write_text(json.dumps(
        {"example_id": "a", "perturbation": "p", "severity": 1, "seed": 0}) + "\n")
    with pytest.raises(DataError, match=r"variants.jsonl.*line 1.*text.*is missing"):
        list(read_records(tmp_path / "variants.jsonl"))


SUITE = ["truncation", "char-typo", "sentence-switching", "token-drop"]


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Example]]:
    examples = builtin_corpus()[:6]
    result = run(examples, custom_suite(SUITE, seeds=2), [create_evaluator("rouge")],
                 chunk_size=2)
    out = tmp_path_factory.mktemp("runs") / "run"
    write_outputs(result, {}, out)
    return out, examples


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_export_writes_what_the_perturbations_made(finished: tuple[Path, list[Example]],
                                                   tmp_path: Path, suffix: str) -> None:
    run_dir, examples = finished
    planned = plan_dataset(examples, custom_suite(SUITE, seeds=2), parser=TextParser()).variants
    out = tmp_path / f"variants{suffix}"
    assert export_variants(run_dir, out, originals=True) == len(planned)
    if suffix == ".csv":
        with out.open(encoding="utf-8", newline="") as handle:
            rows = list(csv.DictReader(handle))
    elif suffix == ".parquet":
        rows = pq.read_table(out).to_pylist()
    else:
        rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    originals = {e.id: e.hypothesis for e in examples}
    assert [(r["id"], r["text"]) for r in rows] == [(v.id, v.text) for v in planned]
    assert all(r["original"] == originals[r["example_id"]] for r in rows)
    assert {r["perturbation"] for r in rows} == set(SUITE)
    # and it loads back as imported variants with the same texts
    back = load_variants(out, examples).variants
    assert [(v.id, v.text) for v in back] == [(v.id, v.text) for v in planned]


def test_export_refuses_an_unknown_format_and_a_folder_without_variants(
        finished: tuple[Path, list[Example]], tmp_path: Path) -> None:
    run_dir, _ = finished
    with pytest.raises(ValueError, match=r"unknown format '.xlsx'.*\.jsonl, \.csv, \.parquet"):
        export_variants(run_dir, tmp_path / "v.xlsx")
    with pytest.raises(DataError, match=r"holds no variants\.parquet"):
        export_variants(tmp_path, tmp_path / "v.jsonl")


def test_export_refuses_a_variants_file_that_is_not_ours(tmp_path: Path) -> None:
    """A Parquet file of other columns used to export as rows of nulls, exit 0."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    pq.write_table(pa.table({"example_id": ["a"], "seed": ["zero"], "body": ["x"]}),
                   run_dir / "variants.parquet")
    out = tmp_path / "v.csv"
    with pytest.raises(DataError) as info:
        export_variants(run_dir, out)
    assert str(info.value) == (
        f"{run_dir / 'variants.parquet'}: is not a variants file written by evalstress: column "
        "'perturbation' is missing; column 'severity' is missing; column 'seed' is string, not "
        "int64; column 'noise_ratio' is missing; column 'text' is missing; column 'method' is "
        "missing; column 'provenance' is missing (its columns are example_id, perturbation, "
        "severity, seed, noise_ratio, text, method, provenance, verification, check_precision)")
    assert not out.exists() and not (tmp_path / "v.csv.partial").exists()


def test_export_refuses_a_variant_without_its_text(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    table = variant_table([Variant("a", "negation", 1, 0, "Not so.", 0.5),
                           Variant("b", "negation", 1, 0, "Fine.", 0.5)])
    texts = table.column("text").to_pylist()
    table = table.set_column(table.schema.get_field_index("text"), "text",
                             pa.array([texts[0], None], pa.string()))
    pq.write_table(table, run_dir / "variants.parquet")
    with pytest.raises(DataError, match=r"variants\.parquet, line 2, field 'text': is empty"):
        export_variants(run_dir, tmp_path / "v.jsonl")
    assert not (tmp_path / "v.jsonl").exists()


def test_a_variants_file_written_before_the_verification_columns_still_reads(
        tmp_path: Path) -> None:
    # an earlier version's variants.parquet: no verification, no check_precision
    old = pa.schema([f for f in variantfile.VARIANT_SCHEMA if f.name not in variantfile.OPTIONAL])
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    provenance = json.dumps({"method": "llm", "model": "m", "sample": 0})
    pq.write_table(pa.table({"example_id": ["a"], "perturbation": ["hypernym"],
                             "severity": ["default"], "seed": [0], "noise_ratio": [0.2],
                             "text": ["Pets purr."], "method": ["llm"],
                             "provenance": [provenance]}, schema=old),
                   run_dir / "variants.parquet")
    [record] = read_records(run_dir / "variants.parquet")
    assert record["text"] == "Pets purr." and "verification" not in record
    out = tmp_path / "v.jsonl"
    assert export_variants(run_dir, out) == 1
    row = json.loads(out.read_text())
    assert row["verification"] is None and row["check_precision"] is None


def test_verification_and_precision_are_columns_of_their_own(tmp_path: Path) -> None:
    made = Variant("a", "uncommon-phrase", "default", 0, "Felines purr.", 0.5,
                   {"method": "llm", "verification": "unverified", "check_precision": 0.6667})
    rule = Variant("a", "char-typo", 1, 0, "Cast purr.", 0.1)
    write_part(tmp_path / "v.parquet", variant_table([made, rule]))
    table = pq.read_table(tmp_path / "v.parquet")
    assert table.column("verification").to_pylist() == ["unverified", None]
    assert table.column("check_precision").to_pylist() == [0.6667, None]
    assert [r["verification"] for r in read_records(tmp_path / "v.parquet")] == [
        "unverified", None]


def test_records_at_reads_just_the_asked_positions_across_row_groups(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a report's sample reads of a large run: the records at those positions, the same
    as a full read gives them, from any row group."""
    monkeypatch.setattr(variantfile, "ROWS_PER_GROUP", 10)
    paths = []
    for index in range(5):  # 5 parts of 6 variants: row groups of 12, 12, 6
        paths.append(tmp_path / f"{index}.parquet")
        write_part(paths[-1], variant_table(
            Variant(f"e{index}", "p", 0.5, k, f"text {index} {k}", 0.1 * k,
                    {"method": "llm"} if k == 2 else None) for k in range(6)))
    join_parts(paths, tmp_path / "all.parquet")
    assert pq.ParquetFile(tmp_path / "all.parquet").num_row_groups == 3
    everything = list(read_records(tmp_path / "all.parquet"))
    wanted = [0, 11, 12, 13, 29, 2]
    picked = variantfile.records_at(tmp_path / "all.parquet", wanted)
    assert picked == {i: everything[i] for i in wanted}
    assert picked[13]["text"] == "text 2 1" and picked[2]["provenance"] == {"method": "llm"}
    assert variantfile.records_at(tmp_path / "all.parquet", []) == {}


def test_records_at_decodes_a_row_group_a_few_rows_at_a_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A report's sample of a large run decodes batches of RECORD_BATCH rows, never a whole
    row group of texts (the step in a 1,000-example run's peak memory), and finds the same
    records in the last, partial batch as in the first."""
    monkeypatch.setattr(variantfile, "ROWS_PER_GROUP", 40)
    monkeypatch.setattr(variantfile, "RECORD_BATCH", 8, raising=False)
    paths = []
    for index in range(4):  # 4 parts of 10 variants: one row group of 40
        paths.append(tmp_path / f"{index}.parquet")
        write_part(paths[-1], variant_table(
            Variant(f"e{index}", "p", 0.5, k, f"text {index} {k}", 0.1 * k, None)
            for k in range(10)))
    join_parts(paths, tmp_path / "all.parquet")
    assert pq.ParquetFile(tmp_path / "all.parquet").num_row_groups == 1
    everything = list(read_records(tmp_path / "all.parquet"))
    decoded: list[int] = []
    real_iter = pq.ParquetFile.iter_batches

    def counting(self: pq.ParquetFile, *args: object, **kwargs: object) -> object:
        for batch in real_iter(self, *args, **kwargs):  # type: ignore[arg-type]
            decoded.append(batch.num_rows)
            yield batch

    def whole_group(*_: object, **__: object) -> None:
        raise AssertionError("a whole row group was decoded at once")

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", counting)
    monkeypatch.setattr(pq.ParquetFile, "read_row_group", whole_group)
    wanted = [39, 0, 7, 8, 23]
    picked = variantfile.records_at(tmp_path / "all.parquet", wanted)
    assert picked == {i: everything[i] for i in wanted}
    assert picked[23]["text"] == "text 2 3"
    assert decoded and max(decoded) <= 8


def test_keys_read_severities_as_records_do_in_both_formats(tmp_path: Path) -> None:
    """A severity stored as the text "0.50" is the number 0.5 in a variant's id and stratum;
    an old variants.jsonl holds JSON values, read as they are."""
    rows = [{"example_id": "e1", "perturbation": "p", "severity": 0.5, "seed": 3},
            {"example_id": "e1", "perturbation": "p", "severity": 2, "seed": 0},
            {"example_id": "e2", "perturbation": "q", "severity": "high", "seed": 1}]
    table = pa.Table.from_pylist([{**r, "severity": s, "noise_ratio": 0.1, "text": "t"}
                                  for r, s in zip(rows, ["0.50", "2", "high"], strict=True)])
    pq.write_table(table, tmp_path / "v.parquet")
    (tmp_path / "v.jsonl").write_text("".join(
        json.dumps({**r, "noise_ratio": 0.1, "text": "t"}) + "\n" for r in rows))
    for name in ("v.parquet", "v.jsonl"):
        [(ids, perturbations, severities)] = variantfile.read_keys(tmp_path / name)
        assert ids == ["e1|p|0.5|3", "e1|p|2|0", "e2|q|high|1"]
        assert perturbations == ["p", "p", "q"]
        assert severities == ["0.5", "2", "high"]
    pq.write_table(table.drop_columns(["seed"]), tmp_path / "noseed.parquet")
    with pytest.raises(DataError, match=r"noseed.parquet.*seed.*is missing"):
        list(variantfile.read_keys(tmp_path / "noseed.parquet"))


def test_a_forged_provenance_nested_100_000_deep_is_a_data_error_naming_the_file(
        tmp_path: Path) -> None:
    """variants.parquet of a run directory handed to `export` or `report` is read as a user's
    file: its provenance JSON is bounded in depth (this was a RecursionError, exit 4)."""
    table = variantfile.variant_table([Variant("e", "p", 1, 0, "text", 0.5,
                                               provenance={"method": "m"})])
    deep = "[" * 100_000 + "]" * 100_000
    table = table.set_column(table.schema.get_field_index("provenance"), "provenance",
                             pa.array([deep], pa.string()))
    path = tmp_path / "variants.parquet"
    pq.write_table(table, path)
    with pytest.raises(DataError, match=r"variants\.parquet: is nested too deeply"):
        list(variantfile.read_records(path))
    with pytest.raises(DataError, match="is nested too deeply"):
        variantfile.records_at(path, [0])
