"""Imported variants: perturbed texts someone already made (released benchmark data, your own).

`--variants FILE` (JSONL, CSV or Parquet) adds them to a run as named variants, with their
provenance, so they go through scoring and every analysis like generated ones. A row names the
example it perturbs, the perturbation, the severity and seed (optional) and the text; a field
mapping (`--variant-map text=perturbed_text`, dotted paths allowed, `const:VALUE` for a value
every row shares) adapts other layouts. Errors name the file, the line and the field: an id that
matches no example of the data, a duplicate (example, perturbation, severity, seed), an empty
text, a seed that is no whole number >= 0.

A perturbation name the suite does not list is scored as a perturbation of its own. A text longer
than the run's text length limit (`--max-chars`, suite option `max_chars`) is a skip with its
reason, as a data row that long is; so are the variants of a data row left out for its length.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalstress.core.data import READERS, DataError, Example, field_text, field_value, id_text
from evalstress.core.records import ORIGINAL, SkipRecord
from evalstress.core.text import LENGTH_SKIP, noise_ratio
from evalstress.core.userfile import check_readable
from evalstress.engine.variantfile import severity_value
from evalstress.perturb.base import Severity, Variant
from evalstress.perturb.base import registry as perturbation_registry

#: fields of an imported variant and the data field each is read from by default
VARIANT_FIELDS = {"example_id": "example_id", "perturbation": "perturbation",
                  "severity": "severity", "seed": "seed", "text": "text"}
OPTIONAL = {"severity": "default", "seed": 0}
CONST = "const:"


@dataclass
class ImportedVariants:
    """Variants read from a file, ready for the generation stage to hand to the runner."""

    file: str
    variants: list[Variant] = field(default_factory=list)
    outside_run: int = 0  # rows of examples the run leaves out (--limit, --shard)
    unchanged: int = 0  # rows whose text equals the example's hypothesis

    @property
    def names(self) -> list[str]:
        return sorted({v.perturbation for v in self.variants})

    def of_chunk(self, examples: Sequence[Example], max_chars: int | None
                 ) -> tuple[list[Variant], list[SkipRecord]]:
        """The variants of these examples a run scores, and a skip with its reason for each
        whose text is beyond `max_chars` (as a data row that long is skipped)."""
        ids = {e.id for e in examples}
        variants: list[Variant] = []
        skips: list[SkipRecord] = []
        for variant in self.variants:
            if variant.example_id not in ids:
                continue
            if max_chars is not None and len(variant.text) > max_chars:
                skips.append(SkipRecord(variant.example_id, variant.perturbation,
                                        variant.severity, variant.seed,
                                        _too_long(variant, max_chars)))
            else:
                variants.append(variant)
        return variants, skips

    def of_long_rows(self, rows: Sequence[Example], reasons: Mapping[str, str],
                     planned: Callable[[str, str], bool]) -> list[SkipRecord]:
        """A skip, with its row's reason, for each variant of these rows (left out for their
        length) unless `planned(task, name)`: the planning loop records those rows' skips."""
        tasks = {e.id: e.task for e in rows}
        return [SkipRecord(v.example_id, v.perturbation, v.severity, v.seed,
                           reasons[v.example_id])
                for v in self.variants
                if v.example_id in tasks and not planned(tasks[v.example_id], v.perturbation)]

    def summary(self) -> dict[str, Any]:
        per = Counter(v.perturbation for v in self.variants)
        return {"file": self.file, "variants": len(self.variants),
                "perturbations": dict(sorted(per.items())), "outside_run": self.outside_run,
                "unchanged": self.unchanged}


def _too_long(variant: Variant, max_chars: int) -> str:
    where = variant.provenance or {}
    return (f"imported variant ({where.get('file')}, line {where.get('line')}): its text of "
            f"{len(variant.text):,} characters is {LENGTH_SKIP} ({max_chars:,}; raise it with "
            "--max-chars or the suite option max_chars)")


def seed_value(value: Any, file: Path, line: int, name: str) -> int:
    """A seed as read from a row: a whole number >= 0, written as a number or as text (a CSV
    cell); 1.7, -1 or true are errors, never rounded into a seed nobody chose."""
    number: Any = value
    if isinstance(value, str):
        try:
            number = float(value.strip()) if "." in value else int(value.strip())
        except ValueError:
            number = None
    if isinstance(number, float) and number.is_integer():
        number = int(number)
    if isinstance(number, bool) or not isinstance(number, int) or number < 0:
        raise DataError(file, line, name, f"a seed must be a whole number >= 0, got {value!r}")
    return number


