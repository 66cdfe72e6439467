"""Reading a finished run directory (results.json, variants.parquet, examples.jsonl,
scores.parquet) for the report, `evalstress check` and `evalstress compare`.

The browser part of the report embeds a bounded, stratified sample of the variants, so a run
with 100,000 variants still gives a page that opens quickly: every (perturbation, severity)
gets an equal share of the cap (unused shares go to the larger strata), and within a stratum
the variants with the smallest hash of their id are taken, which is deterministic.
"""

from __future__ import annotations

import hashlib
import heapq
import math
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from evalstress.core.data import DataError
from evalstress.core.records import ORIGINAL
from evalstress.core.userfile import parse_json, parse_json_line
from evalstress.engine import variantfile
from evalstress.report.common import short_labels

MAX_VARIANTS = 4000  # variants embedded in the page's browser
MAX_TEXT = 4000  # characters of one text kept in the page
MAX_NOTE = 300  # characters of a missing-score reason or explanation
BATCH_ROWS = 8_192  # score rows read at a time: a batch's decoded columns are its memory


class RunDirError(ValueError):
    """A run directory or one of its files cannot be read; the message names the file."""


def results_path(run_dir: str | Path) -> Path:
    """The results.json of a run directory, or the path itself when it names the file."""
    path = Path(run_dir)
    return path / "results.json" if path.is_dir() else path


def load_results(run_dir: str | Path) -> dict[str, Any]:
    """results.json of a run directory (or the file itself), checked to be a run's results of
    a layout this version reads. `read_run` checks it against the schema as well."""
    path = results_path(run_dir)
    if not path.exists():
        raise RunDirError(f"{path}: no such file (is {path.parent} a run directory?)")
    try:
        data = parse_json(path.read_text(encoding="utf-8"), path)
    except (OSError, UnicodeDecodeError) as exc:
        raise RunDirError(f"{path}: cannot read ({exc})") from None
    except DataError as exc:
        raise broken_json(exc) from None
    if not isinstance(data, dict) or not isinstance(data.get("analyses", {}), dict):
        raise RunDirError(f"{path}: not an evalstress results file (no 'analyses' mapping)")
    version = str(data.get("schema_version", "1.0"))
    if version.split(".")[0] != "1":
        raise RunDirError(f"{path}: schema_version {version} is newer than this evalstress "
                          "reads (1.x); upgrade evalstress")
    return data


#: the data files a study writes beside results.json, by its config's `command` (attack keeps
#: its searches in attacks.jsonl and self-bias its texts in texts.jsonl: neither is read back)
STUDY_FILES: dict[str, tuple[str, ...]] = {"correlate": ("scores.parquet",)}
#: a stress-test run (run, quickstart, the API, the pytest plugin: results.json has a `suite`)
STRESS_FILES = ("scores.parquet", variantfile.FILE)


def data_files(results: Mapping[str, Any]) -> tuple[str, ...]:
    """The files a run of this kind always has beside its results.json."""
    if "suite" in results:
        return STRESS_FILES
    config = results.get("config")
    command = config.get("command") if isinstance(config, Mapping) else None
    return STUDY_FILES.get(str(command), ())


def _present(folder: Path, name: str) -> bool:
    if name == variantfile.FILE:  # or the variants.jsonl of an older run
        return variantfile.variants_path(folder) is not None
    return (folder / name).is_file()


def read_run(run_dir: str | Path) -> dict[str, Any]:
    """results.json of a finished run, for the commands that read one (report, check, compare,
    combine). Refused with a RunDirError of one line, naming the file and the JSON path, when
    results.json departs from its schema (docs/results.schema.json: a missing `analyses`, the
    evaluators its config lists missing, a schema_version of another major...) or when the run
    directory lacks a data file its kind always writes (scores.parquet, variants.parquet)."""
    from evalstress.report.schema import schema_problems

    path = results_path(run_dir)
    results = load_results(path)
    problems = schema_problems(results)
    if problems:
        more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
        raise RunDirError(f"{path}: {problems[0]}{more}")
    files = data_files(results)
    for name in files:
        if not _present(path.parent, name):
            kind = "a stress-test run" if files == STRESS_FILES else "this run"
            raise RunDirError(f"{path.parent / name}: missing, so the run directory is "
                              f"incomplete ({kind} writes {' and '.join(files)} beside "
                              "results.json)")
    return results


