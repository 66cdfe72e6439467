"""`python -m evalstress.cli`: the same commands as the `evalstress` script."""

from evalstress.cli.entry import main

main()
