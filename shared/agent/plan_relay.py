"""A chat run's plan, live in the run's own event log (seed 003 §4.3: one streaming session).

While a run waits on the plan its ``agent_create_plan`` / ``agent_execute_plan`` started, the plan's
progress events are shown as events of the run: ``step_start``, ``executor_act``,
``executor_observe``, ``approval_required``, ``plan_updated``, ``step_complete`` — the same events,
by the same names, as in the log of the plan's own run from its execution on (that run's log begins
with the planning, which the chat run reported itself: what it relays follows the plan's
``plan_status executing``). They are derived, never
copied by hand: the n-th of them in the plan run's (append-only) log is the chat run's event
``lastSeq + n``. Readers (the live stream, ``GET .../events``) derive them while the run waits;
when the plan ends, the resumed run persists exactly the same events with the same ``seq`` before
anything else, so a reconnecting client reads what a live one saw.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter

from shared.events.run import RunEvent
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
    executing = False
    for ev in runs.list_events(got[0].run_id):
        executing = executing or _executing(ev)
        if executing and ev.get("type") in RELAYED:
            event = _EVENT.validate_python(ev)
            event.seq = 0
            out.append(event)
    return out


def _executing(ev: dict[str, Any]) -> bool:
    """The plan run's event that starts its execution (what comes before it is its planning)."""
    return ev.get("type") == "plan_status" and ev.get("status") == "executing"


class RelayCursor:
    """What a reader (one stream or follow request) shows after the persisted log of a run waiting
    on its plan: the relayed events numbered from ``run.lastSeq + 1`` (the numbers the resumed run
    will persist them with). It remembers what it read of the plan run's log, so each poll reads
    only the plan's new events."""

    def __init__(self, sessions: SessionsRepo, runs: RunsRepo) -> None:
        self.sessions, self.runs = sessions, runs
        self._plan: tuple[str, str] | None = None  # (planId, the run executing it)
        self._read = 0
        self._executing = False
        self._relayed: list[dict[str, Any]] = []

    def pending(self, run: RunRecord) -> list[dict[str, Any]]:
        plan_id = relayed_plan(run)
        if plan_id is None:
            return []
        if self._plan is None or self._plan[0] != plan_id:
            got = self.sessions.get(plan_id)
            if got is None or got[0].run_id is None:
                return []
            self._plan, self._read, self._executing, self._relayed = (plan_id, got[0].run_id), 0, False, []
        for ev in self.runs.list_events(self._plan[1], after=self._read):
            self._read = int(ev["seq"])
            self._executing = self._executing or _executing(ev)
            if self._executing and ev.get("type") in RELAYED:
                self._relayed.append({k: v for k, v in ev.items() if k != "seq"})
        return [{"seq": run.last_seq + i, **ev} for i, ev in enumerate(self._relayed, start=1)]
