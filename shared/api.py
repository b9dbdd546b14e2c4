"""HTTP request contracts (seed 001 section 2) and the limits applied at the route."""

from __future__ import annotations

import hashlib
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from shared.routes import ID_SEGMENT
from shared.wire import NOT_BLANK_PATTERN, is_blank

MAX_CONVERSATION_AT_ROUTE = 40
MAX_CONVERSATION_FOR_MODEL = 30
MAX_ATTACHED_CONTEXT = 12
MAX_PROMPT_CHARS = 16_000
ID_PATTERN = f"^{ID_SEGMENT}$"
"""A client-chosen id (``threadId``...): 1-128 of ``[A-Za-z0-9_-]``, not ``__…__`` (Firestore reserves those)."""


class _Strict(BaseModel):
    """Unknown fields are rejected (400 naming the field) so that typos never pass silently, and
    values are not coerced (``"supersede": 0`` or ``"1"`` is not a boolean): what the OpenAPI
    document calls invalid is refused."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False, strict=True, defer_build=True)


class ConversationItem(_Strict):
    role: Literal["user", "assistant"]
    text: str = Field(max_length=MAX_PROMPT_CHARS)


class AttachedContextItem(_Strict):
    type: Literal["email", "calendar_event", "briefing"]
    id: str = Field(min_length=1, max_length=512)
    title: str | None = Field(default=None, max_length=1000)
    snippet: str | None = Field(default=None, max_length=10_000)
    meta: dict[str, Any] | None = None


MAX_CLIENT_TOOLS = 20


class ClientTool(_Strict):
    """A tool the client declares and runs itself (an AG-UI frontend tool): the model may call it;
    the run then pauses until the client sends the call's result (docs/ag-ui.md)."""

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
    description: str = Field(min_length=1, max_length=2000)
    parameters: dict[str, Any] | None = None
    """A JSON Schema object of the call's arguments (absent: none)."""


MultitaskStrategy = Literal["reject", "enqueue", "interrupt", "rollback"]
"""What a run does when its thread is busy (docs/run-control.md): ``reject`` (the default: 409
``RUN_ACTIVE`` / ``APPROVAL_PENDING``), ``enqueue`` (queued behind the thread's runs, in arrival
order), ``interrupt`` (the active run stops at its next step boundary, then this one starts) or
``rollback`` (the same, and the interrupted run's messages leave the thread's history)."""
DEFAULT_MULTITASK_STRATEGY: MultitaskStrategy = "reject"


class RunRequest(_Strict):
    prompt: str = Field(min_length=1, max_length=MAX_PROMPT_CHARS, json_schema_extra={"pattern": NOT_BLANK_PATTERN})
    threadId: str | None = Field(default=None, pattern=ID_PATTERN)
    conversation: list[ConversationItem] = Field(default_factory=list)
    attachedContext: list[AttachedContextItem] = Field(default_factory=list)
    supersede: bool = False
    """Deprecated alias of ``multitaskStrategy: "rollback"`` (``true`` with any other strategy: 400)."""
    multitaskStrategy: MultitaskStrategy | None = None
    """What to do when the thread is busy; ``reject`` when absent (docs/run-control.md)."""
    webhook: str | None = Field(default=None, max_length=2048,
                                json_schema_extra={"pattern": r"^https?://[^\s/?#@]+(?:[/?#]\S*)?$"},
                                description="a URL that receives this run's run.completed, run.failed and "
                                            "run.awaiting_approval deliveries, signed with the secret of your "
                                            "webhook named default")
    contextType: Literal["project_create", "project", "task", "project_audit", "general", "global"] = "general"
    """What the user is doing (seed 003 §4.1): its guidance goes into the system instruction."""
    entityId: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_/-]{1,256}$")
    """The project (or ``projectId/taskId``) the request is about, for ``project``/``task`` contexts."""
    clientTools: list[ClientTool] = Field(default_factory=list, max_length=MAX_CLIENT_TOOLS)
    """Tools the client runs itself (AG-UI ``tools``): a call pauses the run for the client's result."""
    budgetUsd: float | None = Field(default=None, gt=0, le=10_000)
    """The estimated cost the run's model calls may reach before it pauses with a budget approval
    (docs/budgets.md)."""

    @field_validator("prompt")
    @classmethod
    def _prompt_not_blank(cls, v: str) -> str:
        if is_blank(v):
            raise ValueError("prompt must not be blank")
        return v

    @model_validator(mode="after")
    def _supersede_alias(self) -> RunRequest:
        if self.supersede and self.multitaskStrategy not in (None, "rollback"):
            raise ValueError("supersede is an alias of multitaskStrategy \"rollback\"; "
                             f"it cannot be combined with \"{self.multitaskStrategy}\"")
        return self

    @property
    def strategy(self) -> MultitaskStrategy:
        """The strategy in force: ``supersede: true`` is ``rollback``; absent is ``reject``."""
        if self.multitaskStrategy is not None:
            return self.multitaskStrategy
        return "rollback" if self.supersede else DEFAULT_MULTITASK_STRATEGY

    def fingerprint(self) -> str:
        """What an ``Idempotency-Key`` is bound to: a digest of the request as validated (so the same
        fields in another order, or a default written out, are the same request)."""
        # Without a budget the digest is the one of requests made before ``budgetUsd`` existed.
        exclude = {"budgetUsd"} if self.budgetUsd is None else None
        return hashlib.sha256(self.model_dump_json(exclude=exclude).encode()).hexdigest()

    def normalised(self) -> RunRequest:
        """Route-level bounds: the last 40 conversation items and the first 12 attached items."""
        return self.model_copy(update={
            "conversation": self.conversation[-MAX_CONVERSATION_AT_ROUTE:],
            "attachedContext": self.attachedContext[:MAX_ATTACHED_CONTEXT],
        })


class ApproveRequest(_Strict):
    approvalId: str = Field(pattern=ID_PATTERN)
    decision: Literal["approve", "reject"]
    reason: str | None = Field(default=None, max_length=2000)
    arguments: dict[str, Any] | None = None
    """Approve with edits: the call runs with these arguments instead of the model's (validated
    against the tool's schema, decided by policy again; only with ``decision: approve``)."""

    @field_validator("arguments")
    @classmethod
    def _edits_only_when_approving(cls, v: dict[str, Any] | None, info: ValidationInfo) -> dict[str, Any] | None:
        if v is not None and info.data.get("decision") != "approve":
            raise ValueError("arguments (edits) go only with decision approve")
        return v


class CancelRunRequest(_Strict):
    """``POST /api/agent/runs/{runId}/cancel``: the body is optional (none, ``{}`` or a reason)."""

    reason: str | None = Field(default=None, max_length=2000, description="why; shown in the run's error")
