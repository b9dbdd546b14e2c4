"""Deciding an approval: one transaction, then a resume message through an outbox.

The decision, the action's new status, an audit entry, a touch of the run document (so any
invocation holding an older view of the run cannot commit over it) and an ``outbox`` entry are
written in one transaction. The resume message is published after the commit and the entry is
marked ``published``; the resume function deletes it once it has handled the message (resumed the
run, or found it waiting for another decision, ended or gone). So an entry outlives every way the
message can be lost: a crash between commit and publish leaves it ``pending`` (re-published by a
replayed approve call or the periodic sweep after ``OUTBOX_GRACE_S``), and a message that was
published but never handled (every delivery died, then Pub/Sub dead-lettered it) leaves it
``published``, which the sweep re-publishes after twice the resume lease. Re-publishing is always
safe: resume is idempotent.
"""

from __future__ import annotations

import contextlib
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from shared.agent.context import Services
from shared.api import ApproveRequest
from shared.dispatch import Dispatcher, ResumeMessage
from shared.errors import Conflict, Gone, NotFound, Unavailable
from shared.events import ErrorEvent, event_to_doc
from shared.state import paths
from shared.state.docstore import PreconditionFailed, Query, Transaction, TransactionContention, Write
from shared.state.records import ActionRecord, ApprovalRecord, AuditRecord, RunError, RunRecord, now
from shared.state.runs_repo import CloseReason, RunSnapshot
from shared.tools.registry import args_hash

log = logging.getLogger("agent_runtime.approvals")

OUTBOX = "outbox"
OUTBOX_GRACE_S = 30.0
"""The sweep re-publishes pending outbox entries older than this (younger ones are still being published)."""


REPUBLISH_MAX_WAIT_S = 6 * 3600.0
REPUBLISH_ALERT_AFTER = 5
"""A published entry is re-sent after 2, 4, 8 leases, … (at most 6 h apart); from its
fifth publication on, each re-send is logged as an error."""

CONTENTION_ATTEMPTS = 4
CONTENTION_BACKOFF_S = 0.2
"""A contended decision is tried again after ~0.2, 0.4, 0.8 s (jittered) before answering 503."""


def outbox_path(approval_id: str) -> str:
    return f"{OUTBOX}/{approval_id}"


@dataclass(frozen=True)
class Decision:
    run_id: str
    approval_id: str
    decision: str
    """approved | rejected | expired"""


def decide(services: Services, dispatcher: Dispatcher, uid: str, req: ApproveRequest) -> Decision:
    """Record the owner's decision and ask for the run to resume. Raises 404/409/410."""

    def txn(t: Transaction) -> Decision | tuple[str, str]:
        doc = t.get(paths.approval(uid, req.approvalId))
        if doc is None:
            raise NotFound(f"approval {req.approvalId} not found", code="APPROVAL_NOT_FOUND")
        approval = ApprovalRecord.from_doc(doc.data)
        if approval.status == "expired":
            raise Gone(f"approval {approval.approval_id} expired", code="APPROVAL_EXPIRED")
        if approval.status != "pending":
            return ("decided", approval.run_id)
        run_doc = t.get(paths.run(approval.run_id))
        act_doc = t.get(paths.action(approval.run_id, approval.action_id))
        if run_doc is None or act_doc is None:
            raise NotFound(f"approval {req.approvalId} not found", code="APPROVAL_NOT_FOUND")
        run = RunRecord.from_doc(run_doc.data)
        action = ActionRecord.from_doc(act_doc.data)
        if (run.uid != uid or action.approval_id != approval.approval_id or action.tool != approval.tool
                or action.args_hash != approval.args_hash or args_hash(action.args) != approval.args_hash):
            log.error("approval binding mismatch", extra={"fields": {"approvalId": approval.approval_id}})
            raise Conflict("the approval does not match its action", code="APPROVAL_MISMATCH")
        if run.terminal or action.status != "awaiting_confirmation":
            raise Conflict(f"the run of approval {approval.approval_id} is no longer waiting for it",
                           code="APPROVAL_CLOSED")
        at = now()
        expired = at > approval.expires_at
        if expired:
            approval.status = "expired"
            action.status, action.outcome, action.error = "rejected", "rejected", "the approval expired"
            kind = "approval_expired"
        elif req.decision == "approve":
            approval.status = "approved"
            action.status = "approved"
            kind = "approval_decided"
        else:
            approval.status = "rejected"
            action.status, action.outcome = "rejected", "rejected"
            action.error = "rejected by the user" + (f": {req.reason}" if req.reason else "")
            kind = "approval_decided"
        approval.decided_at, approval.decision_reason = at, req.reason
        action.updated_at = at
        audit = AuditRecord(audit_id=services.new_id("aud"), uid=uid, kind=kind, run_id=run.run_id,
                            action_id=action.action_id, approval_id=approval.approval_id, tool=action.tool,
                            decision=approval.status, reason=req.reason)
        t.write(Write("set", paths.approval(uid, approval.approval_id), approval.to_doc()))
        t.write(Write("set", paths.action(run.run_id, action.action_id), action.to_doc()))
        t.write(services.runs.audit_write(audit))
        t.write(Write("update", paths.run(run.run_id), {"updatedAt": at}))
        t.write(Write("set", outbox_path(approval.approval_id),
                      {"runId": run.run_id, "uid": uid, "approvalId": approval.approval_id,
                       "status": "pending", "createdAt": at}))
        return Decision(run.run_id, approval.approval_id, approval.status)

    out = _decide_with_retries(services, uid, req.approvalId, txn)
    if isinstance(out, tuple):
        # Replayed decision: make sure its resume message was not lost, then refuse.
        redeliver(services, dispatcher, req.approvalId)
        raise Conflict(f"approval {req.approvalId} was already decided", code="ALREADY_DECIDED",
                       details={"runId": out[1]})
    deliver(services, dispatcher, out.approval_id)
    if out.decision == "expired":
        raise Gone(f"approval {out.approval_id} expired; the action was rejected", code="APPROVAL_EXPIRED",
                   details={"runId": out.run_id})
    return out


