"""`python -m evalstress`: the same commands as the `evalstress` script, for a checkout whose
console script is not on PATH."""

from evalstress.cli.entry import main

main()
