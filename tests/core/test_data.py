from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from evalstress.core.data import DataError, FieldMap, builtin_corpus, from_hf_dataset, load_examples


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


ROW = {"id": "a", "task": "summarization", "source": "Src.", "hypothesis": "Good text.",
       "references": ["Ref one.", "Ref two."], "topic": "x"}


def test_jsonl_with_default_fields(tmp_path: Path) -> None:
    [example] = load_examples(write_jsonl(tmp_path / "d.jsonl", [ROW]))
    assert example.hypothesis == "Good text."
    assert example.references == ("Ref one.", "Ref two.")
    assert example.meta == {"topic": "x"}


def test_field_mapping_and_several_reference_fields(tmp_path: Path) -> None:
    row = {"doc": "Src.", "highlight": "Good.", "ref_a": "A.", "ref_b": ["B.", "C."]}
    path = write_jsonl(tmp_path / "d.jsonl", [row])
    [example] = load_examples(path, ["hypothesis=highlight", "source=doc",
                                     "references=ref_a,ref_b"], task="translation")
    assert example.references == ("A.", "B.", "C.")
    assert example.task == "translation"
    assert example.id == "d:1"  # no id field: file stem and line


def test_csv_and_parquet(tmp_path: Path) -> None:
    frame = pd.DataFrame([{"id": "1", "hypothesis": "One text.", "references": "R."},
                          {"id": "2", "hypothesis": "Two text.", "references": "S."}])
    frame.to_csv(tmp_path / "d.csv", index=False)
    frame.to_parquet(tmp_path / "d.parquet")
    for name in ("d.csv", "d.parquet"):
        examples = load_examples(tmp_path / name)
        assert [e.hypothesis for e in examples] == ["One text.", "Two text."]
        assert examples[1].references == ("S.",)


