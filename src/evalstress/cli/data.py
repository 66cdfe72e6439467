"""`evalstress data`: the example data files that the documentation's commands read, copied into
a folder of the user's choosing."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evalstress.cli.common import app, console, fail, next_steps
from evalstress.cli.options import (
    ForceOption,
)
from evalstress.core.consoles import print_wrapped
from evalstress.core.storage import StorageError
from evalstress.core.wording import plural
from evalstress.engine.samplefiles import copy_samples


@app.command("data")
def data_command(
    folder: Annotated[Path, typer.Argument(help="Folder to copy the example files into (made "
                                           "when missing).")] = Path("examples"),
    force: ForceOption = False,
) -> None:
    """Copy the example data files into FOLDER: summaries with hand-given ratings,
    translations and paragraphs written for evalstress, the built-in corpus, and a README
    saying how they were made.

    Example: `evalstress data examples`, then `evalstress correlate examples/summaries.jsonl -e
    bleu -m references=references`. A file of the same name that evalstress did not write (or
    one changed since it did) is refused, and nothing is copied, unless you add --force.
    """
    try:
        placed = copy_samples(folder, force=force)
    except (StorageError, OSError) as exc:
        raise fail(str(exc)) from None
    width = max(len(str(p.path)) for p in placed)
    for item in placed:
        note = {"written": "", "replaced": "  (replaced an older copy)",
                "kept": "  (already there)"}[item.action]
        shown = f"{item.path}".ljust(width) + note if note else f"{item.path}"
        print_wrapped(console, f"  {shown}", hang=4)
    print_wrapped(console, f"{plural(len(placed), 'example file')} in {folder}/; "
                  f"{folder / 'README.md'} says what each holds and where it comes from",
                  hang=2)
    first = next((p.path for p in placed if p.path.name == "summaries.jsonl"), None)
    next_steps(folder / "README.md",
               ["card", "rouge", "--data", str(first), "-m", "hypothesis=highlight", "--task",
                "summarization", "--budget", "small"] if first else [],
               "the card of ROUGE on the summaries")
