"""Plan-session events: the NDJSON of ``GET /api/agent/sessions/{id}/events``, persisted at
``sessions/{id}/events/{seq}`` (docs/event-protocol.md, "Plan sessions"). Same rules as run events:
every event has ``type`` and ``seq`` (1, 2, 3, ... per session)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from shared.events import ErrorEvent, Event, UsageEvent
from shared.plans.contracts import Plan, SessionResultView
from shared.state.plan_records import PlanChange, SessionStatus


class SessionStatusEvent(Event):
    type: Literal["status"] = "status"
    status: SessionStatus
    sessionId: str


class PlanUpdatedEvent(Event):
    type: Literal["plan_updated"] = "plan_updated"
    plan: Plan
    changes: list[PlanChange]
    reason: str = ""


class TaskStartEvent(Event):
    type: Literal["task_start"] = "task_start"
    taskId: str
    title: str
    index: int
    total: int


class ReasonEvent(Event):
    type: Literal["reason"] = "reason"
    taskId: str
    text: str


class ActEvent(Event):
    type: Literal["act"] = "act"
    taskId: str
    tool: str
    preview: str
    actionId: str | None = None


class ObserveEvent(Event):
    type: Literal["observe"] = "observe"
    taskId: str
    tool: str
    outcome: str
    observation: dict[str, Any]


class ReflectEvent(Event):
    type: Literal["reflect"] = "reflect"
    taskId: str
    taskComplete: bool
    taskFailed: bool
    summary: str
    modifications: int = 0


class TaskCompleteEvent(Event):
    type: Literal["task_complete"] = "task_complete"
    taskId: str
    status: Literal["completed", "failed", "rejected", "cancelled"]
    summary: str


class ApprovalRequiredEvent(Event):
    type: Literal["approval_required"] = "approval_required"
    taskId: str
    approvalId: str
    tool: str
    preview: str
    reason: str


class SessionResultEvent(Event):
    type: Literal["result"] = "result"
    result: SessionResultView


SessionEvent = Annotated[
    SessionStatusEvent | PlanUpdatedEvent | TaskStartEvent | ReasonEvent | ActEvent | ObserveEvent | ReflectEvent
    | TaskCompleteEvent | ApprovalRequiredEvent | UsageEvent | SessionResultEvent | ErrorEvent,
    Field(discriminator="type"),
]
