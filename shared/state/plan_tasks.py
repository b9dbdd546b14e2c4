"""A plan's task as stored in its plan versions, its task documents and the executing run's host state."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from shared.state.record_base import SCHEMA_VERSION, Record, now

TaskStatus = Literal["pending", "in_progress", "completed", "failed", "rejected", "cancelled", "obsolete"]
"""``rejected``: the task ended after the user rejected acts it needed (its reflection did not say the
goal was met without them); ``cancelled``: the session was cancelled before the task ended."""
OPEN_TASK_STATUSES: frozenset[str] = frozenset({"pending", "in_progress"})


class PlanTask(Record):
    id: str
    title: str
    description: str = ""
    status: TaskStatus = "pending"
    order: int = 0
    acts: int = 0
    rejected_acts: list[str] = Field(default_factory=list)
    """The previews of the task's acts the user rejected (at most one per act)."""
    summary: str | None = None
    """What the task achieved (or why it failed), from its last reflection."""
    created_in_version: int = 1
    updated_at: float = Field(default_factory=now)
    schema_version: int = SCHEMA_VERSION
