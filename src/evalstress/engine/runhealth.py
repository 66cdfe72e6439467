"""Whether a finished run can be trusted: evaluators whose scores are mostly missing, evaluators
that give (nearly) one value to every text, and rows left out because their text was too long.

A judge whose every call failed still yields a score table, full of missing rows; its analyses
then report "0 blind spots" (or an attack "0% success", or a correlation of nothing), which reads
like a clean bill of health. The CLI asks this module after writing every output of `run`,
`attack` and `correlate`, prints the counts and exits with `EXIT_MOSTLY_MISSING`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalstress.core.text import LENGTH_SKIP

if TYPE_CHECKING:
    import numpy as np

#: exit status of a run that wrote its outputs but whose scores are mostly missing
EXIT_MOSTLY_MISSING = 3
DEFAULT_MAX_MISSING = 0.5
#: an evaluator that gives one value to at least this share of the texts it scored says
#: nothing about them: its rank and drop tests pass or fail by ties, not by judgement
DEGENERATE_SHARE = 0.95
#: fewer scored texts than this say nothing about a spread (one text is trivially "constant")
MIN_SCORED_FOR_DEGENERATE = 10
#: decimals two scores are compared at when looking for the value an evaluator repeats (an
#: expected rating computed through floating point may differ in its last bits)
SAME_VALUE_DECIMALS = 9


@dataclass(frozen=True)
class MissingShare:
    """How many of one evaluator's score rows (one per request and aspect) are missing."""

    evaluator: str
    missing: int
    rows: int
    top_reason: str

    @property
    def share(self) -> float:
        return self.missing / self.rows if self.rows else 0.0

    def describe(self) -> str:
        line = (f"{self.evaluator}: {self.missing} of {self.rows} scores missing "
                f"({self.share:.0%})")
        return line + (f"; most often: {self.top_reason}" if self.top_reason else "")


def _commonest(reasons: Counter[str]) -> str:
    """The most frequent reason, or '' when there is none."""
    return reasons.most_common(1)[0][0] if reasons else ""


def check_max_missing(value: float, where: str = "--max-missing") -> float:
    """A fraction in [0, 1]; 1 never fails a run. `where` names the flag or config field."""
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{where} {value}: give a fraction between 0 and 1 "
                         "(1 turns the check off)")
    return value


def missing_shares(result: Any, aspects: dict[str, Sequence[str]]) -> list[MissingShare]:
    """Per evaluator (label -> its aspects): missing score rows, all rows, the commonest reason."""
    reasons: dict[str, Counter[str]] = {}
    for entry in result.summary.get("missing_reasons") or []:
        reasons.setdefault(str(entry["evaluator"]), Counter())[str(entry["reason"])] += int(
            entry["count"])
    out = []
    for label, names in aspects.items():
        stats = result.stats.get(label)
        if stats is None:
            continue
        out.append(MissingShare(label, int(stats.missing), int(stats.requested) * len(names),
                                _commonest(reasons.get(label, Counter()))))
    return out


def mostly_missing(result: Any, aspects: dict[str, Sequence[str]],
                   max_missing: float) -> list[MissingShare]:
    """The evaluators whose share of missing scores is above `max_missing` (none at 1.0)."""
    return above(missing_shares(result, aspects), max_missing)


def above(shares: Sequence[MissingShare], max_missing: float) -> list[MissingShare]:
    """The shares above `max_missing` (none at 1.0)."""
    return [s for s in shares if s.rows and s.share > max_missing]


def frame_missing_shares(scores: Any) -> list[MissingShare]:
    """Per evaluator of a long score frame (columns evaluator, score, reason; NaN = missing)."""
    out = []
    for label, rows in scores.groupby("evaluator", sort=False):
        gone = rows[rows["score"].isna()]
        out.append(MissingShare(str(label), len(gone), len(rows),
                                _commonest(Counter(str(r) for r in gone["reason"].dropna()))))
    return out


