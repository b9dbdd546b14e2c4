"""Persisted records (Firestore layout of seed 001 section 9), stored with camelCase field names.

Run, action and approval states are the state machines of seed 001 section 5. Every record that
outlives a request carries ``schemaVersion``; a reader refuses a newer version than it knows.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, computed_field, model_validator

from shared.state.host_states import LEGACY_ARG_ERRORS, ChatState, HostState, initial, migrate
from shared.state.record_base import SCHEMA_VERSION as SCHEMA_VERSION
from shared.state.record_base import Record as Record
from shared.state.record_base import SchemaVersionError as SchemaVersionError
from shared.state.record_base import now as now
from shared.state.statuses import TERMINAL_ACTION_STATUSES as TERMINAL_ACTION_STATUSES
from shared.state.statuses import TERMINAL_RUN_STATUSES as TERMINAL_RUN_STATUSES
from shared.state.statuses import ActionStatus as ActionStatus
from shared.state.statuses import ActOutcome as ActOutcome
from shared.state.statuses import ApprovalStatus as ApprovalStatus
from shared.state.statuses import RunStatus as RunStatus
from shared.token_usage import Usage
from shared.wire import UtcTime

RunMode = Literal["assistant_text", "tool_executed", "requires_approval", "executing_plan"]
"""``executing_plan``: the run waits on the plan its ``agent_create_plan`` call started (nobody is
asked anything; it goes on when the plan ends). Reported with status ``executing``."""
TrustLevel = Literal["supervised", "delegated", "autonomous"]
BUDGET_TOOL = "budget_increase"
"""The ``tool`` of the action a budget approval records (``shared/loop/budget_pause.py``): no tool of a
registry. Here, with the records, so that a resume that only looks at a paused turn's actions loads no
budget module."""


class UserProfile(Record):
    display_name: str | None = None
    about: str | None = None
    timezone: str | None = None
    email_allowlist: list[str] = Field(default_factory=list)


class UserLimits(Record):
    """Per-user overrides of the deployment's limits (docs/limits.md), set by the admin API; absent:
    the deployment's value; 0: off for this user."""

    active_runs: int | None = Field(default=None, ge=0, le=10_000)
    active_sessions: int | None = Field(default=None, ge=0, le=10_000)
    daily_tokens: int | None = Field(default=None, ge=0, le=10**12)
    daily_budget_usd: float | None = Field(default=None, ge=0, le=1_000_000)
    """The user's money cap per UTC day (docs/budgets.md; over ``BUDGET_USER_DAILY_USD``)."""
    monthly_budget_usd: float | None = Field(default=None, ge=0, le=1_000_000)
    """The user's money cap per UTC month (over ``BUDGET_USER_MONTHLY_USD``)."""


class UserRecord(Record):
    uid: str
    trust_level: TrustLevel = "supervised"
    profile: UserProfile = Field(default_factory=UserProfile)
    limits: UserLimits = Field(default_factory=UserLimits)
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
    mode: str | None = None
    """The planner state: the contextType of the thread's last turn."""
    last_execution_modes: list[str] = Field(default_factory=list)
    """The execution modes of the plans the last turn made (agent_create_plan)."""
    queue: list[str] = Field(default_factory=list)
    """Runs waiting for the thread, in the order they start (docs/run-control.md)."""
    queued_count: int = 0
    """Runs ever queued on the thread: the next one's ``queuePosition``."""
    interrupt_run_id: str | None = None
    """The active run asked to stop at its next step boundary (interrupt, rollback or cancel)."""
    interrupt_mode: Literal["interrupt", "rollback", "cancel"] | None = None
    interrupt_by: str | None = None
    """The run whose ``multitaskStrategy`` asked for the interrupt (none for a cancel)."""
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


def _always_answered(schema: dict[str, Any]) -> None:
    """The fields every served approval has (a default fills what an old stored result lacks)."""
    schema["required"] = ["approvalId", "id", "tool", "reason", "preview", "status", "runId", "kind"]


