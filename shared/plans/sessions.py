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
    PlanStatusEvent,
    RunPlanUpdatedEvent,
    StepCompleteEvent,
    StepStartEvent,
)
from shared.events.run import RunEvent
from shared.failures import FailureCode
from shared.formats import rfc3339_datetime
from shared.ids import new_id
from shared.loop import stops
from shared.loop.context import Services
from shared.models.base import Model, Part, Turn
from shared.plan_views import SessionResultView, plan_body
from shared.plans import planner, unit
from shared.plans.plan_state import ended_mode, task_turn
from shared.state.batched_reads import BatchedReads
from shared.state.docstore import Write
from shared.state.host_states import PlanRunState
from shared.state.paused_runs import CloseReason
from shared.state.plan_records import PlanTask, PlanVersionRecord, SessionRecord, SessionResult
from shared.state.plan_tasks import OPEN_TASK_STATUSES
from shared.state.records import RunError, RunRecord
from shared.state.sessions_repo import SessionsRepo
from shared.state.transitions import move_run
from shared.state.users_repo import Stamps
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
                   extra_writes: list[Write] | None = None, request_fingerprint: str | None = None,
                   stamps: Stamps | None = None) -> PlanOutcome:
    """Create a session and propose its plan (``awaiting_confirmation``); a plan the model cannot
    produce leaves the session ``failed`` (``MALFORMED_PLAN`` or ``MODEL_ERROR``). Every session
    counts against the user's active sessions (``LIMIT_ACTIVE_SESSIONS``, also one a chat run
    starts): 429 ``TOO_MANY_ACTIVE_SESSIONS`` before the planning call, and at the creating commit
    for a race lost meanwhile; nothing of the session is written then. ``batch``: the slot's
    documents as read with the start's others (``Limits.read_for_start``). ``extra_writes``: more
    writes of the creating commit (a schedule's occurrence). ``session_id`` given (a schedule's
    occurrence, an Idempotency-Key): the creating commit fails ``PreconditionFailed`` when it exists.
    ``request_fingerprint``: kept on the session for a repeated Idempotency-Key. ``stamps``: the
    user's stamps as the start read them (its ``session.*`` webhooks are listed through them)."""
    session = SessionRecord(session_id=session_id or new_id("ses"), uid=uid, prompt=prompt, deadline=deadline,
                            repo_url=repo_url, tools=tools, keep_workspaces=keep_workspaces,
                            budget_usd=budget_usd, request_fingerprint=request_fingerprint)
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
                       extra_writes, stamps)
    if answer.value is None:
        return _failed(services, sessions, session, FailureCode.MALFORMED_PLAN,
                       "the model's plan did not validate after one repair: " + "; ".join(answer.problems[:5]),
                       extra_writes, stamps)
    plan = answer.value
    session.status, session.plan_version = "awaiting_confirmation", 1
    sid = session.session_id
    # Planning is the first step of the session's unit of work: its run is created with the plan.
    change = unit.created(unit.new_run(services, session, plan.tasks, "awaiting_confirmation"))
    session.run_id = change.run.run_id
    change.emit(PlanStatusEvent(planId=sid, status="planning"),
                RunPlanUpdatedEvent(planId=sid, plan=plan_body(1, plan.tasks), changes=plan.changes,
                                    reason=plan.summary),
                PlanStatusEvent(planId=sid, status="awaiting_confirmation"))
    writes = [sessions.plan_write(sid, PlanVersionRecord(version=1, tasks=plan.tasks, changes=plan.changes,
                                                         reason=plan.summary)),
              *change.writes(services, sessions)]
    hooks, ids = _announced(services, session, "session.awaiting_confirmation", stamps=stamps)
    sessions.create(session, writes + hooks + _zeros(stamps) + (extra_writes or []), slot=slot)
    published(services.outbox, ids)
    log.info("session planned", extra={"fields": {"sessionId": sid, "runId": session.run_id,
                                                  "tasks": len(plan.tasks)}})
    return PlanOutcome(session, plan.tasks)


