"""The ``plan`` host's state in its run document (``run.hostState``) and the turn that starts a task."""

from __future__ import annotations

from typing import Any

from shared.loop.context import RunContext
from shared.models.base import Part, Turn
from shared.state.plan_records import PlanTask

KIND = "plan"


def task_turn(task: PlanTask, index: int, total: int) -> Turn:
    return Turn(role="user", parts=[Part(text=f"Task {index + 1} of {total} ({task.id}): {task.title}\n"
                                              f"{task.description}".strip())])


class PlanState:
    """The host's view of ``run.hostState`` (JSON in the run document)."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.raw: dict[str, Any] = ctx.run.host_state

    @property
    def session_id(self) -> str:
        return str(self.raw["sessionId"])

    @property
    def objective(self) -> str:
        return str(self.raw["objective"])

    @property
    def deadline(self) -> float:
        return float(self.raw["deadline"])

    @property
    def tasks(self) -> list[PlanTask]:
        return [PlanTask.model_validate(t) for t in self.raw["tasks"]]

    def set_tasks(self, tasks: list[PlanTask]) -> None:
        self.raw["tasks"] = [t.to_doc() for t in tasks]

    @property
    def current(self) -> PlanTask | None:
        cid = self.raw.get("taskId")
        return next((t for t in self.tasks if t.id == cid), None)
