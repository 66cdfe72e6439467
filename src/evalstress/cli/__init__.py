"""The command line: every `evalstress` command (docs/reference/cli.md has the table).

Each command lives in a module named after it and registers itself on the shared typer `app`
(`evalstress.cli.common`) when imported; the order of the imports below is the order of `--help`.
"""

from __future__ import annotations

# isort: off
from evalstress.cli import card  # noqa: F401  (the evaluator card: --help leads with it)
from evalstress.cli import quickstart  # noqa: F401
from evalstress.cli import run  # noqa: F401
from evalstress.cli import data  # noqa: F401  (the example files)
from evalstress.cli import atlas  # noqa: F401  (the atlas: cards of the offline evaluators)
from evalstress.cli import calibrate  # noqa: F401  (the card against known answers)
from evalstress.cli import self_bias  # noqa: F401
from evalstress.cli import correlate  # noqa: F401
from evalstress.cli import attack  # noqa: F401
from evalstress.cli import listing  # noqa: F401  (list)
from evalstress.cli import report  # noqa: F401
from evalstress.cli import check  # noqa: F401
from evalstress.cli import combine  # noqa: F401
from evalstress.cli import export  # noqa: F401
from evalstress.cli import compare  # noqa: F401  (compare: runs or cards; card-compare)
from evalstress.cli import serve  # noqa: F401
from evalstress.cli import criteria_levels  # noqa: F401
from evalstress.cli import cache  # noqa: F401  (cache stats, merge, explain)
# isort: on
from evalstress.cli.common import app

__all__ = ["app"]
