"""Proposing a revert: find the commit that broke a watched GPU job, prove it, and say how sure.

:mod:`revertbot.propose.search` is the pure core (a flake-aware Bayesian culprit search driven
through a small ``Runner`` protocol); :mod:`revertbot.propose.simulate` generates incidents with
known truth and compares the search with the usual baselines on them.
"""