class Approval(Record):
    """An approval wherever the API shows one, in one shape: a run result's ``approval`` and
    ``approvals[]``, the runs list, the inbox, its detail, a session's ``pendingApprovals`` and the
    ``approval`` of an ``approval_required`` event (docs/event-protocol.md, "Names"). What waits (or
    waited) for the owner's decision and what it belongs to; decide with
    ``POST /api/agent/approve {"approvalId", "decision"}``.

    ``approvalId`` is the name every other object uses; ``id`` stays because seed 001 section 3
    pins it (either fills the other). A run result is stored as of the run's stop: results stored
    before the times and the owner were added read without them (``runId`` is filled from the
    result's own run)."""

    model_config = ConfigDict(json_schema_extra=_always_answered)

    approval_id: str = ""
    id: str = ""
    tool: str
    reason: str
    preview: str
    status: ApprovalStatus = "pending"
    created_at: UtcTime | None = None
    expires_at: UtcTime | None = None
    decided_at: UtcTime | None = None
    run_id: str = ""
    session_id: str | None = Field(default=None, description="the plan session whose act it is")
    task_id: str | None = Field(default=None, description="the plan task whose act it is")
    kind: Literal["tool", "budget"] = Field(default="tool", description="budget: a money budget was reached "
                                            "(docs/budgets.md); approving raises it to proposedLimitUsd")
    budget_scope: Literal["run", "user_day", "user_month"] | None = None
    spent_usd: float | None = Field(default=None, description="budget approvals: spent against the limit")
    limit_usd: float | None = None
    proposed_limit_usd: float | None = None

    @model_validator(mode="after")
    def _both_names(self) -> Approval:
        self.approval_id = self.approval_id or self.id
        self.id = self.id or self.approval_id
        return self

    @classmethod
    def of(cls, record: ApprovalRecord, *, session_id: str | None = None) -> Approval:
        """``record`` as the API shows it. A pending one past its expiry is shown ``expired``: it
        can no longer be decided (the sweep closes it soon)."""
        status: ApprovalStatus = record.status
        if status == "pending" and record.expires_at <= now():
            status = "expired"
        return cls(approval_id=record.approval_id, tool=record.tool, reason=record.reason, preview=record.preview,
                   status=status, created_at=record.created_at, expires_at=record.expires_at,
                   decided_at=record.decided_at, run_id=record.run_id, session_id=record.session_id or session_id,
                   task_id=record.task_id, kind=record.kind, budget_scope=record.budget_scope,
                   spent_usd=record.spent_usd, limit_usd=record.limit_usd,
                   proposed_limit_usd=record.proposed_limit_usd)


ApprovalView = Approval
"""The name of the short shape this one replaced (kept for code written against it)."""


class QueuedStart(Record):
    """What a queued run starts from when its turn comes (its prompt is written to the thread then,
    so the thread's messages stay in the order the runs ran)."""

    prompt: str
    conversation: list[dict[str, str]] = Field(default_factory=list)
    position: int = 0
    """Its place in the thread's arrival order (``ThreadRecord.queued_count`` when it was queued)."""
    attachments: list[dict[str, Any]] = Field(default_factory=list)
    """Files sent with the prompt (model parts, ``shared/models/base.py``), added to its turn."""


class OutputFile(Record):
    """A file the model answered with: its name, media type and size; ``uri`` when it is a
    reference, else its bytes stay where the model's turn is stored (turn ``turn``, part ``part``)."""

    name: str
    media_type: str
    size_bytes: int | None = None
    uri: str | None = None
    turn: int | None = None
    part: int | None = None


