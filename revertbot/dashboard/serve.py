"""Serve a built dashboard on the loopback interface (``revertbot dashboard serve``)."""

from __future__ import annotations

import functools
import os
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from revertbot.errors import UsageError

HOST = "127.0.0.1"


class _QuietHandler(SimpleHTTPRequestHandler):
    """Static files only; no per-request log lines, and nothing cached while a maintainer rebuilds."""

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        super().end_headers()


def make_server(directory: str | os.PathLike[str], port: int = 0) -> ThreadingHTTPServer:
    """An HTTP server for ``directory`` bound to 127.0.0.1 (``port`` 0 picks a free one)."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    try:
        server = ThreadingHTTPServer((HOST, port), handler)
    except OSError as exc:
        raise UsageError(f"cannot listen on {HOST}:{port}: {exc.strerror or exc}",
                         hint="pick another --port, or 0 for any free port") from None  # fmt: skip
    server.daemon_threads = True
    return server


def url_of(server: ThreadingHTTPServer) -> str:
    host, port = server.server_address[:2]
    return f"http://{host!s}:{port}/"


def serve_in_thread(directory: str | os.PathLike[str], port: int = 0) -> tuple[ThreadingHTTPServer, threading.Thread]:
    """Start serving ``directory`` in a background thread (tests, embedding); stop with ``server.shutdown()``."""
    server = make_server(Path(directory), port)
    thread = threading.Thread(target=server.serve_forever, name="revertbot-dashboard", daemon=True)
    thread.start()
    return server, thread