def attack_missing_shares(records: Sequence[Any], generator: Any = None) -> list[MissingShare]:
    """The gold's, each victim's and the generator's missing answers over a run of attacks.

    Rows: texts the gold was asked to rate, texts each victim scored (its budget spent), and
    the generator's requests; a failed generator request is missing too (its candidates never
    exist, and the search ends with nothing to show)."""
    gold_rows, victim_rows = 0, Counter[str]()
    missing: dict[str, Counter[str]] = {}
    for record in records:
        gold_rows += int(record.gold_queries)
        victim_rows[record.victim] += int(record.queries)
        for key, count in (record.missing or {}).items():
            role, _, reason = str(key).partition(": ")
            label = "gold" if role == "gold" else record.victim  # a gold reason names its member
            missing.setdefault(label, Counter())[reason] += int(count)
    rows = {"gold": gold_rows, **victim_rows}
    out = []
    for label, count in rows.items():
        reasons = missing.get(label, Counter())
        out.append(MissingShare(label, sum(reasons.values()), count, _commonest(reasons)))
    share = usage_share("generator", generator)
    return [*out, share] if share is not None else out


def usage_share(label: str, usage: Any) -> MissingShare | None:
    """An LLM's failed requests over all it was asked (its `Usage`): the generator of LLM-written
    variants or of attack candidates. None when it was asked nothing."""
    if usage is None or not usage.requests:
        return None
    return MissingShare(label, int(usage.errors), int(usage.requests),
                        _commonest(Counter(usage.errors_by_kind)))


@dataclass(frozen=True)
class ModalShare:
    """How much of an evaluator's scores is one value: the commonest value (a score, or the
    label a judge answered), how many scores took it, how many scores there were (missing ones
    left out)."""

    value: float | str | None
    count: int
    scored: int

    @property
    def share(self) -> float:
        return self.count / self.scored if self.scored else 0.0

    def degenerate(self, threshold: float = DEGENERATE_SHARE) -> bool:
        """Whether one value takes at least `threshold` of the scores (never for no scores)."""
        return self.scored > 0 and self.share >= threshold

    def describe(self) -> str:
        if not self.scored:
            return "no scores"
        shown = f"{self.value:g}" if isinstance(self.value, float) else f"'{self.value}'"
        return f"{shown} for {self.count} of {self.scored} scored texts ({self.share:.0%})"


def degenerate_share(scores: Iterable[float | None]) -> ModalShare:
    """The commonest value among `scores` (the scores one evaluator aspect gave to the originals
    and variants it scored) and its share; None and NaN are missing and left out. Values equal
    to SAME_VALUE_DECIMALS decimals count as one. A judge that answers "1" to nearly every text
    gives a share near 1: compare with DEGENERATE_SHARE (`ModalShare.degenerate`)."""
    import numpy as np  # the CLI reads this module's constants before any run

    return _modal_score(np.array([math.nan if s is None else float(s) for s in scores],
                                 dtype=float))


def _modal_score(values: np.ndarray) -> ModalShare:
    """`degenerate_share` of an array (NaN for missing): the distinct values are counted, then
    rounded as Python's `round` does (`python_rounded`), so a run's hundreds of thousands of
    scores cost a sort, not a Python loop."""
    import numpy as np

    values = values[np.isfinite(values)]
    if not len(values):
        return ModalShare(None, 0, 0)
    distinct, counts = np.unique(values, return_counts=True)
    rounded = python_rounded(distinct, SAME_VALUE_DECIMALS) + 0.0  # -0.0 and 0.0 are one
    merged, where = np.unique(rounded, return_inverse=True)
    totals = np.bincount(where, weights=counts)
    best = int(np.argmax(totals))  # the commonest; among equally common ones the smallest
    return ModalShare(float(merged[best]), int(totals[best]), int(counts.sum()))


