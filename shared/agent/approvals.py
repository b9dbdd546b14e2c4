"""Deciding an approval: one transaction, then a resume message through the outbox.

The decision, the action's new status, an audit entry, a touch of the run document (so any
invocation holding an older view of the run cannot commit over it) and an outbox entry (named by
the approval) are written in one transaction; the message is published after the commit
(``shared/durable/outbox.py`` says how a lost message is found again). Re-publishing is always
safe: resume is idempotent.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from shared.api import ApproveRequest
from shared.durable.kinds import RESUME
from shared.durable.messages import WorkMessage, paused_hint
from shared.errors import Conflict, Gone, NotFound, Unavailable
from shared.formats import args_hash
from shared.state.docstore import TransactionContention
from shared.state.records import AuditRecord, now
from shared.state.runs_txn import RunsTransaction, run_in_transaction
from shared.state.transitions import move_action

if TYPE_CHECKING:
    from shared.durable.dispatcher import Dispatcher
    from shared.limits import DeferredRequest
    from shared.loop.services import Services  # annotations: deciding loads no loop

log = logging.getLogger("agent_runtime.approvals")

CONTENTION_ATTEMPTS = 4
CONTENTION_BACKOFF_S = 0.2
"""A contended decision is tried again after ~0.2, 0.4, 0.8 s (jittered) before answering 503."""


@dataclass(frozen=True)
class Decision:
    run_id: str
    approval_id: str
    decision: str
    """approved | rejected | expired"""
    arguments: dict[str, Any] | None = None
    """Approved with edits: the arguments the call runs with."""


@dataclass(frozen=True)
class AlreadyDecided:
    run_id: str
    decision: str
    """What held: approved | rejected (a client retrying after a lost answer learns whether its own
    decision is the one recorded)."""
    decided_at: float | None


def decide(services: Services, dispatcher: Dispatcher | None, uid: str, req: ApproveRequest, *,
           client_result: dict[str, Any] | None = None, counter: DeferredRequest | None = None) -> Decision:
    """Record the owner's decision and ask for the run to resume (through ``dispatcher``; None:
    the services' outbox's own, built on its first publication, so a refused decision never
    creates the Pub/Sub client). Raises 404/409/410; with edited ``arguments``, 400 when they do
    not fit the tool or policy refuses them (``approval_edits.py``): then nothing is recorded.
    ``client_result``: a client tool's call approved with the result the client sent
    (``loop/client_tools.py``). ``counter``: the request's count, read with the approval and
    written by the decision's commit (issue 33: two round trips less; 429 ``RATE_LIMITED`` first,
    nothing written, when the limit is reached); a request whose decision wrote none is counted by
    the caller (``DeferredRequest.settle``)."""
    outbox = services.outbox if dispatcher is None else services.outbox.via(dispatcher)
    edited: dict[str, Any] | None = None
    if req.arguments is not None:
        from shared.agent.approval_edits import checked_edit, tool_of_pending  # loads the tools

        edited = checked_edit(services, uid, tool_of_pending(services, uid, req.approvalId), req.arguments)

    recorded: dict[str, WorkMessage] = {}
    """The resume message the committed transaction recorded (published as recorded: not read back)."""

    in_txn: list[DeferredRequest | None] = [counter]
    """The count the decision's transaction writes: none once a contention moved it out."""

    def txn(t: RunsTransaction) -> Decision | AlreadyDecided:
        counter = in_txn[0]
        if counter is None:
            approval, count = t.approval(uid, req.approvalId), None
        else:
            approval, doc = t.approval_with(uid, req.approvalId, counter.paths()[0])
            count = counter.write_for(doc)  # the limit is checked before anything else of the decision
        if approval is None:
            raise NotFound(f"approval {req.approvalId} not found", code="APPROVAL_NOT_FOUND")
        if approval.status == "expired":
            raise Gone(f"approval {approval.approval_id} expired", code="APPROVAL_EXPIRED")
        if approval.status != "pending":
            return AlreadyDecided(approval.run_id, approval.status, approval.decided_at)
        run, action = t.run_and_action(approval.run_id, approval.action_id)
        if run is None or action is None:
            raise NotFound(f"approval {req.approvalId} not found", code="APPROVAL_NOT_FOUND")
        if (run.uid != uid or action.approval_id != approval.approval_id or action.tool != approval.tool
                or action.args_hash != approval.args_hash or args_hash(action.args) != approval.args_hash):
            log.error("approval binding mismatch", extra={"fields": {"approvalId": approval.approval_id}})
            raise Conflict("the approval does not match its action", code="APPROVAL_MISMATCH")
        if run.terminal or action.status != "awaiting_confirmation":
            raise Conflict(f"the run of approval {approval.approval_id} is no longer waiting for it",
                           code="APPROVAL_CLOSED")
        at = now()
        if at > approval.expires_at:
            approval.status = "expired"
            move_action(action, "rejected")
            action.outcome, action.error = "rejected", "the approval expired"
            kind = "approval_expired"
        elif req.decision == "approve":
            approval.status = "approved"
            move_action(action, "approved")
            kind = "approval_decided"
            if client_result is not None:
                action.client_result = client_result
            if edited is not None and edited != action.args:
                # The call runs once, with the edited arguments: the action is bound to them.
                action.original_args, action.args, action.args_hash = action.args, edited, args_hash(edited)
        else:
            approval.status = "rejected"
            move_action(action, "rejected")
            action.outcome = "rejected"
            action.error = "rejected by the user" + (f": {req.reason}" if req.reason else "")
            kind = "approval_decided"
        approval.decided_at, approval.decision_reason = at, req.reason
        action.updated_at = at
        audit = AuditRecord(audit_id=services.new_id("aud"), uid=uid, kind=kind, run_id=run.run_id,
                            action_id=action.action_id, approval_id=approval.approval_id, tool=action.tool,
                            decision=approval.status, reason=req.reason, args_before=action.original_args,
                            args_after=action.args if action.original_args is not None else None)
        runs = services.runs
        t.write(runs.approval_write(approval))
        t.write(runs.action_write(action))
        t.write(runs.audit_write(audit))
        t.write(runs.touch_run_write(run.run_id, at))
        message = WorkMessage(kind=RESUME, unitId=run.run_id, uid=uid, approvalId=approval.approval_id,
                              traceparent=run.trace_parent, paused=paused_hint(run.turn_count, run.paused_action_ids))
        recorded[approval.approval_id] = message
        t.write(services.outbox.record(message, approval.approval_id))
        if count is not None:
            t.write(count)
        return Decision(run.run_id, approval.approval_id, approval.status,
                        action.args if action.original_args is not None else None)

    def count_apart() -> bool:
        # The user's counter is one document: the user's concurrent requests (an approve of each
        # pending call at once) contend on it. A contended decision is counted apart, as any other
        # request (429 ``RATE_LIMITED``, nothing decided, when even that cannot be written), and
        # decided without it: decisions of different approvals never contend with each other.
        moved = in_txn[0]
        if moved is None:
            return False
        moved.settle()
        in_txn[0] = None
        return True

    out = _decide_with_retries(services, uid, req.approvalId, txn, count_apart)
    if in_txn[0] is not None and isinstance(out, Decision):
        in_txn[0].committed()
    if isinstance(out, AlreadyDecided):
        # Replayed decision: make sure its resume message was not lost, then refuse.
        outbox.deliver(req.approvalId)
        details: dict[str, Any] = {"runId": out.run_id, "decision": out.decision}
        if out.decided_at is not None:
            from shared.wire import rfc3339

            details["decidedAt"] = rfc3339(out.decided_at)
        raise Conflict(f"approval {req.approvalId} was already decided ({out.decision})", code="ALREADY_DECIDED",
                       details=details)
    outbox.deliver_recorded(recorded[out.approval_id], out.approval_id)
    if out.decision == "expired":
        raise Gone(f"approval {out.approval_id} expired; the action was rejected", code="APPROVAL_EXPIRED",
                   details={"runId": out.run_id})
    return out


