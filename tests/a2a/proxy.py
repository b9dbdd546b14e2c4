"""A small round-robin HTTP proxy for the A2A tests: each request goes to the next server process
(so consecutive requests of one client land on different instances, as behind a load balancer),
with a ``dev:`` bearer token added (the TCK sends no credentials) and the ``Host`` kept (the agent
card names the proxy). Responses, Server-Sent Events included, are relayed as they come."""

from __future__ import annotations

import http.client
import itertools
import threading
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection"}


class RoundRobinProxy:
    def __init__(self, backends: Sequence[int], *, token: str = "dev:tck") -> None:
        self.backends = list(backends)
        self.token = token
        self._next = itertools.cycle(range(len(self.backends)))
        self._lock = threading.Lock()
        self.served: list[int] = [0] * len(self.backends)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True, name="a2a-proxy")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def pick(self) -> int:
        with self._lock:
            i = next(self._next)
            self.served[i] += 1
            return self.backends[i]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
                if not any(k.lower() == "authorization" for k in headers):
                    headers["Authorization"] = f"Bearer {proxy.token}"
                conn = http.client.HTTPConnection("127.0.0.1", proxy.pick(), timeout=600)
                try:
                    conn.request(self.command, self.path, body=body, headers=headers)
                    resp = conn.getresponse()
                    self.send_response_only(resp.status, resp.reason)
                    for k, v in resp.getheaders():
                        if k.lower() not in HOP_BY_HOP and k.lower() != "content-length":
                            self.send_header(k, v)
                    self.send_header("Transfer-Encoding", "chunked")
                    self.send_header("Connection", "close")
                    self.end_headers()
                    for chunk in _chunks(resp):
                        self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass
                finally:
                    conn.close()
                    self.close_connection = True

            do_GET = do_POST = do_DELETE = do_PUT = _forward

        return Handler

    def __enter__(self) -> RoundRobinProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def _chunks(resp: http.client.HTTPResponse) -> Iterator[bytes]:
    while True:
        try:
            chunk = resp.read1(65536)
        except http.client.IncompleteRead:
            return
        if not chunk:
            return
        yield chunk
