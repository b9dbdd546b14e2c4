"""Live streams and replays of run events (NDJSON lines).

A live stream runs the loop on a worker thread and relays its events as they are emitted; the
same events (same ``seq``) are committed to ``runs/{runId}/events`` (a tool step's in its turns
document: ``RunsRepo.list_events`` reads both). A replay reads them back after a sequence number
and can follow the run until it stops (completes, fails or pauses).
"""

from __future__ import annotations

import contextvars
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Literal

from shared.events.loop import ErrorEvent, StreamEndEvent, StreamEndReason, event_to_doc, heartbeat
from shared.failures import FailureCode
from shared.logs import iterate_in_context
from shared.ndjson import ndjson as ndjson  # the edge frames chat streams with it (functions/)
from shared.state.records import TERMINAL_RUN_STATUSES, waits_on_child

if TYPE_CHECKING:
    from shared.agent.plan_relay import RelayCursor
    from shared.loop.context import RunContext
    from shared.state.records import RunRecord
    from shared.state.runs_repo import RunsRepo
    from shared.state.sessions_repo import SessionsRepo

log = logging.getLogger("agent_runtime.streaming")

_DONE = object()
STOP_STATUSES = TERMINAL_RUN_STATUSES | {"awaiting_confirmation"}
STOP_EVENTS = frozenset({"result", "error"})
"""A stream whose last event is one of these told the client where the run stopped: it needs no
``stream_end``."""


def live_events(ctx: RunContext, first_events: list[dict[str, Any]],
                sessions: Callable[[], SessionsRepo] | None = None) -> Iterator[dict[str, Any]]:
    """Drive the run on a worker thread and yield its events as they happen.

    If the client goes away the run still finishes (and is committed). If the run cannot even
    record its failure (the store is down), a final unpersisted ``error`` event closes the stream.
    While the run says nothing (a long model call or tool) a heartbeat goes out every
    ``heartbeat_s`` (``STREAM_HEARTBEAT_S``).
    A run that stops to wait on the plan it started is followed on: the plan's events (relayed,
    ``plan_relay``), then the run's answer and ``result``, until the stream's time (the run's
    budget) is spent or the plan waits for a decision: then a ``stream_end`` event says how to follow.
    The stream is iterated after the HTTP handler returned: it (and the worker) keep the log
    context of this call (the request's trace) plus the run's ids.
    """
    return iterate_in_context(_live(ctx, first_events, sessions), **ctx.log_fields())


def _live(ctx: RunContext, first_events: list[dict[str, Any]],
          sessions: Callable[[], SessionsRepo] | None) -> Iterator[dict[str, Any]]:
    from shared import tracing
    from shared.loop.outcomes import NextStepLost  # replays (the runs function) never load the loop
    from shared.loop.steps import drive

    q: queue.Queue[object] = queue.Queue()
    ctx.listener = q.put

    def work() -> None:
        try:
            with tracing.invocation(ctx, "start"):
                lost = isinstance(drive(ctx), NextStepLost)
            if lost:
                q.put(event_to_doc(ErrorEvent(
                    seq=ctx.run.last_seq + 1, code=FailureCode.RUN_TAKEN_OVER,
                    error="the run continues in another invocation; follow it with "
                          f"GET /api/agent/runs/{ctx.run.run_id}/events?after={ctx.committed_seq}&follow=1")))
        except Exception as exc:
            log.exception("run could not be driven to a recorded stop",
                          extra={"fields": {"runId": ctx.run.run_id}})
            q.put(event_to_doc(ErrorEvent(seq=ctx.run.last_seq + 1, code=FailureCode.INTERNAL,
                                          error=f"the run stopped unexpectedly ({type(exc).__name__})")))
        finally:
            q.put(_DONE)

    thread = threading.Thread(target=contextvars.copy_context().run, args=(work,), daemon=True,
                              name=f"run-{ctx.run.run_id}")
    thread.start()
    last = 0
    for ev in first_events:
        last = int(ev["seq"])
        yield ev
    heartbeat_s = ctx.services.settings.heartbeat_s
    while True:
        try:
            item = q.get(timeout=heartbeat_s)
        except queue.Empty:
            yield heartbeat()
            continue
        if item is _DONE:
            break
        assert isinstance(item, dict)
        last = int(item["seq"])
        yield item
    if sessions is None or not waits_on_child(ctx.run) or ctx.committed_seq != ctx.run.last_seq:
        return
    # The run waits on its plan: one stream from prompt to answer while the stream has time.
    follow = _Follow(ctx.services.runs, ctx.run.run_id, sessions, until_end=False,
                     max_wait_s=max(0.0, ctx.deadline - time.monotonic()), heartbeat_s=heartbeat_s)
    yield from follow.events(last)
    if follow.stopped_because is not None:
        yield follow.stream_end(follow.stopped_because)


