"""The session a plan run executes, kept in step with the run: its events and its summary fields,
written with the run's commits."""

from __future__ import annotations

from typing import Any

from shared.events import _Event, event_to_doc
from shared.loop.context import RunContext
from shared.plans.plan_state import plan_state
from shared.state.sessions_repo import SessionsRepo


class SessionSync:
    def __init__(self, sessions: SessionsRepo) -> None:
        self.sessions = sessions

    def emit(self, ctx: RunContext, event: _Event) -> None:
        """Give ``event`` the session's next sequence number and queue it for the next commit."""
        state = plan_state(ctx)
        state.seq += 1
        event.seq = state.seq
        ctx.write(self.sessions.event_write(state.session_id, event_to_doc(event)))

    def fields(self, ctx: RunContext, **extra: Any) -> None:
        """Queue the session's summary (current task, plan version, last event, usage) and ``extra``."""
        state = plan_state(ctx)
        ctx.write(self.sessions.update_write(state.session_id, {
            "currentTaskId": state.task_id, "planVersion": state.plan_version,
            "lastSeq": state.seq, "usage": ctx.run.usage.model_dump(by_alias=True),
            "costUsd": ctx.run.cost_usd, **extra}))
