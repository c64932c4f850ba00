"""Renderers: Markdown (en/zh) and JSON, all pure functions of a RevertReport."""

from .jsonout import report_to_json
from .markdown import MARKER, render_markdown

__all__ = ["MARKER", "render_markdown", "report_to_json"]
