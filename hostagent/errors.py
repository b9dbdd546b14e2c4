"""The host agent's failures: what went wrong with the peer, the connection or a wait."""

from __future__ import annotations

from typing import Any


class HostAgentError(Exception):
    """Base class; ``code`` is a protocol error code or one of the agent's own."""

    code = "INTERNAL"

    def __init__(self, message: str, *, code: str | None = None, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.message = message
        self.details = details or {}


class ProtocolViolation(HostAgentError):
    """A frame that breaks the protocol: not JSON, wrong version, unknown type, schema mismatch,
    invalid toolSchema, too large, or sent by the wrong side."""

    code = "INVALID_MESSAGE"


class ConnectionLost(HostAgentError):
    """The WebSocket could not be opened or closed while the session was still running."""

    code = "CONNECTION_LOST"


class ReplyTimeout(HostAgentError):
    """No reply to a request within its bounded wait (``TIMEOUT_RESULT`` for a tool call)."""

    code = "TIMEOUT_RESULT"


class HostError(HostAgentError):
    """The host answered a request with an ``error`` envelope; ``code`` is its error code."""


class FrameRefused(HostAgentError):
    """A frame from the host broke the protocol and was refused, while a request waited: its reply
    may have been that frame. Not terminal on its own (the agent resyncs with ``snapshot.get``);
    ``max_protocol_faults`` of them end the session as a ``ProtocolViolation``."""

    code = "FRAME_REFUSED"
