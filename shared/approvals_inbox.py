"""``GET /api/agent/approvals?status=pending|decided|all&limit=N``: the caller's approvals across
chat runs and plan sessions, newest first, each with what it belongs to (``runId``; ``sessionId``
and ``taskId`` when a plan's act waits). Deciding stays ``POST /api/agent/approve``.

Reads are bounded: one query of ``users/{uid}/agentApprovals`` ordered by ``createdAt`` per stored
status asked for, each limited to ``limit``. Pydantic and the state records only (the ``approvals``
function imports it without the agent loop).
"""

from __future__ import annotations

from typing import Literal, get_args

from shared.responses import Approval, ResponseBody
from shared.state.records import ApprovalRecord, ApprovalStatus, now
from shared.state.runs_repo import RunsRepo

InboxStatus = Literal["pending", "decided", "all"]
INBOX_STATUSES: tuple[InboxStatus, ...] = get_args(InboxStatus)


class ApprovalsList(ResponseBody):
    """``GET /api/agent/approvals``: newest first."""

    ok: bool = True
    approvals: list[Approval]


def approval_item(record: ApprovalRecord, *, session_id: str | None = None) -> Approval:
    """An approval as the API lists it. A pending one past its expiry is shown ``expired``: it can
    no longer be decided (the sweep closes it soon)."""
    status: ApprovalStatus = record.status
    if status == "pending" and record.expires_at <= now():
        status = "expired"
    return Approval(approvalId=record.approval_id, tool=record.tool, preview=record.preview, reason=record.reason,
                    status=status, createdAt=record.created_at, expiresAt=record.expires_at,
                    decidedAt=record.decided_at, runId=record.run_id,
                    sessionId=record.session_id or session_id, taskId=record.task_id)


def inbox(runs: RunsRepo, uid: str, status: InboxStatus, limit: int) -> ApprovalsList:
    """``uid``'s approvals in ``status``, newest first, at most ``limit``."""
    if status == "all":
        records = runs.list_approvals_for(uid, None, limit)
    else:  # "pending" is stored as such; a pending one past expiry counts as decided (expired)
        stored: tuple[ApprovalStatus, ...] = ("pending",) if status == "pending" else get_args(ApprovalStatus)
        records = [r for s in stored for r in runs.list_approvals_for(uid, s, limit)]
    items = [approval_item(r) for r in records]
    if status != "all":
        items = [a for a in items if (a.status == "pending") == (status == "pending")]
    items.sort(key=lambda a: a.createdAt, reverse=True)
    return ApprovalsList(approvals=items[:limit])
