"""A chat run's plan, live in the run's own event log (seed 003 §4.3: one streaming session).

While a run waits on the plan its ``agent_create_plan`` / ``agent_execute_plan`` started, the plan's
progress events are shown as events of the run: ``step_start``, ``executor_act``,
``executor_observe``, ``approval_required``, ``plan_updated``, ``step_complete`` — the same events,
by the same names, as in the log of the plan's own run (which executes it). They are derived, never
copied by hand: the n-th of them in the plan run's (append-only) log is the chat run's event
``lastSeq + n``. Readers (the live stream, ``GET .../events``) derive them while the run waits;
when the plan ends, the resumed run persists exactly the same events with the same ``seq`` before
anything else, so a reconnecting client reads what a live one saw.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter

from shared.events import RunEvent, event_to_doc
from shared.state.host_states import ChatState

if TYPE_CHECKING:
    from shared.state.records import RunRecord
    from shared.state.runs_repo import RunsRepo
    from shared.state.sessions_repo import SessionsRepo

RELAYED = frozenset({"step_start", "executor_act", "executor_observe", "approval_required", "plan_updated",
                     "step_complete"})
_EVENT: TypeAdapter[RunEvent] = TypeAdapter(RunEvent)


def relayed_plan(run: RunRecord) -> str | None:
    """The plan (session id) ``run`` waits on and relays, or None."""
    state = run.host_state
    return state.relay_plan_id if isinstance(state, ChatState) else None


def relayed_events(sessions: SessionsRepo, runs: RunsRepo, plan_id: str) -> list[RunEvent]:
    """The plan's progress events so far (from the log of the run executing it), unnumbered."""
    got = sessions.get(plan_id)
    if got is None or got[0].run_id is None:
        return []
    out: list[RunEvent] = []
    for ev in runs.list_events(got[0].run_id):
        if ev.get("type") in RELAYED:
            event = _EVENT.validate_python(ev)
            event.seq = 0
            out.append(event)
    return out


def pending_relay(sessions: SessionsRepo, runs: RunsRepo, run: RunRecord) -> list[dict[str, Any]]:
    """What a reader shows after the persisted log of a run waiting on its plan: the relayed events
    numbered from ``run.lastSeq + 1`` (the numbers the resumed run will persist them with)."""
    plan_id = relayed_plan(run)
    if plan_id is None:
        return []
    docs = []
    for i, event in enumerate(relayed_events(sessions, runs, plan_id), start=1):
        event.seq = run.last_seq + i
        docs.append(event_to_doc(event))
    return docs
