"""The sanity gate: three checks of the evaluator itself, made before any verdict is read.

1. Spread: does it give different scores to different texts? One value taking
   `DEGENERATE_SHARE` (95%) or more of an aspect's scores, over every original and variant it
   scored, makes it degenerate (`engine.runhealth.degenerate_share`): a judge that answers "1"
   to everything "passes" no rank test and "fails" every one by ties, which says nothing.
2. Ranking: does it score an original above its heaviest damage? Over the blind-spot run, per
   example, aspect and perturbation, the original against the variant of the perturbation's
   top severity (its seeds averaged); the share of pairs where the original scores better
   (ties do not count). The pairs of one example share its text, so they are not independent:
   the 95% interval is a cluster bootstrap that resamples examples (each drawn example brings
   all its aspects and perturbations; `RANK_BOOT` resamples, seed `RANK_SEED`), and n is the
   number of examples. Pass when the interval lies above one half, fail when it lies below,
   unclear otherwise (also with fewer than two examples). The Wilson interval over pairs,
   which treats every pair as independent, is written beside it for comparison only.
3. Missing: the share of its score rows that are missing, and the commonest reason; more than
   `max_missing` (the runs' --max-missing, 0.5) is "mostly missing".

A degenerate or mostly missing evaluator is not trusted: the card says so at its top, keeps
its statistics marked untrusted, and states no finding about the evaluator.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from evalstress.analyses.adversarial import wilson
from evalstress.core.records import ORIGINAL
from evalstress.engine.runhealth import (
    DEFAULT_MAX_MISSING,
    DEGENERATE_SHARE,
    ModalShare,
    answer_share,
    degenerate_share,
)

#: resamples of examples behind the ranking share's interval, and their seed
RANK_BOOT = 2000
RANK_SEED = 0

#: columns of a score table the gate reads
COLUMNS = ["example_id", "perturbation", "severity", "severity_rank", "seed", "aspect", "score",
           "higher_is_better", "status", "reason", "answer"]


@dataclass
class AspectSpread:
    """How spread one aspect's scores are: its commonest value and that value's share (the
    verdict), and, to read beside it, the lowest and highest score and the share of the
    evaluator's declared range (`Evaluator.score_range`) they span."""

    aspect: str
    modal: ModalShare
    low: float | None = None
    high: float | None = None
    declared: tuple[float, float] | None = None
    threshold: float = DEGENERATE_SHARE
    #: what `modal` counts: "score", or "answer" where a judge wrote its label (an expected
    #: rating over the labels may vary a little while the label never does)
    by: str = "score"

    @property
    def degenerate(self) -> bool:
        return self.modal.degenerate(self.threshold)

    @property
    def range_share(self) -> float | None:
        """(highest - lowest score) over the declared range's width; None without one."""
        if self.declared is None or self.low is None or self.high is None:
            return None
        width = float(self.declared[1]) - float(self.declared[0])
        return (self.high - self.low) / width if width > 0 else None

    def to_dict(self) -> dict[str, Any]:
        return {"aspect": self.aspect, "by": self.by, "modal_value": self.modal.value,
                "modal_count": self.modal.count, "scored": self.modal.scored,
                "modal_share": self.modal.share, "degenerate": self.degenerate,
                "low": self.low, "high": self.high,
                "declared_range": list(self.declared) if self.declared else None,
                "range_share": self.range_share}


@dataclass
class RankRow:
    """Originals against the top severity of one perturbation, for one aspect."""

    aspect: str
    perturbation: str
    severity: str
    pairs: int
    above: int

    def to_dict(self) -> dict[str, Any]:
        return {"aspect": self.aspect, "perturbation": self.perturbation,
                "severity": self.severity, "pairs": self.pairs, "above": self.above,
                "share": self.above / self.pairs if self.pairs else None}


def cluster_share_ci(above: np.ndarray, pairs: np.ndarray, *, n_boot: int = RANK_BOOT,
                     seed: int = RANK_SEED, level: float = 0.95
                     ) -> tuple[float | None, float | None]:
    """Percentile interval of sum(above) / sum(pairs) over resamples of the examples (one
    entry per example: its pairs and how many of them the original won), so pairs of one
    example stay together. None with fewer than two examples holding pairs."""
    keep = pairs > 0
    above, pairs = above[keep].astype(float), pairs[keep].astype(float)
    if pairs.size < 2:
        return None, None
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, pairs.size, (n_boot, pairs.size))
    shares = above[draws].sum(axis=1) / pairs[draws].sum(axis=1)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(shares, [tail, 100 - tail])
    return float(low), float(high)