class RunResult(Record):
    """The non-streaming response shape of seed 001 section 3, as of the run's last stop."""

    ok: bool
    run_id: str
    action_id: str | None = None
    """The last tool call's action; absent when the run called no tool (a text-only answer)."""
    thread_id: str
    status: RunStatus
    summary: str = ""
    mode: RunMode = "assistant_text"
    model: str = ""
    tool: str | None = None
    tool_args: dict[str, Any] | None = None
    approval: Approval | None = None
    approvals: list[Approval] | None = None
    output: dict[str, Any] | None = None
    files: list[OutputFile] | None = None
    """The files of the final answer (model output ``inlineData`` / ``fileData`` parts)."""
    error: RunError | None = None
    follow: str | None = None
    """While the run goes on without the caller (status ``executing``: it waits on its plan): the
    events route to follow it to its end (add ``after=<seq of this result>``)."""

    @model_validator(mode="after")
    def _approvals_of_this_run(self) -> RunResult:
        """Results stored before approvals named their run: this result's run."""
        for a in [*([self.approval] if self.approval else []), *(self.approvals or [])]:
            a.run_id = a.run_id or self.run_id
        return self


def waits_on_child(run: RunRecord) -> bool:
    """A pause that asks nobody: the run waits on a unit it started (its plan), not on a decision.
    (A plan's own run starts none: paused without approvals it waits for its plan's confirmation.)"""
    return run.status == "awaiting_confirmation" and not run.pending_approval_ids and run.host != "plan"


def reported_status(run: RunRecord) -> RunStatus:
    """The status a client is shown: a run waiting on its plan is ``executing``, not awaiting a
    confirmation nobody is asked for (the stored status keeps the pause for resume's rules)."""
    return "executing" if waits_on_child(run) else run.status


ThreadScope = Literal["user", "shared"]


StopMode = Literal["interrupt", "rollback", "cancel"]


class StopRequest(Record):
    """A request that an active run stop at its next step boundary (docs/run-control.md)."""

    mode: StopMode
    by: str | None = None
    """The newer run that interrupted it (None for a cancel)."""


