"""``python -m revertbot``: the same as the ``revertbot`` command."""

from .cli import main

main()
