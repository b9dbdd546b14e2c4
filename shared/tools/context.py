"""What a tool receives besides its arguments."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from shared.config import Settings
from shared.errors import ToolError
from shared.state.users_repo import UsersRepo

if TYPE_CHECKING:
    from shared.projects.service import ProjectsService
    from shared.state.records import UsageEntry
    from shared.usage.budget import Overrun


@dataclass(frozen=True)
class ToolContext:
    uid: str
    run_id: str
    action_id: str
    """Stable across retries of the same call: tools use it as their idempotency key."""
    users: UsersRepo
    settings: Settings
    connectors: Any = None
    """Per-user access to external services (``shared.connectors.Connectors``), when configured."""
    usage: Callable[[UsageEntry], None] | None = None
    """Where a tool that calls a model itself (``google_web_search``) records that call: in a unit,
    the unit's charge (``RunContext.charge``: the run's ``usage`` and ``costUsd``, and its ledger
    entry in the step's commit); ``None``: not recorded (unit tests)."""
    model: Callable[[], Any] | None = None
    """The process's model, built on first use (``google_web_search`` asks it for a grounded answer)."""
    room: Callable[[float], Overrun | None] | None = None
    """The money limits a tool that calls a model itself checks first, with the call's maximum (USD):
    the run's ``budgetUsd`` against its ``costUsd``, then the user's caps (reserved until the step's
    commit); the limit without room, or None (docs/budgets.md). ``None``: not checked (unit tests)."""
    deadline: float | None = None
    """``time.monotonic()`` value after which the caller's time is spent; tools bound their own
    timeouts by :meth:`time_left` so no call outlives it."""
    unit_kind: str = "run"
    """What ``run_id`` names in the usage ledger (``run``, ``session``, ``task`` ...)."""

    def time_left(self, limit: float) -> float:
        """``limit`` seconds, or less when the caller's deadline comes first (never below 0)."""
        if self.deadline is None:
            return limit
        return max(0.0, min(limit, self.deadline - time.monotonic()))

    def call_budget(self, service: str, limit: float) -> float:
        """The timeout of a call to ``service``: ``limit`` seconds or the time left, whichever is
        less; a ``ToolError`` (told to the model) when no time is left at all."""
        budget = self.time_left(limit)
        if budget <= 0:
            raise ToolError(f"{service}: no time is left for this call")
        return budget
    projects: ProjectsService | None = None
    """The user's projects workspace; ``None``: the project tools build it over ``users``' store."""