class RunRecord(Record):
    run_id: str
    uid: str
    thread_id: str
    status: RunStatus
    mode: RunMode | None = None
    model: str = ""
    system_instruction: str = ""
    steps: int = 0
    max_steps: int = 8
    turn_count: int = 0
    last_seq: int = 0
    tools_executed: int = 0
    tools_called: int = 0
    """Tool calls the model asked for in this run (one user turn), whatever became of them."""
    usage: Usage = Field(default_factory=Usage)
    """Totals of the run's model calls; each call is its own document in the usage ledger."""
    cost_usd: float = 0.0
    """Estimated cost of the run's model calls (the ledger's price table; see docs/usage.md)."""
    context_type: str | None = None
    """The request's ``contextType`` (chat runs): labels every model call in the usage ledger."""
    profile: str = "balanced"
    entity_id: str | None = None
    host: str = "chat"
    """Which host acts on the run's stops: ``chat`` (seed 001 runs) or another registered kind."""
    client_tools: list[dict[str, Any]] = Field(default_factory=list)
    """Tools the client runs (``{name, description, parameters}``, AG-UI frontend tools): offered to
    the model like the host's virtual tools; a call pauses the run for the client's result."""
    host_state: HostState = Field(default_factory=ChatState)
    """The host's own durable state, committed with every step (e.g. a plan's current task): typed
    by host kind and versioned (``state/host_states.py``)."""
    virtual_arg_errors: int = 0
    """Malformed virtual-tool calls in this run (the first is answered, the second fails the run)."""
    lease: Lease | None = None
    lease_expires_at: float = 0.0
    """Top-level copy of ``lease.expiresAt`` (0 without a lease) so recovery can query by it."""
    pending_approval_ids: list[str] = Field(default_factory=list)
    pause_expires_at: float | None = None
    """While paused for approvals: when the last of them expires (their latest ``expiresAt``), so the
    sweep's query returns only pauses that can expire, the earliest first. None (absent) when no
    person is asked: a plan waiting for its confirmation, a chat run waiting on its plan, or a run
    paused before the field existed (the sweep's legacy pass, ``RunsRepo.legacy_pauses``)."""
    pending_turn: int | None = None
    """Turn index of the model turn whose calls await approval (resume builds its responses)."""
    paused_action_ids: list[str] | None = None
    """While paused: the actions its resume needs (the calls of the last model turn and of the
    pending turn, in order), so the resume reads them by id with the run (issue 33; the decision's
    message names them too, ``WorkMessage.paused``). None (absent) when not paused, or paused by
    code older than the field: the resume then queries the run's actions."""
    idempotency_key: str | None = None
    budget_usd: float | None = None
    """The request's ``budgetUsd``: the estimated cost the run's model calls may reach before it
    pauses with a budget approval (docs/budgets.md); an approval raises it. None: no run budget."""
    trace_parent: str | None = None
    """W3C ``traceparent`` of the unit's first ``invoke_agent`` span when tracing is on: every later
    invocation's span is its child (``shared/tracing.py``); absent when tracing was off."""
    webhook: str | None = None
    """The run's own webhook URL (its stops are delivered there too; ``shared/agent/webhooks.py``)."""
    queued: QueuedStart | None = None
    """A run queued on its thread (``multitaskStrategy: enqueue``): what it starts from."""
    started_at: float | None = None
    """When the loop first took the run (a queued run: when it left the queue)."""
    stop_requested: StopRequest | None = None
    """The run was asked to stop at its next step boundary: written on the run document (and the
    thread's ``interrupt*`` fields) by the interrupting start or the cancel, without ``updatedAt``.
    The invocation driving the run learns it from its next commit, which that write makes fail its
    condition (``RunContext.commit`` adopts it), so no step reads the thread to find out (issue 33)."""
    queued_behind: bool | None = None
    """A run was queued on the thread behind this one: written on this run by the queueing
    transaction, without ``updatedAt`` (adopted like :attr:`stop_requested`), or at this run's own
    start from the queue when more runs wait. Its end then starts the thread's next queued run; None
    (nothing was queued behind it) spares that end a read of the thread (issue 33)."""
    thread_scope: ThreadScope = "user"
    """Where the run's thread is: ``user`` (``users/{uid}/threads/{threadId}``, every run started
    since issue 35) or ``shared`` (``threads/{threadId}``, a thread begun before it). A stored run
    without the field was written before issue 35: its thread is ``shared`` (:meth:`from_doc`)."""
    result: RunResult | None = None
    error: RunError | None = None
    created_at: float = Field(default_factory=now)
    updated_at: float = Field(default_factory=now)
    schema_version: int = SCHEMA_VERSION

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_RUN_STATUSES

    @classmethod
    def from_doc(cls, data: dict[str, Any], path: str | None = None) -> Any:
        if "threadScope" not in data and data.get("threadId"):
            data = {**data, "threadScope": "shared"}
        return super().from_doc(data, path)

    @model_validator(mode="before")
    @classmethod
    def _typed_host_state(cls, data: Any) -> Any:
        """The host state as its kind's model (a version 1 dict is migrated; a newer one refused)."""
        if not isinstance(data, dict):
            return data
        host = str(data.get("host") or "chat")
        key = "host_state" if "host_state" in data else "hostState"
        raw = data.get(key)
        out = dict(data)
        if isinstance(raw, dict) and LEGACY_ARG_ERRORS in raw and not any(
                k in data for k in ("virtualArgErrors", "virtual_arg_errors")):
            out["virtualArgErrors"] = raw[LEGACY_ARG_ERRORS]
        out[key] = initial(host) if raw is None else migrate(raw, host)
        return out


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
    client_result: dict[str, Any] | None = None
    """A client tool's call: the result the client sent (the call answers with it when it runs)."""
    original_args: dict[str, Any] | None = None
    """Set when the person who approved the call edited its arguments: the model's arguments
    (``args`` are the edited ones the call runs with)."""
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
    kind: Literal["tool", "budget"] = "tool"
    """``budget``: the unit reached a money budget (docs/budgets.md); its action is ``budget_increase``."""
    budget_scope: Literal["run", "user_day", "user_month"] | None = None
    spent_usd: float | None = None
    limit_usd: float | None = None
    proposed_limit_usd: float | None = None
    """Budget approvals: what was spent against which limit, and the limit approving sets."""
    status: ApprovalStatus = "pending"
    decision_reason: str | None = None
    created_at: float = Field(default_factory=now)
    expires_at: float
    decided_at: float | None = None
    session_id: str | None = None
    """The plan session whose act waits (plan runs); the approvals inbox shows it."""
    task_id: str | None = None
    """The plan task whose act waits (plan runs)."""
    expire_at: float | None = None
    """TTL deletion time: EVENT_RETENTION_S after the approval itself expires."""
    schema_version: int = SCHEMA_VERSION


