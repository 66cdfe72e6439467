"""Copying the shipped example files: every file lands byte for byte, a second copy changes
nothing, and a file evalstress did not write (or one changed since) is never replaced without
`force`, with nothing written at all when one is refused."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from evalstress.core.data import load_examples
from evalstress.engine.outdir import OutDirError
from evalstress.engine.samplefiles import MARKER, copy_samples, shipped_files
from evalstress.studies.correlate import load_system_outputs

SHIPPED = {"README.md", "sample.jsonl", "summaries.jsonl", "paragraphs.jsonl",
           "translations.jsonl"}
WRITTEN_HERE = ("summaries.jsonl", "translations.jsonl", "paragraphs.jsonl")
SHARED = Path("/work/shared/data")


def test_every_shipped_file_is_copied_byte_for_byte(tmp_path: Path) -> None:
    placed = copy_samples(tmp_path / "examples")
    assert {p.path.name for p in placed} == SHIPPED
    assert {p.action for p in placed} == {"written"}
    for name, entry in shipped_files().items():
        assert (tmp_path / "examples" / name).read_bytes() == entry.read_bytes()
    assert set(json.loads((tmp_path / "examples" / MARKER).read_text())["files"]) == SHIPPED


def test_the_samples_load_as_the_documentation_maps_them(tmp_path: Path) -> None:
    copy_samples(tmp_path)
    summaries = load_examples(tmp_path / "summaries.jsonl",
                              mapping={"hypothesis": "highlight", "references": "references"})
    assert len(summaries) == 12 and all(len(e.references) in (2, 3) for e in summaries)
    docs = load_system_outputs(tmp_path / "summaries.jsonl", systems_field="systems",
                               text_field="summary", system_id_field="system", id_field="id",
                               human_fields=["coherence", "consistency", "fluency",
                                             "relevance"], source_field="source",
                               reference_fields=["references"], task="summarization",
                               limit=None)
    assert len(docs) == 12
    translations = load_examples(tmp_path / "translations.jsonl",
                                 mapping={"hypothesis": "ref_a", "references": "ref_b"})
    assert len(translations) == 12
    paragraphs = [json.loads(line) for line in (tmp_path / "paragraphs.jsonl").open()]
    assert sorted(r["set"] for r in paragraphs) == ["a"] * 12 + ["b"] * 12
    assert len(load_examples(tmp_path / "sample.jsonl")) == 57


def _texts(value: object) -> list[str]:
    """Every string inside a JSON value, at any depth."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _texts(v)]
    if isinstance(value, list):
        return [t for v in value for t in _texts(v)]
    return []


@pytest.mark.skipif(not SHARED.is_dir(), reason="the public sets are not on this machine")
def test_no_shipped_text_comes_from_the_public_sets() -> None:
    public = {sentence.strip() for path in SHARED.glob("*.jsonl")
              for line in path.read_text("utf-8").splitlines()
              for text in _texts(json.loads(line)) for sentence in text.split(". ")
              if len(sentence.split()) >= 8}
    for name in WRITTEN_HERE:
        for line in shipped_files()[name].read_text("utf-8").splitlines():
            for text in _texts(json.loads(line)):
                copied = [s for s in text.split(". ") if s.strip() in public]
                assert not copied, f"{name}: {copied[0]!r} is a sentence of the public sets"


def test_the_hand_rated_systems_rank_as_they_were_written() -> None:
    """S1 is a faithful summary, S2 the same with facts changed, S3 shuffled article sentences,
    S4 S1 with words dropped and swapped: each rating says so in every row."""
    for line in shipped_files()["summaries.jsonl"].read_text("utf-8").splitlines():
        systems = {s["system"]: s for s in json.loads(line)["systems"]}
        assert set(systems) == {"S1", "S2", "S3", "S4"}
        assert systems["S2"]["consistency"] < systems["S1"]["consistency"]
        assert systems["S3"]["coherence"] < systems["S1"]["coherence"]
        assert systems["S4"]["fluency"] < systems["S1"]["fluency"]
        assert all(s[a] in range(1, 6) for s in systems.values()
                   for a in ("coherence", "consistency", "fluency", "relevance"))


def test_a_second_copy_keeps_the_files(tmp_path: Path) -> None:
    copy_samples(tmp_path)
    stamps = {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}
    placed = copy_samples(tmp_path)
    assert {p.action for p in placed} == {"kept"}
    assert all((tmp_path / n).stat().st_mtime_ns == t for n, t in stamps.items() if n != MARKER)


def test_a_users_file_of_the_same_name_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    (tmp_path / "summaries.jsonl").write_text("my own data\n")
    with pytest.raises(OutDirError, match=r"holds summaries.jsonl, which evalstress did not "
                                          r"write.*--force"):
        copy_samples(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summaries.jsonl"]
    assert (tmp_path / "summaries.jsonl").read_text() == "my own data\n"


def test_a_copy_the_user_edited_is_refused_but_force_replaces_it(tmp_path: Path) -> None:
    copy_samples(tmp_path)
    (tmp_path / "translations.jsonl").write_text("edited\n")
    with pytest.raises(OutDirError, match=r"translations\.jsonl"):
        copy_samples(tmp_path)
    assert (tmp_path / "translations.jsonl").read_text() == "edited\n"
    placed = {p.path.name: p.action for p in copy_samples(tmp_path, force=True)}
    assert placed["translations.jsonl"] == "replaced"
    assert (tmp_path / "translations.jsonl").read_bytes() == \
        shipped_files()["translations.jsonl"].read_bytes()


def test_an_older_copy_evalstress_wrote_is_replaced(tmp_path: Path) -> None:
    old = b'{"id": "old"}\n'
    (tmp_path / "sample.jsonl").write_bytes(old)
    (tmp_path / MARKER).write_text(json.dumps(
        {"evalstress": "0.0.1", "files": {"sample.jsonl": hashlib.sha256(old).hexdigest()}}))
    placed = {p.path.name: p.action for p in copy_samples(tmp_path)}
    assert placed["sample.jsonl"] == "replaced"
    assert len(load_examples(tmp_path / "sample.jsonl")) == 57


def test_a_file_in_place_of_the_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "examples").write_text("x")
    with pytest.raises(OutDirError, match="is not a directory"):
        copy_samples(tmp_path / "examples")
