"""Persisted records (Firestore layout of seed 001 section 9), stored with camelCase field names.

Run, action and approval states are the state machines of seed 001 section 5. Every record that
outlives a request carries ``schemaVersion``; a reader refuses a newer version than it knows.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from shared.errors import ApiError

SCHEMA_VERSION = 1
"""Versions: 1 = first layout (runs with a turns subcollection, actions, events, approvals)."""

RunStatus = Literal["queued", "planning", "awaiting_confirmation", "executing", "completed", "failed"]
RunMode = Literal["assistant_text", "tool_executed", "requires_approval"]
ActionStatus = Literal["planned", "awaiting_confirmation", "approved", "executing", "completed", "failed",
                       "rejected"]
ApprovalStatus = Literal["pending", "approved", "rejected", "expired"]
TrustLevel = Literal["supervised", "delegated", "autonomous"]

TERMINAL_RUN_STATUSES: frozenset[str] = frozenset({"completed", "failed"})
TERMINAL_ACTION_STATUSES: frozenset[str] = frozenset({"completed", "failed", "rejected"})


class SchemaVersionError(ApiError):
    """A stored record was written by a newer version of the runtime (read by an older instance,
    e.g. after a rollback). Nothing is written; the HTTP edge logs it and answers 500
    ``SCHEMA_VERSION_UNSUPPORTED`` with this message instead of an anonymous internal error."""

    status = 500
    code = "SCHEMA_VERSION_UNSUPPORTED"


def now() -> float:
    return time.time()


class Record(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    def to_doc(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    @classmethod
    def from_doc(cls, data: dict[str, Any]) -> Any:
        version = data.get("schemaVersion")
        if isinstance(version, int) and version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{cls.__name__} has schemaVersion {version}; this runtime knows up to {SCHEMA_VERSION}")
        return cls.model_validate(data)


class UserProfile(Record):
    display_name: str | None = None
    about: str | None = None
    timezone: str | None = None
    email_allowlist: list[str] = Field(default_factory=list)


class UserRecord(Record):
    uid: str
    trust_level: TrustLevel = "supervised"
    profile: UserProfile = Field(default_factory=UserProfile)
    schema_version: int = SCHEMA_VERSION


class MemoryRecord(Record):
    id: str
    text: str
    tags: list[str] = Field(default_factory=list)
    run_id: str | None = None
    created_at: float = Field(default_factory=now)


class ThreadRecord(Record):
    thread_id: str
    uid: str
    active_run_id: str | None = None
    created_at: float = Field(default_factory=now)
    updated_at: float = Field(default_factory=now)
    schema_version: int = SCHEMA_VERSION


class MessageRecord(Record):
    id: str
    role: Literal["user", "assistant"]
    text: str
    run_id: str | None = None
    created_at: float = Field(default_factory=now)


class Lease(Record):
    owner: str
    expires_at: float


class RunError(Record):
    code: str
    message: str


class ApprovalView(Record):
    """The approval as the API shows it (seed 001 section 3)."""

    id: str
    tool: str
    reason: str
    preview: str


class RunResult(Record):
    """The non-streaming response shape of seed 001 section 3, as of the run's last stop."""

    ok: bool
    run_id: str
    action_id: str = ""
    thread_id: str
    status: RunStatus
    summary: str = ""
    mode: RunMode = "assistant_text"
    model: str = ""
    tool: str | None = None
    tool_args: dict[str, Any] | None = None
    approval: ApprovalView | None = None
    approvals: list[ApprovalView] | None = None
    output: dict[str, Any] | None = None
    error: RunError | None = None


