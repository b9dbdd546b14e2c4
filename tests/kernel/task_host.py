"""A second host, added without touching the loop: a "task" whose final text completes a task
record (``tasks/{runId}``) instead of writing a thread message, and which *yields* when its
invocation's step budget is spent, so its work continues over many invocations."""

from __future__ import annotations

import time
from typing import Any

from shared.config import Settings
from shared.events import StatusEvent, event_to_doc
from shared.ids import new_id
from shared.loop import stops
from shared.loop.context import RunContext
from shared.loop.host import Budget, Host
from shared.loop.outcomes import BudgetSpent, NextStepYield, StopOutcome
from shared.models.base import Part, Turn
from shared.runtime import Runtime
from shared.state.docstore import Write
from shared.state.records import RunRecord

TASKS = "tasks"


class TaskHost(Host):
    kind = "task"

    def __init__(self, steps_per_invocation: int = 2) -> None:
        self.steps_per_invocation = steps_per_invocation

    def budget(self, settings: Settings) -> Budget:
        return Budget(deadline=time.monotonic() + settings.run_deadline_s, max_steps=self.steps_per_invocation)

    def budget_spent(self, ctx: RunContext, why: BudgetSpent) -> StopOutcome:
        return NextStepYield(why)

    def finish(self, ctx: RunContext, text: str) -> None:
        record = {"taskId": ctx.run.run_id, "status": "completed", "result": text, "steps": ctx.run.steps}
        stops.complete(ctx, writes=[Write("set", f"{TASKS}/{ctx.run.run_id}", record)])


def start_task(rt: Runtime, uid: str, objective: str) -> str:
    """Create a task unit and return its id (nothing is driven yet)."""
    run_id = new_id("task")
    run = RunRecord(run_id=run_id, uid=uid, thread_id="", status="planning", host=TaskHost.kind,
                    model=rt.model().name, max_steps=50, last_seq=1)
    first = event_to_doc(StatusEvent(seq=1, status="planning", threadId="", runId=run_id))
    rt.runs.create_unit(run, turns=[Turn(role="user", parts=[Part(text=objective)])], events=[first])
    return run_id


def task_record(rt: Runtime, run_id: str) -> dict[str, Any] | None:
    doc = rt.store.get(f"{TASKS}/{run_id}")
    return None if doc is None else doc.data
