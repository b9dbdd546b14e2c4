"""``RunEvent``: the union of every run event, the NDJSON of ``/api/agent/run/stream`` and
``/api/agent/runs/{id}/events`` (docs/event-protocol.md): the loop's events (``loop.py``) and the
plans' (``plan.py``). Importing it imports the plan contracts (a chat run's cold start does not)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from shared.events import loop, plan

RunEvent = Annotated[
    loop.StatusEvent | loop.DeltaEvent | loop.ThoughtDeltaEvent | loop.ToolCallEvent | loop.ToolResultEvent
    | loop.UsageEvent | loop.ResultEvent | loop.ErrorEvent | loop.AgentStateEvent | loop.StreamEndEvent
    | plan.PlanCreatedEvent | plan.PlanReadyForReviewEvent | plan.PlanReviewEvent | plan.StepStartEvent
    | plan.StepCompleteEvent | plan.ExecutorActEvent | plan.ExecutorObserveEvent | plan.PlanApprovalRequiredEvent
    | plan.RunPlanUpdatedEvent | plan.ExecutorReasonEvent | plan.ExecutorReflectEvent | plan.PlanStatusEvent
    | plan.PlanResultEvent,
    Field(discriminator="type"),
]