class UsageRecord(Record):
    """Token usage: ``inputTokens`` (prompt), ``outputTokens`` (candidates), ``thinkingTokens``
    (thoughts) and ``totalTokens`` as the model reports them; ``requests`` counts HTTP attempts."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    thinking_tokens: int = 0
    total_tokens: int = 0

    def plus(self, other: UsageRecord) -> UsageRecord:
        return UsageRecord(requests=self.requests + other.requests,
                           input_tokens=self.input_tokens + other.input_tokens,
                           output_tokens=self.output_tokens + other.output_tokens,
                           thinking_tokens=self.thinking_tokens + other.thinking_tokens,
                           total_tokens=self.total_tokens + other.total_tokens)


class ModelCallRecord(Record):
    """One model call of a run: its step, the stored turn it produced and its token usage."""

    step: int
    turn_index: int | None = None
    """Index of the model turn it produced in ``runs/{runId}/turns`` (None: no usable turn)."""
    usage: UsageRecord


class RunRecord(Record):
    run_id: str
    uid: str
    thread_id: str
    status: RunStatus = "queued"
    mode: RunMode | None = None
    model: str = ""
    system_instruction: str = ""
    steps: int = 0
    max_steps: int = 8
    turn_count: int = 0
    last_seq: int = 0
    tools_executed: int = 0
    usage: UsageRecord = Field(default_factory=UsageRecord)
    """Sum of ``modelCalls[].usage`` (runs written before ``modelCalls`` existed have only this)."""
    model_calls: list[ModelCallRecord] = Field(default_factory=list)
    """Every model call of the run, in order (each invocation adds at most AGENT_MAX_LOOP_STEPS)."""
    lease: Lease | None = None
    lease_expires_at: float = 0.0
    """Top-level copy of ``lease.expiresAt`` (0 without a lease) so recovery can query by it."""
    pending_approval_ids: list[str] = Field(default_factory=list)
    pending_turn: int | None = None
    """Turn index of the model turn whose calls await approval (resume builds its responses)."""
    idempotency_key: str | None = None
    result: RunResult | None = None
    error: RunError | None = None
    created_at: float = Field(default_factory=now)
    updated_at: float = Field(default_factory=now)
    schema_version: int = SCHEMA_VERSION

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_RUN_STATUSES


class ActionRecord(Record):
    action_id: str
    run_id: str
    uid: str
    tool: str
    args: dict[str, Any]
    args_hash: str
    turn_index: int
    call_index: int
    call_id: str | None = None
    side_effect: bool = False
    idempotent: bool = False
    status: ActionStatus = "planned"
    approval_id: str | None = None
    policy_reason: str | None = None
    result: dict[str, Any] | None = None
    error: str | None = None
    outcome: Literal["success", "error", "rejected", "unknown"] | None = None
    attempts: int = 0
    created_at: float = Field(default_factory=now)
    updated_at: float = Field(default_factory=now)
    schema_version: int = SCHEMA_VERSION


class ApprovalRecord(Record):
    approval_id: str
    uid: str
    run_id: str
    action_id: str
    tool: str
    args_hash: str
    reason: str
    preview: str
    status: ApprovalStatus = "pending"
    decision_reason: str | None = None
    created_at: float = Field(default_factory=now)
    expires_at: float
    decided_at: float | None = None
    expire_at: float | None = None
    """TTL deletion time: EVENT_RETENTION_S after the approval itself expires."""
    schema_version: int = SCHEMA_VERSION

    def view(self) -> ApprovalView:
        return ApprovalView(id=self.approval_id, tool=self.tool, reason=self.reason, preview=self.preview)


class AuditRecord(Record):
    audit_id: str
    uid: str
    kind: Literal["policy_decision", "side_effect_attempt", "side_effect_result", "approval_requested",
                  "approval_decided", "approval_superseded", "approval_expired", "recovery"]
    run_id: str | None = None
    action_id: str | None = None
    approval_id: str | None = None
    tool: str | None = None
    decision: str | None = None
    reason: str | None = None
    at: float = Field(default_factory=now)
    expire_at: float | None = None
    """When Firestore's TTL policy may delete the entry (set from AUDIT_RETENTION_S)."""
