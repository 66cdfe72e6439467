"""Correlation with human scores over several systems' outputs per document (SummEval's
layout): read the documents, score every output with every evaluator through the engine's
Scorer and caches, and hand the frames to `analyses.correlation.human_correlation`.

A study, not an analysis: it scores texts itself (`evalstress correlate`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from evalstress.analyses.correlation import finite_or_none
from evalstress.core.data import DataError, field_references, field_text, read_jsonl
from evalstress.engine.scoring import Scorer
from evalstress.evaluators.base import ScoreRequest


@dataclass
class SystemDocument:
    """One document: its context, and per system the output text and its human scores."""

    id: str
    source: str
    references: tuple[str, ...]
    task: str
    outputs: dict[str, str]
    human: dict[str, dict[str, float | None]]


def load_system_outputs(path: str | Any, *, systems_field: str = "systems",
                        text_field: str = "summary", system_id_field: str = "system",
                        id_field: str = "id",
                        human_fields: Sequence[str] = ("coherence", "consistency", "fluency",
                                                       "relevance"),
                        source_field: str = "source",
                        reference_fields: Sequence[str] = ("references",),
                        task: str = "summarization",
                        limit: int | None = None) -> list[SystemDocument]:
    """Read a JSONL file of documents with system outputs; errors name file, line and field."""
    file = Path(path)
    if not file.exists():
        raise DataError(file, None, None, "no such file")
    docs: list[SystemDocument] = []
    for line, row in read_jsonl(file):
        if limit is not None and len(docs) >= limit:
            break
        systems = row.get(systems_field)
        if not isinstance(systems, list) or not systems:
            raise DataError(file, line, systems_field, "must be a non-empty list of outputs")
        refs: list[str] = []
        for name in reference_fields:
            refs.extend(field_references(row.get(name), file, line, name))
        outputs: dict[str, str] = {}
        human: dict[str, dict[str, float | None]] = {}
        for i, item in enumerate(systems):
            where = f"{systems_field}[{i}]"
            if not isinstance(item, dict):
                raise DataError(file, line, where, "must be an object")
            if system_id_field not in item:
                raise DataError(file, line, f"{where}.{system_id_field}", "is missing")
            sid = str(item[system_id_field])
            if text_field not in item:
                raise DataError(file, line, f"{where}.{text_field}", "is missing")
            outputs[sid] = field_text(item[text_field], file, line, f"{where}.{text_field}",
                                      allow_empty=True)
            scores: dict[str, float | None] = {}
            for h in human_fields:
                if h not in item:
                    raise DataError(file, line, f"{where}.{h}", "is missing (a human score)")
                value = finite_or_none(item[h])
                if value is None and item[h] is not None:
                    raise DataError(file, line, f"{where}.{h}", f"is not a number: {item[h]!r}")
                scores[h] = value
            human[sid] = scores
        raw_id = row.get(id_field)
        doc_id = str(raw_id) if raw_id not in (None, "") else f"{file.stem}:{line}"
        source = field_text(row.get(source_field), file, line, source_field, allow_empty=True)
        docs.append(SystemDocument(doc_id, source, tuple(refs), task, outputs, human))
    return docs


def score_system_outputs(docs: Sequence[SystemDocument], evaluators: Sequence[Any], *,
                         cache: Any = None, progress: Any = None,
                         ) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """Score every output with every evaluator through the engine's Scorer (deduplicated,
    cached).

    Returns the long score frame (NaN = missing, with its reason), the human frame and
    per-evaluator counts.
    """
    keys, requests = [], []
    for doc in docs:
        for sid, text in doc.outputs.items():
            keys.append((doc.id, sid))
            requests.append(ScoreRequest(text, doc.source, doc.references, doc.task))
    records = []
    stats_out: dict[str, Any] = {}
    for evaluator in evaluators:
        if evaluator.level == "corpus":
            raise ValueError(f"{evaluator.label} scores sets of texts, not single outputs: it "
                             "cannot be correlated per output")
        scorer = Scorer(evaluator, cache, progress)
        scored = scorer.score(requests)
        for (doc_id, sid), request in zip(keys, requests, strict=True):
            row = scored[request.key]
            for aspect in evaluator.aspects:
                score = row.get(aspect)
                value = score.value if score is not None else None
                reason = None if value is not None else (
                    "no score for this aspect" if score is None
                    else score.reason or "no reason given")
                records.append({"doc_id": doc_id, "system_id": sid,
                                "evaluator": evaluator.label, "aspect": aspect,
                                "score": float("nan") if value is None else value,
                                "reason": reason})
        stats_out[evaluator.label] = {"signature": evaluator.signature(),
                                      "stats": asdict(scorer.stats)}
    human = pd.DataFrame.from_records(
        [{"doc_id": doc.id, "system_id": sid, **scores}
         for doc in docs for sid, scores in doc.human.items()])
    return pd.DataFrame.from_records(records), human, stats_out
