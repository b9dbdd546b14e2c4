"""The HTTP contract of plan sessions (issue 10): requests and response bodies."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from shared.responses import ResponseBody
from shared.state.plan_records import SessionStatus, TaskStatus
from shared.usage.figures import Usage

MAX_PROMPT_CHARS = 16_000


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


class CreateSessionRequest(_Strict):
    prompt: str = Field(min_length=1, max_length=MAX_PROMPT_CHARS)
    deadline: str | None = Field(default=None, description="RFC 3339; default now + PLAN_DEFAULT_DEADLINE_S")
    repoUrl: str | None = Field(default=None, max_length=500, pattern=r"^https://")
    tools: list[str] | None = Field(default=None, max_length=100)

    _prompt = field_validator("prompt")(_not_blank)


class RefineRequest(_Strict):
    message: str = Field(min_length=1, max_length=MAX_PROMPT_CHARS)

    _message = field_validator("message")(_not_blank)


class ConfirmRequest(_Strict):
    planVersion: int = Field(ge=1)


class TaskBody(ResponseBody):
    id: str
    title: str
    description: str
    status: TaskStatus


class PlanBody(ResponseBody):
    version: int
    tasks: list[TaskBody]


class SessionCreated(ResponseBody):
    """``POST /api/agent/sessions`` (201; 200 with ``ok: false`` when planning failed)."""

    ok: bool
    sessionId: str
    status: SessionStatus
    deadline: str
    plan: PlanBody | None = None
    error: dict[str, str] | None = None


class SessionAccepted(ResponseBody):
    """``confirm`` and ``cancel`` (202)."""

    ok: bool = True
    sessionId: str
    status: SessionStatus
    cancelRequested: bool | None = None


class SessionSummary(ResponseBody):
    sessionId: str
    status: SessionStatus
    prompt: str
    deadline: str
    planVersion: int
    createdAt: float


class SessionsList(ResponseBody):
    """``GET /api/agent/sessions?limit=N``: the caller's sessions, newest first."""

    ok: bool = True
    sessions: list[SessionSummary]


class TaskView(ResponseBody):
    id: str
    title: str
    description: str
    status: TaskStatus
    acts: int
    summary: str | None = None
    history: list[dict[str, Any]] = Field(description="the task's ReAct history: {n, reason, action, observation, "
                                                      "reflection, at}")


class PlanVersionView(ResponseBody):
    version: int
    changes: list[dict[str, Any]]
    reason: str
    at: float


class PendingApproval(ResponseBody):
    approvalId: str
    tool: str
    preview: str
    reason: str


class SessionView(ResponseBody):
    """``GET /api/agent/sessions/{id}``."""

    ok: bool = True
    sessionId: str
    status: SessionStatus
    prompt: str
    deadline: str
    repoUrl: str | None = None
    tools: list[str] | None = None
    planVersion: int
    currentTaskId: str | None = None
    cancelRequested: bool
    tasks: list[TaskView]
    planVersions: list[PlanVersionView]
    pendingApprovals: list[PendingApproval]
    usage: Usage
    costUsd: float
    error: dict[str, str] | None = None
    result: dict[str, Any] | None = Field(default=None, description="when ended: {status, log: [{taskId, tool, "
                                                                    "arguments, outcome, at}]}")
