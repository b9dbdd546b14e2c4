"""The host protocol ``mvp-0.2``: the envelope, every message's payload, and who may send it.

One JSON envelope per WebSocket text frame::

    {"v": "mvp-0.2", "id": str, "type": str, "replyTo"?: str, "sessionId"?: str, "payload": object}

The payload models below are the source of the per-message JSON Schemas (``hostagent.schemas``,
printed in ``docs/host-protocol.md``). Optional fields may be absent but never ``null`` on the
wire: envelopes are serialised with ``exclude_none``.
"""

from __future__ import annotations

import builtins
import itertools
import os
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

PROTOCOL_VERSION: Literal["mvp-0.2"] = "mvp-0.2"

Sender = Literal["agent", "host", "relay"]

# Error codes a host (or relay) sends in an ``error`` envelope.
HOST_ERROR_CODES = ("INVALID_MESSAGE", "SESSION_NOT_ACTIVE", "UNKNOWN_TOOL", "INVALID_PARAMS", "TOOL_EXECUTION_FAILED")
# The agent's own failure classes: never on the wire, but in its log and its recovery decisions.
AGENT_ERROR_CODES = ("TIMEOUT_RESULT", "TIMEOUT_STATE_UPDATE", "DESYNC_DETECTED")
HostErrorCode = Literal["INVALID_MESSAGE", "SESSION_NOT_ACTIVE", "UNKNOWN_TOOL", "INVALID_PARAMS",
                        "TOOL_EXECUTION_FAILED"]


class Payload(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RelayJoin(Payload):
    room: str = Field(min_length=1, max_length=200)
    role: Literal["agent", "host"]


class RelayJoined(Payload):
    room: str = Field(min_length=1, max_length=200)


class SessionStart(Payload):
    goal: str | None = Field(default=None, max_length=4000)


class SessionStarted(Payload):
    sessionId: str = Field(min_length=1)
    stage: str = Field(min_length=1)


class SnapshotGet(Payload):
    pass


class ToolSpec(Payload):
    """One tool of the current stage; ``params`` is the JSON Schema of its parameters."""

    name: str = Field(min_length=1, max_length=128)
    description: str | None = None
    params: dict[str, Any]


class ChatMessage(Payload):
    role: Literal["user", "agent"]
    text: str
    stage: str | None = None


class SnapshotState(Payload):
    stage: str = Field(min_length=1)
    uiSpec: Any
    toolSchema: list[ToolSpec]
    messages: list[ChatMessage]


class ToolCall(Payload):
    name: str = Field(min_length=1, max_length=128)
    params: dict[str, Any]
    reason: str = Field(min_length=1, max_length=1000, pattern=r"\S")


class ToolResult(Payload):
    name: str = Field(min_length=1)
    ok: Literal[True]
    result: Any


class ErrorPayload(Payload):
    code: HostErrorCode
    message: str


class AgentMessage(Payload):
    text: str = Field(min_length=1, max_length=4000)
    kind: Literal["info", "question", "blocked"] | None = None


class SessionEnd(Payload):
    reason: str = Field(min_length=1, max_length=1000)


class SessionEnded(Payload):
    sessionId: str = Field(min_length=1)
    summary: str | None = None


class StateUpdated(Payload):
    stage: str = Field(min_length=1)
    uiSpec: Any
    toolSchema: list[ToolSpec]
    cause: str | None = Field(default=None, min_length=1)
    """The id of the ``tool.call`` that caused the change, when one did."""


class UserMessage(Payload):
    text: str = Field(min_length=1)
    stage: str | None = None


# type -> (payload model, who sends it)
MESSAGES: dict[str, tuple[type[Payload], Sender]] = {
    "relay.join": (RelayJoin, "agent"),
    "relay.joined": (RelayJoined, "relay"),
    "session.start": (SessionStart, "agent"),
    "session.started": (SessionStarted, "host"),
    "snapshot.get": (SnapshotGet, "agent"),
    "snapshot.state": (SnapshotState, "host"),
    "tool.call": (ToolCall, "agent"),
    "tool.result": (ToolResult, "host"),
    "error": (ErrorPayload, "host"),
    "agent.message": (AgentMessage, "agent"),
    "session.end": (SessionEnd, "agent"),
    "session.ended": (SessionEnded, "host"),
    "state.updated": (StateUpdated, "host"),
    "user.message": (UserMessage, "host"),
}
# What a relay or a host may send to an agent (a relay also answers ``error`` for its own failures).
TO_AGENT = frozenset(t for t, (_, sender) in MESSAGES.items() if sender in ("host", "relay"))
FROM_AGENT = frozenset(t for t, (_, sender) in MESSAGES.items() if sender == "agent")

P = TypeVar("P", bound=Payload)


class Envelope(BaseModel):
    """A validated envelope (``hostagent.schemas.parse_frame`` builds it from a frame)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    v: Literal["mvp-0.2"] = PROTOCOL_VERSION
    id: str = Field(min_length=1)
    type: str
    replyTo: str | None = None
    sessionId: str | None = None
    payload: dict[str, Any] = Field(default_factory=dict)

    def body(self, model: builtins.type[P]) -> P:
        """The payload as ``model`` (the frame was validated against its schema already)."""
        return model.model_validate(self.payload)

    def wire(self) -> dict[str, Any]:
        """The JSON object sent on the wire (absent, never null, optional fields)."""
        return self.model_dump(mode="json", exclude_none=True)


_counter = itertools.count(1)
_PREFIX = os.urandom(3).hex()


def new_id(prefix: str) -> str:
    """An id unique per sender: a per-process random prefix and a counter."""
    return f"{prefix}-{_PREFIX}-{next(_counter)}"


def envelope(type_: str, payload: Payload | dict[str, Any], *, id_prefix: str = "a", reply_to: str | None = None,
             session_id: str | None = None) -> Envelope:
    body = payload.model_dump(mode="json", exclude_none=True) if isinstance(payload, Payload) else payload
    return Envelope(id=new_id(id_prefix), type=type_, replyTo=reply_to, sessionId=session_id, payload=body)
