"""The message every kind of durable work travels in (resume topic, inline dispatcher, outbox).

``kind`` routes it (``resume``, ``continue``, ``sweep``, ...), ``schemaVersion`` says which layout
it has (a newer one than this runtime knows is acknowledged and logged, never guessed at).
``unitId`` names the unit of work (a run id for run kinds); messages published before kinds
existed carry ``runId`` and are read as ``unitId``. ``entryId`` names the outbox entry the message
was published from (the handler deletes it once handled).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from shared.errors import AgentRuntimeError
from shared.formats import validation_problems

MESSAGE_SCHEMA_VERSION = 1
"""Versions: 1 = kind, unitId, uid, approvalId, entryId."""
ID = r"^[A-Za-z0-9_.-]{1,160}$"
TRACEPARENT = r"^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$"
PAUSED = r"^[0-9]{1,9}:([A-Za-z0-9_.-]{1,160}(,[A-Za-z0-9_.-]{1,160})*)?$"
PAUSED_MAX_CHARS = 1024
"""A Pub/Sub attribute's value holds at most 1024 bytes: a longer hint is not sent (the resume then
reads the paused turn after the run, one round trip more)."""
PAUSED_MAX_TURNS = 10_000
"""A hint naming more turns is not followed (the resume reads as the run it read says): a message is
input, and its turn count sizes the resume's first read."""


class MalformedMessage(AgentRuntimeError):
    """A delivery that is not a message of ours: acknowledged and logged, never retried."""

    def __init__(self, reason: str, *, kind: str | None = None, version: object = None) -> None:
        super().__init__(reason)
        self.reason, self.kind, self.version = reason, kind, version


class WorkMessage(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    kind: str = Field(default="resume", pattern=r"^[a-z][a-z0-9_.-]{0,63}$")
    schemaVersion: int = Field(default=MESSAGE_SCHEMA_VERSION, ge=1)
    unitId: str | None = Field(default=None, pattern=ID)
    uid: str | None = Field(default=None, max_length=128)
    approvalId: str | None = Field(default=None, pattern=ID)
    entryId: str | None = Field(default=None, pattern=ID)
    traceparent: str | None = Field(default=None, exclude=True, pattern=TRACEPARENT)
    """The unit's W3C trace context: a message *attribute* (never in the body), so the invocation
    handling the message joins the unit's trace (``shared/tracing.py``)."""
    paused: str | None = Field(default=None, exclude=True, pattern=PAUSED, max_length=PAUSED_MAX_CHARS)
    """A resume's hint (issue 33), a message *attribute* too (a runtime older than it ignores it):
    ``{turnCount}:{actionId},...``, the run's turn count and the actions its resume needs
    (``RunRecord.paused_action_ids``; none for a run that is not paused) as the decision, the yield
    or the plan waking its parent saw them, so the resume reads them with the run in one round trip
    (``loop/resume.py``; checked against the run it reads, never trusted)."""

    @model_validator(mode="before")
    @classmethod
    def _legacy_run_id(cls, data: Any) -> Any:
        if isinstance(data, dict) and "runId" in data:
            data = dict(data)
            run_id = data.pop("runId")
            data.setdefault("unitId", run_id)
        return data

    @property
    def outbox_entry(self) -> str | None:
        """The outbox entry to delete once handled (a decision's entry is named by its approval)."""
        return self.entryId or self.approvalId

    @property
    def paused_reads(self) -> tuple[int, list[str]] | None:
        """:attr:`paused` as ``(turn count, action ids)``; None without one."""
        if self.paused is None:
            return None
        count, _, ids = self.paused.partition(":")
        if int(count) > PAUSED_MAX_TURNS:
            return None
        return int(count), ids.split(",") if ids else []

    def encode(self) -> bytes:
        return self.model_dump_json(exclude_none=True).encode()


def parse_message(body: Any) -> WorkMessage:
    """A ``WorkMessage`` from decoded JSON; :class:`MalformedMessage` naming what is wrong."""
    if not isinstance(body, dict):
        raise MalformedMessage("the message is not a JSON object")
    kind = body.get("kind") if isinstance(body.get("kind"), str) else None
    version = body.get("schemaVersion", MESSAGE_SCHEMA_VERSION)
    if isinstance(version, int) and version > MESSAGE_SCHEMA_VERSION:
        raise MalformedMessage(f"schemaVersion {version} is newer than this runtime knows "
                               f"({MESSAGE_SCHEMA_VERSION})", kind=kind, version=version)
    try:
        return WorkMessage.model_validate(body)
    except ValidationError as exc:
        fields = ", ".join(field for field, _ in validation_problems(exc))
        raise MalformedMessage(f"invalid message fields: {fields}", kind=kind, version=version) from None


def decode_pubsub_data(data: Any) -> WorkMessage:
    """The message in a Pub/Sub CloudEvent's ``data``; :class:`MalformedMessage` when malformed."""
    if not isinstance(data, dict) or not isinstance(data.get("message"), dict):
        raise MalformedMessage("CloudEvent data has no Pub/Sub message")
    raw = data["message"].get("data")
    if not isinstance(raw, str):
        raise MalformedMessage("Pub/Sub message has no data")
    try:
        body = json.loads(base64.b64decode(raw, validate=True))
    except (binascii.Error, ValueError, UnicodeDecodeError) as exc:
        raise MalformedMessage(f"Pub/Sub message data is not base64 JSON: {exc}") from None
    message = parse_message(body)
    attributes = data["message"].get("attributes")
    parent = attributes.get("traceparent") if isinstance(attributes, dict) else None
    if isinstance(parent, str) and re.fullmatch(TRACEPARENT, parent):  # a malformed one is ignored
        message.traceparent = parent
    paused = attributes.get("paused") if isinstance(attributes, dict) else None
    if isinstance(paused, str) and len(paused) <= PAUSED_MAX_CHARS and re.fullmatch(PAUSED, paused):
        message.paused = paused  # a malformed hint is ignored: the resume reads without it
    return message


def paused_hint(turn_count: int, action_ids: list[str] | None) -> str | None:
    """:attr:`WorkMessage.paused` of a run paused with ``turn_count`` turns, its resume needing the
    actions ``action_ids`` (None: the run does not name them, or the hint would not fit)."""
    if action_ids is None:
        return None
    hint = f"{turn_count}:{','.join(action_ids)}"
    return hint if len(hint) <= PAUSED_MAX_CHARS and re.fullmatch(PAUSED, hint) else None
