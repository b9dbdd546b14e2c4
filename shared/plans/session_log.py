"""A plan session's events as its clients read them (``GET /api/agent/sessions/{id}/events``, the
``SessionEvent`` union of ``shared/events/session.py``).

A session has two parts. Until it is confirmed it is no unit of work: its own events (planning,
refinements, a cancel or deadline before confirmation) are at ``sessions/{id}/events``, numbered
1..k (``SessionRecord.lastSeq``, which stops moving at confirmation). From confirmation on, its
events are the events of the run that executes it (``runs/{runId}/events``, one log and one
counter per unit, written by the plan host with the run's other events). The view shows those
after its own, in the session's words (the one mapping, ``events/session.as_session_event``; the
run's own ``status``, tool and ``agent_state`` events are not part of it), numbered k+1, k+2, ...
in the run's order: the run's log is append-only, so a number once shown never changes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shared.events.session import as_session_event

if TYPE_CHECKING:
    from shared.state.plan_records import SessionRecord
    from shared.state.runs_repo import RunsRepo
    from shared.state.sessions_repo import SessionsRepo

def session_events(sessions: SessionsRepo, runs: RunsRepo, session: SessionRecord,
                   after: int = 0) -> list[dict[str, Any]]:
    """The session's events with ``seq > after``: its own, then its run's (renumbered)."""
    own = [ev for ev in sessions.events(session.session_id) if int(ev["seq"]) <= session.last_seq]
    shown = [ev for ev in own if int(ev["seq"]) > after]
    if session.run_id is None:
        return shown
    n = session.last_seq
    for ev in runs.list_events(session.run_id):
        mapped = as_session_event(ev)
        if mapped is None:
            continue
        n += 1
        if n > after:
            mapped["seq"] = n
            shown.append(mapped)
    return shown