def _paused_for_decision(runs: RunsRepo, run: RunRecord) -> bool:
    """The run is stopped on approvals somebody must still decide."""
    return run.status == "awaiting_confirmation" and not waits_on_child(run) and not _resume_pending(runs, run)


def _resume_pending(runs: RunsRepo, run: RunRecord) -> bool:
    """A paused run whose approvals are all decided is about to resume, and one that waits on its
    plan (nobody is asked) goes on when the plan ends: keep following it."""
    if run.status != "awaiting_confirmation":
        return False
    if waits_on_child(run):
        return True
    for approval_id in run.pending_approval_ids:
        got = runs.get_approval(run.uid, approval_id)
        if got is None or got[0].status == "pending":
            return False
    return True


def replay_events(runs: RunsRepo, run_id: str, after: int = 0, *, follow: bool = False, until_end: bool = False,
                  poll_s: float = 0.2, max_wait_s: float = 60.0, heartbeat_s: float = 15.0,
                  sessions: Callable[[], SessionsRepo] | None = None) -> Iterator[dict[str, Any]]:
    """Persisted events with ``seq > after`` (and, while the run waits on its plan, the plan's
    events as the run will persist them: ``plan_relay``); with ``follow``, keep reading until the
    run stops (completes, fails, or waits for a decision — its own, or its plan's —; a decided
    pause and a run waiting on its plan are followed into their resume). ``until_end``: a pause for
    a decision does not stop the follow either (a backend follows, the decision is made elsewhere,
    it reads on), only the run's end or ``max_wait_s`` (then reconnect with ``after``). Like a live
    stream, the replay keeps the log context of this call.

    A follow is never silent for longer than ``heartbeat_s`` (a heartbeat, no ``seq``), and it never
    ends without saying why: unless its last event is the run's own stop (``result``, ``error``),
    a ``stream_end`` says why the window closed and where to read on (:meth:`_Follow.closing`)."""
    reader = _Follow(runs, run_id, sessions, until_end=until_end, max_wait_s=max_wait_s, poll_s=poll_s,
                     follow=follow, heartbeat_s=heartbeat_s)

    def read() -> Iterator[dict[str, Any]]:
        yield from reader.events(after)
        if follow and (closing := reader.closing()) is not None:
            yield closing

    return iterate_in_context(read(), runId=run_id)


def follow_queued(runs: RunsRepo, run_id: str, *, max_wait_s: float,
                  sessions: Callable[[], SessionsRepo] | None = None) -> Iterator[dict[str, Any]]:
    """The stream of a run that was queued (``multitaskStrategy``): its ``status: queued`` event,
    then its events once it starts, until it stops or ``max_wait_s`` is spent (then ``stream_end``
    with the route that reads on: the run goes on without the stream)."""
    reader = _Follow(runs, run_id, sessions, until_end=False, max_wait_s=max_wait_s)

    def events() -> Iterator[dict[str, Any]]:
        yield from reader.events(0)
        if reader.stopped_because == "stream_time_spent":
            snap = runs.get_run(run_id)
            status = "queued" if snap is not None and snap.run.status == "queued" else "executing"
            yield event_to_doc(StreamEndEvent(
                seq=reader.last, runId=run_id, status=status, reason="stream_time_spent",
                follow=f"/api/agent/runs/{run_id}/events?after={reader.last}&follow=1&until=end"))

    return iterate_in_context(events(), runId=run_id)


