"""A plan session's events as its clients read them (``GET /api/agent/sessions/{id}/events``, the
``SessionEvent`` union of ``shared/events/session.py``).

A session is one unit of work from its creation: its events are the events of its run
(``runs/{runId}/events``, one log and one counter, from the planning on; ``plans/unit.py``). The
view shows them in the session's words (the one mapping, ``events/session.as_session_event``; the
run's own ``status``, tool and ``agent_state`` events are not part of it), numbered 1, 2, ... in
the run's order: the run's log is append-only, so a number once shown never changes.

Sessions stored by earlier versions had their own log before confirmation
(``sessions/{id}/events``, 1..k, ``SessionRecord.lastSeq``): the view shows it first and numbers
the run's events k+1, k+2, ...
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
    """The session's events with ``seq > after``: its run's, numbered (after an earlier version's own)."""
    shown: list[dict[str, Any]] = []
    if session.last_seq > after:  # an earlier version's own log, read only where it has what is asked
        shown = [ev for ev in sessions.legacy_events(session.session_id, after) if int(ev["seq"]) <= session.last_seq]
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
