"""A scored run as the analyses and the report see it: its plan, score table, stats and summary.

A run keeps its table on disk: `scores` is the Parquet-backed `ScoreTable` that analyses read
column by column; `table` loads the whole table (fine for small runs); variants and skips are
read from the run directory on demand.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

from evalstress.core.data import Example
from evalstress.core.records import SCORE_COLUMNS, SKIP_COLUMNS, SkipRecord
from evalstress.core.scoretable import ScoreTable
from evalstress.core.userfile import read_json
from evalstress.engine.rundir import RunFiles, StoredSequence
from evalstress.engine.scoring import EvaluatorStats
from evalstress.perturb.base import Variant
from evalstress.suites import Suite

if TYPE_CHECKING:
    from evalstress.llm.accounting import Usage


@dataclass
class Plan:
    """The variants a suite makes of a dataset, and the skips with their reasons: lists from
    `planning.plan`, read on demand from the run directory after a run."""

    examples: list[Example]
    suite: Suite
    variants: Sequence[Variant]
    skips: Sequence[SkipRecord]
    parses: int = 0
    generation: dict[str, Any] | None = None  # results.json's `generation` block


class RunResult:
    """A scored run, read from its run directory (see the module docstring)."""

    def __init__(self, plan: Plan, files: RunFiles, summary: dict[str, Any],
                 signatures: dict[str, Any] | None = None, specs: dict[str, str] | None = None):
        self.plan = plan
        self.files = files
        self.summary = summary  # counts, skip and missing reasons, generation counts
        self.stats = {label: EvaluatorStats(**values)
                      for label, values in summary["stats"].items()}
        self.signatures = signatures or {}
        self.specs = specs or {}  # label -> the spec that builds the evaluator again
        self.usage: dict[str, Usage] = {}  # LLM accounting per evaluator label (results.json)
        self._table: pd.DataFrame | None = None

    @classmethod
    def from_files(cls, files: RunFiles, examples: list[Example], suite: Suite, *,
                   signatures: dict[str, Any], specs: dict[str, str] | None = None
                   ) -> RunResult:
        summary = read_json(files.path("summary.json"))
        plan = Plan(examples, suite, StoredSequence(files, "variants.parquet",
                                                    int(summary["variants"]), "variant"),
                    StoredSequence(files, "skips.jsonl", int(summary["skipped"]), "skip"),
                    int(summary["parses"]))
        return cls(plan, files, summary, signatures, specs)

    @property
    def scores(self) -> ScoreTable:
        """The score table for analyses: Parquet on disk, read column-pruned."""
        path = self.files.path("scores.parquet")
        if path.exists():
            return ScoreTable(path)
        return ScoreTable(pd.DataFrame(columns=SCORE_COLUMNS))

    @property
    def table(self) -> pd.DataFrame:
        """The whole score table in memory (small runs, notebooks, tests)."""
        if self._table is None:
            self._table = self.scores.read()
        return self._table


def skips_frame(run: RunResult) -> pd.DataFrame:
    """Skip records as a table (read from the run directory)."""
    return pd.DataFrame([s.to_json() for s in run.plan.skips], columns=SKIP_COLUMNS)


def skip_counts(run: RunResult) -> pd.DataFrame:
    """Skips per (perturbation, reason), from the run's summary (no records are read)."""
    return pd.DataFrame(run.summary.get("skip_reasons") or [],
                        columns=["perturbation", "reason", "count"])