class _Follow:
    """Reads a run's log after a seq, following it while it goes on. ``stopped_because`` says why a
    follow ended before the run reached a stop a client waits for (None: it did, or no follow)."""

    def __init__(self, runs: RunsRepo, run_id: str, sessions: Callable[[], SessionsRepo] | None, *,
                 until_end: bool, max_wait_s: float, poll_s: float = 0.2, follow: bool = True,
                 heartbeat_s: float = 15.0) -> None:
        self.runs, self.run_id, self.sessions = runs, run_id, sessions
        self.until_end, self.max_wait_s, self.poll_s, self.follow = until_end, max_wait_s, poll_s, follow
        self.heartbeat_s = heartbeat_s
        self.last = 0
        self.last_type: str | None = None
        """The type of the last event this follow yielded (``None``: none)."""
        self.run: RunRecord | None = None
        """The run as last read."""
        self._relay: RelayCursor | None = None
        self.stopped_because: Literal["plan_awaiting_approval", "stream_time_spent"] | None = None

    def stream_end(self, reason: StreamEndReason) -> dict[str, Any]:
        """The closing ``stream_end``: why the stream ends here, and the follow that reads on."""
        # A run waiting on its plan is executing for the API (nobody is asked), like everywhere else.
        status = "executing" if self.run is None or waits_on_child(self.run) else self.run.status
        return event_to_doc(StreamEndEvent(
            seq=max(1, self.last), runId=self.run_id, status=status, reason=reason,
            follow=f"/api/agent/runs/{self.run_id}/events?after={self.last}&follow=1&until=end"))

    def closing(self) -> dict[str, Any] | None:
        """What ends a follow that did not end on the run's own stop: ``stream_end`` with why (its
        window's time spent, its plan waits for a decision, it waits for one, it had ended).
        ``None``: the last event said it (``result``, ``error``), or the run is gone."""
        if self.run is None:
            return None
        if self.stopped_because is not None:
            return self.stream_end(self.stopped_because)
        if self.last_type in STOP_EVENTS:
            return None
        if self.run.terminal:
            return self.stream_end("run_ended")
        return self.stream_end("awaiting_approval")

    def _relayed(self, run: RunRecord) -> list[dict[str, Any]]:
        if self.sessions is None or not waits_on_child(run):
            return []
        if self._relay is None:
            from shared.agent.plan_relay import RelayCursor

            self._relay = RelayCursor(self.sessions(), self.runs)
        return self._relay.pending(run)

    def _plan_waits_for_decision(self, run: RunRecord) -> bool:
        if self.sessions is None:
            return False
        from shared.agent.plan_relay import relayed_plan

        plan = relayed_plan(run)
        got = self.sessions().get(plan) if plan is not None else None
        if got is None or got[0].run_id is None:
            return False
        child = self.runs.get_run(got[0].run_id)
        return child is not None and _paused_for_decision(self.runs, child.run)

    def events(self, after: int) -> Iterator[dict[str, Any]]:
        deadline = time.monotonic() + self.max_wait_s
        self.last = after
        said_at = time.monotonic()
        while True:
            # The run first: every event is committed with the run document that numbers it
            # (``lastSeq``), so a poll finding nothing new reads the run only; one that does reads the
            # events after its last seq (two queries: the events collection, the steps' turns
            # documents) and sees at least every event up to the run's ``lastSeq``.
            snap = self.runs.get_run(self.run_id)
            if snap is None:
                return
            run = self.run = snap.run
            if run.last_seq > self.last:
                for ev in self.runs.list_events(self.run_id, after=self.last):
                    self.last, self.last_type, said_at = int(ev["seq"]), ev.get("type"), time.monotonic()
                    yield ev
            if self.last >= run.last_seq:
                for ev in self._relayed(run):
                    if int(ev["seq"]) > self.last:
                        self.last, self.last_type, said_at = int(ev["seq"]), ev.get("type"), time.monotonic()
                        yield ev
            if not self.follow:
                return
            if run.status in STOP_STATUSES and self.last >= run.last_seq and not self.until_end:
                if _paused_for_decision(self.runs, run):
                    return
                if waits_on_child(run) and self._plan_waits_for_decision(run):
                    self.stopped_because = "plan_awaiting_approval"
                    return
            if run.terminal and self.last >= run.last_seq:
                return
            if time.monotonic() >= deadline:
                self.stopped_because = "stream_time_spent"
                return
            if time.monotonic() - said_at >= self.heartbeat_s:
                said_at = time.monotonic()
                yield heartbeat()
            time.sleep(min(self.poll_s, self.heartbeat_s))
