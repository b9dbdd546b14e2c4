"""The reference host's WebSocket server: a relay with the movie host built in.

Every connection first sends ``relay.join {"room", "role"}`` and gets ``relay.joined``. An agent
that joins a room without a host gets the built-in ``MovieHost`` (the host acting as its own
relay). A separate host process may join a room with ``role: "host"`` instead
(``run_external_host``); the relay then forwards every non-``relay.*`` envelope between the two.
Frames that break the protocol are answered with ``error INVALID_MESSAGE`` and never forwarded.

Every frame of a room, in and out, is kept in ``transcripts[room]`` (tests check the agent's
behaviour on the wire from it). ``serve_in_thread`` runs a server on its own event loop for
callers that are not async (tests that start the CLI as a subprocess, the demo).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from hostagent.errors import ProtocolViolation
from hostagent.hosting import Frame, ThreadedHost, WebSocketHost, in_thread
from hostagent.protocol import Envelope, ErrorPayload, RelayJoin, RelayJoined, envelope
from hostagent.reference_host.faults import Fault
from hostagent.reference_host.host import DEFAULT_PROFILE, MovieHost, Out
from hostagent.schemas import check_outbound, parse_frame

JOIN_TIMEOUT_S = 10.0
MAX_FRAME_BYTES = 1024 * 1024


@dataclass
class Room:
    name: str
    agent: ServerConnection | None = None
    external_host: ServerConnection | None = None
    host: MovieHost | None = None
    held: list[Out] = field(default_factory=list)


def _error(code: str, message: str, reply_to: str | None = None) -> str:
    env = envelope("error", ErrorPayload(code=code, message=message), id_prefix="r",
                   reply_to=reply_to)
    return json.dumps(check_outbound(env))


def _reply_id(text: str | bytes) -> str | None:
    """The id of a frame that failed validation, when it has one (so the error can answer it)."""
    if isinstance(text, bytes):
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return None
    value = data.get("id") if isinstance(data, dict) else None
    return value if isinstance(value, str) and value else None


class ReferenceHost(WebSocketHost):
    """The server. ``await start()`` (``port=0`` picks a free one), ``url``, ``await close()``."""

    def __init__(self, *, faults: Sequence[Fault] = (), user_profile: tuple[str, str] | None = DEFAULT_PROFILE,
                 host: str = "127.0.0.1", port: int = 0, path: str = "/relay",
                 max_frame_bytes: int = MAX_FRAME_BYTES,
                 user_answers: Sequence[str | Sequence[str]] | None = None) -> None:
        super().__init__(host=host, port=port, path=path)
        self.faults = list(faults)
        self.user_profile = user_profile
        self.user_answers = user_answers
        """The simulated user's answers to the agent's questions, in order (None: the profile's sentence)."""
        self.max_frame_bytes = max_frame_bytes
        self.rooms: dict[str, Room] = {}

    def _serve_options(self) -> dict[str, Any]:
        return {"max_size": self.max_frame_bytes, "process_request": self._check_path}

    def host_of(self, room: str) -> MovieHost:
        """The built-in host of ``room`` (tests read its booking and the calls it received)."""
        found = self.rooms[room].host
        assert found is not None, f"room {room} has no built-in host"
        return found

    def _check_path(self, connection: ServerConnection, request: Request) -> Response | None:
        if request.path.split("?", 1)[0] == self.path:
            return None
        body = f"no relay at {request.path}; connect to {self.path}\n".encode()
        return Response(404, "Not Found", Headers([("Content-Type", "text/plain"), ("Content-Length", str(len(body)))]),
                        body)

    # connections -----------------------------------------------------------------------------
    async def _connection(self, conn: ServerConnection) -> None:
        try:
            joined = await self._join(conn)
            if joined is None:
                return
            room, role = joined
            if role == "agent":
                await self._agent_loop(conn, room)
            else:
                await self._host_loop(conn, room)
        except ConnectionClosed:
            return

    async def _join(self, conn: ServerConnection) -> tuple[Room, str] | None:
        try:
            first = await asyncio.wait_for(conn.recv(), JOIN_TIMEOUT_S)
        except TimeoutError:
            await conn.close(1008, "no relay.join")
            return None
        try:
            env = parse_frame(first, sender=("agent", "host"))
            if env.type != "relay.join":
                raise ProtocolViolation(f"the first message must be relay.join, not {env.type}")
        except ProtocolViolation as exc:
            await conn.send(_error("INVALID_MESSAGE", exc.message, _reply_id(first)))
            await conn.close(1008, "relay.join expected")
            return None
        join = env.body(RelayJoin)
        room = self.rooms.setdefault(join.room, Room(join.room))
        taken = room.agent if join.role == "agent" else room.external_host
        if taken is not None or (join.role == "host" and room.host is not None):
            await conn.send(_error("INVALID_MESSAGE", f"room {join.room!r} already has a {join.role}", env.id))
            await conn.close(1008, "role taken")
            return None
        if join.role == "agent":
            room.agent = conn
            self.transcripts.setdefault(join.room, []).append(Frame("in", first))
            if room.external_host is None:
                room.host = MovieHost(self.faults, user_profile=self.user_profile, user_answers=self.user_answers)
        else:
            room.external_host = conn
        reply = json.dumps(check_outbound(envelope("relay.joined", RelayJoined(room=join.room), id_prefix="r",
                                                   reply_to=env.id)))
        await self._to_agent(room, reply) if join.role == "agent" else await conn.send(reply)
        return room, join.role

    async def _to_agent(self, room: Room, text: str | bytes) -> None:
        self.transcripts.setdefault(room.name, []).append(Frame("out", text))
        assert room.agent is not None
        await room.agent.send(text)

    async def _agent_loop(self, conn: ServerConnection, room: Room) -> None:
        try:
            async for text in conn:
                self.transcripts[room.name].append(Frame("in", text))
                try:
                    env = parse_frame(text, sender="agent")
                    if env.type.startswith("relay."):
                        raise ProtocolViolation(f"{env.type} after joining")
                except ProtocolViolation as exc:
                    await self._to_agent(room, _error("INVALID_MESSAGE", exc.message, _reply_id(text)))
                    continue
                if room.external_host is not None:
                    await room.external_host.send(text)
                    continue
                assert room.host is not None
                if not await self._deliver(conn, room, room.host.handle(env)):
                    return
        finally:
            room.agent = None

    async def _deliver(self, conn: ServerConnection, room: Room, outs: list[Out]) -> bool:
        """Send a reply's frames, then the frames held back from before; False once closed."""
        held, room.held = room.held, []
        for out in [*outs, *held]:
            if out.close:
                await conn.close(1011, "host closed mid-call")
                return False
            if out.hold:
                room.held.append(Out(out.text))
                continue
            assert out.text is not None
            await self._to_agent(room, out.text)
        return True

    async def _host_loop(self, conn: ServerConnection, room: Room) -> None:
        try:
            async for text in conn:
                try:
                    env = parse_frame(text, sender="host")
                except ProtocolViolation as exc:
                    await conn.send(_error("INVALID_MESSAGE", exc.message, _reply_id(text)))
                    continue
                if room.agent is not None and not env.type.startswith("relay."):
                    await self._to_agent(room, text)
        finally:
            room.external_host = None


async def run_external_host(url: str, room: str, *, faults: Sequence[Fault] = (),
                            user_profile: tuple[str, str] | None = DEFAULT_PROFILE) -> MovieHost:
    """A movie host in its own connection: joins ``room`` as ``host`` and answers the agent's
    envelopes the relay forwards, until the connection closes. Returns the host (its booking)."""
    host = MovieHost(faults, user_profile=user_profile)
    async with connect(url, max_size=MAX_FRAME_BYTES) as ws:
        await ws.send(json.dumps(check_outbound(envelope("relay.join", RelayJoin(room=room, role="host"),
                                                         id_prefix="xh"))))
        parse_frame(await ws.recv(), sender="relay")
        held: list[Out] = []
        with contextlib.suppress(ConnectionClosed):
            async for text in ws:
                env: Envelope = parse_frame(text, sender="agent")
                outs = host.handle(env)
                sent_held, held = held, []
                for out in [*outs, *sent_held]:
                    if out.close:
                        await ws.close()
                        return host
                    if out.hold:
                        held.append(Out(out.text))
                    elif out.text is not None:
                        await ws.send(out.text)
                if host.ended:
                    return host
    return host


@contextlib.contextmanager
def serve_in_thread(**kwargs: Any) -> Iterator[ThreadedHost[ReferenceHost]]:
    """``with serve_in_thread(faults=[...]) as host: host.url`` (kwargs as for ``ReferenceHost``)."""
    with in_thread(ReferenceHost(**kwargs)) as threaded:
        yield threaded
