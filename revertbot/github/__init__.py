"""Everything that talks to GitHub: the API client (``client``, the only module that calls the API),
the Action entry point, the bot's report comment, PR checks, approvals, backport PRs and CI facts."""
