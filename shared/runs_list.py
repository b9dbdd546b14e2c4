"""``GET /api/agent/runs?limit=N&cursor=C``: the caller's runs, newest first, one summary each.

A summary is what a list needs (status, thread, usage, the approvals a paused run waits for); the
whole record stays at ``GET /api/agent/runs/{runId}`` and the timeline at its events route.
Pydantic and the state records only: the ``runs`` function imports it without the agent loop.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from shared.responses import PageBody, ResponseBody
from shared.state.host_states import PlanRunState
from shared.state.records import Approval, RunError, RunMode, RunRecord, RunStatus, reported_status
from shared.state.runs_repo import RunsRepo
from shared.token_usage import Usage
from shared.wire import UtcTime


class RunSummary(ResponseBody):
    runId: str
    threadId: str | None = Field(default=None, description="the conversation (none for a plan session's run)")
    status: RunStatus
    mode: RunMode | None = None
    host: str
    model: str
    steps: int
    lastSeq: int = Field(description="seq of the run's last event (read them with the events route)")
    sessionId: str | None = Field(default=None, description="the plan session this run executes (host plan)")
    summary: str = Field(default="", description="the result's summary as of the run's last stop")
    approvals: list[Approval] = Field(default_factory=list,
                                          description="the approvals of the pause the run is in (status "
                                                      "awaiting_confirmation); one already decided answers 409 "
                                                      "when decided again")
    error: RunError | None = None
    usage: Usage
    costUsd: float
    budgetUsd: float | None = Field(default=None, description="the run's money budget (docs/budgets.md)")
    createdAt: UtcTime
    updatedAt: UtcTime


class RunsListResponse(PageBody):
    ok: bool = True
    runs: list[RunSummary]


def stored_approvals(runs: RunsRepo, run: RunRecord) -> list[Approval]:
    """The pending approvals a paused run waits for, read by id (a plan's run pauses without a
    chat result that lists them): at most the run's ``pendingApprovalIds``."""
    out: list[Approval] = []
    for approval_id in run.pending_approval_ids:
        got = runs.get_approval(run.uid, approval_id)
        if got is not None and got[0].status == "pending":
            out.append(Approval.of(got[0]))
    return out


def plan_summary(plan: PlanRunState) -> str:
    """A plan run's one line: its session, how many tasks ended how (read from the run alone)."""
    live = [t for t in plan.tasks if t.status != "obsolete"]
    counts = {s: sum(1 for t in live if t.status == s) for s in ("completed", "rejected", "failed", "cancelled")}
    ended = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    return f"plan session {plan.session_id}: {len(live)} tasks" + (f" ({ended})" if ended else "")


def summary(run: RunRecord, runs: RunsRepo | None = None) -> RunSummary:
    approvals: list[Approval] = []
    if run.status == "awaiting_confirmation" and run.result is not None:
        approvals = run.result.approvals or ([run.result.approval] if run.result.approval else [])
    if run.status == "awaiting_confirmation" and not approvals and runs is not None:
        approvals = stored_approvals(runs, run)
    plan = run.host_state if isinstance(run.host_state, PlanRunState) else None
    return RunSummary(runId=run.run_id, threadId=run.thread_id or None, status=reported_status(run), mode=run.mode,
                      host=run.host, sessionId=plan.session_id if plan else None,
                      model=run.model, steps=run.steps, lastSeq=run.last_seq,
                      summary=plan_summary(plan) if plan else run.result.summary if run.result else "",
                      approvals=approvals, error=run.error,
                      usage=run.usage, costUsd=run.cost_usd, budgetUsd=run.budget_usd,
                      createdAt=run.created_at, updatedAt=run.updated_at)


def runs_list(runs: Sequence[RunRecord], repo: RunsRepo | None = None,
              next_cursor: str | None = None) -> RunsListResponse:
    """``repo``: to read the approvals of paused runs whose result does not list them (plan runs)."""
    return RunsListResponse(runs=[summary(r, repo) for r in runs], nextCursor=next_cursor)
