"""`python -m workers.cli`: the `forge` command of this checkout."""

from workers.cli import main

main()
