"""An app served over real HTTP for a test (a WSGI app, or a plain ``http.server`` handler): on a free
loopback port, by a daemon thread."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer, ThreadingHTTPServer
from typing import Any

from werkzeug.serving import WSGIRequestHandler, make_server

from shared.runtime import Runtime, set_runtime


@contextlib.contextmanager
def served(app: Any = None, rt: Runtime | None = None, *,
           request_handler: type[WSGIRequestHandler] | None = None) -> Iterator[str]:
    """``app`` (default: the dev app, every function on one Flask app) served until the block ends:
    its ``http://127.0.0.1:PORT`` (no trailing slash). ``rt``: the process runtime meanwhile."""
    if app is None:
        from devserver import create_app

        app = create_app()
    if rt is not None:
        set_runtime(rt)
    try:
        with _running(make_server("127.0.0.1", 0, app, threaded=True, request_handler=request_handler)) as url:
            yield url
    finally:
        if rt is not None:
            set_runtime(None)


def served_handler(handler: type[BaseHTTPRequestHandler]) -> contextlib.AbstractContextManager[str]:
    """``handler`` (an ``http.server`` request handler) served until the block ends: its
    ``http://127.0.0.1:PORT``."""
    return _running(ThreadingHTTPServer(("127.0.0.1", 0), handler))


@contextlib.contextmanager
def _running(server: HTTPServer) -> Iterator[str]:
    thread = threading.Thread(target=server.serve_forever, name="test-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join(30)
        server.server_close()