class AuditRecord(Record):
    audit_id: str
    uid: str
    kind: Literal["policy_decision", "side_effect_attempt", "side_effect_result", "approval_requested",
                  "approval_decided", "approval_superseded", "approval_expired", "recovery", "admin_change"]
    run_id: str | None = None
    action_id: str | None = None
    approval_id: str | None = None
    tool: str | None = None
    decision: str | None = None
    reason: str | None = None
    args_before: dict[str, Any] | None = None
    args_after: dict[str, Any] | None = None
    """An approval with edits: the call's arguments as the model made them and as approved (an
    admin change: the user document before and after)."""
    actor: str | None = None
    """Who made an ``admin_change`` (the admin principal's uid)."""
    at: float = Field(default_factory=now)
    expire_at: float | None = None
    """When Firestore's TTL policy may delete the entry (set from AUDIT_RETENTION_S)."""


OutboxStatus = Literal["pending", "published"]


class OutboxEntry(Record):
    """A message to publish after the commit that wrote it (``outbox/{entryId}``).

    It outlives every way the message can be lost: the handler of the message deletes it. Entries
    written before kinds existed have ``runId`` instead of ``unitId`` and no ``kind`` (a resume)."""

    entry_id: str = ""
    kind: str = "resume"
    unit_id: str | None = None
    uid: str | None = None
    approval_id: str | None = None
    traceparent: str | None = None
    """The unit's W3C trace context, sent as the message's ``traceparent`` attribute."""
    paused: str | None = None
    """A resume's hint (``WorkMessage.paused``), sent as the message's ``paused`` attribute."""
    status: OutboxStatus = "pending"
    created_at: float = Field(default_factory=now)
    published_at: float | None = None
    publish_count: int = 0
    schema_version: int = SCHEMA_VERSION

    @classmethod
    def from_stored(cls, entry_id: str, data: dict[str, Any]) -> OutboxEntry:
        if "unitId" not in data and "runId" in data:
            data = {**data, "unitId": data["runId"]}
        entry: OutboxEntry = cls.from_doc({**data, "entryId": entry_id})
        return entry


UsageOutcome = Literal["ok", "error"]


class UsageEntry(Record):
    """One model call in the usage ledger (``users/{uid}/usage/{entryId}``)."""

    entry_id: str
    uid: str
    unit_kind: str
    """run | session | task | goals | host_session ... (what ``unitId`` names)."""
    unit_id: str
    component: str
    """Who called the model: loop, goals_planner, plan_generation, reviewer, host_planner ..."""
    operation_type: str
    profile: Literal["speed", "balanced", "quality"] = "balanced"
    context_type: str | None = None
    model: str
    step: int | None = None
    turn_index: int | None = None
    usage: Usage = Field(default_factory=Usage)
    latency_ms: float = 0.0
    outcome: UsageOutcome = "ok"
    error_code: str | None = None
    cost_usd: float = 0.0
    at: float = Field(default_factory=now)
    day: str = ""
    """UTC date of ``at`` (YYYY-MM-DD), for grouping by day."""
    schema_version: int = SCHEMA_VERSION

    @computed_field  # type: ignore[prop-decorator]  # pydantic's documented form
    @property
    def tokens(self) -> int:
        """``usage.totalTokens`` at the top level of the stored entry: the store sums it per user and
        day for the daily token limit (a nested field cannot be named in a query here)."""
        return self.usage.total_tokens
