"""The HTTP contract of plan sessions (issue 10): requests and response bodies."""

from __future__ import annotations

import hashlib
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, Strict, field_validator

from shared.plan_views import Plan, SessionResultView
from shared.responses import PageBody, ResponseBody
from shared.state.plan_records import SessionStatus
from shared.state.records import Approval
from shared.token_usage import Usage
from shared.wire import INTEGRAL, MAX_INT64, NOT_BLANK_PATTERN, UtcTime, is_blank

MAX_PROMPT_CHARS = 16_000


class _Strict(BaseModel):
    """Unknown fields refused and no coercion: what the OpenAPI document calls invalid is a 400."""

    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)


def _not_blank(value: str) -> str:
    if is_blank(value):
        raise ValueError("must not be blank")
    return value


class CreateSessionRequest(_Strict):
    prompt: str = Field(min_length=1, max_length=MAX_PROMPT_CHARS, json_schema_extra={"pattern": NOT_BLANK_PATTERN})
    deadline: str | None = Field(default=None, json_schema_extra={"format": "date-time"},
                                 description="RFC 3339 with a zone, in the future and at most PLAN_MAX_DEADLINE_S "
                                             "away (400 INVALID_DEADLINE otherwise); default now + "
                                             "PLAN_DEFAULT_DEADLINE_S")
    repoUrl: str | None = Field(default=None, max_length=500, pattern=r"^https://")
    tools: list[str] | None = Field(default=None, max_length=100,
                                    description="tool names this deployment registers (400 UNKNOWN_TOOLS otherwise)")
    keepWorkspaces: bool = Field(default=False, description="keep the session's workspaces (docs/workspaces.md) "
                                                            "when it ends; they still expire when idle")
    budgetUsd: float | None = Field(default=None, gt=0, le=10_000,
                                    description="the estimated cost the session's execution may reach before it "
                                                "pauses with a budget approval (docs/budgets.md)")

    _prompt = field_validator("prompt")(_not_blank)

    def fingerprint(self) -> str:
        """What an ``Idempotency-Key`` is bound to: a digest of the request as validated."""
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()


class RefineRequest(_Strict):
    message: str = Field(min_length=1, max_length=MAX_PROMPT_CHARS, json_schema_extra={"pattern": NOT_BLANK_PATTERN})

    _message = field_validator("message")(_not_blank)


MAX_CANCEL_REASON_CHARS = 1_000


class CancelRequest(_Strict):
    """``POST /api/agent/sessions/{id}/cancel``: the body is optional (none, ``{}`` or a reason)."""

    reason: str | None = Field(default=None, max_length=MAX_CANCEL_REASON_CHARS,
                               description="why; recorded and shown as the session's cancelReason")


class ConfirmRequest(_Strict):
    planVersion: Annotated[int, Strict(), Field(ge=1, le=MAX_INT64), INTEGRAL]


class SessionCreated(ResponseBody):
    """``POST /api/agent/sessions`` (201; 200 with ``ok: false`` when planning failed)."""

    ok: bool
    sessionId: str
    status: SessionStatus
    deadline: UtcTime
    plan: Plan | None = None
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
    deadline: UtcTime
    planVersion: int
    createdAt: UtcTime


class SessionsList(PageBody):
    """``GET /api/agent/sessions?limit=N&cursor=C``: the caller's sessions, newest first."""

    ok: bool = True
    sessions: list[SessionSummary]


class SessionView(ResponseBody):
    """``GET /api/agent/sessions/{id}``."""

    ok: bool = True
    sessionId: str
    status: SessionStatus
    prompt: str
    deadline: UtcTime
    repoUrl: str | None = None
    tools: list[str] | None = None
    plan: Plan
    currentTaskId: str | None = None
    runId: str | None = Field(default=None, description="the session's unit of work (its run), from its creation")
    cancelRequested: bool = Field(description="true after any accepted cancel (before or during execution)")
    cancelReason: str | None = None
    pendingApprovals: list[Approval]
    usage: Usage = Field(description="every model call of the session: planning, refinements, acts and "
                                     "reflections (the usage ledger's entries of the session and its run)")
    costUsd: float
    budgetUsd: float | None = Field(default=None, description="the execution's money budget (docs/budgets.md); "
                                                              "an approved budget approval raises it")
    error: dict[str, str] | None = None
    result: SessionResultView | None = Field(default=None, description="when ended: the outcome and every act")
    createdAt: UtcTime
    updatedAt: UtcTime

