"""Continuing a unit of work from the store alone: after approvals, after a yield, after a crash.

``resume_run`` claims the run with a lease (a conditional write on the run document), closes the
open model turn (runs approved and allowed calls once each; a call a crash cut off is retried when
the tool is idempotent, reconciled with the service when the tool can ask it, and otherwise
recorded as outcome ``unknown``), answers every call of that turn in order, and drives the loop on
under the run's host with a fresh invocation budget.

The same claim serves three message kinds, all registered with the router by ``shared/kernel.py``:
``resume`` (a decision was recorded), ``continue`` (the unit yielded) and the sweep's recovery of
runs whose lease expired.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Literal

from shared.durable import leases
from shared.durable.kinds import CONTINUE, continue_entry_id
from shared.errors import StoredValueInvalid
from shared.formats import args_hash
from shared.ids import new_id
from shared.logs import log_context
from shared.state.batched_reads import BatchedReads, read_together
from shared.state.docstore import PreconditionFailed, Write
from shared.state.records import BUDGET_TOOL, ActionRecord, RunRecord, UserRecord
from shared.state.runs_repo import RunSnapshot
from shared.state.transitions import move_action, move_run

if TYPE_CHECKING:
    from shared.durable.messages import WorkMessage
    from shared.durable.router import Disposition
    from shared.loop.context import RunContext, Services
    from shared.models.base import Turn
    from shared.state.users_repo import Stamps

# The loop (steps, tools, events, tracing, budgets) is imported by the functions that drive a run,
# once one is claimed: a message for a run that is gone, ended, busy or still waiting loads none of
# it (the ``resume`` function's cold start, issue 33).

log = logging.getLogger("agent_runtime.resume")

ResumeOutcome = Literal["not_found", "terminal", "waiting", "busy", "resumed"]
CLAIM_ATTEMPTS = 5
UNKNOWN_OUTCOME = ("the runtime stopped while this call was running, so its outcome is unknown; "
                   "it was not retried")
RECOVER_STATUSES = ("planning", "executing")


def handle_run_message(services: Services, message: WorkMessage) -> Disposition:
    """Handler of ``resume`` and ``continue`` messages: continue the run they name."""
    if message.unitId is None:
        log.error("message without unitId acknowledged",
                  extra={"fields": {"kind": message.kind, "schemaVersion": message.schemaVersion}})
        return "done"
    removed: set[str] = set()
    outcome = resume_run(services, message.unitId, expected_uid=message.uid, how=message.kind,
                         traceparent=message.traceparent, paused=message.paused_reads, removed=removed)
    log.info("%s message handled: %s", message.kind, outcome, extra={"fields": {"runId": message.unitId}})
    # Resumed, waiting for another decision (whose own message will resume it), ended or gone: the
    # message's outbox entry has done its job. "busy" keeps it: the lease holder may die, and then
    # the sweep re-publishes the entry. The router need not read the entry again when the run was
    # resumed and its claim removed the entry (a decision of the paused turn, a plan's wake-up of
    # its parent: issue 33o), or for a ``continue`` message that resumed its run: the entry of a
    # yield (``continue-{run}-{steps}``) is removed by the claim of the run parked at it (this one,
    # or an earlier one for a message delivered twice).
    if outcome == "busy":
        return "keep"
    if outcome == "resumed" and (message.outbox_entry in removed or (
            message.kind == CONTINUE and message.outbox_entry == continue_entry_id(
                message.unitId, _steps_of(message.outbox_entry)))):
        return "consumed"
    return "done"


def _steps_of(entry_id: str | None) -> int:
    """The steps a ``continue`` entry id names (-1: not one)."""
    tail = (entry_id or "").rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else -1


def recover_runs(services: Services, limit: int) -> int:
    """The sweep's recovery: take over runs whose invocation stopped renewing its lease."""
    recovered = 0
    cutoff = time.time()
    for status in RECOVER_STATUSES:
        for run_id, seen in services.runs.expired_runs(status, cutoff, limit):
            # What the query read of the run names what to read with it (checked against the run
            # read again then, like a message's hint): one round trip before the claim (issue 33).
            hint = None if seen is None else services.runs.resume_hint(seen)
            try:
                if resume_run(services, run_id, how="recover", uid=seen.uid if seen else None,
                              paused=hint) == "resumed":
                    recovered += 1
            except Exception:  # one run's trouble must not stop the recovery of the others
                log.exception("recovery of a run failed", extra={"fields": {"runId": run_id}})
    return recovered