def _announced(services: Services, session: SessionRecord, event: SessionEventType,
               error: RunError | None = None, stamps: Stamps | None = None) -> tuple[list[Write], list[str]]:
    """The ``session.*`` webhook deliveries of a transition made here, for its commit (``stamps``:
    the user's webhooks listed through them, shared/state/users_repo.py)."""
    error = error or session.error
    return session_announced(services.runs.store, services.outbox, services.new_id, session.uid, event,
                             session.session_id, run_id=session.run_id,
                             error=error.to_doc() if error is not None else None,
                             stamped=None if stamps is None else (services.stamped, stamps))


def _zeros(stamps: Stamps | None) -> list[Write]:
    """The 0 stamps of collections a query found empty, for the commit that follows it."""
    zero = stamps.zero_write() if stamps is not None else None
    return [] if zero is None else [zero]


def _failed(services: Services, sessions: SessionsRepo, session: SessionRecord, code: FailureCode,
            message: str, extra_writes: list[Write] | None = None, stamps: Stamps | None = None) -> PlanOutcome:
    """A session whose plan could not be made: created ``failed``, with its run (planning, its one
    step, failed) and that run's log (``plan_status failed``)."""
    session.status, session.error = "failed", RunError(code=code, message=message)
    session.result = SessionResult(status="failed")
    change = unit.created(unit.new_run(services, session, [], "failed"))
    change.run.error, change.run.mode = session.error, "assistant_text"
    session.run_id = change.run.run_id
    change.emit(PlanStatusEvent(planId=session.session_id, status="failed"))
    hooks, ids = _announced(services, session, "session.failed", stamps=stamps)
    sessions.create(session, [*change.writes(services, sessions), *hooks, *_zeros(stamps), *(extra_writes or [])])
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
    change = unit.unit_for(services, sessions, session)
    state = change.state
    current = state.tasks
    version = state.plan_version + 1
    answer = planner.refine(_model(services, uid, session_id, "plan_generation"), session.prompt, current, message,
                            version, max_tasks=services.settings.plan_max_tasks,
                            timeout_s=min(services.settings.run_deadline_s, max(1.0, session.deadline - time.time())))
    if answer.value is None:
        raise Conflict("the model's revised plan did not validate after one repair; the plan is unchanged: "
                       + "; ".join(answer.problems[:5]), code="MALFORMED_PLAN")
    plan = answer.value
    kept = {t.id for t in plan.tasks}
    dropped = [t.model_copy(update={"status": "obsolete"}) for t in current if t.id not in kept]
    state.tasks = sorted([*plan.tasks, *dropped], key=lambda t: t.order)  # dropped ones stay, marked obsolete
    state.plan_version = session.plan_version = version
    change.emit(RunPlanUpdatedEvent(planId=session_id, plan=plan_body(version, plan.tasks), changes=plan.changes,
                                    reason=plan.summary))
    sessions.commit(session, token, [
        sessions.plan_write(session_id, PlanVersionRecord(version=version, tasks=plan.tasks, changes=plan.changes,
                                                          reason=plan.summary)),
        *change.writes(services, sessions)])
    return PlanOutcome(session, plan.tasks)


def confirm(services: Services, sessions: SessionsRepo, uid: str, session_id: str, plan_version: int, *,
            parent: tuple[str, str] | None = None) -> SessionRecord:
    """Lock in the plan the user saw (``planVersion``) and start executing it: the session's run
    moves on to its execution (a ``continue`` message, recorded in the same commit)."""
    session, token = sessions.get_for(uid, session_id)
    _require(session, "awaiting_confirmation")
    change = unit.unit_for(services, sessions, session)
    state, run = change.state, change.run
    if plan_version != state.plan_version:
        raise Conflict(f"the plan is at version {state.plan_version}, not {plan_version}",
                       code="PLAN_VERSION_MISMATCH", details={"planVersion": state.plan_version})
    live = [t for t in state.tasks if t.status != "obsolete"]
    first = live[0]
    first.status = "in_progress"
    state.task_id = first.id
    state.parent_run_id, state.parent_action_id = parent if parent else (None, None)
    session.status = "executing"
    move_run(run, "planning")
    change.emit(PlanStatusEvent(planId=session_id, status="executing"),
                StepStartEvent(planId=session_id, stepId=first.id, title=first.title, index=1, total=len(live)))
    opening = Turn(role="user", parts=[Part(text=f"Objective: {session.prompt}")])
    turns = [Turn(role="user", parts=[*opening.parts, *task_turn(first, 0, len(live)).parts])]
    entry = f"{CONTINUE}-{run.run_id}-{0:05d}"
    run.turn_count = len(turns)  # one document each (turns/0...): its resume reads them by name
    message = WorkMessage(kind=CONTINUE, unitId=run.run_id, uid=uid, paused=stops.resume_hint(run))
    sessions.commit(session, token, [*change.writes(services, sessions, turns), services.outbox.record(message, entry)])
    services.outbox.deliver_recorded(message, entry)
    log.info("session confirmed", extra={"fields": {"sessionId": session_id, "runId": run.run_id,
                                                    "tasks": len(live)}})
    return session


