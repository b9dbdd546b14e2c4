"""A plan session's events as its clients read them (``GET /api/agent/sessions/{id}/events``, the
``SessionEvent`` union of ``session_events.py``).

A session has two parts. Until it is confirmed it is no unit of work: its own events (planning,
refinements, a cancel or deadline before confirmation) are at ``sessions/{id}/events``, numbered
1..k (``SessionRecord.lastSeq``, which stops moving at confirmation). From confirmation on, its
events are the events of the run that executes it (``runs/{runId}/events``, one log and one
counter per unit, written by the plan host with the run's other events). The view shows those
after its own, in the session's words (``step_start`` is ``task_start``, ``executor_act`` is
``act``, ``plan_status`` is ``status``, ...; the run's own ``status``, tool and ``agent_state``
events are not part of it), numbered k+1, k+2, ... in the run's order: the run's log is
append-only, so a number once shown never changes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shared.state.plan_records import SessionRecord
    from shared.state.runs_repo import RunsRepo
    from shared.state.sessions_repo import SessionsRepo

_RENAMED = {"step_start": "task_start", "executor_reason": "reason", "executor_act": "act",
            "executor_observe": "observe", "executor_reflect": "reflect", "step_complete": "task_complete",
            "approval_required": "approval_required", "plan_updated": "plan_updated", "plan_status": "status",
            "plan_result": "result", "usage": "usage", "error": "error"}
_FIELDS = {"stepId": "taskId", "toolName": "tool", "planId": None}


def as_session_event(ev: dict[str, Any]) -> dict[str, Any] | None:
    """The session's words for an event of its run (None: not a session event)."""
    kind = _RENAMED.get(str(ev.get("type")))
    if kind is None:
        return None
    out: dict[str, Any] = {"seq": ev["seq"], "type": kind}
    for key, value in ev.items():
        if key in ("seq", "type"):
            continue
        name = _FIELDS.get(key, key)
        if name is not None:
            out[name] = value
    if kind == "status":
        out["sessionId"] = ev["planId"]
    return out


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
