"""Imported variants: perturbed texts someone already made (released benchmark data, your own).

`--variants FILE` (JSONL, CSV or Parquet) adds them to a run as named variants, with their
provenance, so they go through scoring and every analysis like generated ones. A row names the
example it perturbs, the perturbation, the severity and seed (optional) and the text; a field
mapping (`--variant-map text=perturbed_text`, dotted paths allowed, `const:VALUE` for a value
every row shares) adapts other layouts. Errors name the file, the line and the field: an id that
matches no example of the data, a duplicate (example, perturbation, severity, seed), an empty
text.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalstress.core.data import READERS, DataError, Example, encodable, field_value
from evalstress.core.text import noise_ratio
from evalstress.engine.variantfile import severity_value
from evalstress.perturb.base import Variant

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

    def summary(self) -> dict[str, Any]:
        per = Counter(v.perturbation for v in self.variants)
        return {"file": self.file, "variants": len(self.variants),
                "perturbations": dict(sorted(per.items())), "outside_run": self.outside_run,
                "unchanged": self.unchanged}


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


def load_variants(path: str | Path, examples: Sequence[Example],
                  mapping: Mapping[str, str] | Iterable[str] | None = None, *,
                  known_ids: Collection[str] | None = None) -> ImportedVariants:
    """Read imported variants for `examples` (the run's examples).

    `known_ids` are all example ids of the data file when the run uses only some (--limit,
    --shard): rows of those other examples are counted as outside the run, not errors."""
    file = Path(path)
    if not file.exists():
        raise DataError(file, None, None, "does not exist")
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
        example_id = str(get(row, "example_id", line))
        if example_id not in everything:
            close = difflib.get_close_matches(example_id, list(everything), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise DataError(file, line, fields["example_id"], f"example id '{example_id}' "
                            f"matches no example of the data{hint}")
        perturbation = str(get(row, "perturbation", line)).strip()
        severity = severity_value(get(row, "severity", line))
        try:
            seed = int(get(row, "seed", line))
        except (TypeError, ValueError):
            raise DataError(file, line, fields["seed"], "must be a whole number") from None
        text = get(row, "text", line)
        if not isinstance(text, str):
            raise DataError(file, line, fields["text"], f"must be text, got "
                            f"{type(text).__name__}")
        text = encodable(text, file, line, fields["text"])
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