def cancel(services: Services, sessions: SessionsRepo, uid: str, session_id: str, *,
           reason: str | None = None) -> SessionRecord:
    """Before execution: the session ends ``cancelled`` now. During execution: the request is
    recorded and execution stops before its next act (a run paused for an approval is continued
    just to stop it). ``reason`` is kept on the session. A retry (the session is already
    ``cancelled`` or cancelling) answers the session as it is: cancelling is idempotent."""
    session, token = sessions.get_for(uid, session_id)
    if session.status == "cancelled" or (session.cancel_requested and not session.terminal):
        if session.status != "executing" or not session.run_id:
            return session
        # Asked again of its run: a cancel recorded by code before issue 33's session 3 wrote
        # nothing on the run (its host read the session before each act; this one reads the run).
        reason = session.cancel_reason
    if session.terminal:
        raise Conflict(f"session {session_id} already ended ({session.status})", code="SESSION_ENDED",
                       details={"status": session.status})
    if session.status in ("planning", "awaiting_confirmation"):
        session.cancel_requested, session.cancel_reason = True, reason
        _end_before_execution(services, sessions, session, token, "cancelled", PAUSED_END["cancelled"])
        return session
    sessions.request_cancel(session_id, reason, run_id=session.run_id)
    session.cancel_requested, session.cancel_reason = True, reason
    if session.run_id and end_paused(services, sessions, session, session.run_id, "cancelled"):
        session.status = "cancelled"
    return session


def _end_before_execution(services: Services, sessions: SessionsRepo, session: SessionRecord, token: str,
                          status: Literal["cancelled", "deadline_exceeded"], error: RunError) -> None:
    """End a session that was not confirmed: its run ends with its status (its open tasks
    ``cancelled`` on a cancel), a ``plan_status`` event closes its log, in one commit."""
    change = unit.unit_for(services, sessions, session)
    run = change.run
    if status == "cancelled":
        for task in change.state.tasks:
            if task.status in OPEN_TASK_STATUSES:
                task.status = "cancelled"
    move_run(run, status)
    run.error, run.mode = error, ended_mode(run)
    session.status, session.result = status, SessionResult(status=status)
    change.emit(PlanStatusEvent(planId=session.session_id, status=status))
    hooks, ids = _announced(services, session, "session.cancelled" if status == "cancelled"
                            else "session.deadline_exceeded", error)
    sessions.commit(session, token, [*change.writes(services, sessions), *hooks])
    published(services.outbox, ids)


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

    tasks = unit.read(sessions, services.runs, session).tasks if session.terminal else []
    return SessionResult(status=session.status, log=action_log(sessions, session_id, tasks))


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
            try:
                if session.status == "awaiting_confirmation":
                    session.error = RunError(code=FailureCode.DEADLINE_EXCEEDED,
                                             message="the deadline passed before the plan was confirmed")
                    _end_before_execution(services, sessions, session, token, "deadline_exceeded", session.error)
                    ended += 1
                elif session.run_id and end_paused(services, sessions, session, session.run_id, "deadline_exceeded"):
                    ended += 1
            except Conflict:
                continue  # changed meanwhile: the next sweep looks again
    return ended
