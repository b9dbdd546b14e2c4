"""Closing a run paused for approval inside another transaction: a new run starts on its thread
(superseded, or expired: nobody decided within ``APPROVAL_TTL_S``), the sweep finds its approvals
expired, or its plan session is cancelled or past its deadline. The writes are a repository
operation (the layout of approvals, actions, audit entries and events stays in this package); what
the stop means for the run (failure code, message, event) is decided by the loop's stops
(``loop/stops.close_paused``), handed in as ``fail``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from shared.ids import new_id
from shared.state import paths
from shared.state.docstore import Transaction, Write
from shared.state.records import ActionRecord, ApprovalRecord, AuditRecord, RunRecord, now
from shared.state.transitions import move_action

CloseReason = Literal["superseded", "expired", "cancelled", "deadline_exceeded"]
"""Why a run paused for approval is closed when a new run starts on its thread."""
PauseState = Literal["open", "expired", "decided"]
FailPaused = Callable[[RunRecord, CloseReason, str], dict[str, Any]]
"""``fail(run, reason, by_run)``: ends the paused ``run`` (as read) in place, failed for ``reason``
(closed by run ``by_run``, or "" for the sweep or the session), and returns the event to append."""


def pause_state(t: Transaction, run: RunRecord) -> PauseState | None:
    """Of a run paused for approval: ``open`` while a person may still decide (an approval is
    pending and not expired), ``expired`` when every pending one is past its ``expiresAt``,
    ``decided`` when none is pending (the run is about to resume: active, not waiting). None when
    the run is not paused."""
    if run.status != "awaiting_confirmation":
        return None
    pending: list[ApprovalRecord] = []
    for approval_id in run.pending_approval_ids:
        doc = t.get(paths.approval(run.uid, approval_id))
        if doc is not None and doc.data.get("status") == "pending":
            pending.append(ApprovalRecord.from_doc(doc.data, doc.path))
    if not pending:
        return "decided"
    at = now()
    return "expired" if all(a.expires_at < at for a in pending) else "open"


def close_paused(t: Transaction, run: RunRecord, token: str, new_run_id: str, reason: CloseReason, *,
                 fail: FailPaused, event_write: Callable[[str, dict[str, Any]], Write],
                 audit_write: Callable[[AuditRecord], Write]) -> None:
    """Close ``run`` (as read in ``t`` with ``token``): its open approvals are closed (rejected, or
    expired), the actions of its pause that have not run (awaiting a decision, or approved but not
    yet resumed) are rejected, every one audited, and the run is written as ``fail`` ended it, with
    the event it returned, conditioned on ``token``."""
    at = now()
    expired = reason == "expired"
    approvals = [t.get(paths.approval(run.uid, a)) for a in run.pending_approval_ids]
    actions = [t.get(paths.action(run.run_id, ApprovalRecord.from_doc(d.data, d.path).action_id))
               for d in approvals if d is not None]
    for doc in approvals:
        if doc is None:
            continue
        approval = ApprovalRecord.from_doc(doc.data, doc.path)
        if approval.status not in ("pending", "approved"):
            continue
        if approval.status == "pending":  # closed undecided: it expired, or its session was cancelled
            approval.status = "expired" if expired else "cancelled" if reason == "cancelled" else "rejected"
            approval.decided_at, approval.decision_reason = at, reason
            t.write(Write("set", paths.approval(run.uid, approval.approval_id), approval.to_doc()))
        decision = "cancelled" if reason == "cancelled" else approval.status if expired else "rejected"
        audit = AuditRecord(audit_id=new_id("aud"), uid=run.uid,
                            kind="approval_expired" if expired else "approval_superseded",
                            run_id=run.run_id, action_id=approval.action_id, approval_id=approval.approval_id,
                            tool=approval.tool, decision=decision, reason=f"{reason}; closed by run {new_run_id}")
        t.write(audit_write(audit))
    action_error = {"expired": "the approval expired before anyone decided",
                    "cancelled": "cancelled",
                    "deadline_exceeded": "its plan session's deadline passed"}.get(reason, "superseded by a new run")
    for doc in actions:
        if doc is None:
            continue
        action = ActionRecord.from_doc(doc.data, doc.path)
        if action.status in ("awaiting_confirmation", "approved"):
            move_action(action, "rejected")
            action.outcome, action.error = "rejected", action_error
            action.updated_at = at
            t.write(Write("set", paths.action(run.run_id, action.action_id), action.to_doc()))
    event = fail(run, reason, new_run_id)
    t.write(event_write(run.run_id, event))
    t.write(Write("set", paths.run(run.run_id), run.to_doc(), if_token=token))