@dataclass
class RankCheck:
    """Originals scored above their heaviest damage: pooled over aspects and perturbations,
    with each example's own count for the interval."""

    rows: list[RankRow]
    #: example id -> (pairs, above) over every aspect and perturbation of that example
    by_example: dict[str, tuple[int, int]] = field(default_factory=dict)
    seed: int = RANK_SEED

    @property
    def pairs(self) -> int:
        return sum(r.pairs for r in self.rows)

    @property
    def above(self) -> int:
        return sum(r.above for r in self.rows)

    @property
    def examples(self) -> int:
        return sum(1 for pairs, _ in self.by_example.values() if pairs)

    @property
    def share(self) -> float | None:
        return self.above / self.pairs if self.pairs else None

    @property
    def interval(self) -> tuple[float | None, float | None]:
        """The cluster bootstrap interval over examples."""
        counts = list(self.by_example.values())
        return cluster_share_ci(np.array([a for _, a in counts]),
                                np.array([p for p, _ in counts]), seed=self.seed)

    @property
    def verdict(self) -> str:
        low, high = self.interval
        if low is None or high is None:
            return "unclear"
        if low > 0.5:
            return "pass"
        return "fail" if high < 0.5 else "unclear"

    def to_dict(self) -> dict[str, Any]:
        low, high = self.interval
        naive_low, naive_high = wilson(self.above, self.pairs)
        return {"pairs": self.pairs, "above": self.above, "share": self.share,
                "n": self.examples, "ci_low": low, "ci_high": high,
                "ci_method": f"cluster bootstrap over the {self.examples} examples (each with "
                             f"all its aspects and perturbations), {RANK_BOOT} resamples, "
                             f"seed {self.seed}, percentile 95%",
                "pairs_ci_low": naive_low, "pairs_ci_high": naive_high,
                "verdict": self.verdict,
                "rule": "pass when the 95% interval of the share, resampling examples, lies "
                        "above 0.5, fail when it lies below, unclear otherwise; ties count "
                        "as not above; pairs_ci: Wilson over pairs taken as independent, for "
                        "comparison only",
                "rows": [r.to_dict() for r in self.rows]}


@dataclass
class MissingCheck:
    """Missing score rows over every stress run of the card."""

    rows: int
    missing: int
    top_reason: str
    max_missing: float = DEFAULT_MAX_MISSING

    @property
    def share(self) -> float:
        return self.missing / self.rows if self.rows else 1.0

    @property
    def mostly_missing(self) -> bool:
        """More than `max_missing` of its rows missing (or no row at all)."""
        return not self.rows or self.share > self.max_missing

    def to_dict(self) -> dict[str, Any]:
        return {"rows": self.rows, "missing": self.missing, "share": self.share,
                "top_reason": self.top_reason, "max_missing": self.max_missing,
                "mostly_missing": self.mostly_missing}


@dataclass
class Gate:
    """The three checks and what they mean for the rest of the card."""

    spread: list[AspectSpread]
    ranking: RankCheck | None
    missing: MissingCheck
    notes: list[str] = field(default_factory=list)

    @property
    def degenerate(self) -> bool:
        return any(s.degenerate for s in self.spread)

    @property
    def trusted(self) -> bool:
        """Whether the card's statistics say something about the evaluator's judgement."""
        return not self.degenerate and not self.missing.mostly_missing

    @property
    def verdict(self) -> str:
        """fail (not trusted), warn (trusted, but originals do not clearly beat heavy damage),
        or pass."""
        if not self.trusted:
            return "fail"
        return "pass" if self.ranking is not None and self.ranking.verdict == "pass" else "warn"

    def reasons(self) -> list[str]:
        """One line per check that did not pass, worst first."""
        out = []
        for spread in self.spread:
            if spread.degenerate:
                out.append(f"degenerate: aspect {spread.aspect} gave "
                           f"{spread.modal.describe()}, at or above the "
                           f"{spread.threshold:.0%} that marks a score without spread")
        if self.missing.mostly_missing:
            reason = f"; most often: {self.missing.top_reason}" if self.missing.top_reason else ""
            out.append(f"mostly missing: {self.missing.missing} of {self.missing.rows} scores "
                       f"missing ({self.missing.share:.0%}){reason}")
        ranking = self.ranking
        if ranking is not None and ranking.verdict != "pass" and ranking.share is not None:
            low, high = ranking.interval
            bounds = ("no interval: fewer than two examples" if low is None or high is None
                      else f"95% CI {low:.0%}-{high:.0%} over {ranking.examples} examples")
            out.append(f"ranking {ranking.verdict}: the original scored above its heaviest "
                       f"damage in {ranking.above} of {ranking.pairs} pairs "
                       f"({ranking.share:.0%}, {bounds})")
        elif ranking is None:
            out.append("ranking unclear: no pair of an original and its heaviest damage was "
                       "scored")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "trusted": self.trusted,
                "degenerate": self.degenerate, "reasons": self.reasons(),
                "degenerate_threshold": DEGENERATE_SHARE,
                "spread": [s.to_dict() for s in self.spread],
                "ranking": self.ranking.to_dict() if self.ranking is not None else None,
                "missing": self.missing.to_dict(), "notes": list(self.notes)}


