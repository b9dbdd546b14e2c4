"""Parent wake-up: a plan started by a chat run's ``agent_create_plan`` decides, when it ends, the
call its parent run waits on (the run resumes and the call answers with the plan's outcome)."""

from __future__ import annotations

import time

from shared.durable.kinds import RESUME
from shared.durable.messages import WorkMessage
from shared.loop.context import RunContext
from shared.plans.plan_state import plan_state
from shared.state.transitions import move_action


def wake_parent(ctx: RunContext) -> str | None:
    """Queue, in the plan's final commit, the parent's approved call and a ``resume`` message.
    Returns the outbox entry to deliver after that commit (None: no parent waits)."""
    state = plan_state(ctx)
    parent_run, parent_action = state.parent_run_id, state.parent_action_id
    if not parent_run or not parent_action:
        return None
    runs = ctx.services.runs
    action = next((a for a in runs.list_actions(parent_run) if a.action_id == parent_action), None)
    if action is None or action.status != "awaiting_confirmation":
        return None
    move_action(action, "approved")
    action.updated_at = time.time()
    entry = f"plan-{state.session_id}"
    ctx.write(runs.action_write(action))
    ctx.write(runs.touch_run_write(parent_run, action.updated_at))
    ctx.write(ctx.services.outbox.record(WorkMessage(kind=RESUME, unitId=parent_run, uid=ctx.run.uid,
                                                     entryId=entry), entry))
    return entry