def close_expired_pauses(services: Services, limit: int) -> int:
    """The sweep closes runs whose open approvals all expired (a plan session's run too: its host
    state names the session, which ends ``deadline_exceeded`` or stays for the deadline sweep).
    Only pauses that asked someone are queried (``pauseExpiresAt``, earliest first): plans waiting
    for their confirmation, however many, never crowd them out. Runs paused before that field
    existed come from the legacy pass."""
    from shared.loop import stops

    closed = 0
    at = time.time()
    for run_id in [*services.runs.expired_pauses(at, limit), *services.runs.legacy_pauses(limit)]:
        try:
            closed += services.runs.close_expired_pause(run_id, stops.close_paused)
        except Exception:
            log.exception("closing an expired pause failed", extra={"fields": {"runId": run_id}})
    return closed


def _load_user(services: Services, uid: str, batch: BatchedReads | None) -> tuple[UserRecord, Stamps | None]:
    """The user's profile and stamps (shared/state/users_repo.py: the tool list's queries), from
    ``batch`` when it holds them."""
    users = services.users
    try:
        user = users.get_user(uid, batch=batch)
    except Exception:
        log.warning("profile read failed on resume; using defaults", exc_info=True)
        user = UserRecord(uid=uid)
    try:
        return user, users.stamps(uid, batch)
    except Exception:
        log.warning("stamp read failed on resume; the user's collections are queried", exc_info=True)
        return user, None


def _first_read(services: Services, run_id: str, uid: str | None,
                paused: tuple[int, list[str]] | None) -> BatchedReads | None:
    """The run, its user's profile and stamps when the message (or the sweep's query) names the
    user, and the documents its resume reads by name when the message names them
    (``WorkMessage.paused``): one round trip (issue 33)."""
    if uid is None:
        return None
    users, runs = services.users, services.runs
    named = runs.paused_paths(run_id, *paused) if paused is not None else []
    return read_together(users.store, [*runs.run_paths(run_id), *users.user_paths(uid), *users.stamp_paths(uid),
                                       *named])


def _actions_and_turns(services: Services, run: RunRecord, batch: BatchedReads | None
                       ) -> tuple[list[ActionRecord], list[Turn] | None]:
    """The actions and turns a resume of ``run`` works from: read by id as the run names them
    (``RunsRepo.resume_reads``; from ``batch`` when it holds them: no round trip); else (a run
    paused by older code, one cut off inside a step, or documents not as the run says) the run's
    open actions queried, and its turns left to be queried when needed (None)."""
    actions, turns = services.runs.resume_reads(run, batch=batch)
    if actions is not None and turns is not None:
        if _whole(actions, turns):
            return actions, turns
        actions, turns = None, None
    return services.runs.open_actions(run.run_id), turns  # the open turn's: never inside a turns document


def _whole(actions: list[ActionRecord], turns: list[Turn]) -> bool:
    """Whether ``actions`` hold one action per call of the last turn (when it is a model turn with
    calls): what :func:`close_open_turn` answers it from."""
    last = len(turns) - 1
    calls = turns[last].function_calls if turns and turns[last].role == "model" else []
    made = sorted(a.call_index for a in actions if a.turn_index == last and a.tool != BUDGET_TOOL)
    return made == list(range(len(calls)))


