"""The seed-004 API (§2.3) as plain functions: ``start_planning``, ``refine_plan``, ``confirm``,
``cancel``, ``execute_plan`` (and the sweep's deadline check). The HTTP functions and the CLI call
these; ``execute_plan`` can also drive a confirmed session to its end in this process."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Literal

from shared.delivery.events import SessionEventType, published, session_announced
from shared.durable.kinds import CONTINUE
from shared.durable.messages import WorkMessage
from shared.errors import Conflict, InvalidInput
from shared.events import event_to_doc
from shared.events.plan import (
    PlanResultEvent,
    PlanRunEvent,
    PlanStatusEvent,
    RunPlanUpdatedEvent,
    StepCompleteEvent,
    StepStartEvent,
)
from shared.events.run import RunEvent
from shared.events.session import as_session_event
from shared.failures import FailureCode
from shared.formats import rfc3339_datetime
from shared.ids import new_id
from shared.loop import stops
from shared.loop.context import Services
from shared.models.base import Model, Part, Turn
from shared.plan_views import SessionResultView, plan_body
from shared.plans import planner
from shared.plans.plan_state import KIND, ended_mode, task_turn
from shared.state.batched_reads import BatchedReads
from shared.state.docstore import Write
from shared.state.host_states import PlanRunState
from shared.state.paused_runs import CloseReason
from shared.state.plan_records import PlanTask, PlanVersionRecord, SessionRecord, SessionResult
from shared.state.plan_tasks import OPEN_TASK_STATUSES
from shared.state.records import RunError, RunRecord
from shared.state.sessions_repo import SessionsRepo
from shared.usage.budget import CappedModel
from shared.usage.meter import MeteredCall, MeteredModel

log = logging.getLogger("agent_runtime.plans")


@dataclass(frozen=True)
class PlanOutcome:
    session: SessionRecord
    tasks: list[PlanTask]


def _model(services: Services, uid: str, session_id: str, operation: str) -> Model:
    call = MeteredCall(uid=uid, unit_kind="session", unit_id=session_id, component="planner",
                       operation_type=operation)
    metered = MeteredModel(services.model_factory(), call, services.settings, services.usage.record)
    return CappedModel(metered, services.budgets, services.settings, uid, services.new_id)  # docs/budgets.md


def parse_deadline(services: Services, raw: str | None, *, now: float | None = None) -> float:
    at = time.time() if now is None else now
    s = services.settings
    if raw is None:
        return at + s.plan_default_deadline_s
    parsed = rfc3339_datetime(raw)
    if parsed is None:
        raise InvalidInput("deadline must be an RFC 3339 timestamp with a time zone (Z or +hh:mm)",
                         code="INVALID_DEADLINE", details={"field": "deadline"})
    deadline = parsed.timestamp()
    if deadline <= at:
        raise InvalidInput("deadline is in the past", code="INVALID_DEADLINE", details={"field": "deadline"})
    if deadline - at > s.plan_max_deadline_s:
        raise InvalidInput(f"deadline is more than {int(s.plan_max_deadline_s)} s away (PLAN_MAX_DEADLINE_S)",
                         code="INVALID_DEADLINE", details={"field": "deadline"})
    return deadline


def check_tools(services: Services, uid: str, tools: list[str] | None) -> list[str] | None:
    """The session's tool allowlist: each name one of ``uid``'s tools (their own MCP servers' included)."""
    if tools is None:
        return None
    registry = services.registry_for(uid)
    unknown = [t for t in tools if registry.get(t) is None]
    if unknown:
        raise InvalidInput(f"unknown tool names: {', '.join(sorted(unknown))}", code="UNKNOWN_TOOLS",
                         details={"field": "tools", "unknown": sorted(unknown)})
    return sorted(set(tools))


def start_planning(services: Services, sessions: SessionsRepo, uid: str, prompt: str, *, deadline: float,
                   repo_url: str | None = None, tools: list[str] | None = None,
                   repo_context: str | None = None, session_id: str | None = None,
                   guidance: str | None = None, keep_workspaces: bool = False,
                   batch: BatchedReads | None = None, budget_usd: float | None = None,
                   extra_writes: list[Write] | None = None) -> PlanOutcome:
    """Create a session and propose its plan (``awaiting_confirmation``); a plan the model cannot
    produce leaves the session ``failed`` (``MALFORMED_PLAN`` or ``MODEL_ERROR``). Every session
    counts against the user's active sessions (``LIMIT_ACTIVE_SESSIONS``, also one a chat run
    starts): 429 ``TOO_MANY_ACTIVE_SESSIONS`` before the planning call, and at the creating commit
    for a race lost meanwhile; nothing of the session is written then. ``batch``: the slot's
    documents as read with the start's others (``Limits.read_for_start``). ``extra_writes``: more
    writes of the creating commit (a schedule's occurrence)."""
    session = SessionRecord(session_id=session_id or new_id("ses"), uid=uid, prompt=prompt, deadline=deadline,
                            repo_url=repo_url, tools=tools, keep_workspaces=keep_workspaces,
                            budget_usd=budget_usd)
    slot = services.limits.slot(uid, "sessions", batch=batch) if services.limits is not None else None
    if slot is not None:
        slot.check()  # the planning call costs tokens: refuse before it when there is no room
    from shared.errors import ModelError

    try:
        context = "\n\n".join(c for c in (guidance, repo_context) if c) or None
        answer = planner.propose(_model(services, uid, session.session_id, "plan_generation"), prompt, context,
                                 max_tasks=services.settings.plan_max_tasks,
                                 timeout_s=min(services.settings.run_deadline_s, deadline - time.time()))
    except ModelError as exc:
        return _failed(services, sessions, session, FailureCode.MODEL_ERROR, f"the planning model failed: {exc}",
                       extra_writes)
    if answer.value is None:
        return _failed(services, sessions, session, FailureCode.MALFORMED_PLAN,
                       "the model's plan did not validate after one repair: " + "; ".join(answer.problems[:5]),
                       extra_writes)
    plan = answer.value
    session.status, session.plan_version = "awaiting_confirmation", 1
    sid = session.session_id
    events = [PlanStatusEvent(planId=sid, status="planning"),
              RunPlanUpdatedEvent(planId=sid, plan=plan_body(1, plan.tasks), changes=plan.changes, reason=plan.summary),
              PlanStatusEvent(planId=sid, status="awaiting_confirmation")]
    writes = [sessions.plan_write(session.session_id, PlanVersionRecord(version=1, tasks=plan.tasks,
                                                                        changes=plan.changes, reason=plan.summary)),
              *(sessions.task_write(session.session_id, t) for t in plan.tasks)]
    for i, ev in enumerate(events, start=1):
        ev.seq = i
        writes.append(sessions.event_write(session.session_id, own_event(ev)))
    session.last_seq = len(events)
    hooks, ids = _announced(services, session, "session.awaiting_confirmation")
    sessions.create(session, writes + hooks + (extra_writes or []), slot=slot)
    published(services.outbox, ids)
    log.info("session planned", extra={"fields": {"sessionId": session.session_id, "tasks": len(plan.tasks)}})
    return PlanOutcome(session, plan.tasks)


def own_event(ev: PlanRunEvent) -> dict[str, Any]:
    """An event of a session not confirmed yet, in its own log (``sessions/{id}/events``): the run
    event, stored in the session's words by the one mapping (as a confirmed session's are shown)."""
    doc = as_session_event(event_to_doc(ev))
    assert doc is not None
    return doc


def _announced(services: Services, session: SessionRecord, event: SessionEventType,
               error: RunError | None = None) -> tuple[list[Write], list[str]]:
    """The ``session.*`` webhook deliveries of a transition made here, for its commit."""
    error = error or session.error
    return session_announced(services.runs.store, services.outbox, services.new_id, session.uid, event,
                             session.session_id, run_id=session.run_id,
                             error=error.to_doc() if error is not None else None)


def _failed(services: Services, sessions: SessionsRepo, session: SessionRecord, code: FailureCode,
            message: str, extra_writes: list[Write] | None = None) -> PlanOutcome:
    session.status, session.error = "failed", RunError(code=code, message=message)
    session.result = SessionResult(status="failed")
    events = [PlanStatusEvent(planId=session.session_id, status="failed")]
    events[0].seq = session.last_seq = 1
    hooks, ids = _announced(services, session, "session.failed")
    sessions.create(session, [sessions.event_write(session.session_id, own_event(events[0])), *hooks,
                              *(extra_writes or [])])
    published(services.outbox, ids)
    log.warning("session planning failed: %s", code, extra={"fields": {"sessionId": session.session_id}})
    return PlanOutcome(session, [])


def _require(session: SessionRecord, status: str) -> None:
    if session.status != status:
        code = "SESSION_NOT_AWAITING_CONFIRMATION" if status == "awaiting_confirmation" else "SESSION_NOT_ACTIVE"
        raise Conflict(f"session {session.session_id} is {session.status}", code=code,
                       details={"status": session.status})


def refine_plan(services: Services, sessions: SessionsRepo, uid: str, session_id: str, message: str) -> PlanOutcome:
    session, token = sessions.get_for(uid, session_id)
    _require(session, "awaiting_confirmation")
    current = sessions.tasks(session_id)
    version = session.plan_version + 1
    answer = planner.refine(_model(services, uid, session_id, "plan_generation"), session.prompt, current, message,
                            version, max_tasks=services.settings.plan_max_tasks,
                            timeout_s=min(services.settings.run_deadline_s, max(1.0, session.deadline - time.time())))
    if answer.value is None:
        raise Conflict("the model's revised plan did not validate after one repair; the plan is unchanged: "
                       + "; ".join(answer.problems[:5]), code="MALFORMED_PLAN")
    plan = answer.value
    session.plan_version = version
    kept = {t.id for t in plan.tasks}
    writes = [sessions.plan_write(session_id, PlanVersionRecord(version=version, tasks=plan.tasks,
                                                                changes=plan.changes, reason=plan.summary)),
              *(sessions.task_write(session_id, t) for t in plan.tasks),
              *(sessions.task_write(session_id, t.model_copy(update={"status": "obsolete"}))
                for t in current if t.id not in kept)]
    event = RunPlanUpdatedEvent(planId=session_id, plan=plan_body(version, plan.tasks), changes=plan.changes,
                                reason=plan.summary)
    session.last_seq += 1
    event.seq = session.last_seq
    writes.append(sessions.event_write(session_id, own_event(event)))
    sessions.commit(session, token, writes)
    return PlanOutcome(session, plan.tasks)


def confirm(services: Services, sessions: SessionsRepo, uid: str, session_id: str, plan_version: int, *,
            parent: tuple[str, str] | None = None) -> SessionRecord:
    """Lock in the plan the user saw (``planVersion``) and start executing it (a ``continue``
    message to the session's execution unit, recorded in the same commit)."""
    session, token = sessions.get_for(uid, session_id)
    _require(session, "awaiting_confirmation")
    if plan_version != session.plan_version:
        raise Conflict(f"the plan is at version {session.plan_version}, not {plan_version}",
                       code="PLAN_VERSION_MISMATCH", details={"planVersion": session.plan_version})
    tasks = [t for t in sessions.tasks(session_id) if t.status != "obsolete"]
    first = tasks[0].model_copy(update={"status": "in_progress"})
    tasks[0] = first
    run_id = new_id("run")
    session.status, session.run_id, session.current_task_id = "executing", run_id, first.id
    # From here the session's events are its run's (a session's view reads them from there).
    status = PlanStatusEvent(planId=session_id, status="executing", seq=1)
    start = StepStartEvent(planId=session_id, stepId=first.id, title=first.title, index=1, total=len(tasks), seq=2)
    run = RunRecord(run_id=run_id, uid=uid, thread_id="", status="planning", host=KIND, last_seq=2,
                    budget_usd=session.budget_usd,
                    model=services.model_factory().name,
                    max_steps=services.settings.plan_max_acts_per_task * services.settings.plan_max_tasks * 2,
                    system_instruction=planner.ACT_INSTRUCTION.format(objective=session.prompt[:4000]),
                    host_state=PlanRunState(session_id=session_id, objective=session.prompt, deadline=session.deadline,
                                            tools=session.tools, tasks=tasks, task_id=first.id,
                                            plan_version=session.plan_version,
                                            parent_run_id=parent[0] if parent else None,
                                            parent_action_id=parent[1] if parent else None))
    opening = Turn(role="user", parts=[Part(text=f"Objective: {session.prompt}")])
    turns = [Turn(role="user", parts=[*opening.parts, *task_turn(first, 0, len(tasks)).parts])]
    entry = f"{CONTINUE}-{run_id}-{0:05d}"
    writes = [*services.runs.unit_writes(run, turns=turns, events=[event_to_doc(status), event_to_doc(start)]),
              sessions.task_write(session_id, first),
              services.outbox.record(WorkMessage(kind=CONTINUE, unitId=run_id, uid=uid), entry)]
    sessions.commit(session, token, writes)
    services.outbox.deliver(entry)
    log.info("session confirmed", extra={"fields": {"sessionId": session_id, "runId": run_id, "tasks": len(tasks)}})
    return session


def cancel(services: Services, sessions: SessionsRepo, uid: str, session_id: str, *,
           reason: str | None = None) -> SessionRecord:
    """Before execution: the session ends ``cancelled`` now. During execution: the request is
    recorded and execution stops before its next act (a run paused for an approval is continued
    just to stop it). ``reason`` is kept on the session. A retry (the session is already
    ``cancelled`` or cancelling) answers the session as it is: cancelling is idempotent."""
    session, token = sessions.get_for(uid, session_id)
    if session.status == "cancelled" or (session.cancel_requested and not session.terminal):
        return session
    if session.terminal:
        raise Conflict(f"session {session_id} already ended ({session.status})", code="SESSION_ENDED",
                       details={"status": session.status})
    if session.status in ("planning", "awaiting_confirmation"):
        session.status, session.result = "cancelled", SessionResult(status="cancelled")
        session.cancel_requested, session.cancel_reason = True, reason
        session.last_seq += 1
        ev = PlanStatusEvent(planId=session_id, status="cancelled", seq=session.last_seq)
        open_tasks = [t.model_copy(update={"status": "cancelled"}) for t in sessions.tasks(session_id)
                      if t.status in OPEN_TASK_STATUSES]
        hooks, ids = _announced(services, session, "session.cancelled", PAUSED_END["cancelled"])
        sessions.commit(session, token, [sessions.event_write(session_id, own_event(ev)),
                                         *(sessions.task_write(session_id, t) for t in open_tasks), *hooks])
        published(services.outbox, ids)
        return session
    sessions.request_cancel(session_id, reason)
    session.cancel_requested, session.cancel_reason = True, reason
    if session.run_id and end_paused(services, sessions, session, session.run_id, "cancelled"):
        session.status = "cancelled"
    return session


PAUSED_END: dict[str, RunError] = {
    "cancelled": RunError(code=FailureCode.CANCELLED, message="cancelled by the user"),
    "deadline_exceeded": RunError(code=FailureCode.DEADLINE_EXCEEDED, message="the session's deadline passed")}


def end_paused(services: Services, sessions: SessionsRepo, session: SessionRecord, run_id: str,
               reason: Literal["cancelled", "deadline_exceeded"]) -> bool:
    """End a session whose execution waits for approvals: its run ends with the session's status
    through the loop's ``stops.close_paused``, then its log closes the plan as the host does (on a
    cancel the task in progress gets its ``step_complete``, then ``plan_status`` and ``plan_result``);
    False when the run is not paused (it stops by itself before its next act)."""
    closing: list[dict[str, Any]] = []
    sid = session.session_id

    def fail(run: RunRecord, why: CloseReason, by_run: str) -> dict[str, Any]:
        error = stops.close_paused(run, why, by_run, status=reason)
        run.mode = ended_mode(run)
        events: list[RunEvent] = []
        if reason == "cancelled" and isinstance(run.host_state, PlanRunState):
            for task in run.host_state.tasks:
                if task.status in OPEN_TASK_STATUSES:
                    if task.status == "in_progress":
                        events.append(StepCompleteEvent(planId=sid, stepId=task.id, status="cancelled",
                                                        summary="cancelled by the user"))
                    task.status = "cancelled"
        events += [PlanStatusEvent(planId=sid, status=reason),
                   PlanResultEvent(planId=sid, result=SessionResultView(status=reason, log=[]))]
        closing.clear()
        for ev in events:
            run.last_seq += 1
            ev.seq = run.last_seq
            closing.append(event_to_doc(ev))
        return error

    hooks, ids = session_announced(services.runs.store, services.outbox, services.new_id, session.uid,
                                   "session.cancelled" if reason == "cancelled" else "session.deadline_exceeded",
                                   sid, run_id=run_id, error=PAUSED_END[reason].to_doc())
    ended = sessions.end_paused(session, run_id, closing, reason=reason, error=PAUSED_END[reason],
                                open_tasks_end="cancelled" if reason == "cancelled" else None,
                                fail=fail, event_write=services.runs.event_write,
                                audit_write=services.runs.audit_write, extra=hooks)
    if ended:
        published(services.outbox, ids)
    return ended


def execute_plan(services: Services, sessions: SessionsRepo, uid: str, session_id: str, *,
                 deliver: object = None, max_invocations: int = 1000) -> SessionResult:
    """Drive a confirmed session to its end in this process: every ``continue`` message is
    handled here (one "invocation" each). Approvals still need a decision (then call again)."""
    from shared.loop.resume import resume_run

    session, _ = sessions.get_for(uid, session_id)
    for _ in range(max_invocations):
        if session.terminal or session.run_id is None:
            break
        snap = services.runs.get_run(session.run_id)
        if snap is None or snap.run.status == "awaiting_confirmation" or snap.run.terminal:
            break
        resume_run(services, session.run_id)
        session, _ = sessions.get_for(uid, session_id)
    from shared.plans.views import action_log

    return SessionResult(status=session.status,
                         log=action_log(sessions, session_id, sessions.tasks(session_id)) if session.terminal else [])


def end_past_deadline(services: Services, sessions: SessionsRepo, limit: int = 50) -> int:
    """The sweep's check: a session waiting (for confirmation, or for an approval inside its
    execution) when its deadline passes ends ``deadline_exceeded``. A working execution stops by
    itself before its next act. Returns how many sessions were ended."""
    ended = 0
    at = time.time()
    for status in ("awaiting_confirmation", "executing"):
        for session in sessions.by_status(status, limit):
            if session.deadline > at:
                break  # ordered by deadline
            got = sessions.get(session.session_id)
            if got is None:
                continue
            session, token = got
            ev = PlanStatusEvent(planId=session.session_id, status="deadline_exceeded",
                                    seq=session.last_seq + 1)
            try:
                if session.status == "awaiting_confirmation":
                    session.status, session.last_seq = "deadline_exceeded", session.last_seq + 1
                    session.result = SessionResult(status="deadline_exceeded")
                    session.error = RunError(code=FailureCode.DEADLINE_EXCEEDED,
                                             message="the deadline passed before the plan was confirmed")
                    sessions.commit(session, token, [sessions.event_write(session.session_id, own_event(ev))])
                    ended += 1
                elif session.run_id and end_paused(services, sessions, session, session.run_id, "deadline_exceeded"):
                    ended += 1
            except Conflict:
                continue  # changed meanwhile: the next sweep looks again
    return ended
