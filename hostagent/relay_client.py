"""The relay client: sends envelopes, reads frames, correlates replies, bounds every wait.

Outbound envelopes are validated against their schema before they are sent; inbound frames are
validated by ``schemas.parse_frame`` as they arrive. Every envelope in and out is written to the
session log. A reply is the envelope whose ``replyTo`` is the request's id (an ``error`` reply
raises ``HostError``); the handshake replies (``relay.joined``, ``session.started``,
``snapshot.state``, ``session.ended``) are also accepted without ``replyTo``, which the protocol
does not require of them. Everything else goes to the event bus.

Single flight: at most one request is pending at a time; a second one is a bug and raises.

A frame that breaks the protocol (not JSON, another version, an unknown type, a schema mismatch, an
invalid toolSchema, binary) is logged and refused, not fatal once the session runs: a pending
``tool.call`` or ``snapshot.get`` fails with ``FrameRefused`` (the frame may have been its reply),
waits on the bus stop early, and ``resync_needed`` tells the loop to ``snapshot.get``. During the
handshake or ``session.end`` there is nothing to resync: the frame is a protocol error. The ``max_protocol_faults``-th
refused frame (3) ends the session: it fails the pending request and the bus, like a lost
connection does at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from hostagent.errors import ConnectionLost, FrameRefused, HostAgentError, HostError, ProtocolViolation, ReplyTimeout
from hostagent.event_bus import EventBus
from hostagent.protocol import Envelope, ErrorPayload
from hostagent.schemas import check_outbound, parse_frame
from hostagent.session_log import SessionLog
from hostagent.transport import Transport

_HANDSHAKE_REPLIES = frozenset({"relay.joined", "session.started", "snapshot.state", "session.ended"})
# Requests a refused frame fails with FrameRefused (the agent resyncs); during any other request
# (the handshake, session.end) a refused frame is a protocol error.
_RESYNCABLE = frozenset({"tool.call", "snapshot.get"})
MAX_PROTOCOL_FAULTS = 3


class _Pending:
    def __init__(self, request: Envelope, expect: frozenset[str]) -> None:
        self.request = request
        self.expect = expect
        self.future: asyncio.Future[Envelope] = asyncio.get_running_loop().create_future()


class RelayClient:
    def __init__(self, transport: Transport, bus: EventBus, log: SessionLog, *,
                 max_protocol_faults: int = MAX_PROTOCOL_FAULTS) -> None:
        self.transport = transport
        self.bus = bus
        self.log = log
        self.max_protocol_faults = max_protocol_faults
        self.protocol_faults: list[ProtocolViolation] = []
        self.resync_needed = False
        self._pending: _Pending | None = None
        self._reader: asyncio.Task[None] | None = None
        self.failure: HostAgentError | None = None
        self.answered: set[str] = set()  # ids of requests that got (or gave up on) their reply

    async def start(self) -> None:
        await self.transport.open()
        self._reader = asyncio.create_task(self._read(), name="relay-reader")

    @property
    def in_flight(self) -> Envelope | None:
        return self._pending.request if self._pending is not None else None

    async def send(self, env: Envelope) -> None:
        if isinstance(self.failure, ConnectionLost) or not self.transport.is_open:
            raise self.failure or ConnectionLost("the connection is closed")
        wire = check_outbound(env)
        self.log.write("envelope", env.type, direction="out", id=env.id, reply_to=env.replyTo,
                       session_id=env.sessionId, reason=_reason(env), data={"envelope": wire})
        await self.transport.send(json.dumps(wire, ensure_ascii=False))

    async def request(self, env: Envelope, expect: frozenset[str], timeout: float) -> Envelope:
        """Send ``env`` and wait for its reply of a type in ``expect`` (``error`` raises HostError)."""
        if self._pending is not None:
            raise RuntimeError(f"single flight: {self._pending.request.type} {self._pending.request.id} "
                               f"is still waiting for its reply")
        pending = _Pending(env, expect)
        self._pending = pending
        try:
            await self.send(env)
            try:
                async with asyncio.timeout(timeout):
                    return await pending.future
            except TimeoutError:
                raise ReplyTimeout(f"no reply to {env.type} {env.id} within {timeout:g}s",
                                   code="TIMEOUT_RESULT" if env.type == "tool.call" else "TIMEOUT_REPLY",
                                   details={"type": env.type, "id": env.id}) from None
        finally:
            self._pending = None
            self.answered.add(env.id)

    # reading -------------------------------------------------------------------------------------
    async def _read(self) -> None:
        try:
            while True:
                text = await self.transport.recv()
                try:
                    env = parse_frame(text, sender=("host", "relay"))
                except ProtocolViolation as exc:
                    self.log.write("error", "frame", direction="in", code=exc.code, reason=exc.message,
                                   data={"details": exc.details, "fault": len(self.protocol_faults) + 1,
                                         "maxFaults": self.max_protocol_faults})
                    # Keep reading either way: the reply to a session.end may follow.
                    await self._refuse(exc)
                    continue
                self.log.write("envelope", env.type, direction="in", id=env.id, reply_to=env.replyTo,
                               session_id=env.sessionId, code=_code(env), data={"envelope": env.wire()})
                await self._route(env)
        except (ProtocolViolation, ConnectionLost) as exc:
            self.log.write("error", "connection", direction="in", code=exc.code, reason=exc.message,
                           data={"details": exc.details})
            await self._fail(exc)
        except asyncio.CancelledError:
            raise

    async def _route(self, env: Envelope) -> None:
        pending = self._pending
        if pending is not None and not pending.future.done():
            request = pending.request
            if env.replyTo == request.id:
                if env.type == "error":
                    body = env.body(ErrorPayload)
                    pending.future.set_exception(HostError(body.message, code=body.code,
                                                           details={"replyTo": env.replyTo}))
                elif env.type in pending.expect:
                    pending.future.set_result(env)
                else:
                    violation = ProtocolViolation(f"{request.type} {request.id} was answered with {env.type}",
                                                  details={"type": env.type, "id": env.id})
                    self.log.write("error", env.type, direction="in", id=env.id, reply_to=env.replyTo,
                                   code=violation.code, reason=violation.message)
                    await self._fail(violation)
                return
            if env.replyTo is None and env.type in pending.expect and env.type in _HANDSHAKE_REPLIES:
                pending.future.set_result(env)
                return
            if env.replyTo is None and env.type == "error":
                # An error that names no request (e.g. a relay that could not parse ours) answers
                # the one in flight: nothing else can be waiting.
                body = env.body(ErrorPayload)
                pending.future.set_exception(HostError(body.message, code=body.code))
                return
        await self.bus.publish(env)

    async def _refuse(self, exc: ProtocolViolation) -> None:
        self.protocol_faults.append(exc)
        count = len(self.protocol_faults)
        if count >= self.max_protocol_faults:
            await self._fail(ProtocolViolation(f"{count} frames from the host broke the protocol; the last: "
                                               f"{exc.message}", details=exc.details))
            return
        pending = self._pending
        if pending is not None and not pending.future.done() and pending.request.type not in _RESYNCABLE:
            # The handshake (relay.join, session.start) or session.end: there is no session to
            # resync, so the refused frame answers the request (a protocol error).
            await self._fail(exc)
            return
        self.resync_needed = True
        if pending is not None and not pending.future.done():
            pending.future.set_exception(FrameRefused(
                f"a frame that broke the protocol came while {pending.request.type} {pending.request.id} waited "
                f"for its reply: {exc.message}", details={"id": pending.request.id}))
        await self.bus.refuse()

    async def _fail(self, exc: HostAgentError) -> None:
        if self.failure is None:
            self.failure = exc
        if self._pending is not None and not self._pending.future.done():
            self._pending.future.set_exception(exc)
        await self.bus.fail(exc)

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader
        with contextlib.suppress(Exception):
            await self.transport.close()


def _reason(env: Envelope) -> str | None:
    value: Any = env.payload.get("reason")
    return value if isinstance(value, str) else None


def _code(env: Envelope) -> str | None:
    if env.type != "error":
        return None
    value: Any = env.payload.get("code")
    return value if isinstance(value, str) else None