def _decide_with_retries(services: Services, uid: str, approval_id: str,
                         txn: Callable[[Transaction], Decision | tuple[str, str]]) -> Decision | tuple[str, str]:
    """Run the decision transaction. Concurrent calls for the same approval make the store give up
    on all but one (Firestore aborts the losers, sometimes before the winner committed). A loser
    looks again: decided by the other call → the caller gets 409; still pending → it tries again,
    a few times with backoff, before answering 503 (nothing written, retry)."""
    for attempt in range(CONTENTION_ATTEMPTS):
        try:
            return services.runs.store.run_transaction(txn)
        except TransactionContention:
            doc = services.runs.store.get(paths.approval(uid, approval_id))
            if doc is None:
                raise NotFound(f"approval {approval_id} not found", code="APPROVAL_NOT_FOUND") from None
            approval = ApprovalRecord.from_doc(doc.data)
            if approval.status == "expired":
                raise Gone(f"approval {approval_id} expired", code="APPROVAL_EXPIRED",
                           details={"runId": approval.run_id}) from None
            if approval.status != "pending":
                return ("decided", approval.run_id)
            log.warning("approval decision contended; retrying", extra={"fields": {"approvalId": approval_id}})
            time.sleep(random.uniform(0.5, 1.0) * CONTENTION_BACKOFF_S * 2 ** attempt)
    raise Unavailable(f"approval {approval_id} is being decided by concurrent requests; retry",
                      code="CONTENTION", details={"retryAfterSeconds": 1})


def deliver(services: Services, dispatcher: Dispatcher, approval_id: str) -> bool:
    """Publish the outbox entry's resume message and mark the entry ``published`` (the resume that
    handles the message deletes it). False if the publish failed and the entry stays pending."""
    store = services.runs.store
    doc = store.get(outbox_path(approval_id))
    if doc is None:
        return True
    msg = ResumeMessage(runId=doc.data["runId"], uid=doc.data["uid"], approvalId=approval_id)
    try:
        dispatcher.publish(msg)
    except Exception:
        log.exception("resume publish failed; the outbox keeps it", extra={"fields": {"runId": msg.runId}})
        return False
    # ``update`` fails when the resume already handled the message and deleted the entry: then
    # there is nothing left to track (never recreate it).
    count = int(doc.data.get("publishCount", 0)) + 1
    with contextlib.suppress(PreconditionFailed):
        store.commit([Write("update", outbox_path(approval_id),
                            {"status": "published", "publishedAt": now(), "publishCount": count})])
    return True


def redeliver(services: Services, dispatcher: Dispatcher, approval_id: str) -> None:
    deliver(services, dispatcher, approval_id)


def handled(services: Services, message: ResumeMessage) -> None:
    """The resume message of a decision was handled: its outbox entry has done its job. Only the
    entry the message was made from is removed (same approval, run and user)."""
    if message.approvalId is None:
        return
    store = services.runs.store
    doc = store.get(outbox_path(message.approvalId))
    if doc is None or doc.data.get("runId") != message.runId or doc.data.get("uid") != message.uid:
        return
    with contextlib.suppress(PreconditionFailed):
        store.commit([Write("delete", doc.path, if_token=doc.token)])