def broken_json(exc: DataError) -> RunDirError:
    """A run file's broken JSON (`parse_json`'s error), located by line and column and said in
    words; a value nested too deeply has no column."""
    said = exc.message if exc.column is None else f"not valid JSON: {exc.message}"
    return RunDirError(str(DataError(exc.path, exc.line, None, said, column=exc.column)))


def _jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with path.open(encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = parse_json_line(line, path, line_no)
            except DataError as exc:
                raise broken_json(exc) from None
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
    """The variant browser's data: a stratified sample of the run's variants, the originals from
    examples.jsonl and every evaluator's scores from scores.parquet. None without variants."""
    return labelled(browser_data(run_dir, max_variants=max_variants), results)


def labelled(data: Mapping[str, Any] | None,
             results: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """`browser_data` with each score column's display label, from the run's results.json:
    the part of the browser's data that needs it, so the rest can be read before it exists."""
    if data is None:
        return None
    short = short_labels(results) if results else {}
    columns = []
    for column in data["columns"]:
        evaluator, aspect = column["evaluator"], column["aspect"]
        name = short.get(evaluator, evaluator)
        columns.append({"name": column["name"],
                        "label": name if aspect == name else f"{name} / {aspect}",
                        "higher": column["higher"]})
    return {**data, "columns": columns}


def browser_data(run_dir: str | Path, *, max_variants: int = MAX_VARIANTS
                 ) -> dict[str, Any] | None:
    """`browser_payload` before its columns are labelled (`labelled`): what reads the run's
    files, and all that takes time on a large run. None without variants."""
    folder = Path(run_dir)
    variants_path = variantfile.variants_path(folder)
    if variants_path is None:
        return None
    try:
        total, chosen = _sample(variants_path, max(0, max_variants))
    except DataError as exc:
        raise RunDirError(str(exc)) from None
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
    columns, variant_scores, notes = _scores(folder, chosen, examples)
    rows = []
    for record in chosen:  # a diff is shown only where the original is missing: older runs
        ident = str(record.get("id"))  # stored one per variant
        rows.append([ident, str(record.get("example_id")), str(record.get("perturbation")),
                     str(record.get("severity")), record.get("seed"),
                     _finite(record.get("noise_ratio")), _clip(record.get("text", ""), MAX_TEXT),
                     variant_scores.get(ident, [None] * len(columns)),
                     None if examples.get(str(record.get("example_id")), {}).get("text")
                     is not None else _clip(record.get("diff", ""), MAX_TEXT)])
    return {"total": total, "shown": len(rows), "columns": columns, "examples": examples,
            "variants": rows, "notes": notes}


def _sample(path: Path, cap: int) -> tuple[int, list[dict[str, Any]]]:
    """How many variants the file holds, and the sample: passes whose memory is the sample's
    plus one batch, whatever the run's size (count the strata, keep in each stratum its quota
    of positions with the smallest id hash, then read the records at those positions)."""
    sizes: Counter[tuple[str, str]] = Counter()
    for _, perturbations, severities in variantfile.read_keys(path):
        sizes.update(zip(perturbations, severities, strict=True))
    quotas = _quotas(sizes, cap)
    kept: dict[tuple[str, str], list[tuple[str, int]]] = defaultdict(list)
    position = 0
    for ids, perturbations, severities in variantfile.read_keys(path):
        for offset, key in enumerate(zip(perturbations, severities, strict=True)):
            if quotas[key]:
                kept[key].append((_rank(ids[offset]), position + offset))
        position += len(ids)
        for key, entries in kept.items():  # what a batch added beyond a quota goes now
            if len(entries) > quotas[key]:
                kept[key] = heapq.nsmallest(quotas[key], entries)
    chosen = variantfile.records_at(path, (p for entries in kept.values() for _, p in entries))
    return sum(sizes.values()), list(chosen.values())


_TEXT_COLUMNS = ("example_id", "perturbation", "severity", "evaluator", "aspect", "status",
                 "reason", "explanation")
_NEEDED = ("example_id", "perturbation", "severity", "seed", "evaluator", "aspect", "score",
           "status")


def _score_batches(path: Path, examples: Mapping[str, Any]) -> Iterator[pa.Table]:
    """The rows of the sampled examples, batch by batch, with the columns the browser shows:
    memory stays that of one batch however many rows the run has."""
    try:
        source = pq.ParquetFile(path)
        names = source.schema_arrow.names
        absent = [c for c in _NEEDED if c not in names]
        if absent:
            raise RunDirError(f"{path}: missing columns {sorted(absent)}")
        columns = [c for c in (*_NEEDED, "higher_is_better", "reason", "explanation")
                   if c in names]
        ids = pa.array(sorted(examples), pa.string())
        for batch in source.iter_batches(batch_size=BATCH_ROWS, columns=columns,
                                         use_threads=False):  # see core.freed
            table = pa.Table.from_batches([batch])
            for name in _TEXT_COLUMNS:  # older tables may hold other types
                if name in table.column_names and table.schema.field(name).type != pa.string():
                    table = table.set_column(table.column_names.index(name), name,
                                             pc.cast(table[name], pa.string()))
            if table.schema.field("seed").type != pa.int64():
                table = table.set_column(table.column_names.index("seed"), "seed",
                                         pc.cast(table["seed"], pa.int64()))
            if "higher_is_better" not in table.column_names:
                table = table.append_column("higher_is_better",
                                            pa.nulls(len(table), pa.bool_()))
            yield table.filter(pc.is_in(table["example_id"], value_set=ids))
    except RunDirError:
        raise
    except Exception as exc:  # pyarrow raises many kinds for a damaged file
        raise RunDirError(f"{path}: cannot read ({exc})") from None


def _join_key(table: pa.Table) -> pa.Array:
    """One string per row naming its variant: example, perturbation, severity and seed."""
    return pc.binary_join_element_wise(
        table["example_id"], table["perturbation"], table["severity"],
        pc.cast(table["seed"], pa.string()), "\x1f")


def _key_set(keys: Mapping[tuple[str, str, str, int], str]) -> pa.Array:
    return pa.array(["\x1f".join((e, p, s, str(seed))) for e, p, s, seed in keys], pa.string())


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


def _scores(folder: Path, chosen: list[dict[str, Any]], examples: dict[str, dict[str, Any]]
            ) -> tuple[list[dict[str, Any]], dict[str, list[float | None]],
                       dict[str, dict[str, str]]]:
    """Scores of the chosen variants and their originals, one column per evaluator aspect
    (labelled later, `labelled`)."""
    path = folder / "scores.parquet"
    if not path.exists() or not chosen:
        return [], {}, {}
    keys = {(str(r.get("example_id")), str(r.get("perturbation")), str(r.get("severity")),
             int(r.get("seed", 0) or 0)): str(r.get("id")) for r in chosen}
    pairs: dict[tuple[str, str], bool] = {}  # (evaluator, aspect) -> higher is better
    originals: list[dict[str, Any]] = []
    noised: list[dict[str, Any]] = []
    variant_keys = _key_set(keys)
    for batch in _score_batches(path, examples):
        for row in batch.select(["evaluator", "aspect", "higher_is_better"]).group_by(
                ["evaluator", "aspect"], use_threads=False).aggregate(
                [("higher_is_better", "first")]).to_pylist():
            pair = (row["evaluator"], row["aspect"])
            if pair not in pairs or pairs[pair] is None:
                pairs[pair] = row["higher_is_better_first"]
        originals += batch.filter(pc.equal(batch["perturbation"], ORIGINAL)).to_pylist()
        wanted = pc.is_in(_join_key(batch), value_set=variant_keys)
        noised += batch.filter(pc.and_(pc.not_equal(batch["perturbation"], ORIGINAL),
                                       wanted)).to_pylist()
    columns = [{"name": f"{e}/{a}", "evaluator": e, "aspect": a,
                "higher": bool(True if higher is None else higher)}
               for (e, a), higher in pairs.items()]
    col = {pair: i for i, pair in enumerate(pairs)}
    for row in originals:
        entry = examples.setdefault(row["example_id"], {})
        scores = entry.setdefault("scores", [None] * len(columns))
        if row["status"] == "ok":
            scores[col[(row["evaluator"], row["aspect"])]] = _finite(row["score"])
    out: dict[str, list[float | None]] = {}
    notes: dict[str, dict[str, str]] = {}
    for row in noised:
        ident = keys.get((row["example_id"], row["perturbation"], row["severity"], row["seed"]))
        if ident is None:
            continue
        c = col[(row["evaluator"], row["aspect"])]
        values = out.setdefault(ident, [None] * len(columns))
        if row["status"] == "ok":
            values[c] = _finite(row["score"])
        else:
            notes.setdefault(ident, {})[str(c)] = _clip(f"missing: {row.get('reason') or ''}",
                                                        MAX_NOTE)
        if row.get("explanation"):
            notes.setdefault(ident, {})[str(c)] = _clip(row["explanation"], MAX_NOTE)
    return columns, out, notes
