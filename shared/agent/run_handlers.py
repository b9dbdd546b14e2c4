"""The run and stream use cases behind the HTTP entry points."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from shared.agent.chat_host import current_result
from shared.agent.service import AgentService
from shared.api import RunRequest
from shared.state.records import RunRecord, RunResult

if TYPE_CHECKING:
    from shared.limits import DeferredRequest
    from shared.state.sessions_repo import SessionsRepo


def run_to_stop(service: AgentService, uid: str, request: RunRequest, *,
                idempotency_key: str | None = None, deferred: DeferredRequest | None = None) -> tuple[RunResult, bool]:
    """Start and drive a run to its stop. A repeated Idempotency-Key returns the earlier run
    (``replayed=True``) and never starts a second one. ``deferred``: the request's count, left to
    the run's creating commit (``AgentService.start``)."""
    started = service.start(uid, request, idempotency_key=idempotency_key, deferred=deferred)
    if not started.outcome.created:
        return current_result(started.outcome.snapshot.run), True
    if started.outcome.queued:  # it starts when its turn comes, in another invocation
        from shared.agent.run_queue import queued_result

        return queued_result(started.outcome.snapshot.run), False
    return service.run(service.context(started)), False


def cancel_run(service: AgentService, uid: str, run_id: str, *, reason: str | None = None) -> tuple[RunRecord, bool]:
    """``POST /api/agent/runs/{runId}/cancel`` (``run_queue.cancel_run``): the run and whether it
    is still stopping (at its next step boundary)."""
    from shared.agent.run_queue import cancel_run as cancel

    return cancel(service.services, uid, run_id, reason=reason)


class RunStream(Iterator[dict[str, Any]]):
    """A run's event stream, and whether it replays an earlier run (a repeated Idempotency-Key:
    the edge answers ``Idempotent-Replayed: true``, as the non-streaming route does)."""

    def __init__(self, events: Iterator[dict[str, Any]], *, replayed: bool) -> None:
        self._events = events
        self.replayed = replayed

    def __next__(self) -> dict[str, Any]:
        return next(self._events)


def stream_run(service: AgentService, uid: str, request: RunRequest, *, idempotency_key: str | None = None,
               sessions: Callable[[], SessionsRepo] | None = None,
               deferred: DeferredRequest | None = None) -> RunStream:
    """Start a run (errors raise here, before streaming) and return its live event stream; a
    repeated Idempotency-Key replays the earlier run's events, following it until it stops, and a
    queued run's events are followed the same way (``status: queued``, then the run as it runs).
    ``sessions``: where the plans a run starts are read, to relay their events on its stream.
    ``deferred``: as :func:`run_to_stop`'s."""
    from shared.agent.streaming import follow_queued, live_events, replay_events  # POST /run loads none of it

    started = service.start(uid, request, idempotency_key=idempotency_key, deferred=deferred)
    replayed = not started.outcome.created
    if started.outcome.queued:  # its stream starts when it does
        return RunStream(follow_queued(service.services.runs, started.outcome.snapshot.run.run_id, sessions=sessions,
                                       max_wait_s=service.services.settings.follow_max_wait_s), replayed=replayed)
    if replayed:
        return RunStream(replay_events(service.services.runs, started.outcome.snapshot.run.run_id, 0, follow=True,
                                       sessions=sessions), replayed=True)
    return RunStream(live_events(service.context(started), started.first_events, sessions), replayed=False)
