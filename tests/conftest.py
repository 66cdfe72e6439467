"""Shared fixtures: every test runs offline with its own cache folder."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALSTRESS_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def shared_data() -> Path:
    """../shared/data beside the checkout; tests that need it skip where it is absent."""
    if not SHARED_DATA.exists():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA
