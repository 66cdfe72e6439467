"""Blind-spot tests of paper 002 (sec. 2 and 5.5): rank and monotonic tests over noise ratio.

For each evaluator aspect and perturbation, and each severity: the mean score over examples for
each seed, then mean and standard deviation over seeds. The gold score is the mean on the
original hypotheses of the same examples (paired: an example a perturbation skipped does not
count on either side). Scores where lower is better are compared with the sign flipped.

- rank test: every severity scores below gold by more than the tolerance;
- monotonic test: ordered by noise ratio, starting from gold at ratio 0, no step rises by more
  than the tolerance. Severities that name kinds rather than grades (injection texts,
  positioned-error positions) have no order: the rank test alone decides
  (`monotonic_applies` is False).
The tolerance is `max(abs_tol, rel_tol * |gold|)`; both are written into every result.

Two options follow paper 002 (its public code) where the defaults differ:
- `protocol="paper"`: a severity's score and noise ratio are averaged over the whole gold set,
  an example the perturbation could not change counting with its gold score at noise ratio 0
  (by default such an example drops out of both sides);
- `strict=True`: both tests without tolerance (the paper's "not scored worse than gold"). The
  strict and the tolerant verdicts are both written into every row; `strict` picks the one
  that decides `rank_pass`, `monotonic_pass` and `passed`.
A row whose data cannot carry a verdict is INCONCLUSIVE instead of pass/fail: more than
`max_missing` of its scores (gold and variants) are missing, or a severity has no score at all.

Beside both, every row carries a four-way verdict decided by bootstrap intervals over examples
(`outcome`: detects, blind, reversed or inconclusive; `monotonic_outcome`), all tests of the
result corrected together: `analyses.blindspot_stats` and `analyses.verdicts`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, cast

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from evalstress.analyses.blindspot_stats import DESCRIPTION, RowTests, Sample, assess, meaningful_zero
from evalstress.analyses.verdicts import CORRECTIONS, N_BOOT, TOL_SHARE, default_tolerance
from evalstress.core.records import CORPUS
from evalstress.core.scoretable import ScoreTable, perturbation_groups
from evalstress.core.strict import unknown_name_error
from evalstress.core.wording import plural

COLUMNS = ("example_id", "perturbation", "severity", "severity_rank", "seed", "noise_ratio",
           "score", "higher_is_better", "status")

MAX_MISSING = 0.5  # share of missing scores above which a row is inconclusive


@dataclass
class SeverityPoint:
    severity: str
    noise_ratio: float
    mean: float  # mean over seeds of the per-seed mean score
    std: float  # standard deviation over seeds
    gold: float  # gold mean over the same examples
    delta: float  # mean - gold
    n_examples: int
    n_seeds: int
    n_missing: int
    n_unchanged: int = 0  # paper protocol: examples counted at ratio 0 (mean over seeds)
    test: dict[str, Any] | None = None  # four-way verdict of its interval (analyses.verdicts)
    relative: dict[str, Any] | None = None  # ratio of means - 1 with its interval, or None


@dataclass
class BlindspotRow:
    evaluator: str
    aspect: str
    perturbation: str
    higher_is_better: bool
    gold: float
    points: list[SeverityPoint]
    tolerance: float
    rank_pass: bool  # the verdicts that decide (strict or tolerant, see `strict`)
    monotonic_pass: bool
    n_skipped: int = 0
    strict: bool = False
    rank_strict_pass: bool = False  # no tolerance
    monotonic_strict_pass: bool = False
    rank_tolerant_pass: bool = False  # with `tolerant_tolerance`
    monotonic_tolerant_pass: bool = False
    tolerant_tolerance: float = 0.0
    monotonic_applies: bool = True  # False for named kinds (injection, positioned error)
    n_scores: int = 0  # score rows of this row: gold and variants
    n_missing: int = 0  # of them, missing
    n_empty_severities: int = 0  # severities where every score is missing
    max_missing: float = MAX_MISSING
    #: four-way verdict from intervals (analyses.blindspot_stats), beside the strict and
    #: tolerant pass/fail of paper 002
    outcome: str = "inconclusive"
    monotonic_outcome: str = "not-applicable"
    n_to_settle: int | None = None  # inconclusive: examples that would settle it; None: never
    blind_up_to: str | None = None  # partly blind: the heaviest blind severity
    detects_from: str | None = None  # partly blind: every severity from here on detects
    delta: float = 0.0  # the four-way verdicts' tolerance
    delta_rule: str = ""
    steps: list[dict[str, Any]] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.rank_pass and self.monotonic_pass

    @property
    def inconclusive_reason(self) -> str | None:
        """Why the data cannot support a pass or a fail, or None when it can."""
        if self.n_empty_severities:
            return (f"{plural(self.n_empty_severities, 'severity has', 'severities have')} no "
                    "score at all")
        if self.n_scores and self.n_missing / self.n_scores > self.max_missing:
            return (f"{self.n_missing} of {self.n_scores} scores are missing "
                    f"(more than {self.max_missing:.0%})")
        return None

    @property
    def verdict(self) -> str:
        """pass, fail, or inconclusive when too many scores are missing."""
        if self.inconclusive_reason:
            return "inconclusive"
        return "pass" if self.passed else "fail"

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if not math.isfinite(self.gold):
            out["gold"] = None
        out["passed"] = self.passed
        out["verdict"] = self.verdict
        out["inconclusive_reason"] = self.inconclusive_reason
        return out


@dataclass
class BlindspotResult:
    rows: list[BlindspotRow]
    rel_tol: float
    abs_tol: float
    notes: list[str] = field(default_factory=list)
    protocol: str = "default"
    strict: bool = False
    alpha: float = 0.05
    correction: str = "bh"
    alpha_eff: float = 0.05
    n_boot: int = N_BOOT
    seed: int = 0
    tol_share: float = TOL_SHARE
    n_tests: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "analysis": "blindspot",
            "tolerance": {"rel_tol": self.rel_tol, "abs_tol": self.abs_tol,
                          "rule": "tol = max(abs_tol, rel_tol * |gold|)"},
            "tests": {
                "rank": "every severity scores below gold by more than tol",
                "monotonic": "ordered by noise ratio from gold, no step rises by more than tol",
            },
            "rows": [r.to_dict() for r in self.rows],
            "notes": self.notes,
            "protocol": self.protocol,
            "strict": self.strict,
            "averaging": AVERAGING[self.protocol],
            "statistics": {**DESCRIPTION, "alpha": self.alpha, "correction": self.correction,
                           "alpha_eff": self.alpha_eff, "n_tests": self.n_tests,
                           "n_boot": self.n_boot, "seed": self.seed,
                           "tol_share": self.tol_share,
                           "tolerance_rule": f"declared, else {self.tol_share} x the standard "
                                             "deviation of the originals' scores over the "
                                             "row's examples"},
        }

    def failures(self) -> list[BlindspotRow]:
        return [r for r in self.rows if not r.passed]


AVERAGING = {
    "default": "per seed, the mean over the examples the perturbation changed; gold paired on "
               "the same examples",
    "paper": "per seed, the mean over the whole gold set: an example the perturbation could not "
             "change counts with its gold score at noise ratio 0 (paper 002's code)",
}


def _numeric(severity: str) -> bool:
    try:
        float(severity)
    except ValueError:
        return False
    return True


def _severity_key(severity: Any) -> str:
    """One spelling of a severity for the score table and the skip records (1, 1.0, '1')."""
    try:
        return repr(float(severity))
    except (TypeError, ValueError):
        return str(severity)


def _verdicts(points: list[SeverityPoint], sign: float, tol: float) -> tuple[bool, bool]:
    """(rank, monotonic) at tolerance `tol` (see the module docstring)."""
    rank = all(sign * p.delta < -tol for p in points)
    ordered = sorted(points, key=lambda p: p.noise_ratio)
    # paired deltas, so each step compares against gold on the same examples
    deltas = [0.0] + [sign * p.delta for p in ordered]
    return rank, all(b <= a + tol for a, b in itertools.pairwise(deltas))


def _sign(higher_is_better: bool) -> float:
    return 1.0 if higher_is_better else -1.0


def blindspot(table: pd.DataFrame | ScoreTable, *, rel_tol: float = 0.01, abs_tol: float = 0.0,
              skips: pd.DataFrame | None = None, protocol: str = "default",
              strict: bool | None = None, max_missing: float = MAX_MISSING,
              tolerance: float | Mapping[str, float] | None = None,
              tol_share: float = TOL_SHARE, alpha: float = 0.05, correction: str = "bh",
              n_boot: int = N_BOOT, seed: int = 0,
              tolerance_over: str = "row") -> BlindspotResult:
    """Run the rank and monotonic tests on a score table (see module docstring).

    `table` is a DataFrame or a Parquet-backed ScoreTable (read one evaluator aspect at a time);
    `skips` has one row per skip (needed by the paper protocol, which counts the examples a unit
    left unchanged), or a `count` column per perturbation and reason. `strict` defaults to True
    under the paper protocol and False otherwise.

    The four-way verdicts (`outcome`) use the tolerance `tolerance` (a number, or one per
    "evaluator/aspect" or "evaluator") else `tol_share` x the spread of the originals, and
    intervals at the level `correction` (holm, bh, none) sets for all tests at family level
    `alpha`, from `n_boot` resamples seeded by `seed`. `tolerance_over`: whose originals'
    spread sets a row's tolerance, the examples the row has variants of (`row`) or every
    original the run scored for that evaluator aspect (`run`: a sequential design's rows stop
    on different examples, and a row that stopped before a rare extreme original would get
    a narrower tolerance than the exhaustive row).
    """
    if correction not in CORRECTIONS:
        raise unknown_name_error("correction", correction, CORRECTIONS, "blindspot")
    if not 0 < alpha < 1:
        raise ValueError(f"blindspot alpha must lie between 0 and 1, got {alpha}")
    declared = _declared(tolerance)
    if tolerance_over not in TOLERANCE_OVER:
        raise unknown_name_error("tolerance_over", tolerance_over, TOLERANCE_OVER, "blindspot")
    if protocol not in AVERAGING:
        raise ValueError(f"blindspot protocol '{protocol}' is unknown; choose one of "
                         f"{', '.join(AVERAGING)}")
    strict = protocol == "paper" if strict is None else bool(strict)
    rows: list[BlindspotRow] = []
    if table.empty:
        return BlindspotResult(rows, rel_tol, abs_tol, ["the score table is empty"], protocol,
                               strict, alpha, correction, alpha, n_boot, seed, tol_share)
    skip_counts: dict[str, int] = {}
    unchanged: dict[tuple[str, str, int], list[str]] = {}
    if skips is not None and not skips.empty:
        sizes = (skips.groupby("perturbation")["count"].sum() if "count" in skips
                 else skips.groupby("perturbation").size())
        skip_counts = {str(k): int(v) for k, v in sizes.items()}
        if protocol == "paper":
            if "example_id" not in skips:
                raise ValueError("the paper protocol needs one skip record per unit, not counts")
            for (pert, severity, unit_seed), group in skips.groupby(
                    [skips["perturbation"].astype(str), skips["severity"].map(_severity_key),
                     skips["seed"].astype(int)]):
                unchanged[(str(pert), str(severity), int(str(unit_seed)))] = [
                    str(e) for e in group["example_id"]]
    notes: list[str] = []
    tests: list[tuple[BlindspotRow, RowTests]] = []
    for (evaluator, aspect), gold_rows, noised in perturbation_groups(table, COLUMNS):
        golds = _Gold(gold_rows)  # each example's gold score: read once for every perturbation
        for perturbation, pgroup in noised:
            example_ids = pgroup["example_id"].astype(str).to_numpy(dtype=object)
            higher = bool((gold_rows if not gold_rows.empty else pgroup)
                          ["higher_is_better"].iloc[0])
            corpus = bool((pgroup["example_id"] == CORPUS).all())
            if protocol == "paper" and corpus and skip_counts.get(str(perturbation)):
                notes.append(f"{evaluator}/{aspect} on {perturbation}: a set-level score "
                             "compares only the changed texts; the examples the perturbation "
                             "could not change are not in the noised set")
            points, samples = _points(pgroup, example_ids, golds,
                             unchanged if protocol == "paper" and not corpus else None)
            if not points:  # every score missing: keep the row, inconclusive, so it is seen
                ok_gold = gold_rows.loc[gold_rows["status"] == "ok", "score"]
                rows.append(BlindspotRow(
                    str(evaluator), str(aspect), str(perturbation), higher,
                    float(ok_gold.mean()) if len(ok_gold) else math.nan, [], 0.0, False, False,
                    skip_counts.get(str(perturbation), 0), strict=strict,
                    n_scores=len(pgroup), n_missing=int((pgroup["status"] != "ok").sum()),
                    n_empty_severities=int(pgroup["severity"].nunique()),
                    max_missing=max_missing))
                continue
            gold = float(np.mean([p.gold for p in points]))
            tolerant = max(abs_tol, rel_tol * abs(gold))
            sign = _sign(higher)
            rank_tol, mono_tol = _verdicts(points, sign, tolerant)
            rank_strict, mono_strict = _verdicts(points, sign, 0.0)
            graded = all(_numeric(p.severity) for p in points)
            if not graded:  # kinds, not grades: the paper applies the rank test alone
                mono_tol = mono_strict = True
            gold_part = gold_rows[golds.rows_of(example_ids)]
            delta, rule = _tolerance(declared, str(evaluator), str(aspect),
                                     gold_part if tolerance_over == "row" else gold_rows,
                                     tol_share)
            n_scores = len(pgroup) + len(gold_part)
            n_missing = int((pgroup["status"] != "ok").sum() + (gold_part["status"] != "ok").sum())
            empty = int(pgroup["severity"].nunique()) - len(points)
            rows.append(BlindspotRow(
                str(evaluator), str(aspect), str(perturbation), higher, gold, points,
                0.0 if strict else tolerant,
                rank_strict if strict else rank_tol, mono_strict if strict else mono_tol,
                skip_counts.get(str(perturbation), 0), strict, rank_strict, mono_strict,
                rank_tol, mono_tol, tolerant, graded, n_scores=n_scores, n_missing=n_missing,
                n_empty_severities=max(0, empty), max_missing=max_missing, delta=delta,
                delta_rule=rule))
            kept = [s for s in samples if s is not None]
            tests.append((rows[-1], RowTests(
                [p.severity for p in points], [p.noise_ratio for p in points], samples,
                sign, delta, graded,
                meaningful_zero([*(s.original for s in kept), *(s.variant for s in kept)]))))
    _check_declared(declared, {(r.evaluator, r.aspect) for r in rows})
    outcomes, alpha_eff = assess([t for _, t in tests], alpha=alpha, correction=correction,
                                 n_boot=n_boot, seed=seed)
    for (row, _), out in zip(tests, outcomes, strict=True):
        row.outcome, row.monotonic_outcome = out.outcome, out.monotonic_outcome
        row.n_to_settle, row.steps = out.n_to_settle, out.steps
        row.blind_up_to, row.detects_from = out.blind_up_to, out.detects_from
        for point, test, relative in zip(row.points, out.tests, out.relative, strict=True):
            point.test, point.relative = test, relative
    n_tests = sum(len(t.samples) + (max(0, len(t.samples) - 1) if t.graded else 0)
                  for _, t in tests)
    if correction == "holm" and n_tests and 2 / (n_boot + 1) > alpha / n_tests:
        notes.append(f"Holm over {n_tests} tests needs p <= {alpha / n_tests:.2g} at its first "
                     f"step, below the smallest bootstrap p of {n_boot} resamples "
                     f"({2 / (n_boot + 1):.2g}); raise n_boot to at least "
                     f"{math.ceil(2 * n_tests / alpha)}")
    return BlindspotResult(rows, rel_tol, abs_tol, notes, protocol, strict, alpha, correction,
                           alpha_eff, n_boot, seed, tol_share, n_tests)


#: whose originals set a row's tolerance (`blindspot(tolerance_over=...)`)
TOLERANCE_OVER = ("row", "run")


def _declared(tolerance: float | Mapping[str, float] | None) -> dict[str, float]:
    """The user's tolerances by key ("*" for all), each above 0."""
    if tolerance is None:
        return {}
    given = dict(tolerance) if isinstance(tolerance, Mapping) else {"*": tolerance}
    out = {}
    for key, value in given.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise ValueError(f"blindspot tolerance for '{key}' must be a number above 0, "
                             f"got {value!r}")
        out[str(key)] = float(value)
    return out


def _check_declared(declared: Mapping[str, float], seen: set[tuple[str, str]]) -> None:
    """A declared tolerance for an evaluator the run did not score is a typo: an error."""
    known = {"*"} | {e for e, _ in seen} | {f"{e}/{a}" for e, a in seen}
    for key in declared:
        if key not in known:
            raise unknown_name_error("evaluator in the blindspot tolerance", key, known)


def _tolerance(declared: Mapping[str, float], evaluator: str, aspect: str,
               gold_part: pd.DataFrame, share: float) -> tuple[float, str]:
    """The row's tolerance and how it was chosen: declared for "evaluator/aspect", then
    "evaluator", then "*"; else `share` x the originals' standard deviation (floored)."""
    for key in (f"{evaluator}/{aspect}", evaluator, "*"):
        if key in declared:
            return declared[key], f"declared ({key})"
    ok = gold_part.loc[(gold_part["status"] == "ok") & (gold_part["example_id"] != CORPUS),
                       "score"].to_numpy(dtype=float)
    return default_tolerance(ok, share), f"{share} x sd of {ok.size} originals"


def _mean(values: np.ndarray) -> float:
    """The mean of the values that are numbers (pandas' skipna mean); NaN if none is."""
    kept = values[~np.isnan(values)]
    return float(kept.mean()) if kept.size else float("nan")


class _Gold:
    """Each example's gold score of one evaluator aspect (examples without one left out),
    and lookups over many example ids at once."""

    def __init__(self, gold_rows: pd.DataFrame):
        ids = gold_rows["example_id"].astype(str).to_numpy(dtype=object)
        self._ids = pa.array(ids, pa.string())
        self.of = {e: float(v) for e, v in zip(ids, gold_rows["score"], strict=True)
                   if pd.notna(v)}
        self._index = pd.Index(list(self.of), dtype=object)
        self._values = np.fromiter(self.of.values(), dtype=float, count=len(self.of))

    def rows_of(self, example_ids: np.ndarray) -> np.ndarray:
        """Which gold rows belong to these examples (Arrow's is_in: pandas' isin converts each
        value it is given one by one)."""
        wanted = pa.array(pd.unique(example_ids), pa.string())
        return pc.is_in(self._ids, value_set=wanted).to_numpy(zero_copy_only=False)

    def lookup(self, example_ids: np.ndarray) -> np.ndarray:
        """The gold score of each id, NaN where the example has none."""
        found = self._index.get_indexer(pd.Index(example_ids, dtype=object))
        return np.where(found >= 0, self._values[found] if self._values.size else np.nan,
                        np.nan)


def _integers(column: pd.Series) -> np.ndarray:
    """A column of seeds as int64, whether stored as numbers or as their text."""
    if pd.api.types.is_integer_dtype(column):
        return column.to_numpy(dtype=np.int64)
    return np.array([int(str(k)) for k in column], dtype=np.int64)


def _points(pgroup: pd.DataFrame, example_all: np.ndarray, gold: _Gold,
            unchanged: dict[tuple[str, str, int], list[str]] | None = None,
            ) -> tuple[list[SeverityPoint], list[Sample | None]]:
    """One point per severity (`example_all`: the rows' example ids as text). With `unchanged`
    (paper protocol), the examples a unit skipped join its seed's mean with their gold score
    and a noise ratio of 0. The columns are taken out as arrays once, and each row's gold found
    in one lookup: per-severity pandas selections and per-row dictionary lookups cost more than
    the sums."""
    points = []
    perturbation = str(pgroup["perturbation"].iloc[0])
    ok_all = (pgroup["status"] == "ok").to_numpy(dtype=bool)
    seed_all = _integers(pgroup["seed"])
    score_all = pgroup["score"].to_numpy(dtype=float)
    ratio_all = pgroup["noise_ratio"].to_numpy(dtype=float)
    gold_all = gold.lookup(example_all)
    grouped = pgroup.groupby(["severity_rank", "severity"], sort=True).indices
    samples: list[Sample | None] = []
    for group, positions in grouped.items():
        _, severity = cast("tuple[Any, Any]", group)  # (severity_rank, severity)
        ok_rows = ok_all[positions]
        missing = int((~ok_rows).sum())
        seed_of = seed_all[positions]
        example_of = example_all[positions]
        score_of, ratio_of, gold_row = (score_all[positions], ratio_all[positions],
                                        gold_all[positions])
        key = _severity_key(severity)
        seeds = set(seed_of.tolist()) | {k[2] for k in (unchanged or {})
                                         if k[0] == perturbation and k[1] == key}
        per_seed_means: list[float] = []
        per_seed_gold: list[float] = []
        per_seed_ratio: list[float] = []
        per_seed_unchanged: list[int] = []
        examples: set[str] = set()
        pair_ids: list[str] = []
        pair_vals: list[np.ndarray] = []
        pair_gold: list[np.ndarray] = []
        for seed in sorted(seeds):
            rows = ok_rows & (seed_of == seed)
            ok_examples = example_of[rows]
            same = [] if unchanged is None else [
                e for e in unchanged.get((perturbation, key, int(seed)), []) if e in gold.of]
            if not ok_examples.size and not same:
                continue
            vals, ratios = score_of[rows], ratio_of[rows]
            corpus_row = bool(ok_examples.size and (ok_examples == CORPUS).all())
            keep = np.ones(vals.size, dtype=bool)
            if corpus_row:
                gold_vals = np.array([gold.of[CORPUS]] if CORPUS in gold.of else [])
            else:
                gold_vals = gold_row[rows]
                keep = ~np.isnan(gold_vals)
                vals, ratios, gold_vals = vals[keep], ratios[keep], gold_vals[keep]
            if same:  # changed nothing: the gold score at noise ratio 0
                same_gold = np.array([gold.of[e] for e in same], dtype=float)
                vals = np.concatenate([vals, same_gold])
                gold_vals = np.concatenate([gold_vals, same_gold])
                ratios = np.concatenate([ratios, np.zeros(len(same))])
            if not vals.size or not gold_vals.size:
                continue
            if not corpus_row:
                ids = example_of[rows][keep]
                pair_ids.extend([*ids.tolist(), *same])
                pair_vals.append(vals)
                pair_gold.append(gold_vals)
            per_seed_means.append(_mean(vals))
            per_seed_gold.append(_mean(gold_vals))
            per_seed_ratio.append(_mean(ratios))
            per_seed_unchanged.append(len(same))
            examples.update(ok_examples.tolist())
            examples.update(same)
        if not per_seed_means:
            continue
        means = np.array(per_seed_means)
        golds = np.array(per_seed_gold)
        points.append(SeverityPoint(
            severity=str(severity),
            noise_ratio=(float(np.mean(per_seed_ratio)) if unchanged is not None
                         else _mean(ratio_of)),
            mean=float(means.mean()),
            std=float(means.std(ddof=0)),
            gold=float(golds.mean()),
            delta=float((means - golds).mean()),
            n_examples=len(examples),
            n_seeds=len(per_seed_means),
            n_missing=missing,
            n_unchanged=round(float(np.mean(per_seed_unchanged))),
        ))
        samples.append(_by_example(pair_ids, pair_vals, pair_gold) if pair_vals else None)
    return points, samples


def _by_example(ids: list[str], values: list[np.ndarray], golds: list[np.ndarray]) -> Sample:
    """One pair per example: its variant scores averaged over seeds, beside its gold score."""
    frame = pd.DataFrame({"example_id": ids, "variant": np.concatenate(values),
                          "original": np.concatenate(golds)})
    means = frame.groupby("example_id", sort=True)[["original", "variant"]].mean()
    return Sample(means.index.to_numpy(dtype=object), means["original"].to_numpy(dtype=float),
                  means["variant"].to_numpy(dtype=float))