def resume_run(services: Services, run_id: str, *, expected_uid: str | None = None, how: str = "resume",
               traceparent: str | None = None, paused: tuple[int, list[str]] | None = None,
               uid: str | None = None, removed: set[str] | None = None) -> ResumeOutcome:
    """Claim the run and drive it on; ``how`` (the message kind, or ``recover``) and the message's
    ``traceparent`` label the invocation's span (``shared/tracing.py``); ``paused``: the message's
    hint of what the resume reads by name (``WorkMessage.paused_reads``), read with the run;
    ``uid``: the run's user as the sweep read it, whose documents are read with it too (not
    checked, unlike ``expected_uid``); ``removed``: filled with the outbox entries the claim of a
    ``resumed`` run removed."""
    owner = new_id("inv")
    read_uid = expected_uid or uid
    batch = _first_read(services, run_id, read_uid, paused)
    for attempt in range(CLAIM_ATTEMPTS):
        snap = services.runs.get_run(run_id, batch=batch if attempt == 0 else None)
        if snap is None or (expected_uid is not None and snap.run.uid != expected_uid):
            return "not_found"
        run = snap.run
        if run.terminal:
            return "terminal"
        if not leases.claimable(run.lease):
            return "busy"
        try:
            actions, turns = _actions_and_turns(services, run, batch if attempt == 0 else None)
            if turns is None and not _waits(run, actions):
                turns = services.runs.load_turns(run_id)
        except StoredValueInvalid as exc:
            if _still_waits(services, run):
                return "waiting"
            try:
                return _fail_unreadable(services, snap, owner, exc)
            except PreconditionFailed:
                continue  # someone moved the run meanwhile (a decision, another resumer): look again
        if _waits(run, actions):
            return "waiting"
        from shared import tracing
        from shared.events import StatusEvent
        from shared.failures import FailureCode
        from shared.loop import budget_pause, stops
        from shared.loop.context import RunContext
        from shared.loop.outcomes import NextStepLost
        from shared.loop.steps import drive

        host = services.hosts.get(run.host)
        claimed, done = _claim(services, run, owner)
        _removed(removed, services, done)
        if host is None:
            try:
                snap = services.runs.commit(snap, claimed, done)
            except PreconditionFailed:
                continue  # someone moved the run meanwhile (a decision, another resumer): look again
            with log_context(runId=run_id, threadId=run.thread_id, uid=run.uid):
                log.error("run of an unknown host kind; failing it", extra={"fields": {"host": run.host}})
                ctx = RunContext(services=services, snapshot=snap, turns=[], user=UserRecord(uid=run.uid),
                                 deadline=time.monotonic(), owner=owner, host=services.hosts.fallback)
                stops.fail(ctx, FailureCode.UNKNOWN_HOST, f"no host is registered for kind {run.host!r}")
                return "resumed"
        with log_context(runId=run_id, threadId=run.thread_id, uid=run.uid):
            budget = host.budget(services.settings)
            assert turns is not None  # read above: a run that waits on a decision returned
            user, stamps = _load_user(services, run.uid, batch if run.uid == read_uid else None)
            # The claim (the run as ``claimed``, the consumed entries) is this context's first commit.
            ctx = RunContext(services=services, snapshot=RunSnapshot(claimed, snap.token), turns=turns, user=user,
                             owner=owner, host=host, deadline=budget.deadline, max_steps=budget.max_steps,
                             yield_margin_s=budget.yield_margin_s, stamps=stamps,
                             seen_actions={a.action_id: a for a in actions})
            ctx.write(*done)
            # The host's own first events and the invocation's status ride on the claim (issue 33:
            # no commit of their own); a claim that fails is never committed, so neither are they.
            host.resumed(ctx)
            _removed(removed, services, ctx.pending)  # with the host's own (a plan's wake-up entry)
            ctx.emit(StatusEvent(status=ctx.run.status, threadId=run.thread_id, runId=run_id))
            if not claims_with_its_side_effect(ctx, run, actions):
                try:
                    ctx.commit()
                except PreconditionFailed:
                    continue  # someone moved the run meanwhile (a decision, another resumer): look again
            with tracing.invocation(ctx, how, traceparent):
                if not budget_pause.settle(ctx, actions):
                    return "resumed"  # a rejected budget approval ended the unit
                if not budget_pause.check_resumed_act(ctx):
                    return "resumed"  # no room for what follows the approved calls: paused for a budget approval
                try:
                    go_on = close_open_turn(ctx, actions)
                except PreconditionFailed:
                    log.warning("lost the run while closing its open turn", extra={"fields": {"runId": run_id}})
                    return "busy"
                if go_on and isinstance(drive(ctx), NextStepLost):
                    return "busy"  # another invocation took the run over; it carries on
                return "resumed"
    return "busy"


def _removed(removed: set[str] | None, services: Services, writes: list[Write]) -> None:
    """Note in ``removed`` the outbox entries this attempt's claim removes (``writes``: its
    writes so far). Every commit of a resumed run holds the claim's writes, so they are gone
    when the run is ``resumed``."""
    if removed is not None:
        removed.clear()
        removed.update(services.outbox.repo.deleted_by(writes))


def _waits(run: RunRecord, actions: list[ActionRecord]) -> bool:
    """Whether a paused run still waits for a decision of its paused turn (``actions``: its open
    actions): its resume is the last decision's message."""
    return run.status == "awaiting_confirmation" and any(
        a.turn_index == run.pending_turn and a.status == "awaiting_confirmation" for a in actions)


def _claim(services: Services, run: RunRecord, owner: str) -> tuple[RunRecord, list[Write]]:
    """``run`` as ``owner``'s claim writes it (leased; ``executing`` when it was paused), and the
    outbox entries the claim consumes: the paused turn's decisions and a yield's continue message
    have done their job (whichever message or sweep got here first), so no entry outlives its run."""
    claimed = run.model_copy(deep=True)
    if run.status == "awaiting_confirmation":
        move_run(claimed, "executing")
        if run.paused_action_ids is None and run.thread_id:
            # Paused by the code before issue 33's third session, which noted no
            # ``queuedBehind`` on the active run: its end looks at its thread's queue.
            claimed.queued_behind = True
    claimed.lease = leases.held(owner, services.settings.lease_ttl_s)
    claimed.lease_expires_at = claimed.lease.expires_at
    done = [services.outbox.done(a) for a in run.pending_approval_ids]
    done.append(services.outbox.done(continue_entry_id(run.run_id, run.steps)))
    return claimed, done


