"""Concrete before/after examples for the card's findings, read from a finished run directory:
the original text (examples.jsonl), one variant (variants.parquet) and the scores both got
(scores.parquet)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd

from evalstress.core.data import read_jsonl
from evalstress.core.records import ORIGINAL
from evalstress.engine import variantfile

#: which variant a finding shows: the typical one (the example whose change is the median at
#: the cited severity) or, labelled as such beside it, the most extreme one
PICKS = ("typical", "extreme")
#: the rule, as card.json and the card state it
RULE = ("each finding's before/after example is typical: of the examples scored at the "
        "severity the finding cites, the one whose change of score (its seeds averaged) is the "
        "median (the lower of the two middle ones for an even count), shown with the seed "
        "closest to that example's mean; where another example moved more, the most extreme "
        "one (the largest change either way) is shown beside it, labelled")


class RunEvidence:
    """One run directory's texts and scores, read on first use; `name` is how card.json names
    the directory (relative to the card's folder)."""

    def __init__(self, run_dir: Path, name: str | None = None):
        self.run_dir = Path(run_dir)
        self.name = name or str(run_dir)

    @cached_property
    def scores(self) -> pd.DataFrame:
        columns = ["example_id", "perturbation", "severity", "seed", "aspect", "score",
                   "higher_is_better", "status"]
        return pd.read_parquet(self.run_dir / "scores.parquet", columns=columns)

    @cached_property
    def examples(self) -> dict[str, tuple[str, str]]:
        """Each example's (task, text to score), from the run's examples.jsonl."""
        found: dict[str, tuple[str, str]] = {}
        path = self.run_dir / "examples.jsonl"
        if path.exists():  # a broken line: a DataError naming the file, line and column
            for _, record in read_jsonl(path):
                found[str(record.get("id"))] = (str(record.get("task") or ""),
                                                str(record.get("hypothesis", "")))
        return found

    def variant_text(self, example_id: str, perturbation: str, severity: str,
                     seed: int) -> str | None:
        path = variantfile.variants_path(self.run_dir)
        if path is None:
            return None
        for record in variantfile.read_records(
                path, ["example_id", "perturbation", "severity", "seed", "text"]):
            if (str(record["example_id"]) == example_id and record["perturbation"] == perturbation
                    and str(record["severity"]) == severity and int(record["seed"]) == seed):
                return str(record["text"])
        return None

    def before_after(self, aspect: str, perturbation: str, severity: str,
                     pick: str = "typical", task: str | None = None) -> dict[str, Any] | None:
        """One variant of `perturbation` at `severity` with its original, both scores and the
        files they come from; `pick` chooses which (PICKS, see RULE), among the examples of
        `task` when a finding is about one task. None when none was scored."""
        if pick not in PICKS:
            raise ValueError(f"pick '{pick}': choose one of {', '.join(PICKS)}")
        table = self.scores
        ok = table[(table["status"] == "ok") & (table["aspect"] == aspect)]
        gold = ok[ok["perturbation"] == ORIGINAL].groupby("example_id")["score"].mean()
        rows = ok[(ok["perturbation"] == perturbation) & (ok["severity"].astype(str) == severity)]
        rows = rows[rows["example_id"].isin(gold.index)]
        if task is not None:
            rows = rows[rows["example_id"].astype(str).map(
                lambda i: self.examples.get(i, ("", ""))[0]) == task]
        if rows.empty:
            return None
        sign = 1.0 if bool(rows["higher_is_better"].iloc[0]) else -1.0
        drop = sign * (rows["example_id"].map(gold) - rows["score"])
        per_example = drop.groupby(rows["example_id"]).mean().sort_values(kind="stable")
        if pick == "typical":
            chosen_id = per_example.index[(len(per_example) - 1) // 2]
        else:
            chosen_id = per_example.abs().sort_values(ascending=False, kind="stable").index[0]
        mine = drop[rows["example_id"] == chosen_id]
        chosen = rows.loc[(mine - per_example[chosen_id]).abs().sort_values(
            kind="stable").index[0]]
        example_id, seed = str(chosen["example_id"]), int(chosen["seed"])
        text = self.variant_text(example_id, perturbation, severity, seed)
        if text is None:
            return None
        variants = variantfile.variants_path(self.run_dir)
        position = list(per_example.index).index(chosen_id) + 1
        label = (f"typical: the median change of {len(per_example)} examples at severity "
                 f"{severity}" if pick == "typical" else
                 f"most extreme: the largest change of {len(per_example)} examples at "
                 f"severity {severity}")
        return {"run_dir": self.name, "example_id": example_id, "aspect": aspect,
                "perturbation": perturbation, "severity": severity, "seed": seed,
                "pick": pick, "label": label, "position": position,
                "of": len(per_example),
                "original": self.examples.get(example_id, ("", ""))[1], "variant": text,
                "original_score": float(gold[example_id]), "variant_score": float(chosen["score"]),
                "files": [f"{self.name}/examples.jsonl",
                          f"{self.name}/{variants.name if variants else variantfile.FILE}",
                          f"{self.name}/scores.parquet"]}


def attack_example(successes: list[Mapping[str, Any]], run_dir: str) -> dict[str, Any] | None:
    """The first successful attack as a before/after example (attacks.jsonl holds them all);
    `run_dir` as card.json names it."""
    if not successes:
        return None
    s = successes[0]
    return {"run_dir": run_dir, "example_id": s.get("example_id"),
            "aspect": s.get("victim"), "perturbation": s.get("method"),
            "severity": s.get("direction"), "seed": None,
            "original": s.get("original"), "variant": s.get("text"),
            "original_score": s.get("victim_original"), "variant_score": s.get("victim_score"),
            "gold_original": s.get("gold_original"), "gold_variant": s.get("gold"),
            "files": [f"{run_dir}/attacks.jsonl", f"{run_dir}/results.json"]}
