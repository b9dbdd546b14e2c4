"""The loop's run events (seed 001 section 4): the base ``Event`` and what every run emits.

Every event carries ``seq`` (1, 2, 3, ... per run), identical on the live stream and in a replay.
Added to the spec's set: ``tool_result`` (a tool finished, was rejected or failed) and ``usage``
(token usage of the run so far, sent before ``result``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic_core import to_jsonable_python

from shared.state.records import RunResult, RunStatus
from shared.token_usage import Usage


def _wire_schema(schema: dict[str, Any]) -> None:
    """On the wire every event has its ``type`` and a ``seq`` >= 1 (``0`` only until ``emit`` numbers
    it): the JSON schema (and the OpenAPI document) require both."""
    schema["required"] = ["seq", "type", *(f for f in schema.get("required", []) if f not in ("seq", "type"))]
    seq = schema["properties"]["seq"]
    seq.pop("default", None)
    seq["minimum"] = 1


AgentStateName = Literal["thinking", "executing_tool", "executing_plan", "waiting_on_user"]
ToolCallStatus = Literal["executing", "awaiting_confirmation", "rejected", "failed"]
ToolResultStatus = Literal["completed", "failed", "rejected"]


class Event(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra=_wire_schema, defer_build=True)
    seq: int = 0


class StatusEvent(Event):
    """The first event of a run (``planning``) and of each invocation that resumes it."""

    type: Literal["status"] = "status"
    status: RunStatus = Field(description="the run's status as this invocation starts")
    threadId: str = Field(description="the run's conversation")
    runId: str = Field(description="the run the stream is about")


class DeltaEvent(Event):
    type: Literal["delta"] = "delta"
    delta: str = Field(description="visible answer text, as the model streams it")


class ThoughtDeltaEvent(Event):
    type: Literal["thought_delta"] = "thought_delta"
    delta: str = Field(description="thought summary text, as the model streams it")


class ToolCallEvent(Event):
    """A call of the model's turn: it executes, waits for approval, was denied by policy or failed."""

    type: Literal["tool_call"] = "tool_call"
    toolName: str = Field(description="the tool called")
    preview: str = Field(description="what the call does, in words (an approval shows the same)")
    actionId: str = Field(description="the call's action (its idempotency key)")
    status: ToolCallStatus = Field(
        description="awaiting_confirmation: stopped for approval; rejected: denied by policy")
    args: dict[str, Any] | None = None
    """The call's arguments: as the model made them, and when ``executing`` as they run (an
    approval with edits changes them). Absent in logs written before they were sent."""


class ToolResultEvent(Event):
    """A call finished: completed, failed (an outcome unknown after a crash too) or rejected."""

    type: Literal["tool_result"] = "tool_result"
    toolName: str = Field(description="the tool called")
    actionId: str = Field(description="the call's action, as in its tool_call")
    status: ToolResultStatus = Field(description="how the call ended")
    output: dict[str, Any] | None = None
    error: str | None = None


class UsageEvent(Event):
    """The run's token usage so far (sent before its ``result``, and at every pause)."""

    type: Literal["usage"] = "usage"
    usage: Usage = Field(description="totals of the run so far, over all its invocations")


class ResultEvent(Event):
    """The seed-001 response as of the run's stop (its last event, unless it failed: ``error``)."""

    type: Literal["result"] = "result"
    result: RunResult = Field(description="the response shape of POST /api/agent/run")


class AgentStateEvent(Event):
    """What the loop is doing now (seed 003 §4.4), sent whenever it changes."""

    type: Literal["agent_state"] = "agent_state"
    state: AgentStateName = Field(description="a client shows it as a status chip")
    contextType: str = Field(description="the run's contextType (general when none was given)")
    details: str | None = None


StreamEndReason = Literal["plan_awaiting_approval", "stream_time_spent", "awaiting_approval", "run_ended"]


class StreamEndEvent(Event):
    """Stream only, never persisted: a stream (live, or a follow of the events route) ends before the
    run's own stop was sent on it: its plan waits for a decision, the stream's time (window) is spent,
    the run waits for a decision (``follow`` without ``until=end``), or it had already ended.
    ``seq`` repeats the last event's: it takes no number of its own. ``follow`` is the route that
    reads on from there; ``status`` the run's status when the stream ended."""

    type: Literal["stream_end"] = "stream_end"
    runId: str = Field(description="the run the stream followed")
    status: RunStatus = "executing"
    reason: StreamEndReason = Field(description="why the stream ended before the run's own stop")
    follow: str = Field(description="the events route that reads on from here")


class HeartbeatEvent(BaseModel):
    """Stream only, never persisted, no ``seq``: a followed stream that has nothing to say for
    ``STREAM_HEARTBEAT_S`` says this (as an SSE comment line on ``text/event-stream``), so an idle
    proxy keeps the connection and the client knows it is alive."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["heartbeat"] = "heartbeat"


def heartbeat() -> dict[str, Any]:
    """The heartbeat as the streams yield it (framed as NDJSON, or as an SSE comment)."""
    return {"type": "heartbeat"}


class ErrorEvent(Event):
    """The run ended ``failed`` (docs/event-protocol.md lists the codes); on a live stream only,
    ``RUN_TAKEN_OVER``: another invocation took the run over."""

    type: Literal["error"] = "error"
    error: str = Field(description="what went wrong, in words")
    code: str = "RUN_FAILED"


def event_to_doc(event: Event) -> dict[str, Any]:
    return event.model_dump(mode="json", exclude_none=True, by_alias=True)


# ---- the loop's per-step events as documents -------------------------------------------------------
# A tool step emits an agent_state, a tool_call and a tool_result event. Their documents are built
# here directly (issue 33: no model built and dumped per event on the step's path): each function
# answers exactly ``event_to_doc`` of the event it names (same keys, same order, ``None`` left out,
# values as JSON; tests/unit/test_event_docs.py holds them to it), with ``seq`` 0 until
# ``RunContext.emit`` numbers it. Callers pass values the event's model accepts (its literals).


def agent_state_doc(state: AgentStateName, context_type: str, details: str | None = None) -> dict[str, Any]:
    """``event_to_doc(AgentStateEvent(state=..., contextType=..., details=...))``."""
    doc: dict[str, Any] = {"seq": 0, "type": "agent_state", "state": state, "contextType": context_type}
    if details is not None:
        doc["details"] = details
    return doc


def tool_call_doc(tool_name: str, preview: str, action_id: str, status: ToolCallStatus,
                  args: dict[str, Any] | None) -> dict[str, Any]:
    """``event_to_doc(ToolCallEvent(toolName=..., preview=..., actionId=..., status=..., args=...))``."""
    doc: dict[str, Any] = {"seq": 0, "type": "tool_call", "toolName": tool_name, "preview": preview,
                           "actionId": action_id, "status": status}
    if args is not None:
        doc["args"] = to_jsonable_python(args)
    return doc


def tool_result_doc(tool_name: str, action_id: str, status: ToolResultStatus, output: dict[str, Any] | None = None,
                    error: str | None = None) -> dict[str, Any]:
    """``event_to_doc(ToolResultEvent(toolName=..., actionId=..., status=..., output=..., error=...))``."""
    doc: dict[str, Any] = {"seq": 0, "type": "tool_result", "toolName": tool_name, "actionId": action_id,
                           "status": status}
    if output is not None:
        doc["output"] = to_jsonable_python(output)
    if error is not None:
        doc["error"] = error
    return doc
