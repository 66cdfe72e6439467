"""Paired original-vs-variant differences from the long score table, shared by the analyses.

Pairing is by (example_id, evaluator, aspect). With several seeds per severity, the variant
scores of one example are first averaged over its seeds, then paired with the example's
original: one pair per example. Pooling the seeds as separate pairs would reuse each original
several times and treat dependent pairs as independent, inflating significance; averaging
repeated measurements of one item is also what paper 003 does with its five scoring runs.

Differences are oriented so that a positive value means the variant scored *worse*:
original - variant when higher is better, variant - original when lower is better.
A missing score on either side excludes the pair; such pairs are counted.

A difference within rounding of zero (`NOISE`, relative to the scores) is taken as exactly
zero: averaging three equal seed scores can return a value one unit in the last place off the
original, and the signed-rank analyses would read those signs as changes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from evalstress.core.records import CORPUS
from evalstress.core.scoretable import ScoreTable, perturbation_groups
from evalstress.criteria import aspect_aliases, aspects

#: the relative size under which a difference is rounding, not a change (`exact_zeros`)
NOISE = 1e-12
COLUMNS = ("example_id", "task", "perturbation", "severity", "severity_rank", "seed", "score",
           "higher_is_better", "status")


@dataclass
class PairedSet:
    evaluator: str
    aspect: str
    task: str
    perturbation: str
    severity: str
    severity_rank: int
    higher_is_better: bool
    differences: np.ndarray  # oriented: positive = the variant scored worse
    original: np.ndarray  # original scores of the kept pairs
    variant: np.ndarray  # seed-averaged variant scores of the kept pairs
    n_missing: int  # examples with a variant whose pair could not be formed
    n_seeds: int
    example_ids: np.ndarray | None = None  # of the kept pairs, in their order


def paired_sets(table: pd.DataFrame | ScoreTable, *, by_task: bool = False
                ) -> Iterator[PairedSet]:
    """Yield one PairedSet per (evaluator, aspect[, task], perturbation, severity).

    Corpus-level rows (one score per set, e.g. MAUVE) have no pairs and are skipped. A
    ScoreTable is read one evaluator aspect at a time.
    """
    if table.empty:
        return
    for (evaluator, aspect), gold_rows, noised in perturbation_groups(table, COLUMNS, sort=True):
        gold_rows = gold_rows[gold_rows["example_id"] != CORPUS]
        sets: list[tuple[int, PairedSet]] = []
        tasks: dict[str, int] = {t: i for i, t in enumerate(
            dict.fromkeys(gold_rows["task"].tolist() if by_task else ["*"]))}
        gold_of = ({str(t): g for t, g in gold_rows.groupby("task", sort=False)} if by_task
                   else {"*": gold_rows})
        for _, rows in noised:
            rows = rows[rows["example_id"] != CORPUS]
            parts = rows.groupby("task", sort=False) if by_task else [("*", rows)]
            for task, part in parts:
                order = tasks.setdefault(str(task), len(tasks))
                originals = gold_of.get(str(task), gold_rows.iloc[0:0])
                sets.extend((order, s) for s in _unit_sets(str(evaluator), str(aspect),
                                                           str(task), originals, part))
        # the order of the grouped frame: task (first appearance), then perturbation, severity
        for _, paired in sorted(sets, key=lambda item: item[0]):
            yield paired


def _unit_sets(evaluator: str, aspect: str, task: str, originals: pd.DataFrame,
               noised: pd.DataFrame) -> Iterator[PairedSet]:
    frame = originals if not originals.empty else noised
    higher = bool(frame["higher_is_better"].iloc[0])
    sign = 1.0 if higher else -1.0
    gold = originals[originals["status"] == "ok"].groupby("example_id")["score"].mean()
    for (pert, rank, severity), sgroup in noised.groupby(
            ["perturbation", "severity_rank", "severity"], sort=True):
        ok = sgroup[sgroup["status"] == "ok"]
        variant = ok.groupby("example_id")["score"].mean()
        examples = pd.Index(sgroup["example_id"].unique())
        both = examples.intersection(variant.index).intersection(gold.index)
        g = gold.reindex(both).to_numpy(dtype=float)
        v = variant.reindex(both).to_numpy(dtype=float)
        yield PairedSet(evaluator, aspect, task, str(pert), str(severity), int(str(rank)),
                        higher, exact_zeros(sign * (g - v), g, v), g, v,
                        int(len(examples) - len(both)),
                        int(sgroup["seed"].nunique()), both.to_numpy())


def exact_zeros(differences: np.ndarray, originals: np.ndarray, variants: np.ndarray
                ) -> np.ndarray:
    """The differences with those within rounding of zero (at most `NOISE` times the larger
    of the two scores' magnitudes) set to exactly 0."""
    scale = np.maximum(np.abs(originals), np.abs(variants))
    return np.where(np.abs(differences) <= NOISE * scale, 0.0, differences)


def quality_aspect(evaluator: str, aspect: str,
                   aspect_map: Mapping[str, str] | None = None) -> str | None:
    """The quality aspect (criteria/aspects.yaml) an evaluator's aspect stands for, or None.

    Looked up in order: the user's map under "evaluator/aspect", then under "aspect", then
    under the evaluator name alone (one quality aspect for all its scores); then identity when
    the name is one of the 11 aspects (a judge asked about "fluency"); then the aliases in
    criteria/expectations.yaml (consistency -> faithfulness, relevance -> informativeness).
    Metric scores such as "bleu" or "rougeL" map to nothing unless the user says so.
    """
    amap = aspect_map or {}
    for key in (f"{evaluator}/{aspect}", aspect, evaluator):
        if key in amap:
            target = amap[key]
            if target not in aspects():
                raise ValueError(f"aspect_map['{key}'] = '{target}' is not an aspect; known: "
                                 f"{', '.join(aspects())}")
            return target
    if aspect in aspects():
        return aspect
    return aspect_aliases().get(aspect)