def python_rounded(values: np.ndarray, decimals: int) -> np.ndarray:
    """`round(v, decimals)` of each finite value, as Python gives it (correctly rounded), at
    numpy's speed. Scaling, rounding to an integer and scaling back gives the same double
    wherever the scaled value is farther from a half than its own rounding error and below
    2**52; the few others (about one in millions of scores) go through Python's `round`."""
    import numpy as np

    scale = 10.0 ** decimals
    with np.errstate(over="ignore", invalid="ignore"):  # a huge value scales to inf: doubtful
        scaled = values * scale
        out = np.rint(scaled) / scale
        size = np.abs(scaled)
        doubtful = ((np.abs(scaled - np.floor(scaled) - 0.5) <= size * 2.0 ** -51)
                    | (size >= 2.0 ** 52))
    for index in np.flatnonzero(doubtful):
        out[index] = round(float(values[index]), decimals)
    return out


def answer_share(answers: Iterable[str | None]) -> ModalShare:
    """The commonest label a judge answered and its share (rows without a label left out):
    its scores may vary a little (an expectation over the labels' probabilities) while it
    writes the same label every time."""
    return _modal_label(Counter(str(a) for a in answers if a is not None))


def _modal_label(counts: Mapping[str, int]) -> ModalShare:
    if not counts:
        return ModalShare(None, 0, 0)
    label, count = min(counts.items(), key=lambda item: (-item[1], item[0]))
    return ModalShare(label, count, sum(counts.values()))


@dataclass(frozen=True)
class Degenerate:
    """An evaluator aspect whose scores (or answered labels) take one value on at least
    DEGENERATE_SHARE of the texts it scored: its verdicts say nothing about the damage."""

    evaluator: str
    aspect: str
    by: str  # "answer" (the judge's written label) or "score"
    modal: ModalShare

    def describe(self) -> str:
        what = "answered" if self.by == "answer" else "scored"
        return (f"{self.evaluator}/{self.aspect} {what} {self.modal.describe()}: a degenerate "
                "evaluator, its verdicts rest on no variation")

    def to_dict(self) -> dict[str, Any]:
        return {"evaluator": self.evaluator, "aspect": self.aspect, "by": self.by,
                "value": self.modal.value, "count": self.modal.count,
                "scored": self.modal.scored, "share": round(self.modal.share, 4)}


def degenerate_evaluators(table: Any, threshold: float = DEGENERATE_SHARE) -> list[Degenerate]:
    """Each evaluator aspect of a run's score table (`core.scoretable.ScoreTable`) that is
    degenerate: judged by the labels it answered where it reports them, else by its scores.
    Column by column: a run of 1,000 paragraphs has 2 million score rows, too many for pandas
    and a Python loop after every such run."""
    import pyarrow as pa
    import pyarrow.compute as pc

    with_answers = table.has("answer")
    columns = ["score", "status", *(["answer"] if with_answers else [])]
    found = []
    for label, aspect in table.distinct(["evaluator", "aspect"]):
        rows = table.read_arrow(columns, where={"evaluator": label, "aspect": aspect})
        scored = rows.filter(pc.equal(rows.column("status"), "ok"))
        answers = scored.column("answer").drop_null() if with_answers else None
        if answers is not None and len(answers):
            counts = pc.value_counts(pc.cast(answers, pa.string()))
            by, modal = "answer", _modal_label(dict(zip(
                counts.field("values").to_pylist(), counts.field("counts").to_pylist(),
                strict=True)))
        else:
            by, modal = "score", _modal_score(
                scored.column("score").cast(pa.float64()).to_numpy(zero_copy_only=False))
        if modal.scored >= MIN_SCORED_FOR_DEGENERATE and modal.degenerate(threshold):
            found.append(Degenerate(str(label), str(aspect), by, modal))
    return found


def long_text_skips(result: Any) -> list[str]:
    """The distinct skip reasons of rows left out for their length (each names its row)."""
    found = {str(entry["reason"]) for entry in result.summary.get("skip_reasons") or []
             if LENGTH_SKIP in str(entry["reason"])}
    return sorted(found)
