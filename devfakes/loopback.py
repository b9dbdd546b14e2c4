"""The lifecycle every local fake of a REST API shares: an HTTP server on a free loopback port,
served by a daemon thread; ``start()``/``close()`` or a context manager."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self


class LoopbackServer:
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        """The request handler answering for this fake."""
        raise NotImplementedError

    def start(self) -> Self:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self.handler_class())
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02},
                                        name=type(self).__name__, daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join()
        self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def root(self) -> str:
        """``http://127.0.0.1:PORT`` (no trailing slash)."""
        assert self._server is not None, f"{type(self).__name__} is not started"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"
