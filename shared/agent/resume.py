"""Resuming a run from the store alone: after approvals, and after a crash (recovery).

``resume_run`` claims the run with a lease (a conditional write on the run document), closes the
open model turn (runs approved and allowed calls once each, marks calls that were cut off by a
crash as outcome ``unknown`` unless the tool is idempotent), answers every call of that turn in
order, and drives the loop on with the same limits as a fresh run.
"""

from __future__ import annotations

import logging
import time
from typing import Literal

from shared.agent.approvals import handled, outbox_path, sweep_outbox
from shared.agent.context import RunContext, Services
from shared.agent.loop import NextStepLost, drive
from shared.agent.results import fail_run, pause_for_approvals
from shared.agent.tool_calls import execute_action, responses_turn
from shared.dispatch import Dispatcher, ResumeMessage
from shared.events import StatusEvent, ToolResultEvent
from shared.ids import new_id
from shared.logs import log_context
from shared.state.docstore import PreconditionFailed, Query, Write
from shared.state.records import ActionRecord, Lease, UserRecord, now
from shared.tools.registry import args_hash

log = logging.getLogger("agent_runtime.resume")

ResumeOutcome = Literal["not_found", "terminal", "waiting", "busy", "resumed"]
CLAIM_ATTEMPTS = 5
UNKNOWN_OUTCOME = ("the runtime stopped while this call was running, so its outcome is unknown; "
                   "it was not retried")


def handle_message(services: Services, dispatcher: Dispatcher, message: ResumeMessage) -> None:
    if message.kind == "sweep":
        sweep(services, dispatcher)
        return
    if message.runId is None:
        log.warning("resume message without runId ignored")
        return
    outcome = resume_run(services, message.runId, expected_uid=message.uid)
    log.info("resume message handled: %s", outcome, extra={"fields": {"runId": message.runId}})
    if message.approvalId is not None and outcome != "busy":
        # Resumed, waiting for another decision (whose own message will resume it), ended or
        # gone: this decision's outbox entry has done its job. "busy" keeps it: the lease holder
        # may die, and then the sweep re-publishes the entry.
        handled(services, message)


def _load_user(services: Services, uid: str) -> UserRecord:
    try:
        return services.users.get_user(uid)
    except Exception:
        log.warning("profile read failed on resume; using defaults", exc_info=True)
        return UserRecord(uid=uid)


def resume_run(services: Services, run_id: str, *, expected_uid: str | None = None) -> ResumeOutcome:
    owner = new_id("inv")
    for _ in range(CLAIM_ATTEMPTS):
        snap = services.runs.get_run(run_id)
        if snap is None or (expected_uid is not None and snap.run.uid != expected_uid):
            return "not_found"
        run = snap.run
        if run.terminal:
            return "terminal"
        if run.lease is not None and run.lease.expires_at > now():
            return "busy"
        actions = services.runs.list_actions(run_id)
        if run.status == "awaiting_confirmation":
            open_actions = [a for a in actions if a.turn_index == run.pending_turn]
            if any(a.status == "awaiting_confirmation" for a in open_actions):
                return "waiting"
        claimed = run.model_copy(deep=True)
        claimed.status = "executing" if run.status == "awaiting_confirmation" else run.status
        claimed.lease = Lease(owner=owner, expires_at=now() + services.settings.lease_ttl_s)
        claimed.lease_expires_at = claimed.lease.expires_at
        # The claim consumes the paused turn's decisions: their outbox entries have done their job
        # (whichever message or sweep got here first), so no entry outlives its run.
        done = [Write("delete", outbox_path(a)) for a in run.pending_approval_ids]
        try:
            snap = services.runs.commit(snap, claimed, done)
        except PreconditionFailed:
            continue  # someone moved the run meanwhile (a decision, another resumer): look again
        with log_context(runId=run_id, threadId=run.thread_id, uid=run.uid):
            ctx = RunContext(services=services, snapshot=snap, turns=services.runs.load_turns(run_id),
                             user=_load_user(services, run.uid),
                             deadline=time.monotonic() + services.settings.run_deadline_s, owner=owner)
            ctx.emit(StatusEvent(status=ctx.run.status, threadId=run.thread_id, runId=run_id))
            try:
                close_open_turn(ctx, actions)
            except PreconditionFailed:
                log.warning("lost the run while closing its open turn", extra={"fields": {"runId": run_id}})
                return "busy"
            if not ctx.run.terminal and ctx.run.status != "awaiting_confirmation" \
                    and isinstance(drive(ctx), NextStepLost):
                return "busy"  # another invocation took the run over; it carries on
            return "resumed"
    return "busy"


