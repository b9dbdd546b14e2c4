"""Plan sessions (seed 004): the session, its plan versions, its tasks and their ReAct history.

Layout (docs/firestore-layout.md): ``sessions/{sessionId}`` (small, updated in place),
``sessions/{id}/plans/{version}`` (one document per plan version: the task list and what changed
and why), ``sessions/{id}/tasks/{taskId}`` (each task's current status), ``sessions/{id}/tasks/
{taskId}/react/{n}`` (one ``{reason, action, observation}`` triplet per act) and
``sessions/{id}/events/{seq}``. Nothing grows inside one document.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from shared.state.plan_tasks import PlanTask as PlanTask
from shared.state.plan_tasks import TaskStatus as TaskStatus
from shared.state.records import SCHEMA_VERSION, ActOutcome, Record, RunError, now
from shared.token_usage import Usage

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
    current_task_id: str | None = None
    run_id: str | None = None
    """The execution unit (``runs/{runId}``, host ``plan``) once confirmed."""
    cancel_requested: bool = False
    cancel_reason: str | None = None
    """What the user gave as the reason when cancelling (``POST .../cancel {"reason"}``)."""
    last_seq: int = 0
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float = 0.0
    error: RunError | None = None
    result: SessionResult | None = None
    created_at: float = Field(default_factory=now)
    updated_at: float = Field(default_factory=now)
    schema_version: int = SCHEMA_VERSION

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_SESSION_STATUSES
