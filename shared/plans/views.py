"""What the API shows of a session: the plan with every task's ReAct history, plan versions with
what changed and why, pending approvals, usage, and when ended the result with its action log."""

from __future__ import annotations

from datetime import UTC, datetime

from shared.plans.contracts import (
    PendingApproval,
    PlanBody,
    PlanVersionView,
    SessionCreated,
    SessionView,
    TaskBody,
    TaskView,
)
from shared.state.plan_records import LogEntry, PlanTask, SessionRecord
from shared.state.runs_repo import RunsRepo
from shared.state.sessions_repo import SessionsRepo


def iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat().replace("+00:00", "Z")


def plan_body(version: int, tasks: list[PlanTask]) -> PlanBody:
    return PlanBody(version=version, tasks=[TaskBody(id=t.id, title=t.title, description=t.description,
                                                     status=t.status) for t in tasks if t.status != "obsolete"])


def created(session: SessionRecord, tasks: list[PlanTask]) -> SessionCreated:
    if session.status == "failed":
        return SessionCreated(ok=False, sessionId=session.session_id, status=session.status,
                              deadline=iso(session.deadline),
                              error=session.error.to_doc() if session.error else None)
    return SessionCreated(ok=True, sessionId=session.session_id, status=session.status,
                          deadline=iso(session.deadline), plan=plan_body(session.plan_version, tasks))


def action_log(sessions: SessionsRepo, session_id: str, tasks: list[PlanTask]) -> list[LogEntry]:
    """Every action the session took, in order: task, tool, arguments, outcome, time."""
    out: list[LogEntry] = []
    for task in tasks:
        for step in sessions.react(session_id, task.id):
            tool = str(step.action.get("tool", ""))
            outcome = "done" if tool == "task_done" else ("error" if "error" in step.observation else "ok")
            out.append(LogEntry(task_id=task.id, tool=tool, arguments=dict(step.action.get("args", {})),
                                outcome=outcome, at=step.at))
    return sorted(out, key=lambda e: e.at)


def session_view(sessions: SessionsRepo, runs: RunsRepo, session: SessionRecord) -> SessionView:
    tasks = sessions.tasks(session.session_id)
    views = [TaskView(id=t.id, title=t.title, description=t.description, status=t.status, acts=t.acts,
                      summary=t.summary, history=[s.to_doc() for s in sessions.react(session.session_id, t.id)])
             for t in tasks]
    versions = [PlanVersionView(version=v.version, changes=[c.to_doc() for c in v.changes], reason=v.reason, at=v.at)
                for v in sessions.plan_versions(session.session_id)]
    pending: list[PendingApproval] = []
    if session.run_id and not session.terminal:
        snap = runs.get_run(session.run_id)
        if snap is not None and snap.run.status == "awaiting_confirmation":
            for approval_id in snap.run.pending_approval_ids:
                got = runs.get_approval(session.uid, approval_id)
                if got is not None and got[0].status == "pending":
                    a = got[0]
                    pending.append(PendingApproval(approvalId=a.approval_id, tool=a.tool, preview=a.preview,
                                                   reason=a.reason))
    result = None
    if session.result is not None:
        result = {"status": session.result.status,
                  "log": [e.to_doc() for e in action_log(sessions, session.session_id, tasks)]}
    return SessionView(sessionId=session.session_id, status=session.status, prompt=session.prompt,
                       deadline=iso(session.deadline), repoUrl=session.repo_url, tools=session.tools,
                       planVersion=session.plan_version, currentTaskId=session.current_task_id,
                       cancelRequested=session.cancel_requested,
                       cancelReason=session.cancel_reason, tasks=views, planVersions=versions,
                       pendingApprovals=pending, usage=session.usage, costUsd=session.cost_usd,
                       error=session.error.to_doc() if session.error else None, result=result)
