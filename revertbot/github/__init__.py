"""Everything that talks to GitHub: the API client (``client``, the only module that calls the API),
the Action entry point, PR checks, approvals, backport PRs, CI facts and the settings check."""
