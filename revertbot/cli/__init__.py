"""The command faces: click commands that parse arguments, call the pipeline and print. Thin by rule.

``main`` holds the ``revertbot`` group and the local commands; each other module adds one family of
commands (``github``: PRs and the Action, ``gpu``, ``history``, ``init``, ``backport``, ``dashboard``,
``propose``)."""
