"""``GET /api/agent/approvals?status=pending|decided|all&limit=N``: the caller's approvals across
chat runs and plan sessions, newest first, each with what it belongs to (``runId``; ``sessionId``
and ``taskId`` when a plan's act waits). Deciding stays ``POST /api/agent/approve``.

Reads are bounded: one query of ``users/{uid}/agentApprovals`` ordered by ``createdAt`` (with the
``pending`` filter for that status), limited to ``limit`` + 1, after the ``cursor``. Pydantic and
the state records only (the ``approvals`` function imports it without the agent loop).
"""

from __future__ import annotations

from typing import Literal, get_args

from shared.responses import PageBody
from shared.state.records import Approval, ApprovalStatus
from shared.state.runs_repo import RunsRepo

InboxStatus = Literal["pending", "decided", "all"]
INBOX_STATUSES: tuple[InboxStatus, ...] = get_args(InboxStatus)


class ApprovalsList(PageBody):
    """``GET /api/agent/approvals``: newest first."""

    ok: bool = True
    approvals: list[Approval]


def inbox(runs: RunsRepo, uid: str, status: InboxStatus, limit: int, cursor: str | None = None) -> ApprovalsList:
    """One page of ``uid``'s approvals in ``status``, newest first, after ``cursor``. "pending" is
    stored as such; a pending one past expiry counts as decided (expired), so "decided" reads every
    stored status and leaves out the live pending ones (a page may then hold fewer than ``limit``;
    ``nextCursor`` still goes on from the last one read)."""
    stored: tuple[ApprovalStatus, ...] | None = ("pending",) if status == "pending" else None
    page = runs.page_approvals_for(uid, stored, limit, cursor)
    items = [Approval.of(r) for r in page.items]
    if status != "all":
        items = [a for a in items if (a.status == "pending") == (status == "pending")]
    return ApprovalsList(approvals=items, nextCursor=page.next_cursor)
