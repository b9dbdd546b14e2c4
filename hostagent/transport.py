"""The WebSocket client transport: the only module of the agent that imports ``websockets``.

Text frames in and out; ``websockets`` failures are mapped to ``ConnectionLost`` (could not
connect, closed by the peer, network failure) or ``ProtocolViolation`` (a frame above
``max_frame_bytes``: the library refuses it and closes with 1009, as RFC 6455 says).
"""

from __future__ import annotations

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI

from hostagent.errors import ConnectionLost, ProtocolViolation

MESSAGE_TOO_BIG = 1009


class Transport:
    def __init__(self, url: str, *, connect_timeout_s: float = 10.0, max_frame_bytes: int = 1024 * 1024) -> None:
        self.url = url
        self.connect_timeout_s = connect_timeout_s
        self.max_frame_bytes = max_frame_bytes
        self._ws: ClientConnection | None = None

    async def open(self) -> None:
        try:
            self._ws = await connect(self.url, open_timeout=self.connect_timeout_s, max_size=self.max_frame_bytes,
                                     close_timeout=2)
        except InvalidURI as exc:
            raise ConnectionLost(f"not a WebSocket URL: {self.url!r} ({exc})", code="CONNECT_FAILED") from None
        except InvalidHandshake as exc:
            raise ConnectionLost(f"{self.url} refused the WebSocket handshake: {exc}", code="CONNECT_FAILED") from None
        except TimeoutError:
            raise ConnectionLost(f"{self.url} did not answer within {self.connect_timeout_s:g}s",
                                 code="CONNECT_FAILED") from None
        except OSError as exc:
            raise ConnectionLost(f"could not connect to {self.url}: {exc}", code="CONNECT_FAILED") from None

    @property
    def is_open(self) -> bool:
        return self._ws is not None and self._ws.close_code is None

    def _conn(self) -> ClientConnection:
        if self._ws is None:
            raise ConnectionLost("not connected")
        return self._ws

    async def send(self, text: str) -> None:
        try:
            await self._conn().send(text)
        except ConnectionClosed as exc:
            raise self._closed(exc) from None

    async def recv(self) -> str | bytes:
        try:
            return await self._conn().recv()
        except ConnectionClosed as exc:
            raise self._closed(exc) from None

    def _closed(self, exc: ConnectionClosed) -> ConnectionLost | ProtocolViolation:
        if exc.sent is not None and exc.sent.code == MESSAGE_TOO_BIG:
            return ProtocolViolation(f"the host sent a frame larger than {self.max_frame_bytes} bytes "
                                     f"(connection closed: {exc.sent.reason or 'message too big'})",
                                     details={"maxFrameBytes": self.max_frame_bytes})
        if exc.rcvd is not None:
            why = f"{exc.rcvd.code}{' ' + exc.rcvd.reason if exc.rcvd.reason else ''}"
            return ConnectionLost(f"the host closed the connection ({why})", details={"closeCode": exc.rcvd.code})
        return ConnectionLost(f"the connection was lost ({exc})")

    async def close(self) -> None:
        if self._ws is not None:
            await self._ws.close()
