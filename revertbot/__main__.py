"""``python -m revertbot``: the same as the ``revertbot`` command."""

from revertbot.cli.main import main

main()
