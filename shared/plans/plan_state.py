"""The ``plan`` host's state in its run document (``run.hostState``, a ``PlanRunState``) and the
turn that starts a task."""

from __future__ import annotations

from shared.loop.context import RunContext
from shared.models.base import Part, Turn
from shared.state.host_states import PlanRunState, expect
from shared.state.plan_records import PlanTask
from shared.state.records import RunMode, RunRecord

KIND = "plan"


def task_turn(task: PlanTask, index: int, total: int) -> Turn:
    return Turn(role="user", parts=[Part(text=f"Task {index + 1} of {total} ({task.id}): {task.title}\n"
                                              f"{task.description}".strip())])


def ended_mode(run: RunRecord) -> RunMode:
    """The mode of a plan's ended run: what it did, not the pause it was once in (``requires_approval``)."""
    return "tool_executed" if run.tools_executed > 0 else "assistant_text"


def plan_state(ctx: RunContext) -> PlanRunState:
    """The plan host's state of the unit (validated once, when the run was read)."""
    return expect(ctx.run.host_state, PlanRunState)
