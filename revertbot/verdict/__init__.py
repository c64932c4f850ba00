"""What a revert is, judged from history alone: detection and linking (``detect``), the reason given
(``reason``), whether it is a clean inverse that still applies (``purity``, ``proof``), relands,
releases, overrides and the whole-history scan. Reads git through :mod:`revertbot.git`."""
