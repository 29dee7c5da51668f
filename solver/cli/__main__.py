"""``python -m planopt.cli``: the same as the ``planopt`` console script."""

from planopt.cli.app import main

main()