def parse_variant_map(pairs: Mapping[str, str] | Iterable[str] | None) -> dict[str, str]:
    """`["text=perturbed", "perturbation=const:hypernym"]` -> field mapping; unknown names are
    errors with a did-you-mean."""
    mapping = dict(VARIANT_FIELDS)
    if pairs is None:
        return mapping
    items = pairs.items() if isinstance(pairs, Mapping) else (
        _split(pair) for pair in pairs)
    for key, value in items:
        if key not in VARIANT_FIELDS:
            close = difflib.get_close_matches(key, list(VARIANT_FIELDS), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise ValueError(f"unknown variant field '{key}' in the variant mapping{hint} "
                             f"Known: {', '.join(VARIANT_FIELDS)}")
        mapping[key] = value
    return mapping


def _split(pair: str) -> tuple[str, str]:
    key, sep, value = pair.partition("=")
    if not sep or not key.strip() or not value.strip():
        raise ValueError(f"variant mapping '{pair}' must look like text=perturbed_text")
    return key.strip(), value.strip()


def severity_problem(perturbation: str, severity: Severity) -> str | None:
    """Why `severity` cannot be a severity of the registered `perturbation` (a text where it
    is graded by numbers), or None. Levels by name stay free (an import may bring levels of
    its own, e.g. minor and major), and so does a perturbation of the user's own name."""
    cls = perturbation_registry().get(perturbation)
    if cls is None or severity == "default" or isinstance(severity, int | float):
        return None
    if not all(isinstance(g, int | float) for g in cls.grid) or str(severity) in map(
            str, cls.SEVERITY_NAMES):
        return None
    return (f"'{severity}' is not a severity of {perturbation}, which is graded by numbers "
            f"(its {cls.severity_param}, e.g. {', '.join(map(str, cls.grid))})")


def load_variants(path: str | Path, examples: Sequence[Example],
                  mapping: Mapping[str, str] | Iterable[str] | None = None, *,
                  known_ids: Collection[str] | None = None) -> ImportedVariants:
    """Read imported variants for `examples` (the run's examples).

    `known_ids` are all example ids of the data file when the run uses only some (--limit,
    --shard): rows of those other examples are counted as outside the run, not errors."""
    file = check_readable(path, "variants")
    reader = READERS.get(file.suffix.lower())
    if reader is None:
        raise DataError(file, None, None, f"unsupported format '{file.suffix}'; use one of "
                        f"{sorted(READERS)}")
    fields = parse_variant_map(mapping)
    by_id = {e.id: e for e in examples}
    everything = set(known_ids) if known_ids is not None else set(by_id)
    out = ImportedVariants(str(file))
    seen: dict[tuple[str, str, str, int], int] = {}

    def get(row: Mapping[str, Any], name: str, line: int) -> Any:
        source = fields[name]
        if source.startswith(CONST):
            return source.removeprefix(CONST)
        try:
            value = field_value(row, source)
        except KeyError:
            if name in OPTIONAL:
                return OPTIONAL[name]
            present = ", ".join(sorted(map(str, row))[:12])
            raise DataError(file, line, source, f"is missing (fields present: {present}); map "
                            f"it with --variant-map {name}=FIELD") from None
        if value is None or (isinstance(value, float) and value != value) or (
                isinstance(value, str) and not value.strip()):
            if name in OPTIONAL:
                return OPTIONAL[name]
            raise DataError(file, line, source, "is empty")
        return value

    for line, row in reader(file):
        example_id = id_text(get(row, "example_id", line), file, line,
                             fields["example_id"]) or ""
        if example_id not in everything:
            close = difflib.get_close_matches(example_id, list(everything), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise DataError(file, line, fields["example_id"], f"example id '{example_id}' "
                            f"matches no example of the data{hint}")
        perturbation = field_text(get(row, "perturbation", line), file, line,
                                  fields["perturbation"]).strip()
        if perturbation == ORIGINAL:  # the scores of the unperturbed texts go by this name
            raise DataError(file, line, fields["perturbation"], f"'{ORIGINAL}' names the "
                            "unperturbed texts in the scores; give the perturbation another name")
        raw_severity = get(row, "severity", line)
        if isinstance(raw_severity, bool) or not isinstance(raw_severity, str | int | float):
            raise DataError(file, line, fields["severity"], "a severity must be a text or a "
                            f"number, got {type(raw_severity).__name__}")
        severity = severity_value(raw_severity)
        problem = severity_problem(perturbation, severity)
        if problem is not None:
            raise DataError(file, line, fields["severity"], problem)
        seed = seed_value(get(row, "seed", line), file, line, fields["seed"])
        text = field_text(get(row, "text", line), file, line, fields["text"])
        key = (example_id, perturbation, str(severity), seed)
        if key in seen:
            raise DataError(file, line, fields["example_id"], f"duplicate variant (example "
                            f"'{example_id}', perturbation '{perturbation}', severity "
                            f"'{severity}', seed {seed}); first on line {seen[key]}")
        seen[key] = line
        example = by_id.get(example_id)
        if example is None:
            out.outside_run += 1
            continue
        out.unchanged += text.strip() == example.hypothesis.strip()
        out.variants.append(Variant(
            example_id, perturbation, severity, seed, text,
            noise_ratio(example.hypothesis, text),
            {"method": "imported", "file": str(file), "line": line}))
    if not seen:
        raise DataError(file, None, None, "holds no variants")
    return out
