"""The one wire shape of a plan, its tasks, their ReAct history, its versions and a session's
outcome: what every route (create, refine, the session view) and every plan event shows. Below the
plans package (events and routes import it; it imports only records and wire types)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from shared.responses import ResponseBody
from shared.state.plan_records import PlanTask, SessionStatus, TaskStatus
from shared.state.statuses import ActOutcome
from shared.wire import UtcTime


class ReactStepView(ResponseBody):
    """One act of a task: the model's reasoning, the action, what it observed, the reflection."""

    n: int
    reason: str
    action: dict[str, Any] = Field(description="{tool, args, preview, actionId} or {tool: task_done}")
    observation: dict[str, Any]
    reflection: dict[str, Any] | None = None
    at: UtcTime


class PlanTaskView(ResponseBody):
    """A task of the plan. ``acts``, ``summary`` and ``history`` are filled where the session is
    shown whole (``GET /api/agent/sessions/{id}``)."""

    taskId: str
    title: str
    description: str
    status: TaskStatus
    acts: int | None = None
    summary: str | None = None
    history: list[ReactStepView] | None = None


class PlanChangeView(ResponseBody):
    op: Literal["create", "refine", "add", "modify", "obsolete"]
    taskId: str | None = None
    what: str
    why: str


class PlanVersionView(ResponseBody):
    version: int
    changes: list[PlanChangeView]
    reason: str
    at: UtcTime


class Plan(ResponseBody):
    """The one shape of a plan wherever the API answers one (create, refine, the session view):
    ``versions`` (every version with what changed and why) where the session is shown whole."""

    version: int
    tasks: list[PlanTaskView]
    versions: list[PlanVersionView] | None = None


class LogEntryView(ResponseBody):
    taskId: str
    tool: str
    arguments: dict[str, Any]
    outcome: ActOutcome
    at: UtcTime


class SessionResultView(ResponseBody):
    status: SessionStatus
    log: list[LogEntryView]


def plan_body(version: int, tasks: list[PlanTask]) -> Plan:
    """The plan as create and refine answer it and plan events carry it: its live tasks (obsolete
    ones left out)."""
    return Plan(version=version, tasks=[PlanTaskView(taskId=t.id, title=t.title, description=t.description,
                                                     status=t.status) for t in tasks if t.status != "obsolete"])
