"""Parent wake-up: a plan started by a chat run's ``agent_create_plan`` decides, when it ends, the
call its parent run waits on (the run resumes and the call answers with the plan's outcome)."""

from __future__ import annotations

import time

from shared.durable.kinds import RESUME, plan_entry_id
from shared.durable.messages import WorkMessage
from shared.loop import stops
from shared.loop.context import RunContext
from shared.plans.plan_state import plan_state
from shared.state.transitions import move_action


def wake_parent(ctx: RunContext) -> tuple[WorkMessage, str] | None:
    """Queue, in the plan's final commit, the parent's approved call and a ``resume`` message.
    Returns the message and its outbox entry, to deliver after that commit (None: no parent waits)."""
    state = plan_state(ctx)
    parent_run, parent_action = state.parent_run_id, state.parent_action_id
    if not parent_run or not parent_action:
        return None
    runs = ctx.services.runs
    # The waiting call is a paused turn's: a document of its own. Read with its run, which names
    # what the parent's resume reads (issue 33: the resume message carries it, one round trip).
    run, action = runs.run_and_action(parent_run, parent_action)
    if action is None or action.status != "awaiting_confirmation":
        return None
    move_action(action, "approved")
    action.updated_at = time.time()
    entry = plan_entry_id(state.session_id)
    ctx.write(runs.action_write(action))
    ctx.write(runs.touch_run_write(parent_run, action.updated_at))
    message = WorkMessage(kind=RESUME, unitId=parent_run, uid=ctx.run.uid, entryId=entry,
                          paused=None if run is None else stops.resume_hint(run))
    ctx.write(ctx.services.outbox.record(message, entry))
    return message, entry
