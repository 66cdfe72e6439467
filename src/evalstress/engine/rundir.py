"""The run directory: written chunk by chunk into a staging folder, renamed into place at the end.

While a run works, each finished chunk leaves part files in `<staging>/chunks/` (scores and
variants as Parquet, skips and examples as JSONL) and, last, a small JSON summary that marks the
chunk done. A killed run started again with the same command finds the staging folder, checks
that its fingerprint (data, suite, evaluators, chunking) matches, and goes on with the first
chunk not done. At the end the parts are joined into the files of the contract
(`scores.parquet`, grouped by key with a bounded number of row groups per key (`write_merged`),
`variants.parquet`, `skips.jsonl`, `examples.jsonl`); `results.json` and
`report.html` are added; then the staging folder replaces `--out` by rename, so a failed write
never leaves a half-new run beside a half-old one.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from evalstress.core import interrupts
from evalstress.core.data import read_jsonl
from evalstress.core.records import SkipRecord
from evalstress.core.scoretable import SCORE_SCHEMA, write_merged
from evalstress.core.userfile import read_json
from evalstress.engine import variantfile
from evalstress.engine.outdir import (
    MARKER,
    check_out_dir,
    foreign_entries,
    old_path,
    remove_owned,
    remove_staging,
    staging_path,
    write_marker,
    write_staging_marker,
)

PARTS = ("scores.parquet", variantfile.FILE, "skips.jsonl", "examples.jsonl")
MANIFEST = "manifest.json"
#: the layout of the chunk parts: a staging folder of another layout is started afresh
#: (2: variants as Parquet parts, not JSONL; 3: the last chunks of a long run are smaller;
#: 4: score rows carry the label a judge answered; 5: variants carry their verification and
#: their attack's measured precision)
LAYOUT = 5
#: scores.parquet: zstd keeps a score row at ~5 bytes (snappy: ~6.5); parts are rewritten
SCORE_OPTIONS: dict[str, Any] = {"compression": "zstd", "compression_level": 9}
SCORE_PART_OPTIONS: dict[str, Any] = {"compression": "zstd", "compression_level": 1}


def staging_for(out: Path) -> Path:
    """The staging folder of a run directory: beside it, so the final rename stays atomic."""
    return staging_path(out)


def _write_atomic(path: Path, text: str) -> None:
    """A staging file whole or not at all, through a temporary file of a new name (O_EXCL: a
    link planted at a fixed name is never followed)."""
    handle, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(name, path)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise


class RunFiles:
    """Where a run's files are; moves when the staging folder is renamed into place."""

    def __init__(self, root: Path, *, temporary: bool = False):
        self.root = Path(root)
        self.temporary = temporary
        self._cleanup: weakref.finalize | None = None
        if temporary:
            self._cleanup = weakref.finalize(self, shutil.rmtree, str(self.root), True)

    def path(self, name: str) -> Path:
        return self.root / name

    @property
    def chunks(self) -> Path:
        return self.root / "chunks"

    def part(self, index: int, name: str) -> Path:
        return self.chunks / f"{index:06d}.{name}"

    def keep(self) -> None:
        """The folder outlives this object (it became a run directory)."""
        if self._cleanup is not None:
            self._cleanup.detach()
            self._cleanup = None
        self.temporary = False


class Staging:
    """A staging folder with its fingerprint and the chunks already done."""

    def __init__(self, files: RunFiles, fingerprint: str):
        self.files = files
        self.fingerprint = fingerprint

    @classmethod
    def open(cls, root: Path | None, fingerprint: str) -> Staging:
        """Resume `root` if it holds a run with this fingerprint, else start it afresh."""
        if root is None:
            files = RunFiles(Path(tempfile.mkdtemp(prefix="evalstress-run-")), temporary=True)
        else:
            files = RunFiles(Path(root))
            manifest = files.path(MANIFEST)
            previous = None
            if manifest.exists():
                with contextlib.suppress(OSError, ValueError, AttributeError):
                    data = read_json(manifest)
                    if data.get("layout") == LAYOUT:
                        previous = data.get("fingerprint")
            if previous != fingerprint and os.path.lexists(files.root):
                remove_staging(files.root)  # refused, not deleted, if evalstress did not make it
            if not files.root.exists():
                files.root.mkdir(parents=True)
                write_staging_marker(files.root)
        files.chunks.mkdir(parents=True, exist_ok=True)
        manifest = files.path(MANIFEST)
        if not manifest.exists():
            _write_atomic(manifest, json.dumps({"fingerprint": fingerprint, "finalized": False,
                                                "layout": LAYOUT}))
        return cls(files, fingerprint)

    @property
    def finalized(self) -> bool:
        data = read_json(self.files.path(MANIFEST))
        return bool(data.get("finalized"))

    def summary(self, index: int) -> dict[str, Any] | None:
        path = self.files.part(index, "json")
        if not path.exists():
            return None
        try:
            return dict(read_json(path))
        except (OSError, ValueError, TypeError):
            return None  # a chunk killed while writing its marker is redone

    def write_chunk(self, index: int, *, scores: Sequence[pa.Table], variants: pa.Table | None,
                    skips: str, examples: str, summary: Mapping[str, Any]) -> None:
        """Write a chunk's parts, then its summary: the summary's presence means 'done'."""
        with pq.ParquetWriter(self.files.part(index, "scores.parquet"), SCORE_SCHEMA,
                              **SCORE_PART_OPTIONS) as writer:
            for table in scores:  # one row group per evaluator
                if table.num_rows:
                    writer.write_table(table)
        variantfile.write_part(self.files.part(index, variantfile.FILE),
                               variants if variants is not None
                               else variantfile.VARIANT_SCHEMA.empty_table())
        for name, text in (("skips.jsonl", skips), ("examples.jsonl", examples)):
            self.files.part(index, name).write_text(text, encoding="utf-8")
        _write_atomic(self.files.part(index, "json"), json.dumps(dict(summary)))

    def _score_parts(self, order: Sequence[int]) -> Iterator[pa.Table]:
        for index in order:
            part = pq.ParquetFile(self.files.part(index, "scores.parquet"))
            for group in range(part.num_row_groups):
                yield part.read_row_group(group, use_threads=False)  # see core.freed

    def finalize(self, indexes: Iterable[int], summary: Mapping[str, Any]) -> None:
        """Concatenate the chunk parts, in chunk order, into the run's files."""
        order = list(indexes)
        rows = sum(pq.ParquetFile(self.files.part(i, "scores.parquet")).metadata.num_rows
                   for i in order)
        # one join after the other: joined side by side (the variants in a thread of their
        # own) they held both joins' buffers at once, which made the peak of a 1,000-example
        # run (bench/README.md, "Peak memory")
        variantfile.join_parts([self.files.part(i, variantfile.FILE) for i in order],
                               self.files.path(variantfile.FILE))
        write_merged(self._score_parts(order), self.files.path("scores.parquet"), rows=rows,
                     spill=self.files.path("scores.spill.parquet"), options=SCORE_OPTIONS,
                     spill_options=SCORE_PART_OPTIONS)
        for name in PARTS[2:]:
            with self.files.path(name).open("wb") as out:
                for index in order:
                    with self.files.part(index, name).open("rb") as part_file:
                        shutil.copyfileobj(part_file, out, 1 << 20)
        _write_atomic(self.files.path("summary.json"), json.dumps(dict(summary)))
        _write_atomic(self.files.path(MANIFEST),
                      json.dumps({"fingerprint": self.fingerprint, "finalized": True,
                                  "layout": LAYOUT}))
        shutil.rmtree(self.files.chunks, ignore_errors=True)  # a resume needs them no more


