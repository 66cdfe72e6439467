"""The job builder refuses, before any work, what could only fail halfway through a run."""

from __future__ import annotations

import pytest

from evalstress.core.strict import ConfigError
from evalstress.job import RunSettings, build_job


def test_a_perturbation_missing_its_model_is_refused_before_any_work(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """bert-diverge without a masked LM raised in the middle of the run (exit 4)."""
    monkeypatch.delenv("EVALSTRESS_MASKED_LM", raising=False)
    settings = RunSettings.resolve({"perturbations": ["bert-diverge"], "seeds": 1, "limit": 1})
    with pytest.raises(ConfigError, match="bert-diverge needs a masked LM: give model=PATH"):
        build_job(settings)
