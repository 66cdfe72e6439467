"""`evalstress export`: every variant of a run with its text and provenance."""

from __future__ import annotations

from typing import Annotated

import typer

from evalstress.cli.common import (
    app,
    console,
    fail,
    next_steps,
)
from evalstress.cli.options import (
    RunDirArgument,
    VariantsOutOption,
)
from evalstress.cli.rundir import cannot_write, writable
from evalstress.core.consoles import print_wrapped
from evalstress.core.data import DataError
from evalstress.core.wording import plural


@app.command("export")
def export_command(
    run_dir: RunDirArgument,
    variants: VariantsOutOption,
    originals: Annotated[bool, typer.Option(
        "--originals", help="Add each example's original text (column `original`).")] = False,
) -> None:
    """Write a run's variants with their full text and provenance (id, example_id,
    perturbation, severity, seed, noise_ratio, method, provenance, text).

    The run stores them compressed in variants.parquet; this writes them as a file to read,
    filter or edit. The file loads back into a run as it is: `evalstress run DATA --variants
    FILE` scores its texts in place of the suite's perturbations of the same names (edit the
    texts first to stress your own variants).

    Example: `evalstress export runs/summaries --variants variants.csv --originals`
    """
    from evalstress.engine.variantfile import export_variants

    writable(variants, "--variants", (run_dir,))
    try:
        count = export_variants(run_dir, variants, originals=originals)
    except (DataError, ValueError) as exc:
        raise fail(str(exc)) from None
    except OSError as exc:  # a full disk, a read-only folder: named with the file written
        raise fail(cannot_write(exc, variants)) from None
    print_wrapped(console, f"Wrote {plural(count, 'variant')} to {variants}", hang=2)
    next_steps(variants, ["run", "DATA", "--variants", str(variants)],
               "score the texts, edited or not, in place of the suite's perturbations")
