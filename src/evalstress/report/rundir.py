"""Reading a finished run directory (results.json, variants.jsonl, examples.jsonl,
scores.parquet) for the report, `evalstress check` and `evalstress compare`.

The browser part of the report embeds a bounded, stratified sample of the variants, so a run
with 100,000 variants still gives a page that opens quickly: every (perturbation, severity)
gets an equal share of the cap (unused shares go to the larger strata), and within a stratum
the variants with the smallest hash of their id are taken, which is deterministic.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import defaultdict
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

MAX_VARIANTS = 4000  # variants embedded in the page's browser
MAX_TEXT = 4000  # characters of one text kept in the page
MAX_NOTE = 300  # characters of a missing-score reason or explanation


class RunDirError(ValueError):
    """A run directory or one of its files cannot be read; the message names the file."""


def load_results(run_dir: str | Path) -> dict[str, Any]:
    """results.json of a run directory (or the file itself), checked to be a run's results."""
    path = Path(run_dir)
    if path.is_dir():
        path = path / "results.json"
    if not path.exists():
        raise RunDirError(f"{path}: no such file (is {path.parent} a run directory?)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise RunDirError(f"{path}: cannot read ({exc})") from None
    except json.JSONDecodeError as exc:
        raise RunDirError(f"{path}: line {exc.lineno}: not valid JSON ({exc.msg})") from None
    if not isinstance(data, dict) or not isinstance(data.get("analyses", {}), dict):
        raise RunDirError(f"{path}: not an evalstress results file (no 'analyses' mapping)")
    version = str(data.get("schema_version", "1.0"))
    if version.split(".")[0] != "1":
        raise RunDirError(f"{path}: schema_version {version} is newer than this evalstress "
                          "reads (1.x); upgrade evalstress")
    return data


def _jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with path.open(encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise RunDirError(f"{path}: line {line_no}: not valid JSON ({exc.msg})") from None
            if not isinstance(record, dict):
                raise RunDirError(f"{path}: line {line_no}: expected a JSON object")
            yield line_no, record


def _rank(value: str) -> str:
    return hashlib.sha1(value.encode("utf-8")).hexdigest()


def _quotas(sizes: Mapping[Any, int], cap: int) -> dict[Any, int]:
    """Split `cap` over strata as evenly as their sizes allow (water-filling)."""
    quotas = dict.fromkeys(sizes, 0)
    left = dict(sizes)
    budget = cap
    while budget > 0 and any(left.values()):
        open_ = [k for k, v in left.items() if v > 0]
        share = max(1, budget // len(open_))
        for key in open_:
            take = min(share, left[key], budget)
            quotas[key] += take
            left[key] -= take
            budget -= take
            if budget == 0:
                break
    return quotas


def _clip(text: Any, limit: int) -> str:
    text = str(text)
    return text if len(text) <= limit else text[:limit] + " …[cut]"


def browser_payload(run_dir: str | Path, *, max_variants: int = MAX_VARIANTS,
                    results: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """The variant browser's data: a stratified sample of variants.jsonl, the originals from
    examples.jsonl and every evaluator's scores from scores.parquet. None without variants."""
    folder = Path(run_dir)
    variants_path = folder / "variants.jsonl"
    if not variants_path.exists():
        return None
    strata: dict[tuple[str, str], list[tuple[str, int]]] = defaultdict(list)
    for line_no, record in _jsonl(variants_path):
        key = (str(record.get("perturbation", "")), str(record.get("severity", "")))
        strata[key].append((_rank(str(record.get("id", line_no))), line_no))
    total = sum(len(v) for v in strata.values())
    quotas = _quotas({k: len(v) for k, v in strata.items()}, max(0, max_variants))
    wanted: set[int] = set()
    for key, members in strata.items():
        members.sort()
        wanted.update(line for _, line in members[:quotas[key]])
    chosen = [record for line_no, record in _jsonl(variants_path) if line_no in wanted]
    chosen.sort(key=lambda r: (str(r.get("perturbation")), _sev_key(r.get("severity")),
                               str(r.get("example_id")), int(r.get("seed", 0) or 0)))
    examples: dict[str, dict[str, Any]] = {}
    needed = {str(r.get("example_id")) for r in chosen}
    examples_path = folder / "examples.jsonl"
    if examples_path.exists():
        for _, record in _jsonl(examples_path):
            ident = str(record.get("id"))
            if ident in needed:
                examples[ident] = {"text": _clip(record.get("hypothesis", ""), MAX_TEXT),
                                   "task": record.get("task")}
    for ident in needed:
        examples.setdefault(ident, {})
    columns, variant_scores, notes = _scores(folder, chosen, examples, results or {})
    rows = []
    for record in chosen:
        ident = str(record.get("id"))
        rows.append([ident, str(record.get("example_id")), str(record.get("perturbation")),
                     str(record.get("severity")), record.get("seed"),
                     _finite(record.get("noise_ratio")), _clip(record.get("text", ""), MAX_TEXT),
                     variant_scores.get(ident, [None] * len(columns)),
                     None if examples.get(str(record.get("example_id")), {}).get("text")
                     is not None else _clip(record.get("diff", ""), MAX_TEXT)])
    return {"total": total, "shown": len(rows), "columns": columns, "examples": examples,
            "variants": rows, "notes": notes}


def _sev_key(value: Any) -> tuple[int, float, str]:
    try:
        return (0, float(value), "")
    except (TypeError, ValueError):
        return (1, 0.0, str(value))


def _finite(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return round(number, 4) if math.isfinite(number) else None


def _scores(folder: Path, chosen: list[dict[str, Any]], examples: dict[str, dict[str, Any]],
            results: Mapping[str, Any]
            ) -> tuple[list[dict[str, Any]], dict[str, list[float | None]],
                       dict[str, dict[str, str]]]:
    """Scores of the chosen variants and their originals, one column per evaluator aspect."""
    path = folder / "scores.parquet"
    if not path.exists() or not chosen:
        return [], {}, {}
    import pandas as pd

    from evalstress.report.common import short_labels

    try:
        frame = pd.read_parquet(path, filters=[("example_id", "in", sorted(examples))])
    except Exception as exc:  # pyarrow raises many kinds for a damaged file
        raise RunDirError(f"{path}: cannot read ({exc})") from None
    need = {"example_id", "perturbation", "severity", "seed", "evaluator", "aspect", "score",
            "status"}
    if not need <= set(frame.columns):
        raise RunDirError(f"{path}: missing columns {sorted(need - set(frame.columns))}")
    frame = frame[frame["example_id"].astype(str).isin(examples)]
    frame = frame.assign(severity=frame["severity"].astype(str),
                         example_id=frame["example_id"].astype(str))
    pairs = list(dict.fromkeys(zip(frame["evaluator"].astype(str), frame["aspect"].astype(str),
                                   strict=True)))
    short = short_labels(results) if results else {}
    higher = frame.groupby(["evaluator", "aspect"])["higher_is_better"].first().to_dict() \
        if "higher_is_better" in frame.columns else {}
    columns = [{"name": f"{e}/{a}",
                "label": short.get(e, e) if a == short.get(e, e) else f"{short.get(e, e)} / {a}",
                "higher": bool(higher.get((e, a), True))} for e, a in pairs]
    col = {pair: i for i, pair in enumerate(pairs)}
    note_col = "explanation" if "explanation" in frame.columns else None
    originals = frame[frame["perturbation"] == "original"]
    for row in originals.itertuples(index=False):
        entry = examples.setdefault(str(row.example_id), {})
        scores = entry.setdefault("scores", [None] * len(columns))
        if row.status == "ok":
            scores[col[(str(row.evaluator), str(row.aspect))]] = _finite(row.score)
    keys = {(str(r.get("example_id")), str(r.get("perturbation")), str(r.get("severity")),
             int(r.get("seed", 0) or 0)): str(r.get("id")) for r in chosen}
    noised = frame[frame["perturbation"] != "original"]
    out: dict[str, list[float | None]] = {}
    notes: dict[str, dict[str, str]] = {}
    for row in noised.itertuples(index=False):
        ident = keys.get((str(row.example_id), str(row.perturbation), str(row.severity),
                          int(str(row.seed))))
        if ident is None:
            continue
        c = col[(str(row.evaluator), str(row.aspect))]
        values = out.setdefault(ident, [None] * len(columns))
        if row.status == "ok":
            values[c] = _finite(row.score)
        else:
            notes.setdefault(ident, {})[str(c)] = _clip(f"missing: {getattr(row, 'reason', '')}", MAX_NOTE)
        if note_col and getattr(row, note_col, None):
            notes.setdefault(ident, {})[str(c)] = _clip(getattr(row, note_col), MAX_NOTE)
    return columns, out, notes