def _still_waits(services: Services, run: RunRecord) -> bool:
    """Of a paused run whose stored history cannot be read: whether another of its approvals is still
    undecided (its own decision's message then fails the run; its actions queried, as an older
    pause's resume does). False when those cannot be read either."""
    if run.status != "awaiting_confirmation":
        return False
    try:
        return _waits(run, services.runs.open_actions(run.run_id))
    except StoredValueInvalid:
        return False


def _fail_unreadable(services: Services, snap: RunSnapshot, owner: str, exc: StoredValueInvalid) -> ResumeOutcome:
    """End a run whose stored turns or actions cannot be read (issue 35: a stored document that is no
    valid record is refused naming it; issue 33k): claimed and failed ``INCONSISTENT_STATE`` by its
    host (the way a resume ends a run it cannot work from; a chat run releases its thread and starts
    the next queued one), its error naming the document, in one commit. Nothing of its history
    runs: no tool, no model call; the decisions stay as recorded. The message is then acknowledged
    (redelivering it would meet the same document). PreconditionFailed when the run moved."""
    from shared.failures import FailureCode
    from shared.loop.context import RunContext

    run = snap.run
    where = str(exc.details.get("object") or "a stored document")
    with log_context(runId=run.run_id, threadId=run.thread_id, uid=run.uid):
        log.error("a run's stored history cannot be read; failing it",
                  extra={"fields": {"runId": run.run_id, "object": where, "error": exc.message[:500]}})
        host = services.hosts.get(run.host) or services.hosts.fallback
        claimed, done = _claim(services, run, owner)
        ctx = RunContext(services=services, snapshot=RunSnapshot(claimed, snap.token), turns=[],
                         user=UserRecord(uid=run.uid), deadline=time.monotonic(), owner=owner, host=host)
        ctx.write(*done)
        host.fail(ctx, FailureCode.INCONSISTENT_STATE, f"{FailureCode.INCONSISTENT_STATE.value}: the run's stored "
                  f"history cannot be read: {exc.message}"[:2000])
    return "resumed"


def claims_with_its_side_effect(ctx: RunContext, run: RunRecord, actions: list[ActionRecord]) -> bool:
    """Whether the claim of a run resumed after its decisions may wait for the claim of the first
    approved side effect and be one commit with it (issue 33: one round trip less to resume): only
    when nothing runs before that commit, i.e. the paused turn's calls to run are all registry
    tools with a side effect (each commits its claim before it runs), none cut off, no budget
    decision. Read-only and virtual tools (a plan's start writes) run only after a claim."""
    from shared.loop.tool_calls import lookup

    if run.status != "awaiting_confirmation" or run.host != "chat":
        return False
    turn = [a for a in actions if a.turn_index == run.pending_turn]
    to_run = [a for a in turn if a.status in ("approved", "planned", "executing")]
    if not to_run or any(a.tool == BUDGET_TOOL for a in turn):
        return False
    for action in to_run:
        tool = lookup(ctx, action.tool)
        if action.status == "executing" or tool is None or tool.host or not tool.side_effect:
            return False
        if args_hash(action.args) != action.args_hash:
            return False
    return True


