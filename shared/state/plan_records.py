"""Plan sessions (seed 004): the session's index, its plan versions and its tasks' ReAct history.

Layout (docs/firestore-layout.md): ``sessions/{sessionId}`` (the index of the session: owner,
prompt, deadline, its run, its status; small, updated in place), ``sessions/{id}/plans/{version}``
(one document per plan version: the task list and what changed and why) and ``sessions/{id}/tasks/
{taskId}/react/{n}`` (one ``{reason, action, observation}`` triplet per act). The tasks as they are
now, the session's log and its counter are its run's (``runs/{runId}``, host ``plan``). Sessions
stored by earlier versions also have ``sessions/{id}/tasks/{taskId}`` and ``sessions/{id}/events``
(read, never written). Nothing grows inside one document.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from shared.state.plan_tasks import PlanTask as PlanTask
from shared.state.plan_tasks import TaskStatus as TaskStatus
from shared.state.records import SCHEMA_VERSION, ActOutcome, Record, RunError, now

SessionStatus = Literal["planning", "awaiting_confirmation", "executing", "completed", "rejected", "failed",
                        "deadline_exceeded", "cancelled"]
"""``rejected``: every task ended, and at least one ended ``rejected`` (the user refused acts it needed)."""
TERMINAL_SESSION_STATUSES: frozenset[str] = frozenset({"completed", "rejected", "failed", "deadline_exceeded",
                                                       "cancelled"})


class PlanChange(Record):
    op: Literal["create", "refine", "add", "modify", "obsolete"]
    task_id: str | None = None
    what: str
    why: str = ""


class PlanVersionRecord(Record):
    version: int
    tasks: list[PlanTask]
    changes: list[PlanChange] = Field(default_factory=list)
    reason: str = ""
    at: float = Field(default_factory=now)
    schema_version: int = SCHEMA_VERSION


class ReactStep(Record):
    """One act of a task: the model's reasoning, the action it took and what it observed."""

    n: int
    task_id: str
    reason: str
    action: dict[str, Any]
    """``{"tool", "args", "preview", "actionId"}`` or ``{"tool": "task_done"}``."""
    observation: dict[str, Any]
    outcome: ActOutcome | None = None
    """The act's outcome (None in acts stored before it was recorded: ``legacy_outcome`` reads it)."""
    reflection: dict[str, Any] | None = None
    at: float = Field(default_factory=now)
    schema_version: int = SCHEMA_VERSION


def legacy_outcome(step: ReactStep) -> ActOutcome:
    """The outcome of an act stored without one (sessions of earlier versions): read from what it
    recorded (``unknown`` was stored as an error observation naming it)."""
    if step.outcome is not None:
        return step.outcome
    if step.action.get("tool") == "task_done":
        return "done"
    obs = step.observation
    if obs.get("rejected") is True:
        return "rejected"
    if obs.get("outcome") == "unknown":
        return "unknown"
    return "error" if "error" in obs else "ok"


class LogEntry(Record):
    """One action of the session's final log."""

    task_id: str
    tool: str
    arguments: dict[str, Any]
    outcome: ActOutcome
    at: float


class SessionResult(Record):
    status: SessionStatus
    log: list[LogEntry] = Field(default_factory=list)


class SessionRecord(Record):
    session_id: str
    uid: str
    prompt: str
    status: SessionStatus = "planning"
    deadline: float
    repo_url: str | None = None
    tools: list[str] | None = None
    """Tool names the session may use (None: every tool of the registry)."""
    keep_workspaces: bool = False
    """Its workspaces outlive it (``keepWorkspaces``); otherwise the sweep destroys them once it ended."""
    budget_usd: float | None = None
    """``budgetUsd``: the money budget its execution run starts with (docs/budgets.md)."""
    plan_version: int = 0
    """The plan's version, kept in this index for the sessions list (written when a version is
    made; the run's state is where the plan is)."""
    run_id: str | None = None
    """The session's unit of work (``runs/{runId}``, host ``plan``), from its creation (sessions an
    earlier version stored before confirmation have none until they are changed)."""
    cancel_requested: bool = False
    cancel_reason: str | None = None
    request_fingerprint: str | None = None
    """Created with an ``Idempotency-Key``: the digest of its request (a repeat with another body is
    a 422 ``IDEMPOTENCY_KEY_REUSED``); None otherwise."""
    """What the user gave as the reason when cancelling (``POST .../cancel {"reason"}``)."""
    last_seq: int = 0
    """Sessions stored by earlier versions only: the end of their own log before confirmation
    (``sessions/{id}/events``); 0 for sessions made since (their one log is their run's)."""
    error: RunError | None = None
    result: SessionResult | None = None
    created_at: float = Field(default_factory=now)
    updated_at: float = Field(default_factory=now)
    schema_version: int = SCHEMA_VERSION

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_SESSION_STATUSES
