"""What the simulated hosts (``reference_host``, ``alt_host``) share, none of it protocol logic:
the frame record of their transcripts (tests read the agent's behaviour on the wire from it), the
WebSocket server's lifecycle, and running a host on its own event loop in a thread (for callers
that are not async: the CLI tests, the demo)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, Self, TypeVar

from websockets.asyncio.server import Server, ServerConnection, serve


class Refusal(Exception):
    """A tool call a simulated host refuses: ``code`` is the protocol error code it answers with."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Frame:
    """One frame on the agent's connection as the host side saw it (``in``: from the agent)."""

    direction: Literal["in", "out"]
    text: str | bytes
    ts: float = field(default_factory=time.monotonic)

    def json(self) -> dict[str, Any] | None:
        if isinstance(self.text, bytes):
            return None
        try:
            data = json.loads(self.text)
        except json.JSONDecodeError:
            return None
        return data if isinstance(data, dict) else None


class WebSocketHost:
    """A WebSocket server on ``ws://host:port/path``: ``await start()`` (``port=0`` picks a free
    one), ``url``, ``await close()``, or ``async with``. Subclasses answer ``_connection``."""

    def __init__(self, *, host: str, port: int, path: str) -> None:
        self.bind_host = host
        self.port = port
        self.path = path
        self.transcripts: dict[str, list[Frame]] = {}
        self._server: Server | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, f"{type(self).__name__} is not started"
        port = self._server.sockets[0].getsockname()[1] if self._server.sockets else self.port
        return f"ws://{self.bind_host}:{port}{self.path}"

    def _serve_options(self) -> dict[str, Any]:
        return {}

    async def _connection(self, conn: ServerConnection) -> None:
        raise NotImplementedError

    async def start(self) -> Self:
        self._server = await serve(self._connection, self.bind_host, self.port, **self._serve_options())
        return self

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


H = TypeVar("H", bound=WebSocketHost)


class ThreadedHost(Generic[H]):
    """A host on its own event loop in a daemon thread."""

    def __init__(self, server: H) -> None:
        self.server = server
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=type(server).__name__, daemon=True)

    def start(self) -> Self:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.server.start(), self.loop).result(timeout=30)
        return self

    @property
    def url(self) -> str:
        return self.server.url

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.server.close(), self.loop).result(timeout=30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=30)
        self.loop.close()


@contextlib.contextmanager
def in_thread(server: H) -> Iterator[ThreadedHost[H]]:
    """``with in_thread(SomeHost(...)) as host: host.url``: served until the block ends."""
    threaded = ThreadedHost(server).start()
    try:
        yield threaded
    finally:
        threaded.stop()


async def serve_until_stopped(server: WebSocketHost, label: str) -> None:
    """Serve until SIGINT/SIGTERM; the first line on stdout is ``LABEL listening on URL``."""
    await server.start()
    print(f"{label} listening on {server.url}", flush=True)
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    await stop.wait()
    await server.close()


def host_main(argv: list[str] | None, *, prog: str, doc: str | None, label: str, port: int, path: str,
              fault: Callable[[str], Any], fault_kinds: Sequence[str], no_user_help: str,
              make: Callable[..., WebSocketHost]) -> int:
    """A simulated host's command line (``--host``, ``--port``, ``--path``, ``--fault`` repeated,
    ``--no-user``): ``make(faults=, host=, port=, path=, user_profile=)`` served until stopped."""
    parser = argparse.ArgumentParser(prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=port)
    parser.add_argument("--path", default=path)
    parser.add_argument("--fault", type=_argument(fault), action="append", default=[],
                        help=f"KIND[:TOOL[:TIMES[:TEXT]]], KIND one of: {', '.join(fault_kinds)}")
    parser.add_argument("--no-user", action="store_true", help=no_user_help)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    server = make(faults=args.fault, host=args.host, port=args.port, path=args.path,
                  user_profile=None if args.no_user else ("Ada Lovelace", "ada@example.com"))
    asyncio.run(serve_until_stopped(server, label))
    return 0


def _argument(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """``parse`` as an argparse type: its ``ValueError`` is the usage error argparse reports."""

    def checked(value: str) -> Any:
        try:
            return parse(value)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return checked
