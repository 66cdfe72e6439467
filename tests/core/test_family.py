"""A model's family, read from its name by one stated rule."""

from __future__ import annotations

import pytest

from evalstress.core.family import model_family, shared_family


@pytest.mark.parametrize(("name", "family"), [
    ("gpt-4o-mini-2024-07-18", "gpt"),
    ("gpt-4.1", "gpt"),
    ("claude-3-5-sonnet-20241022", "claude"),
    ("meta-llama/Meta-Llama-3.1-8B-Instruct", "llama"),
    ("Qwen2.5-7B-Instruct", "qwen"),
    ("mistral-large-latest", "mistral"),
    ("google/gemma-2-9b-it", "gemma"),
    ("microsoft/Phi-3-mini-4k-instruct", "phi"),
    ("HuggingFaceTB/SmolLM2-135M-Instruct", "smollm"),
    ("/models/smollm2-135m-instruct-q8_0.gguf", "smollm"),
    ("olmo2-7b", "olmo"),  # unknown: the letters before the first digit
    ("7b-chat", None),
    ("", None),
])
def test_each_name_reads_as_its_family(name: str, family: str | None) -> None:
    assert model_family(name) == family


def test_two_versions_of_one_family_share_it_and_two_families_do_not() -> None:
    assert shared_family("gpt-4o-mini", "gpt-4.1-2025-04-14") == "gpt"
    assert shared_family("Llama-3-8B", "meta-llama/Llama-3.1-70B") == "llama"
    assert shared_family("gpt-4o-mini", "claude-3-haiku") is None
    assert shared_family("gpt-4o-mini", None) is None