def close_open_turn(ctx: RunContext, actions: list[ActionRecord]) -> bool:
    """Finish the last model turn's calls (if it has unanswered ones) and answer them in order.
    True when the loop may go on; False when the host stopped the unit (committed)."""
    from shared.events import ToolResultEvent
    from shared.failures import FailureCode
    from shared.loop import budget_pause
    from shared.loop.outcomes import NextStepInterruption, NextStepLost, NextStepRunAgain
    from shared.loop.steps import host_step
    from shared.loop.tool_calls import execute_action, outcomes, responses_turn

    if not ctx.turns:
        ctx.host.fail(ctx, FailureCode.INCONSISTENT_STATE, "the run has no turns to resume from")
        return False
    last_index = len(ctx.turns) - 1
    last = ctx.turns[last_index]
    calls = last.function_calls
    if last.role != "model" or not calls:
        if ctx.dirty:  # e.g. a budget raise applied; else the claim committed all there was
            ctx.commit()
        return True
    # A budget approval's action shares the turn index of the model turn it let through: not a call of it.
    turn_actions = sorted((a for a in actions if a.turn_index == last_index and a.tool != budget_pause.BUDGET_TOOL),
                          key=lambda a: a.call_index)
    if len(turn_actions) != len(calls):
        ctx.host.fail(ctx, FailureCode.INCONSISTENT_STATE, "the run's last tool calls were not all recorded")
        return False
    for action in turn_actions:
        if action.status == "executing":
            _recover_cut_off(ctx, action)
        if action.status in ("approved", "planned"):
            if args_hash(action.args) != action.args_hash:
                move_action(action, "failed")
                action.outcome, action.error = "error", "the arguments changed after the decision; not executed"
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
        ctx.host.interrupt(ctx, NextStepInterruption(last_index, waiting))
        return False
    for action in turn_actions:
        if action.status == "rejected" and action.approval_id is not None:
            # Rejected by the user (or its approval expired): told in the commit that answers the
            # turn, so exactly once (an execution's claim commit earlier in this loop may be
            # followed by a crash and this turn closed again). A policy denial told its own when
            # the call was decided.
            ctx.emit(ToolResultEvent(toolName=action.tool, actionId=action.action_id, status="rejected",
                                     error=action.error))
    run = ctx.run
    run.pending_turn, run.pending_approval_ids, run.pause_expires_at, run.paused_action_ids = None, [], None, None
    move_run(ctx.run, "planning")
    ctx.add_turn(responses_turn(calls, turn_actions))
    outcome = host_step(ctx, NextStepRunAgain(outcomes(turn_actions)))
    if not isinstance(outcome, NextStepRunAgain):
        assert not isinstance(outcome, NextStepLost)
        ctx.host.act(ctx, outcome)
        return False
    ctx.commit()
    return True


def _recover_cut_off(ctx: RunContext, action: ActionRecord) -> None:
    """A call a crash cut off: retry it when repeating is safe, ask the service when it can tell
    (done → recorded, not done → run once), else record the outcome ``unknown`` (never re-run)."""
    from shared.events import ToolResultEvent
    from shared.loop.tool_calls import bounded_result, tool_context

    tool = ctx.registry.get(action.tool)
    if action.idempotent:
        _rerun(ctx, action, "retry", "idempotent tool cut off by a crash; retried")
        return
    if tool is not None and tool.reconcile_fn is not None:
        try:
            found = tool.reconcile_fn(tool_context(ctx, action), tool.validate(action.args))
        except Exception as exc:  # the service could not tell: nothing is known, nothing is repeated
            log.warning("reconciling a cut-off call failed: %s", type(exc).__name__,
                        extra={"fields": {"runId": ctx.run.run_id, "actionId": action.action_id, "tool": action.tool,
                                          "component": "recovery", "stage": "reconcile"}})
            _record_unknown(ctx, action, f"{UNKNOWN_OUTCOME} (checking with the service failed: "
                                         f"{type(exc).__name__})")
            return
        if found is None:
            _rerun(ctx, action, "reconciled_not_done",
                   "the service has no trace of this call (cut off before its side effect); run once")
            return
        move_action(action, "completed")
        action.outcome, action.result = "success", bounded_result(found)
        ctx.run.tools_executed += 1
        ctx.put_action(action)
        ctx.audit(ctx.new_audit(kind="recovery", action_id=action.action_id, tool=action.tool,
                                decision="reconciled_done",
                                reason="the service shows this call's side effect: recorded as done, not repeated"))
        ctx.emit(ToolResultEvent(toolName=action.tool, actionId=action.action_id, status="completed",
                                 output=action.result))
        return
    _record_unknown(ctx, action, UNKNOWN_OUTCOME)


def _rerun(ctx: RunContext, action: ActionRecord, decision: str, reason: str) -> None:
    move_action(action, "planned" if action.approval_id is None else "approved")
    ctx.audit(ctx.new_audit(kind="recovery", action_id=action.action_id, tool=action.tool,
                            decision=decision, reason=reason))


def _record_unknown(ctx: RunContext, action: ActionRecord, reason: str) -> None:
    from shared import tracing
    from shared.events import ToolResultEvent
    from shared.loop.tool_calls import conversation_id

    move_action(action, "failed")
    action.outcome, action.error = "unknown", reason
    tracing.tool_unknown(action, conversation_id(ctx))
    ctx.put_action(action)
    ctx.audit(ctx.new_audit(kind="recovery", action_id=action.action_id, tool=action.tool,
                            decision="unknown", reason=reason))
    ctx.emit(ToolResultEvent(toolName=action.tool, actionId=action.action_id, status="failed", error=reason))