def fresh_staging(out: Path) -> RunFiles:
    """An empty staging folder for a run directory a study writes whole (attack, correlate):
    what a killed study left there is dropped (its scores and answers are in the caches)."""
    staging = staging_for(out)
    remove_staging(staging)
    staging.mkdir(parents=True)
    write_staging_marker(staging)
    return RunFiles(staging)


def promote(files: RunFiles, out: Path, *, command: str = "run", force: bool = False) -> Path:
    """Put a finished run folder at `out`, replacing what was there only once it is complete.
    Only files evalstress wrote there are replaced or deleted (`engine.outdir`): a folder
    holding anything else was refused before the run unless `force`, and then those files are
    carried into the new folder (one of the same name as a file of the run is replaced)."""
    given, out = Path(out), Path(out).expanduser().resolve()
    check_out_dir(given, force=force)  # checked before the run; again where it would delete
    source = files.root
    if source.resolve() == out.resolve():
        return out
    staging = staging_for(out)
    if source.resolve() != staging.resolve():
        remove_staging(staging)
        if files.temporary:
            shutil.move(str(source), str(staging))
        else:
            shutil.copytree(source, staging)
        files.keep()
        files.root = staging
    for internal in (MANIFEST, "summary.json", MARKER):  # only needed while staging
        (staging / internal).unlink(missing_ok=True)
    shutil.rmtree(staging / "chunks", ignore_errors=True)
    write_marker(staging, command)
    carried = _carried(out, staging) if force and out.is_dir() else []  # else none: checked
    old = old_path(out)
    if os.path.lexists(old) and remove_owned(old):
        check_out_dir(given, force=force)  # names what of the user's is in it
    with interrupts.deferred():  # a signal between the two renames would leave no run at `out`
        if out.exists():
            os.replace(out, old)
        os.replace(staging, out)
        for rel in carried:  # the user's files, kept beside the new run
            target = out / rel.rstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(old / rel.rstrip("/"), target)
        files.root = out
        files.keep()
    if os.path.lexists(old):
        remove_owned(old)
    return out


def _carried(out: Path, staging: Path) -> list[str]:
    """What of the user's in `out` goes into the new run directory: all but the marker and a
    path the run writes itself (then the run's file replaces it: the user said --force)."""
    written = {p.relative_to(staging).as_posix() for p in staging.rglob("*")}
    return [rel for rel in foreign_entries(out)
            if rel != MARKER and rel.rstrip("/") not in written
            and not any(w.startswith(rel.rstrip("/") + "/") for w in written)]


class StoredSequence(Sequence[Any]):
    """A read-only sequence over the variants or skips of a run, read on demand (never held
    whole)."""

    def __init__(self, files: RunFiles, name: str, count: int, kind: str):
        self.files = files
        self.name = name
        self.size = count
        self.kind = kind  # "variant" or "skip"

    def __len__(self) -> int:
        return self.size

    def __iter__(self) -> Iterator[Any]:
        if self.kind == "variant":
            found = variantfile.variants_path(self.files.root)
            if found is not None:
                yield from variantfile.read_variants(found)
            return
        path = self.files.path(self.name)
        if not path.exists():
            return
        for _, data in read_jsonl(path):
            yield SkipRecord.from_json(data)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return list(self)[index]
        if index < 0:
            index += self.size
        for i, item in enumerate(self):
            if i == index:
                return item
        raise IndexError(index)

    def __bool__(self) -> bool:
        return self.size > 0
