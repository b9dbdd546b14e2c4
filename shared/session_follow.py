"""Reading a plan session's events, following it while it goes on
(``GET /api/agent/sessions/{id}/events``): the same rules as a run's follow
(``shared/agent/streaming.py``): a heartbeat while it is silent, and a closing ``stream_end`` unless
the last event is the session's own ``result`` or ``error``."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Literal

from shared.events.loop import event_to_doc, heartbeat
from shared.events.session import SessionStreamEndEvent
from shared.plans.session_log import session_events

if TYPE_CHECKING:
    from shared.runtime import Runtime
    from shared.state.plan_records import SessionRecord

FOLLOW_POLL_S = 0.2

Reason = Literal["stream_time_spent", "awaiting_approval", "awaiting_confirmation", "session_ended"]


def follow_session(rt: Runtime, uid: str, session_id: str, after: int, *, follow: bool,
                   poll_s: float = FOLLOW_POLL_S) -> Iterator[dict[str, Any]]:
    """The session's events with ``seq > after``; with ``follow``, read on until it ends, waits for
    somebody (its plan's review, an act's approval) or ``FOLLOW_MAX_WAIT_S`` is spent. 404 before
    the first event when the caller does not own it."""
    rt.sessions.get_for(uid, session_id)
    return _read(rt, session_id, after, follow, poll_s)


def _read(rt: Runtime, session_id: str, after: int, follow: bool, poll_s: float) -> Iterator[dict[str, Any]]:
    last, last_type = after, None
    stop_at = time.monotonic() + rt.settings.follow_max_wait_s
    said_at = time.monotonic()
    heartbeat_s = rt.settings.heartbeat_s
    session: SessionRecord | None = None
    while True:
        got = rt.sessions.get(session_id)
        if got is None:
            return
        session = got[0]
        # Read the state before the events: a stop seen here is in the events read after it.
        waiting = session.status == "awaiting_confirmation" or (
            session.run_id is not None and _paused(rt, session.run_id))
        for ev in session_events(rt.sessions, rt.runs, session, last):
            last, last_type, said_at = int(ev["seq"]), ev.get("type"), time.monotonic()
            yield ev
        if not follow:
            return
        reason: Reason | None = None
        if session.terminal:
            reason = "session_ended"
        elif waiting:
            reason = "awaiting_confirmation" if session.status == "awaiting_confirmation" else "awaiting_approval"
        elif time.monotonic() > stop_at:
            reason = "stream_time_spent"
        if reason is not None:
            if last_type not in ("result", "error"):
                yield event_to_doc(SessionStreamEndEvent(
                    seq=max(1, last), sessionId=session_id, status=session.status, reason=reason,
                    follow=f"/api/agent/sessions/{session_id}/events?after={last}&follow=1"))
            return
        if time.monotonic() - said_at >= heartbeat_s:
            said_at = time.monotonic()
            yield heartbeat()
        time.sleep(min(poll_s, heartbeat_s))


def _paused(rt: Runtime, run_id: str) -> bool:
    snap = rt.runs.get_run(run_id)
    return snap is not None and snap.run.status == "awaiting_confirmation"