@pytest.mark.parametrize(
    ("content", "line", "field", "words"),
    [
        ('{"hypothesis": "ok"}\n{"hypothesis": "ok", \n', 2, None,
         "column 22: the line ends before its JSON is complete"),
        ('{"hypothesis": "ok"}\n{"text": "no hyp"}\n', 2, "hypothesis", "missing"),
        ('{"hypothesis": "ok"}\n\n{"hypothesis": "   "}\n', 3, "hypothesis", "empty"),
        ('{"hypothesis": "ok", "references": ["one", {}]}\n', 1, "references[1]", "must be text"),
        # numbers and booleans are refused like a list, never turned into text
        ('{"hypothesis": "ok"}\n{"hypothesis": 42}\n', 2, "hypothesis", "got int 42"),
        ('{"hypothesis": true}\n', 1, "hypothesis", "got bool true"),
        ('{"hypothesis": "ok", "references": [7, 3.5]}\n', 1, "references[0]", "got int 7"),
        ('{"hypothesis": "ok", "source": 42}\n', 1, "source", "must be text"),
        # a lone surrogate is valid JSON but no text: named where it is, not a traceback later
        ('{"hypothesis": "bad \\ud800 text"}\n', 1, "hypothesis", "lone surrogate (U+D800"),
        ('{"id": "x\\udc00", "hypothesis": "ok"}\n', 1, "id", "lone surrogate (U+DC00"),
        ('{"id": 1, "hypothesis": "a"}\n{"id": 1, "hypothesis": "b"}\n', 2, "id", "duplicate"),
        ('{"hypothesis": "a", "task": "poetry"}\n', 1, "task", "unknown task"),
    ],
)
def test_bad_jsonl_names_file_line_and_field(tmp_path: Path, content: str, line: int,
                                              field: str | None, words: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(DataError) as info:
        load_examples(path)
    error = info.value
    assert (error.path, error.line, error.field) == (str(path), line, field)
    assert words in str(error)
    assert f"line {line}" in str(error)


def test_wrong_encoding_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "latin.jsonl"
    path.write_bytes(b'{"hypothesis": "fine"}\n{"hypothesis": "caf\xe9"}\n')
    with pytest.raises(DataError, match=r"line 2: is not UTF-8"):
        load_examples(path)


def test_csv_row_with_extra_cells(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("id,hypothesis\n1,ok\n2,ok,extra\n", encoding="utf-8")
    with pytest.raises(DataError, match="line 3"):
        load_examples(path)


def test_csv_with_an_unbalanced_quote_names_the_line_it_opens_on(tmp_path: Path) -> None:
    """Without strict parsing the rest of the file became one cell of row 3 (exit 0)."""
    path = tmp_path / "d.csv"
    path.write_text('id,hypothesis\n1,fine\n2,"opens here\n3,swallowed\n4,swallowed too\n',
                    encoding="utf-8")
    with pytest.raises(DataError) as info:
        load_examples(path)
    assert info.value.line == 3 and "never closed" in str(info.value)


def test_csv_keeps_a_quoted_cell_that_spans_lines(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text('id,hypothesis\n1,"first line\nsecond line"\n2,next\n', encoding="utf-8")
    examples = load_examples(path)
    assert [e.hypothesis for e in examples] == ["first line\nsecond line", "next"]


def test_csv_with_a_stray_quote_inside_a_quoted_cell_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text('id,hypothesis\n1,"says "hi" there"\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"line 2.*quote inside a cell must be doubled"):
        load_examples(path)


def test_unknown_mapping_field_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown example field"):
        FieldMap.parse(["hypo=highlight"])


def test_builtin_corpus_covers_four_tasks() -> None:
    corpus = builtin_corpus()
    assert len(corpus) >= 40
    assert {e.task for e in corpus} >= {"summarization", "dialogue", "story", "qa"}
    assert all(e.source and e.hypothesis and e.references for e in corpus)


def test_hf_style_rows() -> None:
    rows = [{"document": "S.", "summary": "H.", "refs": ["R."]}]
    [example] = from_hf_dataset(rows, {"hypothesis": "summary", "source": "document",
                                       "references": "refs"}, task="summarization")
    assert (example.source, example.hypothesis, example.references) == ("S.", "H.", ("R.",))


def test_summeval_loads_with_mapping(shared_data: Path) -> None:
    examples = load_examples(shared_data / "summeval.jsonl",
                             ["hypothesis=highlight", "references=references"],
                             task="summarization")
    assert len(examples) == 100
    assert all(len(e.references) == 10 for e in examples)
    assert "systems" in examples[0].meta


def test_csv_and_jsonl_with_a_byte_order_mark_keep_their_first_field(tmp_path: Path) -> None:
    # spreadsheet exports start with a BOM; before, CSV said "'hypothesis' is missing"
    csv_path = tmp_path / "bom.csv"
    csv_path.write_bytes("hypothesis,references\nGood text.,Ref one.\n".encode("utf-8-sig"))
    jsonl_path = tmp_path / "bom.jsonl"
    jsonl_path.write_bytes((json.dumps({"hypothesis": "Good text."}) + "\n").encode("utf-8-sig"))
    [from_csv] = load_examples(csv_path)
    [from_jsonl] = load_examples(jsonl_path)
    assert (from_csv.hypothesis, from_csv.references) == ("Good text.", ("Ref one.",))
    assert from_jsonl.hypothesis == "Good text."


def test_a_side_corpus_reads_lines_or_filtered_jsonl_records(tmp_path: Path) -> None:
    from evalstress.core.data import read_text_corpus

    lines = tmp_path / "corpus.txt"
    lines.write_text("first line\n\n  \nsecond line\n", encoding="utf-8")
    assert read_text_corpus(lines, "corpus") == ["first line", "second line"]
    records = tmp_path / "corpus.jsonl"
    records.write_text('{"text": "a", "split": "train"}\n{"text": "b", "split": "test"}\n'
                       '{"text": "c"}\n', encoding="utf-8")
    assert read_text_corpus(records, "corpus", where="split=test") == ["b"]
    with pytest.raises(ValueError, match=r"line 3, field 'split' \(from where=split=test\)"):
        read_text_corpus(records, "corpus", where="split=test", missing_where_is_error=True)
    with pytest.raises(ValueError, match="line 1, field 'body': missing or not a text"):
        read_text_corpus(records, "corpus", field="body")
    with pytest.raises(ValueError, match=r"corpus file '.*nope\.jsonl' does not exist"):
        read_text_corpus(tmp_path / "nope.jsonl", "corpus")
    records.write_text('{"text": "a"}\n{"text": \n', encoding="utf-8")
    with pytest.raises(DataError, match=r"corpus\.jsonl, line 2, column 10: the line ends"):
        read_text_corpus(records, "corpus")
    records.write_bytes(b'{"text": "a"}\n{"text": "\xff"}\n')
    with pytest.raises(DataError, match=r"corpus\.jsonl, line 2: is not UTF-8 text"):
        read_text_corpus(records, "corpus")


def test_a_column_named_twice_in_a_csv_header_is_refused(tmp_path: Path) -> None:
    """The second 'hypothesis' column used to win silently."""
    path = tmp_path / "d.csv"
    path.write_text("id,hypothesis,hypothesis\n1,first text,second text\n", encoding="utf-8")
    with pytest.raises(DataError) as info:
        load_examples(path)
    assert str(info.value) == (f"{path}, line 1, field 'hypothesis': the header names column "
                               "'hypothesis' twice (columns 2 and 3); rename one of them")
    path.write_text("id,hypothesis,,\n1,text,x,y\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"line 1: the header has more than one column without "
                                        r"a name \(columns 3 and 4\)"):
        load_examples(path)


@pytest.mark.parametrize(("raw", "shown"), [
    ('{"a": 1}', "dict"), ("[1, 2]", "list"), ("true", "true"), ("1.5", "1.5")])
def test_an_id_that_is_no_text_or_whole_number_is_refused(tmp_path: Path, raw: str,
                                                           shown: str) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"id": "x", "hypothesis": "A text."}\n'
                    f'{{"id": {raw}, "hypothesis": "A text."}}\n', encoding="utf-8")
    with pytest.raises(DataError) as info:
        load_examples(path)
    assert str(info.value) == (f"{path}, line 2, field 'id': an id must be a text or a whole "
                               f"number, got {shown}")
    with pytest.raises(DataError, match=r"line 2, field 'doc\.key': an id must be"):
        path.write_text(f'{{"hypothesis": "A."}}\n{{"doc": {{"key": {raw}}}, "hypothesis": "B."}}\n',
                        encoding="utf-8")
        load_examples(path, ["id=doc.key"])


def test_whole_number_ids_read_as_their_digits(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", [{"id": 7, "hypothesis": "A."},
                                              {"id": 8.0, "hypothesis": "B."}])
    assert [e.id for e in load_examples(path)] == ["7", "8"]


def test_a_line_nested_too_deeply_is_one_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_text('{"hypothesis": "fine"}\n{"hypothesis": ' + "[" * 100_000 + "]" * 100_000
                    + "}\n", encoding="utf-8")
    with pytest.raises(DataError) as info:
        load_examples(path)
    assert str(info.value).startswith(f"{path}, line 2: is nested too deeply")


def test_a_csv_cell_longer_than_pythons_default_limit_loads(tmp_path: Path) -> None:
    """Python's csv stops at 131,072 characters, below the default text length limit."""
    path = tmp_path / "d.csv"
    path.write_text("id,hypothesis\n1," + "a" * 140_000 + "\n", encoding="utf-8")
    [example] = load_examples(path)
    assert len(example.hypothesis) == 140_000


def test_a_csv_cell_beyond_the_cell_limit_says_so(tmp_path: Path) -> None:
    from evalstress.core.data import CSV_CELL_LIMIT

    path = tmp_path / "d.csv"
    path.write_text("id,hypothesis\n1,fine\n2," + "a" * (CSV_CELL_LIMIT + 1) + "\n",
                    encoding="utf-8")
    with pytest.raises(DataError) as info:
        load_examples(path)
    assert str(info.value) == (
        f"{path}, line 3: a cell is longer than the CSV reader's limit of 10,000,000 characters "
        "(if no text is meant to be that long, a quote opened here is never closed); store "
        "texts this long as JSONL or Parquet, which have no cell limit")


def test_a_folder_given_as_data_is_named_as_such(tmp_path: Path) -> None:
    folder = tmp_path / "adir.jsonl"
    folder.mkdir()
    with pytest.raises(DataError) as info:
        load_examples(folder)
    assert str(info.value) == (f"{folder}: is a folder, so it cannot be read as data; give the "
                               "path of a file")


@pytest.mark.parametrize("pair", ["hypothesis=", "source= ", "references=,"])
def test_a_mapping_that_names_no_field_is_refused_before_any_line(tmp_path: Path,
                                                                  pair: str) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text("not even JSON\n", encoding="utf-8")  # never read
    with pytest.raises(ValueError) as info:
        load_examples(path, [pair])
    assert str(info.value).startswith(f"--map '{pair}': names no field")
    assert not isinstance(info.value, DataError)


def test_a_mapping_given_as_a_dict_must_name_a_field() -> None:
    with pytest.raises(ValueError, match=r"field mapping 'hypothesis: None': names no field"):
        FieldMap.parse({"hypothesis": None})
    with pytest.raises(ValueError, match=r"field mapping 'source: ''': names no field"):
        FieldMap.parse({"source": ""})
    assert FieldMap.parse({"id": None, "hypothesis": "text"}) == FieldMap(id=None,
                                                                          hypothesis="text")
    # several reference fields: "a,b" or a list (a list used to fail with AttributeError)
    for refs in ("ref_a, ref_b", ["ref_a", "ref_b"]):
        assert FieldMap.parse({"references": refs}).references == ("ref_a", "ref_b")


@pytest.mark.parametrize(("line", "words"), [
    ('{"id": "x", "hypothesis": "a\tb"}', "column 29: invalid control character in a text "
     "(JSON needs a line break written as \\n and a tab as \\t)"),
    ('{"id": "x", "hypothesis": "a"} {}', "column 32: more text after the JSON object ends"),
    ('{"id": "x" "hypothesis": "a"}', "column 12: expected ',' between two items"),
    ("{'id': 'x'}", "column 2: expected a field name in double quotes"),
    ('{"id": "x", "hypothesis": "a\\q"}', "column 29: invalid backslash escape"),
])
def test_json_errors_read_as_a_sentence_with_line_and_column(tmp_path: Path, line: str,
                                                              words: str) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"hypothesis": "ok"}\n\n\n' + line + "\n", encoding="utf-8")
    with pytest.raises(DataError) as info:
        load_examples(path)
    assert str(info.value).startswith(f"{path}, line 4, {words}")
    assert (info.value.line, info.value.field) == (4, None)


