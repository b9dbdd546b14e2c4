"""Run events: the NDJSON stream of seed 001 section 4, also persisted under ``runs/{runId}/events/``.

Every event carries ``seq`` (1, 2, 3, ... per run), identical on the live stream and in a replay.
Added to the spec's set: ``tool_result`` (a tool finished, was rejected or failed) and ``usage``
(token usage of the run so far, sent before ``result``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from shared.plans.contracts import Plan, SessionResultView
from shared.state.plan_records import PlanChange, SessionStatus
from shared.state.records import RunResult, RunStatus
from shared.usage.figures import Usage


def _wire_schema(schema: dict[str, Any]) -> None:
    """On the wire every event has its ``type`` and a ``seq`` >= 1 (``0`` only until ``emit`` numbers
    it): the JSON schema (and the OpenAPI document) require both."""
    schema["required"] = ["seq", "type", *(f for f in schema.get("required", []) if f not in ("seq", "type"))]
    seq = schema["properties"]["seq"]
    seq.pop("default", None)
    seq["minimum"] = 1


class Event(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra=_wire_schema, defer_build=True)
    seq: int = 0


class StatusEvent(Event):
    type: Literal["status"] = "status"
    status: RunStatus
    threadId: str
    runId: str


class DeltaEvent(Event):
    type: Literal["delta"] = "delta"
    delta: str


class ThoughtDeltaEvent(Event):
    type: Literal["thought_delta"] = "thought_delta"
    delta: str


class ToolCallEvent(Event):
    type: Literal["tool_call"] = "tool_call"
    toolName: str
    preview: str
    actionId: str
    status: Literal["executing", "awaiting_confirmation", "rejected", "failed"]


class ToolResultEvent(Event):
    type: Literal["tool_result"] = "tool_result"
    toolName: str
    actionId: str
    status: Literal["completed", "failed", "rejected"]
    output: dict[str, Any] | None = None
    error: str | None = None


class UsageEvent(Event):
    type: Literal["usage"] = "usage"
    usage: Usage


class ResultEvent(Event):
    type: Literal["result"] = "result"
    result: RunResult


class AgentStateEvent(Event):
    """What the loop is doing now (seed 003 §4.4), sent whenever it changes."""

    type: Literal["agent_state"] = "agent_state"
    state: Literal["thinking", "executing_tool", "executing_plan", "waiting_on_user"]
    contextType: str
    details: str | None = None


class PlanCreatedEvent(Event):
    """``agent_create_plan`` made a plan (a plan session ``planId``)."""

    type: Literal["plan_created"] = "plan_created"
    planId: str
    executionMode: str
    plan: Plan


class PlanReadyForReviewEvent(Event):
    type: Literal["plan_ready_for_review"] = "plan_ready_for_review"
    planId: str
    plan: Plan
    reasoning: str = ""


class PlanReviewEvent(Event):
    type: Literal["plan_review"] = "plan_review"
    planId: str
    verdict: Literal["approved", "rejected", "needs_changes"]
    notes: str = ""


class StepStartEvent(Event):
    """A step (task) of a plan began: in the log of the plan's run (a session's view shows it as
    ``task_start``), relayed into the chat run that started the plan."""

    type: Literal["step_start"] = "step_start"
    planId: str
    stepId: str
    title: str
    index: int | None = None
    """1-based position among the plan's live steps (with ``total``)."""
    total: int | None = None


class StepCompleteEvent(Event):
    type: Literal["step_complete"] = "step_complete"
    planId: str
    stepId: str
    status: str
    summary: str = ""


class ExecutorReasonEvent(Event):
    """The executor's reasoning before a step's act (a session's view: ``reason``)."""

    type: Literal["executor_reason"] = "executor_reason"
    planId: str
    stepId: str
    text: str


class ExecutorReflectEvent(Event):
    """The reflection after a step's act (a session's view: ``reflect``)."""

    type: Literal["executor_reflect"] = "executor_reflect"
    planId: str
    stepId: str
    taskComplete: bool
    taskFailed: bool
    summary: str
    modifications: int = 0


class PlanStatusEvent(Event):
    """The plan session's status changed while its run executed it (a session's view: ``status``)."""

    type: Literal["plan_status"] = "plan_status"
    planId: str
    status: SessionStatus


class PlanResultEvent(Event):
    """The plan session's outcome, the last plan event of its run (a session's view: ``result``)."""

    type: Literal["plan_result"] = "plan_result"
    planId: str
    result: SessionResultView


class ExecutorActEvent(Event):
    """A step of the run's plan calls a tool (the plan session's ``act``), relayed live."""

    type: Literal["executor_act"] = "executor_act"
    planId: str
    stepId: str
    toolName: str
    preview: str
    actionId: str | None = None


class ExecutorObserveEvent(Event):
    """What that call answered (the plan session's ``observe``)."""

    type: Literal["executor_observe"] = "executor_observe"
    planId: str
    stepId: str
    toolName: str
    outcome: str
    observation: dict[str, Any]


class PlanApprovalRequiredEvent(Event):
    """A step of the run's plan waits for the user's decision (the approvals inbox lists it;
    decide with ``POST /api/agent/approve``)."""

    type: Literal["approval_required"] = "approval_required"
    planId: str
    stepId: str
    approvalId: str
    toolName: str
    preview: str
    reason: str = ""


class RunPlanUpdatedEvent(Event):
    """The plan changed while it ran (a reflection added, changed or dropped steps)."""

    type: Literal["plan_updated"] = "plan_updated"
    planId: str
    plan: Plan
    changes: list[PlanChange] = Field(default_factory=list)
    reason: str = ""


class StreamEndEvent(Event):
    """Stream only, never persisted: the live stream ends while the run goes on without it (its plan
    waits for a decision, or the stream's time is spent). ``seq`` repeats the last event's: it takes
    no number of its own. ``follow`` is the route that reads on from there."""

    type: Literal["stream_end"] = "stream_end"
    runId: str
    status: Literal["executing"] = "executing"
    reason: Literal["plan_awaiting_approval", "stream_time_spent"]
    follow: str


class ErrorEvent(Event):
    type: Literal["error"] = "error"
    error: str
    code: str = "RUN_FAILED"


RunEvent = Annotated[
    StatusEvent | DeltaEvent | ThoughtDeltaEvent | ToolCallEvent | ToolResultEvent | UsageEvent | ResultEvent
    | ErrorEvent | AgentStateEvent | PlanCreatedEvent | PlanReadyForReviewEvent | PlanReviewEvent | StepStartEvent
    | StepCompleteEvent | ExecutorActEvent | ExecutorObserveEvent | PlanApprovalRequiredEvent | RunPlanUpdatedEvent
    | StreamEndEvent | ExecutorReasonEvent | ExecutorReflectEvent | PlanStatusEvent | PlanResultEvent,
    Field(discriminator="type"),
]


def event_to_doc(event: Event) -> dict[str, Any]:
    return event.model_dump(mode="json", exclude_none=True, by_alias=True)
