"""Plan edits during execution: a reflection's modifications become a new plan version (refused
ones are recorded, never applied), and the next pending task starts."""

from __future__ import annotations

from shared.events.plan import RunPlanUpdatedEvent, StepStartEvent
from shared.loop.context import RunContext
from shared.plan_views import plan_body
from shared.plans import planner
from shared.plans.plan_state import task_turn
from shared.state.host_states import PlanRunState
from shared.state.plan_records import PlanChange, PlanTask, PlanVersionRecord
from shared.state.sessions_repo import SessionsRepo


def modify(tasks: list[PlanTask], mods: list[planner.Modification], version: int
           ) -> tuple[list[PlanTask], list[PlanChange]]:
    """Apply a reflection's modifications; one that touches a completed (or unknown) task is
    refused and recorded, never applied."""
    out = [t.model_copy() for t in tasks]
    changes: list[PlanChange] = []
    n = max([int(t.id[1:]) for t in out if t.id[1:].isdigit()] + [0])
    for m in mods:
        target = next((t for t in out if t.id == m.taskId), None)
        if m.op == "add":
            n += 1
            new = PlanTask(id=f"t{n}", title=(m.title or "new task")[:200], description=m.description or "",
                           created_in_version=version)
            at = next((i + 1 for i, t in enumerate(out) if t.id == m.after), len(out))
            out.insert(at, new)
            changes.append(PlanChange(op="add", task_id=new.id, what=f"added task {new.id}: {new.title}", why=m.reason))
        elif target is None or target.status in ("completed", "failed", "obsolete"):
            state = "unknown" if target is None else target.status
            changes.append(PlanChange(op="refine", task_id=m.taskId,
                                      what=f"refused to {m.op} {state} task {m.taskId}", why=m.reason))
        elif m.op == "modify":
            target.title = (m.title or target.title)[:200]
            target.description = m.description if m.description is not None else target.description
            changes.append(PlanChange(op="modify", task_id=target.id, what=f"changed task {target.id}", why=m.reason))
        else:
            target.status = "obsolete"
            changes.append(PlanChange(op="obsolete", task_id=target.id, what=f"task {target.id} is obsolete",
                                      why=m.reason))
    for i, t in enumerate(out):
        t.order = i
    return out, changes


def live_count(tasks: list[PlanTask]) -> int:
    return len([t for t in tasks if t.status != "obsolete"])


def record_version(ctx: RunContext, sessions: SessionsRepo, state: PlanRunState, tasks: list[PlanTask],
                   changes: list[PlanChange], reason: str) -> None:
    """Queue a new plan version for ``changes`` (only refused ones: an event, the plan stays). The
    session's index gets the new ``planVersion`` (its list shows it)."""
    if any(c.op in ("add", "modify", "obsolete") for c in changes):
        state.plan_version += 1
        version = state.plan_version
        ctx.write(sessions.plan_write(state.session_id, PlanVersionRecord(
            version=version, tasks=tasks, changes=changes, reason=reason)),
                  sessions.update_write(state.session_id, {"planVersion": version}))
        ctx.emit(RunPlanUpdatedEvent(planId=state.session_id, plan=plan_body(version, tasks), changes=changes,
                                     reason=reason))
    elif changes:
        ctx.emit(RunPlanUpdatedEvent(planId=state.session_id, plan=plan_body(state.plan_version, tasks),
                                     changes=changes, reason="refused"))


def start_next(ctx: RunContext, state: PlanRunState) -> PlanTask | None:
    """Start the first pending task (its turn, record and event); None when none is left."""
    tasks = state.tasks
    pending = [t for t in tasks if t.status == "pending"]
    if not pending:
        state.task_id = None
        return None
    nxt = pending[0]
    nxt.status = "in_progress"
    state.task_id = nxt.id
    live = [t for t in tasks if t.status != "obsolete"]
    index = next(i for i, t in enumerate(live) if t.id == nxt.id)
    ctx.add_turn(task_turn(nxt, index, len(live)))
    ctx.emit(StepStartEvent(planId=state.session_id, stepId=nxt.id, title=nxt.title, index=index + 1,
                            total=len(live)))
    return nxt
