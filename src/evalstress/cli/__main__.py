"""`python -m evalstress.cli`: the same commands as the `evalstress` script."""

import sys

from evalstress.cli import app

sys.exit(app())
