"""Live streams and replays of run events (NDJSON lines).

A live stream runs the loop on a worker thread and relays its events as they are emitted; the
same events (same ``seq``) are committed to ``runs/{runId}/events``. A replay reads them back
after a sequence number and can follow the run until it stops (completes, fails or pauses).
"""

from __future__ import annotations

import contextvars
import logging
import queue
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from shared.events import ErrorEvent, event_to_doc
from shared.failures import FailureCode
from shared.logs import iterate_in_context
from shared.ndjson import ndjson as ndjson  # the edge frames chat streams with it (functions/)
from shared.state.records import waits_on_child

if TYPE_CHECKING:
    from shared.loop.context import RunContext
    from shared.state.records import RunRecord
    from shared.state.runs_repo import RunsRepo

log = logging.getLogger("agent_runtime.streaming")

_DONE = object()
STOP_STATUSES = frozenset({"completed", "failed", "awaiting_confirmation"})


def live_events(ctx: RunContext, first_events: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Drive the run on a worker thread and yield its events as they happen.

    If the client goes away the run still finishes (and is committed). If the run cannot even
    record its failure (the store is down), a final unpersisted ``error`` event closes the stream.
    The stream is iterated after the HTTP handler returned: it (and the worker) keep the log
    context of this call (the request's trace) plus the run's ids.
    """
    return iterate_in_context(_live(ctx, first_events), **ctx.log_fields())


def _live(ctx: RunContext, first_events: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    from shared.loop.outcomes import NextStepLost  # replays (the runs function) never load the loop
    from shared.loop.steps import drive

    q: queue.Queue[object] = queue.Queue()
    ctx.listener = q.put

    def work() -> None:
        try:
            if isinstance(drive(ctx), NextStepLost):
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
    yield from first_events
    while True:
        item = q.get()
        if item is _DONE:
            return
        assert isinstance(item, dict)
        yield item


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
                  poll_s: float = 0.2, max_wait_s: float = 60.0) -> Iterator[dict[str, Any]]:
    """Persisted events with ``seq > after``; with ``follow``, keep reading until the run stops
    (completes, fails, or waits for a decision; a decided pause and a run waiting on its plan are
    followed into their resume). ``until_end``: a pause for a decision does not stop the follow
    either (a backend follows, the decision is made elsewhere, it reads on), only the run's end or
    ``max_wait_s`` (then reconnect with ``after``). Like a live stream, the replay keeps the log
    context of this call."""
    return iterate_in_context(_replay(runs, run_id, after, follow, until_end, poll_s, max_wait_s), runId=run_id)


def _replay(runs: RunsRepo, run_id: str, after: int, follow: bool, until_end: bool, poll_s: float,
            max_wait_s: float) -> Iterator[dict[str, Any]]:
    deadline = time.monotonic() + max_wait_s
    last = after
    while True:
        batch = runs.list_events(run_id, after=last)
        for ev in batch:
            last = int(ev["seq"])
            yield ev
        if not follow:
            return
        snap = runs.get_run(run_id)
        if snap is None:
            return
        paused = snap.run.status == "awaiting_confirmation"
        if (snap.run.status in STOP_STATUSES and last >= snap.run.last_seq and not (paused and until_end)
                and not _resume_pending(runs, snap.run)):
            return
        if time.monotonic() >= deadline:
            return
        time.sleep(poll_s)
