"""The run and stream use cases behind the HTTP entry points."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from shared.agent.chat_host import current_result
from shared.agent.service import AgentService
from shared.agent.streaming import live_events, replay_events
from shared.api import RunRequest
from shared.state.records import RunResult

if TYPE_CHECKING:
    from shared.state.sessions_repo import SessionsRepo


def run_to_stop(service: AgentService, uid: str, request: RunRequest, *,
                idempotency_key: str | None = None) -> tuple[RunResult, bool]:
    """Start and drive a run to its stop. A repeated Idempotency-Key returns the earlier run
    (``replayed=True``) and never starts a second one."""
    started = service.start(uid, request, idempotency_key=idempotency_key)
    if not started.outcome.created:
        return current_result(started.outcome.snapshot.run), True
    return service.run(service.context(started)), False


def stream_run(service: AgentService, uid: str, request: RunRequest, *, idempotency_key: str | None = None,
               sessions: Callable[[], SessionsRepo] | None = None) -> Iterator[dict[str, Any]]:
    """Start a run (errors raise here, before streaming) and return its live event stream; a
    repeated Idempotency-Key replays the earlier run's events, following it until it stops.
    ``sessions``: where the plans a run starts are read, to relay their events on its stream."""
    started = service.start(uid, request, idempotency_key=idempotency_key)
    if not started.outcome.created:
        return replay_events(service.services.runs, started.outcome.snapshot.run.run_id, 0, follow=True,
                             sessions=sessions)
    return live_events(service.context(started), started.first_events, sessions)