def close_open_turn(ctx: RunContext, actions: list[ActionRecord]) -> None:
    """Finish the last model turn's calls (if it has unanswered ones) and answer them in order."""
    if not ctx.turns:
        fail_run(ctx, "INCONSISTENT_STATE", "the run has no turns to resume from")
        return
    last_index = len(ctx.turns) - 1
    last = ctx.turns[last_index]
    calls = last.function_calls
    if last.role != "model" or not calls:
        ctx.commit()
        return
    turn_actions = sorted((a for a in actions if a.turn_index == last_index), key=lambda a: a.call_index)
    if len(turn_actions) != len(calls):
        fail_run(ctx, "INCONSISTENT_STATE", "the run's last tool calls were not all recorded")
        return
    for action in turn_actions:
        if action.status == "executing":
            _recover_cut_off(ctx, action)
        if action.status in ("approved", "planned"):
            if args_hash(action.args) != action.args_hash:
                action.status, action.outcome = "failed", "error"
                action.error = "the arguments changed after the decision; not executed"
                ctx.put_action(action)
                continue
            execute_action(ctx, action)
        elif action.status == "completed":
            ctx.last_action = action
    waiting = [a for a in turn_actions if a.status == "awaiting_confirmation"]
    if waiting:
        # A turn that mixed allowed calls with calls needing approval was cut off before it paused
        # (a crash while an allowed call ran): its approvals are still open, so pause now instead
        # of answering calls nobody decided.
        pause_for_approvals(ctx, last_index, waiting)
        return
    ctx.run.pending_turn = None
    ctx.run.pending_approval_ids = []
    ctx.run.status = "planning"
    ctx.add_turn(responses_turn(calls, turn_actions))
    ctx.commit()


def _recover_cut_off(ctx: RunContext, action: ActionRecord) -> None:
    if action.idempotent:
        action.status = "planned" if action.approval_id is None else "approved"
        ctx.audit(ctx.new_audit(kind="recovery", action_id=action.action_id, tool=action.tool,
                                decision="retry", reason="idempotent tool cut off by a crash; retried"))
        return
    action.status, action.outcome, action.error = "failed", "unknown", UNKNOWN_OUTCOME
    ctx.put_action(action)
    ctx.audit(ctx.new_audit(kind="recovery", action_id=action.action_id, tool=action.tool,
                            decision="unknown", reason=UNKNOWN_OUTCOME))
    ctx.emit(ToolResultEvent(toolName=action.tool, actionId=action.action_id, status="failed",
                             error=UNKNOWN_OUTCOME))


def sweep(services: Services, dispatcher: Dispatcher, *, limit: int = 50) -> dict[str, int]:
    """Periodic safety net: re-publish stranded outbox entries and recover runs whose lease expired."""
    republished = sweep_outbox(services, dispatcher)
    recovered = 0
    cutoff = now()
    for status in ("planning", "executing"):
        docs = services.runs.store.query(Query("runs", where=(("status", status),), order_by="leaseExpiresAt",
                                               limit=limit))
        for d in docs:
            if float(d.data.get("leaseExpiresAt", 0)) >= cutoff:
                continue
            try:
                if resume_run(services, d.id) == "resumed":
                    recovered += 1
            except Exception:  # one run's trouble must not stop the recovery of the others
                log.exception("recovery of a run failed", extra={"fields": {"runId": d.id}})
    return {"republished": republished, "recovered": recovered}
