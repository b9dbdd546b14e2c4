"""The session a plan run executes, kept in step with the run: its summary fields, written with
the run's commits. (Its events are the run's own: ``ctx.emit``; a session's view reads them from
the run's log, ``plans/session_log.py``.)"""

from __future__ import annotations

from typing import Any

from shared.loop.context import RunContext
from shared.plans.plan_state import plan_state
from shared.state.sessions_repo import SessionsRepo


class SessionSync:
    def __init__(self, sessions: SessionsRepo) -> None:
        self.sessions = sessions

    def fields(self, ctx: RunContext, **extra: Any) -> None:
        """Queue the session's summary (current task, plan version, usage) and ``extra``."""
        state = plan_state(ctx)
        ctx.write(self.sessions.update_write(state.session_id, {
            "currentTaskId": state.task_id, "planVersion": state.plan_version,
            "usage": ctx.run.usage.model_dump(by_alias=True), "costUsd": ctx.run.cost_usd, **extra}))
