"""The session's JSONL log (seed 002 §9, Phase 1): one JSON object per line, flushed as written.

Every envelope in and out, and every plan, action, outcome, verification, recovery decision and
error, in the order they happened. Every line has the same keys (``LogRecord``; null where a key
does not apply); its JSON Schema is ``log_record_schema()`` (printed in docs/host-protocol.md).
The first line is ``session.begin`` and the last ``session.finish`` with the session's final
outcome, written by the agent's ``finally`` block, so the log is complete after a failure too.
"""

from __future__ import annotations

import datetime
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from hostagent.schemas import DIALECT

Kind = Literal["session", "envelope", "plan", "action", "outcome", "verification", "recovery", "error", "note"]
Direction = Literal["in", "out", "internal"]
LOG_VERSION: Literal[1] = 1


class LogRecord(BaseModel):
    """One line of the log."""

    model_config = ConfigDict(extra="forbid")

    v: Literal[1] = LOG_VERSION
    seq: int = Field(ge=1, description="1, 2, 3, ... per log file")
    ts: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$", description="UTC, microseconds")
    kind: Kind
    sessionId: str | None
    direction: Direction
    type: str = Field(min_length=1, description="envelope type, or the record's own type (plan, tool.call, ...)")
    id: str | None = Field(description="envelope id, plan id or action id")
    replyTo: str | None
    stage: str | None = Field(description="the host stage the agent believed current when it wrote the line")
    reason: str | None = Field(description="why: the action's reason, an error's message")
    outcome: str | None = Field(description="success | failed | replan-required | ok | desync | stale, or the "
                                            "session's outcome (completed | blocked | ...)")
    code: str | None = Field(description="protocol or agent error code")
    data: dict[str, Any] | None = Field(description="the envelope, the plan, the params, details")


def log_record_schema() -> dict[str, Any]:
    """The JSON Schema every log line validates against (nullable keys stay required)."""
    schema = LogRecord.model_json_schema()
    for prop in schema["properties"].values():
        prop.pop("title", None)
        prop.pop("default", None)
    schema.pop("title", None)
    schema.pop("description", None)
    schema["required"] = list(LogRecord.model_fields)
    return {"$schema": DIALECT, "$id": "urn:host-agent:log-record:1", "title": "host-agent log line", **schema}


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class SessionLog:
    """Appends ``LogRecord`` lines to a file; ``close()`` syncs it to disk. Not thread-safe: the
    agent writes from its event loop only."""

    def __init__(self, path: str | os.PathLike[str], *, listener: Callable[[LogRecord], None] | None = None) -> None:
        self.path = Path(path)
        self.listener = listener
        if self.path.parent and not self.path.parent.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] | None = self.path.open("w", encoding="utf-8")
        self._seq = 0
        self.session_id: str | None = None
        self.stage: str | None = None

    def write(self, kind: Kind, type_: str, *, direction: Direction = "internal", id: str | None = None,
              reply_to: str | None = None, reason: str | None = None, outcome: str | None = None,
              code: str | None = None, data: dict[str, Any] | None = None, stage: str | None = None,
              session_id: str | None = None) -> LogRecord:
        self._seq += 1
        record = LogRecord(seq=self._seq, ts=_now(), kind=kind, sessionId=session_id or self.session_id,
                           direction=direction, type=type_, id=id, replyTo=reply_to,
                           stage=stage if stage is not None else self.stage, reason=reason, outcome=outcome,
                           code=code, data=data)
        if self._file is not None:
            self._file.write(json.dumps(record.model_dump(mode="json"), ensure_ascii=False, default=str) + "\n")
            self._file.flush()
        if self.listener is not None:
            self.listener(record)
        return record

    @property
    def closed(self) -> bool:
        return self._file is None

    def close(self) -> None:
        if self._file is None:
            return
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        self._file = None
