"""``python -m classwatch``: the same command line as the ``classwatch`` script."""

from classwatch.cli import main

main()
