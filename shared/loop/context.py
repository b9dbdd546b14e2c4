"""The working state of one invocation on one unit of work (a run document), and its commits.

A ``RunContext`` holds the run as last committed (its snapshot token), the verbatim turns, the
writes and events produced since the last commit, the invocation's budget and the host that acts
on the loop's stops. ``commit()`` writes them in one atomic batch conditioned on the run's token:
one commit per step.

The host is seen here only as :class:`UnitHost` (what the loop asks of it); ``loop/host.py``'s
``Host`` implements it, so this module imports no module of the loop (no cycle, not even for types).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from shared.config import Settings
from shared.durable import leases
from shared.errors import TransactionContention
from shared.events import event_to_doc
from shared.failures import FailureCode
from shared.loop.outcomes import BudgetSpent, HostStep, NextStepInterruption, Settled, StopOutcome
from shared.loop.services import HostLookup as HostLookup
from shared.loop.services import Services as Services
from shared.models.base import ToolDeclaration, Turn
from shared.state.docstore import PreconditionFailed, Write
from shared.state.records import (
    ActionRecord,
    Approval,
    ApprovalRecord,
    AuditRecord,
    RunRecord,
    UsageEntry,
    UserRecord,
    now,
)
from shared.state.runs_repo import RunSnapshot
from shared.state.users_repo import Stamps

if TYPE_CHECKING:
    from shared.events.run import RunEvent
    from shared.tools.registry import Tool, ToolRegistry  # annotations: approve loads no tools

log = logging.getLogger("agent_runtime.agent")

EventListener = Callable[[dict[str, Any]], None]
SENT_AFTER_COMMIT = frozenset({"usage", "result", "error", "plan_status", "plan_result"})
COMMIT_RETRIES = 4
"""A step's commit is tried again this many times after a stop request or a queued run's notice moved
the run document, or after contention (concurrent transactions queueing behind the run hold it)."""
CONTENTION_BACKOFF_S = 0.05


@dataclass(frozen=True)
class Budget:
    """What one invocation may spend on a unit: until ``deadline`` (``time.monotonic()``) minus
    ``yield_margin_s``, and ``max_steps`` model calls (None: the run's own ``maxSteps``)."""

    deadline: float
    max_steps: int | None = None
    yield_margin_s: float = 0.0


class UnitHost(Protocol):
    """What the loop asks of the host of a unit (``loop/host.py`` documents each hook)."""

    @property
    def kind(self) -> str: ...
    @property
    def operation_type(self) -> str: ...
    def budget(self, settings: Settings) -> Budget: ...
    def budget_spent(self, ctx: RunContext, why: BudgetSpent) -> StopOutcome: ...
    def resumed(self, ctx: RunContext) -> None: ...
    def before_step(self, ctx: RunContext) -> StopOutcome | None: ...
    def after_step(self, ctx: RunContext, outcome: Settled) -> HostStep | None: ...
    def after_step_max_usd(self, ctx: RunContext) -> float: ...
    def before_tool(self, ctx: RunContext, tool: str) -> None: ...
    def declarations(self, ctx: RunContext) -> list[ToolDeclaration]: ...
    def virtual_tools(self, ctx: RunContext) -> Mapping[str, Tool]: ...
    def confirm_reason(self, ctx: RunContext, tool: str, args: dict[str, Any]) -> str | None: ...
    def approval_subject(self, ctx: RunContext) -> tuple[str | None, str | None]: ...
    def allows(self, ctx: RunContext, tool: str) -> bool: ...
    def act(self, ctx: RunContext, outcome: StopOutcome) -> None: ...
    def interrupt(self, ctx: RunContext, outcome: NextStepInterruption) -> None: ...
    def fail(self, ctx: RunContext, code: FailureCode, message: str) -> None: ...


@dataclass
class RunContext:
    services: Services
    snapshot: RunSnapshot
    turns: list[Turn]
    user: UserRecord
    deadline: float
    """time.monotonic() value after which the invocation's time budget is spent."""
    owner: str
    host: UnitHost
    listener: EventListener | None = None
    max_steps: int | None = None
    """Model calls this invocation may make (default: the run's ``maxSteps``)."""
    yield_margin_s: float = 0.0
    """Time left below which the budget counts as spent (room to commit and hand over)."""
    pending: list[Write] = field(default_factory=list)
    pending_events: list[dict[str, Any]] = field(default_factory=list)
    pending_actions: dict[str, ActionRecord] = field(default_factory=dict)
    last_action: ActionRecord | None = None
    """The action the run's result reports (``actionId``, ``tool``, ``toolArgs``)."""
    after_commit: list[Callable[[], None]] = field(default_factory=list)
    """Run once the next commit succeeded (e.g. releasing a budget reservation; errors are logged)."""
    stamps: Stamps | None = None
    """The user's stamps as this invocation read them (shared/state/users_repo.py): the tool list's
    queries are skipped for collections known empty; a 0 learned is recorded by the next commit."""
    approvals: dict[str, ApprovalRecord] = field(default_factory=dict)
    """The approvals this invocation asked for, by id (what its pause shows)."""
    read_approvals: dict[str, ApprovalRecord | None] = field(default_factory=dict)
    """Approvals an earlier invocation asked for, read back by :meth:`approval_record` (None: gone)."""
    seen_actions: dict[str, ActionRecord] = field(default_factory=dict)
    """The run's actions this invocation read (a resume) or put, by id: a pause names those its
    resume needs (:meth:`resume_action_ids`)."""
    _registry: ToolRegistry | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.run: RunRecord = self.snapshot.run.model_copy(deep=True)
        self.committed_seq = self.run.last_seq
        """The last event sequence number the store holds (a follower resumes after it)."""
        self._persisted_turns = len(self.turns)
        self._held: list[dict[str, Any]] = []
        self._committed_at = self.run.updated_at
        """``updatedAt`` as this invocation last committed it (``commit`` tells a stop request from a takeover)."""
        self.steps_at_start = self.run.steps
        """Each invocation (a fresh run, a resume, a continuation) gets its own step budget."""
        if self.max_steps is None:
            self.max_steps = self.run.max_steps

    @property
    def registry(self) -> ToolRegistry:
        """The tools of this run's user (built once per invocation: the user's own MCP servers
        join it; a resume in another process builds the same from the store)."""
        if self._registry is None:
            self._registry = self.services.registry_for(self.run.uid, self.stamps)
        return self._registry

    def log_fields(self) -> dict[str, str]:
        """The run's ids for ``shared.logs.log_context``: every line logged while serving it."""
        return {"runId": self.run.run_id, "threadId": self.run.thread_id, "uid": self.run.uid}

    # ---- events ------------------------------------------------------------------------------
    def emit(self, event: RunEvent | dict[str, Any]) -> dict[str, Any]:
        """Give ``event`` the next sequence number, send it live and queue it for the next commit.
        ``event`` is an event, or its document as ``event_to_doc`` gives it (the step's own events:
        ``shared/events/loop.py`` builds them without a model), which this numbers in place.

        Progress (status, deltas, tool calls and results) goes out at once. The stop events
        (``usage``, ``result``, ``error``) go out only after the commit that records the stop, so a
        client is never told a run completed, paused or failed when the store did not record it.
        """
        self.run.last_seq += 1
        if isinstance(event, dict):
            doc = event
            doc["seq"] = self.run.last_seq
        else:
            event.seq = self.run.last_seq
            doc = event_to_doc(event)
        self.pending_events.append(doc)
        if doc.get("type") in SENT_AFTER_COMMIT:
            self._held.append(doc)
        else:
            self._send(doc)
        return doc

    def _send(self, doc: dict[str, Any]) -> None:
        if self.listener is None:
            return
        try:
            self.listener(doc)
        except Exception:  # a broken client must not break the run
            log.warning("event listener failed", exc_info=True)

    # ---- turns and writes --------------------------------------------------------------------
    def add_turn(self, turn: Turn) -> int:
        self.turns.append(turn)
        return len(self.turns) - 1

    def write(self, *writes: Write) -> None:
        self.pending.extend(writes)

    def charge(self, entry: UsageEntry) -> None:
        """Add a metered model call to the run's usage and cost, and queue its ledger entry: the one
        way a unit's model calls are accounted (the loop's own and its host's)."""
        self.run.usage = self.run.usage + entry.usage
        self.run.cost_usd = round(self.run.cost_usd + entry.cost_usd, 8)
        self.write(*self.services.usage.entry_writes(entry))

    def put_action(self, action: ActionRecord) -> None:
        """Queue the action's current state (written whole at the next commit)."""
        action.updated_at = now()
        self.pending_actions[action.action_id] = action
        self.seen_actions[action.action_id] = action

    def resume_action_ids(self, pending_turn: int) -> list[str]:
        """The ids of the actions a resume of a pause at ``pending_turn`` needs, in order: those of
        the last turn (its model turn's calls) and of ``pending_turn`` (a budget approval's sits at
        the next index), as this invocation knows them (``RunRecord.paused_action_ids``)."""
        turns = {len(self.turns) - 1, pending_turn}
        return [a.action_id for a in sorted(self.seen_actions.values(), key=lambda a: (a.turn_index, a.call_index))
                if a.turn_index in turns]

    def ask(self, approval: ApprovalRecord) -> None:
        """Queue a new approval (written at the next commit; the pause that follows shows it)."""
        self.approvals[approval.approval_id] = approval
        self.write(self.services.runs.approval_write(approval))

    def approval_record(self, action: ActionRecord) -> ApprovalRecord | None:
        """The approval ``action`` waits for: as this invocation asked for it, or an earlier one's
        (a pause re-entered on recovery) read back once. None without one (or when it is gone)."""
        if not action.approval_id:
            return None
        if action.approval_id not in self.approvals and action.approval_id not in self.read_approvals:
            got = self.services.runs.get_approval(self.run.uid, action.approval_id)
            self.read_approvals[action.approval_id] = got[0] if got is not None else None
        return self.approvals.get(action.approval_id) or self.read_approvals.get(action.approval_id)

    def waiting_approvals(self, actions: list[ActionRecord]) -> list[Approval]:
        """The approvals ``actions`` wait for, as the API shows them (:meth:`approval_record`)."""
        out: list[Approval] = []
        for action in actions:
            if not action.approval_id:
                continue
            record = self.approval_record(action)
            out.append(Approval.of(record) if record is not None else Approval(
                approval_id=action.approval_id, tool=action.tool, reason=action.policy_reason or "",
                preview=action.tool, run_id=self.run.run_id))
        return out

    def audit(self, record: AuditRecord) -> None:
        self.pending.append(self.services.runs.audit_write(record))

    def new_audit(self, **fields: Any) -> AuditRecord:
        return AuditRecord(audit_id=self.services.new_id("aud"), uid=self.run.uid, run_id=self.run.run_id,
                           **fields)

    # ---- budget ------------------------------------------------------------------------------
    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def steps_taken(self) -> int:
        return self.run.steps - self.steps_at_start

    @property
    def budgeted(self) -> bool:
        """A money budget applies to the unit (docs/budgets.md): its own ``budgetUsd`` or the users'
        daily or monthly cap. When none does, the budget modules are never imported (cold start)."""
        settings = self.services.settings
        return self.run.budget_usd is not None or bool(settings.budget_user_daily_usd
                                                       or settings.budget_user_monthly_usd)

    # ---- commit ------------------------------------------------------------------------------
    @property
    def dirty(self) -> bool:
        """Whether anything waits for the next commit: writes, events, actions, new turns or work
        to do once it is committed (a run's own changes always come with one of these)."""
        return bool(self.pending or self.pending_events or self.pending_actions or self.after_commit
                    or len(self.turns) > self._persisted_turns)

    def commit(self, *, park: bool = False) -> None:
        """Commit everything pending with the run. The invocation keeps (renews) its lease while the
        run works; a stopped or paused run has none; ``park`` leaves a parked lease (the run
        yielded and waits for its ``continue`` message)."""
        run = self.run
        ttl = self.services.settings.lease_ttl_s
        if run.terminal or run.status == "awaiting_confirmation":
            run.lease = None
        else:
            run.lease = leases.parked(ttl) if park else leases.held(self.owner, ttl)
        run.lease_expires_at = run.lease.expires_at if run.lease else 0.0
        new_turns = {i: self.turns[i] for i in range(self._persisted_turns, len(self.turns))}
        run.turn_count = len(self.turns)
        zeros = self.stamps.zero_write() if self.stamps is not None else None
        if zeros is not None:
            self.pending.append(zeros)
        runs = self.services.runs
        actions = list(self.pending_actions.values())
        snap, attempt = self.snapshot, 0
        while True:
            try:
                self.snapshot = runs.commit_step(snap, run, new_turns=new_turns, actions=actions,
                                                 writes=self.pending, events=self.pending_events)
                break
            except PreconditionFailed:
                # The run was asked to stop (``stop_requested``: the host stops it at the next step
                # boundary) or told a run waits behind it (``queuedBehind``), or another invocation
                # took it over (raised: this one stops).
                token = runs.adopt_stop(run, self._committed_at, self.owner)
                if token is None or attempt >= COMMIT_RETRIES:
                    raise
                snap = RunSnapshot(self.snapshot.run, token)
            except TransactionContention:
                # Nothing was written (the commit is atomic and conditioned on the run's token):
                # transactions of runs queueing behind this one hold its documents; wait and retry.
                if attempt >= COMMIT_RETRIES:
                    raise
                time.sleep(CONTENTION_BACKOFF_S * 2 ** attempt)
            attempt += 1
        self._committed_at = self.snapshot.run.updated_at
        # The committed run *is* the working copy from here on (no copy per step): only its token
        # and last sequence number are read as "the stored state".
        self.run = self.snapshot.run
        self.committed_seq = self.run.last_seq
        self._persisted_turns = len(self.turns)
        self.pending = []
        self.pending_actions = {}
        self.pending_events = []
        held, self._held = self._held, []
        for doc in held:
            self._send(doc)
        done, self.after_commit = self.after_commit, []
        for hook in done:
            try:
                hook()
            except Exception:
                log.warning("an after-commit hook failed", exc_info=True)
