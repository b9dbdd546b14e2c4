"""The lifecycle every local fake of a REST API shares: an HTTP server on a free loopback port,
served by a daemon thread; ``start()``/``close()`` or a context manager."""

from __future__ import annotations

import contextlib
import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


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
        self.drop_connections()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join()
        self._server = None

    def drop_connections(self) -> None:
        """Called once the server stopped accepting, before its socket closes: a fake holding
        connections open (a stream) ends them here."""

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


@dataclass
class Request:
    """One request as a fake saw it: ``query`` as parsed (every value of a repeated parameter)."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]

    def param(self, name: str) -> str | None:
        values = self.query.get(name)
        return values[0] if values else None


class JsonHandler(BaseHTTPRequestHandler):
    """The request handler of a fake of a JSON API: HTTP/1.1, quiet, ``GET`` and ``POST`` served
    by ``serve`` (a fake serving more methods assigns them: ``do_PUT = JsonHandler.do_GET``)."""

    protocol_version = "HTTP/1.1"
    timeout = 30

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def do_GET(self) -> None:
        self.serve()

    do_POST = do_GET

    def serve(self) -> None:
        raise NotImplementedError

    def body(self) -> bytes:
        """The request's body (empty without ``Content-Length``)."""
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def lower_headers(self) -> dict[str, str]:
        return {k.lower(): v for k, v in self.headers.items()}

    def answer(self, status: int, payload: Any, headers: dict[str, str], *,
               content_type: str = "application/json; charset=utf-8") -> None:
        """``payload`` as JSON with ``status`` and the extra ``headers`` (a client gone is not an error)."""
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(data)
