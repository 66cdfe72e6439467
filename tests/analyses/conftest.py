"""Synthetic score tables in the runner's long format, for exact checks of the analyses."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import pytest

from evalstress.core.records import SCORE_COLUMNS


def row(example: str, perturbation: str, severity: str, seed: int, evaluator: str, aspect: str,
        score: float | None, *, higher: bool = True, task: str = "summarization") -> dict:
    missing = score is None
    return {"example_id": example, "task": task, "perturbation": perturbation,
            "severity": severity, "severity_rank": 0 if severity else -1, "seed": seed,
            "noise_ratio": 0.0, "evaluator": evaluator, "aspect": aspect,
            "score": np.nan if missing else float(score), "higher_is_better": higher,
            "status": "missing" if missing else "ok", "reason": "parse error" if missing else ""}


def table_from(originals: Sequence[float | None], variants: dict[tuple[str, str], Sequence],
               *, evaluator: str = "judge", aspect: str = "fluency",
               higher: bool = True) -> pd.DataFrame:
    """Originals for examples e0..e{n-1}; variants[(pert, severity)] = scores per example (a
    list per example means one score per seed)."""
    rows = [row(f"e{i}", "original", "", -1, evaluator, aspect, s, higher=higher)
            for i, s in enumerate(originals)]
    for (pert, severity), scores in variants.items():
        for i, s in enumerate(scores):
            seeds = s if isinstance(s, list | tuple) else [s]
            for seed, value in enumerate(seeds):
                rows.append(row(f"e{i}", pert, severity, seed, evaluator, aspect, value,
                                higher=higher))
    return pd.DataFrame(rows, columns=SCORE_COLUMNS)


@pytest.fixture
def make_table():  # type: ignore[no-untyped-def]
    return table_from
