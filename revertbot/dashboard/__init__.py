"""Maintainer dashboard: a static site (HTML, inline SVG, a little JavaScript) built from the history store."""

from revertbot.dashboard.build import SiteSummary, build_from_db, build_site
from revertbot.dashboard.serve import make_server, serve_in_thread, url_of

__all__ = ["SiteSummary", "build_from_db", "build_site", "make_server", "serve_in_thread", "url_of"]
