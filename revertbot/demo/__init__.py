"""The offline demo: a miniature inference engine with a reverted change (``repo``), and an
incident whose culprit the propose search finds on this machine (``propose_repo``, ``propose_flow``)."""
