"""A WSGI app served over real HTTP for a test: on a free loopback port, by a daemon thread."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server

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
    server: BaseWSGIServer = make_server("127.0.0.1", 0, app, threaded=True, request_handler=request_handler)
    thread = threading.Thread(target=server.serve_forever, name="test-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(30)
        if rt is not None:
            set_runtime(None)