def test_bad_bytes_far_into_a_file_are_named_by_their_own_line_and_offset(tmp_path: Path) -> None:
    """Streaming decoders count from their buffer: the line used to be computed from that."""
    rows = b"".join(b'{"id": "%d", "hypothesis": "A fine text of some length."}\n' % i
                    for i in range(1000))
    bad_line = b'{"id": "bad", "hypothesis": "caf\xe9"}\n'
    for suffix, body in ((".jsonl", rows + bad_line),
                         (".csv", b"id,hypothesis\n"
                          + b"".join(b"%d,y\n" % i for i in range(5000)) + b"z,caf\xe9\n")):
        path = tmp_path / f"d{suffix}"
        path.write_bytes(body)
        offset = body.index(b"\xe9")
        line = body[:offset].count(b"\n") + 1
        with pytest.raises(DataError) as info:
            load_examples(path)
        assert str(info.value) == (f"{path}, line {line}: is not UTF-8 text: byte 0xE9 at byte "
                                   f"offset {offset:,} (invalid continuation byte); save the "
                                   "file as UTF-8")


def test_a_file_without_a_task_column_states_its_default_task_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "notask.csv"
    path.write_text("id,hypothesis\na,One text.\nb,Another text.\n", encoding="utf-8")
    examples = load_examples(path)
    assert [e.task for e in examples] == ["open-ended", "open-ended"]
    lines = capsys.readouterr().err.splitlines()
    assert lines == [f"warning: {path}: task: open-ended (no task column; give --task or a "
                     "task field)"]
    load_examples(path, task="summarization")  # a task given: nothing to say
    assert capsys.readouterr().err == ""


