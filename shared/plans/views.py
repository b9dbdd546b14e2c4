"""What the API shows of a session: the plan with every task's ReAct history, plan versions with
what changed and why, pending approvals, usage, and when ended the result with its action log.
Read from its index (``sessions/{id}``) and its unit of work (its run: tasks, current task, plan
version; ``plans/unit.py``)."""

from __future__ import annotations

from shared.plan_views import (
    LogEntryView,
    Plan,
    PlanChangeView,
    PlanTaskView,
    PlanVersionView,
    ReactStepView,
    SessionResultView,
    plan_body,
)
from shared.plans import unit
from shared.plans.contracts import SessionCreated, SessionView
from shared.state.plan_records import (
    LogEntry,
    PlanTask,
    PlanVersionRecord,
    ReactStep,
    SessionRecord,
    legacy_outcome,
)
from shared.state.records import Approval
from shared.state.runs_repo import RunsRepo
from shared.state.sessions_repo import SessionsRepo
from shared.state.usage_repo import UsageRepo
from shared.token_usage import Usage


def created(session: SessionRecord, tasks: list[PlanTask]) -> SessionCreated:
    if session.status == "failed":
        return SessionCreated(ok=False, sessionId=session.session_id, status=session.status,
                              deadline=session.deadline,
                              error=session.error.to_doc() if session.error else None)
    return SessionCreated(ok=True, sessionId=session.session_id, status=session.status,
                          deadline=session.deadline, plan=plan_body(session.plan_version, tasks))


def action_log(sessions: SessionsRepo, session_id: str, tasks: list[PlanTask]) -> list[LogEntry]:
    """Every action the session took, in order: task, tool, arguments, outcome, time."""
    out: list[LogEntry] = []
    for task in tasks:
        for step in sessions.react(session_id, task.id):
            out.append(LogEntry(task_id=task.id, tool=str(step.action.get("tool", "")),
                                arguments=dict(step.action.get("args", {})), outcome=legacy_outcome(step),
                                at=step.at))
    return sorted(out, key=lambda e: e.at)


def _step(step: ReactStep) -> ReactStepView:
    return ReactStepView(n=step.n, reason=step.reason, action=step.action, observation=step.observation,
                         reflection=step.reflection, at=step.at)


def _version(v: PlanVersionRecord) -> PlanVersionView:
    return PlanVersionView(version=v.version, reason=v.reason, at=v.at,
                           changes=[PlanChangeView(op=c.op, taskId=c.task_id, what=c.what, why=c.why)
                                    for c in v.changes])


def whole_plan(sessions: SessionsRepo, session: SessionRecord, tasks: list[PlanTask], version: int) -> Plan:
    """The plan as the session view shows it: every task (obsolete ones too, marked) with its
    ReAct history, and every version with what changed and why."""
    sid = session.session_id
    views = [PlanTaskView(taskId=t.id, title=t.title, description=t.description, status=t.status, acts=t.acts,
                          summary=t.summary, history=[_step(s) for s in sessions.react(sid, t.id)])
             for t in tasks]
    return Plan(version=version, tasks=views,
                versions=[_version(v) for v in sessions.plan_versions(sid)])


def session_usage(ledger: UsageRepo, session: SessionRecord) -> tuple[Usage, float]:
    """Usage and cost of the whole session, exactly its entries in the usage ledger: planning,
    refinements and reflections (``unitId``: the session) and its run's acts (``unitId``: the run)."""
    entries = {e.entry_id: e for unit in (session.session_id, session.run_id) if unit
               for e in ledger.for_unit(session.uid, unit)}
    usage, cost = Usage(), 0.0
    for entry in entries.values():
        usage, cost = usage + entry.usage, cost + entry.cost_usd
    return usage, round(cost, 8)


def session_view(sessions: SessionsRepo, runs: RunsRepo, ledger: UsageRepo, session: SessionRecord) -> SessionView:
    of = unit.read(sessions, runs, session)
    tasks, run = of.tasks, of.run
    pending: list[Approval] = []
    if run is not None and not session.terminal and run.status == "awaiting_confirmation":
        for approval_id in run.pending_approval_ids:
            got = runs.get_approval(session.uid, approval_id)
            if got is not None and got[0].status == "pending":
                pending.append(Approval.of(got[0], session_id=session.session_id))
    usage, cost = session_usage(ledger, session)
    result = None
    if session.result is not None:
        result = SessionResultView(status=session.result.status, log=[
            LogEntryView(taskId=e.task_id, tool=e.tool, arguments=e.arguments, outcome=e.outcome, at=e.at)
            for e in action_log(sessions, session.session_id, tasks)])
    return SessionView(sessionId=session.session_id, status=session.status, prompt=session.prompt,
                       deadline=session.deadline, repoUrl=session.repo_url, tools=session.tools,
                       plan=whole_plan(sessions, session, tasks, of.plan_version), currentTaskId=of.task_id,
                       runId=session.run_id, cancelRequested=session.cancel_requested,
                       cancelReason=session.cancel_reason, pendingApprovals=pending, usage=usage, costUsd=cost,
                       budgetUsd=run.budget_usd if run is not None else session.budget_usd,
                       error=session.error.to_doc() if session.error else None, result=result,
                       createdAt=session.created_at, updatedAt=session.updated_at)
