"""`evalstress report`: a run's HTML report, rebuilt from its directory."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evalstress.cli.common import (
    app,
    console,
    fail,
    next_steps,
)
from evalstress.cli.options import (
    PageOption,
    RunDirArgument,
)
from evalstress.cli.rundir import cannot_write, writable
from evalstress.core.consoles import print_wrapped
from evalstress.engine.outdir import (
    is_recorded,
    record_files,
)


@app.command("report")
def report_command(
    run_dir: RunDirArgument,
    out: PageOption = None,
    max_variants: Annotated[int, typer.Option(
        min=0, help="Variants embedded in the page's browser (a stratified sample; `evalstress "
        "export` writes them all).")] = 4000,
) -> None:
    """Rebuild the HTML report of a run from its directory (one self-contained file).

    A run directory whose results.json does not follow its schema, or that lacks scores.parquet
    or variants.parquet, is refused (exit 2) rather than reported in part.

    Example: `evalstress report runs/summaries && open runs/summaries/report.html`
    """
    from evalstress.report.html import write_report
    from evalstress.report.rundir import RunDirError, read_run

    if out is not None:
        writable(out, "--out", (run_dir,), rewrites=("report.html",))
    own = Path(run_dir) / "report.html"
    rewrites_own = out is None or Path(out).resolve() == own.resolve()
    was_ours = rewrites_own and is_recorded(Path(run_dir), "report.html")
    try:
        results = read_run(run_dir)
        path = write_report(run_dir, out, max_variants=max_variants, results=results)
        if was_ours:  # the run's own report, rebuilt: still evalstress's
            record_files(Path(run_dir), ["report.html"])
    except RunDirError as exc:
        raise fail(str(exc)) from None
    except OSError as exc:  # a full disk, a read-only folder: named with the file written
        raise fail(cannot_write(exc, out or Path(run_dir) / "report.html")) from None
    print_wrapped(console, f"Wrote {path}", hang=2)
    next_steps(path, ["export", str(run_dir), "--variants", "variants.jsonl"],
               "every variant with its text, to read or edit")
