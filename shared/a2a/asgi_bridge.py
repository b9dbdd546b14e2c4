"""Serve an ASGI application (the a2a-sdk's Starlette routes) from a WSGI request (functions-framework
and ``make dev`` are Flask): the application runs on an event loop of its own thread; its response
start is awaited, then its body is relayed chunk by chunk, so a Server-Sent Events stream reaches
the client as it is produced. When the client goes away (the WSGI iterator is closed), the
application sees ``http.disconnect``, as under an ASGI server.

Standard library only; what the application sees in ``scope["state"]`` is handed in by the edge
(the authenticated caller), never read from the request.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

Asgi = Any
"""An ASGI 3 application: ``await app(scope, receive, send)``."""

_END = object()


@dataclass
class AsgiResponse:
    """What the application answered: status, headers and its body as it comes."""

    status: int
    headers: list[tuple[str, str]]
    body: Iterator[bytes]
    _close: Any = field(default=None, repr=False)

    def close(self) -> None:
        if self._close is not None:
            self._close()


def call_asgi(app: Asgi, *, method: str, path: str, query: bytes, headers: Mapping[str, str], body: bytes,
              state: Mapping[str, Any], server: tuple[str, int], scheme: str,
              root_path: str = "") -> AsgiResponse:
    """Run one HTTP request through ``app``; returns once the response has started (or the
    application failed before starting it: then a 500 with an empty body)."""
    out: queue.Queue[object] = queue.Queue()
    started: queue.Queue[tuple[int, list[tuple[str, str]]] | BaseException] = queue.Queue()
    loop = asyncio.new_event_loop()
    disconnected = asyncio.Event()
    sent_body = False

    async def receive() -> dict[str, Any]:
        nonlocal sent_body
        if not sent_body:
            sent_body = True
            return {"type": "http.request", "body": body, "more_body": False}
        await disconnected.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            hdrs = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in message.get("headers", [])]
            started.put((int(message["status"]), hdrs))
        elif kind == "http.response.body":
            chunk = message.get("body", b"")
            if chunk:
                out.put(bytes(chunk))
            if not message.get("more_body", False):
                out.put(_END)

    scope: dict[str, Any] = {
        "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
        "method": method.upper(), "scheme": scheme, "path": path, "raw_path": path.encode(),
        "query_string": query, "root_path": root_path,
        "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()],
        "server": server, "client": ("127.0.0.1", 0), "state": dict(state),
    }

    def run() -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(app(scope, receive, send))
        except BaseException as exc:
            started.put(exc)
        finally:
            out.put(_END)
            try:
                # What the application left running (sse-starlette's shutdown watcher) ends with it.
                left = asyncio.all_tasks(loop)
                for task in left:
                    task.cancel()
                loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                loop.close()

    worker = threading.Thread(target=run, name="asgi", daemon=True)
    worker.start()
    first = started.get()
    if isinstance(first, BaseException):
        raise first
    status, hdrs = first

    def chunks() -> Iterator[bytes]:
        while True:
            item = out.get()
            if item is _END:
                return
            assert isinstance(item, bytes)
            yield item

    def close() -> None:
        if not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed in between: the application is done
                loop.call_soon_threadsafe(disconnected.set)

    return AsgiResponse(status, hdrs, chunks(), close)
