"""``python -m planopt.cli``: the same as the ``planopt`` console script."""

from .app import main

main()