def _decide_with_retries(services: Services, uid: str, approval_id: str,
                         txn: Callable[[RunsTransaction], Decision | AlreadyDecided],
                         count_apart: Callable[[], bool]) -> Decision | AlreadyDecided:
    """Run the decision transaction. Concurrent calls for the same approval make the store give up
    on all but one (Firestore aborts the losers, sometimes before the winner committed). A loser
    looks again: decided by the other call → the caller gets 409; still pending → it tries again
    (its request counted apart first, ``count_apart``: the counter was maybe what it contended on,
    and then at once), a few times with backoff, before answering 503 (nothing written, retry)."""
    for attempt in range(CONTENTION_ATTEMPTS):
        try:
            return run_in_transaction(services.runs.store, txn)
        except TransactionContention:
            got = services.runs.get_approval(uid, approval_id)
            if got is None:
                raise NotFound(f"approval {approval_id} not found", code="APPROVAL_NOT_FOUND") from None
            approval = got[0]
            if approval.status == "expired":
                raise Gone(f"approval {approval_id} expired", code="APPROVAL_EXPIRED",
                           details={"runId": approval.run_id}) from None
            if approval.status != "pending":
                return AlreadyDecided(approval.run_id, approval.status, approval.decided_at)
            log.warning("approval decision contended; retrying", extra={"fields": {"approvalId": approval_id}})
            if count_apart():
                continue
            time.sleep(random.uniform(0.5, 1.0) * CONTENTION_BACKOFF_S * 2 ** attempt)
    raise Unavailable(f"approval {approval_id} is being decided by concurrent requests; retry",
                      code="CONTENTION", details={"retryAfterSeconds": 1})
