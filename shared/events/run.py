"""``RunEvent``: the union of every run event, the NDJSON of ``/api/agent/run/stream`` and
``/api/agent/runs/{id}/events`` (docs/event-protocol.md): the loop's events (``loop.py``) and the
plans' (``plan.py``). Importing it imports the plan contracts (a chat run's cold start does not)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from shared.events.loop import (
    AgentStateEvent,
    DeltaEvent,
    ErrorEvent,
    ResultEvent,
    StatusEvent,
    StreamEndEvent,
    ThoughtDeltaEvent,
    ToolCallEvent,
    ToolResultEvent,
    UsageEvent,
)
from shared.events.plan import (
    ExecutorActEvent,
    ExecutorObserveEvent,
    ExecutorReasonEvent,
    ExecutorReflectEvent,
    PlanApprovalRequiredEvent,
    PlanCreatedEvent,
    PlanReadyForReviewEvent,
    PlanResultEvent,
    PlanReviewEvent,
    PlanStatusEvent,
    RunPlanUpdatedEvent,
    StepCompleteEvent,
    StepStartEvent,
)

RunEvent = Annotated[
    StatusEvent | DeltaEvent | ThoughtDeltaEvent | ToolCallEvent | ToolResultEvent | UsageEvent | ResultEvent
    | ErrorEvent | AgentStateEvent | PlanCreatedEvent | PlanReadyForReviewEvent | PlanReviewEvent | StepStartEvent
    | StepCompleteEvent | ExecutorActEvent | ExecutorObserveEvent | PlanApprovalRequiredEvent | RunPlanUpdatedEvent
    | StreamEndEvent | ExecutorReasonEvent | ExecutorReflectEvent | PlanStatusEvent | PlanResultEvent,
    Field(discriminator="type"),
]