def test_rows_without_a_task_among_others_are_counted(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "mixed.jsonl"
    rows = [{"id": "a", "task": "story", "hypothesis": "x"}, {"id": "b", "hypothesis": "y"},
            {"id": "c", "task": "", "hypothesis": "z"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert [e.task for e in load_examples(path)] == ["story", "open-ended", "open-ended"]
    assert "task: open-ended for 2 of 3 rows" in capsys.readouterr().err
    path.write_text(json.dumps(rows[0]) + "\n", encoding="utf-8")
    load_examples(path)  # every row names its task
    assert capsys.readouterr().err == ""


def test_a_dataset_without_tasks_states_its_default_task(
        capsys: pytest.CaptureFixture[str]) -> None:
    from_hf_dataset([{"hypothesis": "One text."}], name="mine")
    assert capsys.readouterr().err.strip() == (
        "warning: mine: task: open-ended (no task column; give --task or a task field)")


def test_a_command_reading_such_a_file_says_the_default_once(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from evalstress.cli import app

    path = tmp_path / "notask.jsonl"
    path.write_text("".join(json.dumps({"id": f"e{i}", "hypothesis": f"Text {i} here.",
                                        "references": [f"The text {i}."]})
                            + "\n" for i in range(3)), encoding="utf-8")
    result = CliRunner(env={"COLUMNS": "1000"}).invoke(
        app, ["card", "bleu", "--data", str(path), "--budget", "small", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert result.output.count("task: open-ended (no task column; give --task or a task "
                               "field)") == 1
