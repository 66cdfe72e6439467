"""The example data files that ship with evalstress, and copying them into a user's folder.

The documentation's commands read files a new user must have: `evalstress data FOLDER` puts them
there. The files are small example sets written for evalstress (summaries with hand-given
ratings in SummEval's layout, German-English translations, paragraphs) and the built-in corpus,
in the package under `corpus/`.

A copy writes single files into a folder that may hold the user's own, so it follows the
ownership rule of `engine.outdir` file by file: it writes a file that is not there, and
replaces one only when evalstress wrote it and nobody changed it since (the folder's
`MARKER` records each file it wrote with its sha256); any other file of the same name is
refused, naming it, unless the user says `force`. Nothing is written when anything is refused.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path

from evalstress.core.storage import atomic_write_text
from evalstress.core.userfile import read_json
from evalstress.core.version import __version__
from evalstress.engine.outdir import OutDirError

#: records, in a folder `evalstress data` wrote into, the files it wrote and their sha256
MARKER = ".evalstress-data"
#: the built-in corpus, copied under this name beside the samples
CORPUS_NAME = "sample.jsonl"


@dataclass(frozen=True)
class Placed:
    """One sample file in the user's folder and what the copy did with it: `written` (new),
    `replaced` (an older copy evalstress wrote), `kept` (already the same bytes)."""

    path: Path
    action: str


def shipped_files() -> dict[str, Traversable]:
    """The files `evalstress data` copies, by the name they get: the samples and their README
    (`corpus/examples/`) and the built-in corpus."""
    corpus = resources.files("evalstress") / "corpus"
    files = {entry.name: entry for entry in (corpus / "examples").iterdir()
             if entry.is_file() and not entry.name.startswith((".", "_"))}
    files[CORPUS_NAME] = corpus / "sample.jsonl"
    return dict(sorted(files.items()))


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _written_before(folder: Path) -> dict[str, str]:
    """name -> sha256 of the files an earlier copy wrote into `folder` (none when the marker is
    absent or unreadable: then no file there counts as ours)."""
    try:
        data = read_json(folder / MARKER)
    except (OSError, ValueError):
        return {}
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict):
        return {}
    return {str(k): str(v) for k, v in files.items()}


def copy_samples(folder: Path, *, force: bool = False) -> list[Placed]:
    """Copy every shipped sample file into `folder` (made when missing) and return what became
    of each. Raises OutDirError, before writing anything, when a file of the same name is one
    evalstress did not write or one changed since, unless `force`."""
    folder = Path(folder).expanduser()
    if folder.exists() and not folder.is_dir():
        raise OutDirError(f"{folder}: exists and is not a directory; name a folder for the "
                          "example files")
    shipped = {name: entry.read_bytes() for name, entry in shipped_files().items()}
    digests = {name: _digest(data) for name, data in shipped.items()}
    before = _written_before(folder) if folder.is_dir() else {}
    actions: dict[str, str] = {}
    foreign: list[str] = []
    for name in shipped:
        path = folder / name
        if path.is_dir():
            raise OutDirError(f"{path}: is a folder, where evalstress would write the file "
                              f"{name}; choose another folder")
        if not path.exists():
            actions[name] = "written"
            continue
        current = _digest(path.read_bytes())
        if current == digests[name]:
            actions[name] = "kept"
        elif before.get(name) == current or force:
            actions[name] = "replaced"
        else:
            foreign.append(name)
    if foreign:
        shown = ", ".join(foreign)
        raise OutDirError(f"{folder}: holds {shown}, which evalstress did not write or which "
                          "changed since it did; choose another folder, or add --force to "
                          "replace them")
    folder.mkdir(parents=True, exist_ok=True)
    for name, action in actions.items():
        if action != "kept":
            atomic_write_text(folder / name, shipped[name])
    record = {"evalstress": __version__, "files": {**before, **digests}}
    atomic_write_text(folder / MARKER, json.dumps(record, indent=1, sort_keys=True) + "\n")
    return [Placed(folder / name, action) for name, action in actions.items()]


__all__ = ["CORPUS_NAME", "MARKER", "Placed", "copy_samples", "shipped_files"]
