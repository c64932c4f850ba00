"""Renderers: Markdown (en/zh) and JSON, all pure functions of a RevertReport."""

from revertbot.report.jsonout import report_to_json
from revertbot.report.markdown import render_markdown
from revertbot.report.marker import MARKER

__all__ = ["MARKER", "render_markdown", "report_to_json"]