def sweep_outbox(services: Services, dispatcher: Dispatcher, *, older_than_s: float = OUTBOX_GRACE_S,
                 republish_after_s: float | None = None, limit: int = 100) -> int:
    """Re-publish outbox entries whose message may be lost: ``pending`` ones older than
    ``older_than_s`` (a crash between commit and publish) and ``published`` ones not handled within
    ``republish_after_s`` (default: twice the resume lease). Returns how many were re-published."""
    at = now()
    if republish_after_s is None:
        republish_after_s = 2 * services.settings.lease_ttl_s
    sent = 0
    for status in ("pending", "published"):
        docs = services.runs.store.query(Query(OUTBOX, where=(("status", status),), order_by="createdAt",
                                               limit=limit))
        for d in docs:
            if status == "pending":
                due = float(d.data.get("createdAt", 0)) + older_than_s
            else:
                # A message that keeps failing must not be re-sent at a steady beat forever: the
                # wait doubles with each publication (capped), and from the fifth one it is
                # reported as an error for an operator to look at.
                count = int(d.data.get("publishCount", 1))
                due = float(d.data.get("publishedAt", 0)) + min(
                    REPUBLISH_MAX_WAIT_S, republish_after_s * 2 ** max(0, count - 1))
                if due <= at and count >= REPUBLISH_ALERT_AFTER:
                    log.error("resume message published %d times and never handled", count,
                              extra={"fields": {"approvalId": d.id, "runId": d.data.get("runId")}})
            if due <= at and deliver(services, dispatcher, d.id):
                sent += 1
    return sent


def supersede_writes(services: Services, t: Transaction, snap: RunSnapshot, new_run_id: str,
                     reason: CloseReason = "superseded") -> None:
    """Close a run paused for approval because a new run starts on its thread: superseded (the
    request set ``supersede``), or expired (nobody decided within ``APPROVAL_TTL_S``). Its open
    approvals are closed (rejected, or expired), the actions of its pause that have not run
    (awaiting a decision, or approved but not yet resumed) are rejected, every one audited, and
    the run ends ``failed`` (``SUPERSEDED`` / ``APPROVAL_EXPIRED``)."""
    run = snap.run
    at = now()
    expired = reason == "expired"
    approvals = [t.get(paths.approval(run.uid, a)) for a in run.pending_approval_ids]
    actions = [t.get(paths.action(run.run_id, ApprovalRecord.from_doc(d.data).action_id))
               for d in approvals if d is not None]
    for doc in approvals:
        if doc is None:
            continue
        approval = ApprovalRecord.from_doc(doc.data)
        if approval.status not in ("pending", "approved"):
            continue
        if approval.status == "pending":
            approval.status = "expired" if expired else "rejected"
            approval.decided_at, approval.decision_reason = at, reason
            t.write(Write("set", paths.approval(run.uid, approval.approval_id), approval.to_doc()))
        audit = AuditRecord(audit_id=services.new_id("aud"), uid=run.uid,
                            kind="approval_expired" if expired else "approval_superseded",
                            run_id=run.run_id, action_id=approval.action_id, approval_id=approval.approval_id,
                            tool=approval.tool, decision=approval.status if expired else "rejected",
                            reason=f"{reason}; closed by run {new_run_id}")
        t.write(services.runs.audit_write(audit))
    action_error = "the approval expired before anyone decided" if expired else "superseded by a new run"
    for doc in actions:
        if doc is None:
            continue
        action = ActionRecord.from_doc(doc.data)
        if action.status in ("awaiting_confirmation", "approved"):
            action.status, action.outcome, action.error = "rejected", "rejected", action_error
            action.updated_at = at
            t.write(Write("set", paths.action(run.run_id, action.action_id), action.to_doc()))
    if expired:
        code, message = "APPROVAL_EXPIRED", f"its approval expired; closed when run {new_run_id} started on the thread"
    else:
        code, message = "SUPERSEDED", f"superseded by run {new_run_id} on the same thread"
    run.status, run.error, run.updated_at = "failed", RunError(code=code, message=message), at
    run.lease, run.lease_expires_at = None, 0.0
    run.pending_approval_ids, run.pending_turn = [], None
    if run.result is not None:
        run.result = run.result.model_copy(update={"ok": False, "status": "failed", "summary": message,
                                                   "error": run.error})
    run.last_seq += 1
    event = event_to_doc(ErrorEvent(seq=run.last_seq, error=message, code=code))
    t.write(services.runs.event_write(run.run_id, event))
    t.write(Write("set", paths.run(run.run_id), run.to_doc(), if_token=snap.token))
