"""The hidden first line of every report comment: how the bot finds its own comment again."""

MARKER = "<!-- revertbot:report -->"