def spread_check(tables: Sequence[pd.DataFrame],
                 declared: Mapping[str, tuple[float, float] | None] | None = None
                 ) -> list[AspectSpread]:
    """Per aspect, the commonest value among the scores of every table (missing left out),
    and the range they cover; `declared` gives each aspect's declared score range."""
    ranges = dict(declared or {})
    frames = [t.reindex(columns=["aspect", "score", "status", "answer"]) for t in tables
              if len(t)]
    if not frames:
        return []
    rows = pd.concat(frames, ignore_index=True)
    scored = rows[(rows["status"] == "ok") & rows["score"].notna()]
    out = []
    for aspect in sorted({str(a) for a in rows["aspect"]}):
        mine = scored[scored["aspect"] == aspect]
        values = mine["score"].astype(float)
        answers = mine["answer"].dropna().tolist()
        modal = answer_share(answers) if answers else degenerate_share(values.tolist())
        out.append(AspectSpread(aspect, modal,
                                float(values.min()) if len(values) else None,
                                float(values.max()) if len(values) else None,
                                ranges.get(aspect), by="answer" if answers else "score"))
    return out


def rank_check(table: pd.DataFrame, seed: int = RANK_SEED) -> RankCheck | None:
    """Originals against each perturbation's top severity in a blind-spot score table; `seed`
    draws the examples of the interval's resamples."""
    if table.empty:
        return None
    ok = table[table["status"] == "ok"]
    rows: list[RankRow] = []
    by_example: dict[str, tuple[int, int]] = {}
    for aspect, part in ok.groupby("aspect", sort=True):
        originals = part[part["perturbation"] == ORIGINAL].groupby("example_id")["score"].mean()
        higher = bool(part["higher_is_better"].iloc[0])
        noised = table[(table["aspect"] == aspect) & (table["perturbation"] != ORIGINAL)]
        for perturbation, group in noised.groupby("perturbation", sort=True):
            top = group["severity_rank"].max()
            heaviest = group[group["severity_rank"] == top]
            severity = str(heaviest["severity"].iloc[0])
            variant = heaviest[heaviest["status"] == "ok"].groupby("example_id")["score"].mean()
            both = originals.index.intersection(variant.index)
            gap = originals.reindex(both) - variant.reindex(both)
            won = (gap > 0) if higher else (gap < 0)
            rows.append(RankRow(str(aspect), str(perturbation), severity, len(both),
                                int(won.sum())))
            for example, wins in won.items():
                pairs, above = by_example.get(str(example), (0, 0))
                by_example[str(example)] = (pairs + 1, above + int(wins))
    return RankCheck(rows, by_example, seed) if rows else None


def missing_check(tables: Sequence[pd.DataFrame], max_missing: float = DEFAULT_MAX_MISSING
                  ) -> MissingCheck:
    """Missing rows over every table, and the commonest reason."""
    total, missing = 0, 0
    reasons: Counter[str] = Counter()
    for table in tables:
        total += len(table)
        gone = table[table["status"] != "ok"]
        missing += len(gone)
        reasons.update(str(r) for r in gone["reason"].fillna("") if str(r))
    top = reasons.most_common(1)[0][0] if reasons else ""
    return MissingCheck(total, missing, top, max_missing)


def sanity_gate(tables: Sequence[pd.DataFrame], blindspot: pd.DataFrame | None, *,
                max_missing: float = DEFAULT_MAX_MISSING,
                declared: Mapping[str, tuple[float, float] | None] | None = None,
                seed: int = RANK_SEED) -> Gate:
    """The gate over the evaluator's score tables (one per stress run of the card; only its
    own rows) and the blind-spot run's table for the ranking check; `declared`: the score
    range each aspect declares (shown beside the spread); `seed`: the ranking interval's."""
    notes = []
    if blindspot is None:
        notes.append("the blind-spot run did not finish: no ranking check")
    return Gate(spread_check(tables, declared),
                rank_check(blindspot, seed) if blindspot is not None else None,
                missing_check(tables, max_missing), notes)
