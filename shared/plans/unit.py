"""A plan session's unit of work: the run (host ``plan``) that exists from the session's creation.

Planning is its first step: the run is created in the session's creating commit with the proposed
plan in its state (``PlanRunState``: the tasks, the one place they are kept, the plan version and,
once confirmed, the task in progress) and the planning's events in its log (one log, one counter,
``RunRecord.lastSeq``, from birth). ``sessions/{id}`` is the session's index (docs/plan-sessions.md,
"Layout"). Sessions stored by earlier versions are read as they are: before confirmation they had
no run (their tasks in ``sessions/{id}/tasks``, their events in ``sessions/{id}/events``); one still
awaiting confirmation gets its run when it is next changed (``unit_for``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from shared.errors import Internal
from shared.events import event_to_doc
from shared.events.run import RunEvent
from shared.ids import new_id
from shared.plans import planner
from shared.plans.plan_state import KIND
from shared.state.docstore import Write
from shared.state.host_states import PlanRunState, expect
from shared.state.plan_records import PlanTask, SessionRecord
from shared.state.records import RunRecord, RunStatus
from shared.state.runs_repo import RunsRepo
from shared.state.sessions_repo import SessionsRepo

if TYPE_CHECKING:
    from shared.loop.context import Services
    from shared.models.base import Turn


@dataclass(frozen=True)
class Unit:
    """What a reader needs of a session's unit: its run (None for a session an earlier version
    stored before confirmation), its tasks, its plan version and the task in progress."""

    run: RunRecord | None
    tasks: list[PlanTask]
    plan_version: int
    task_id: str | None


def read(sessions: SessionsRepo, runs: RunsRepo, session: SessionRecord) -> Unit:
    """The session's unit as it is now (one read of its run; an earlier version's session without
    one: its task documents)."""
    snap = runs.get_run(session.run_id) if session.run_id else None
    if snap is not None and isinstance(snap.run.host_state, PlanRunState):
        state = snap.run.host_state
        tasks = state.tasks
        if session.last_seq > 0:  # confirmed by an earlier version: its run left out the tasks refined away
            known = {t.id for t in tasks}
            dropped = [t for t in sessions.legacy_tasks(session.session_id) if t.id not in known]
            tasks = sorted([*tasks, *dropped], key=lambda t: t.order) if dropped else tasks
        return Unit(snap.run, tasks, state.plan_version, state.task_id)
    return Unit(snap.run if snap else None, sessions.legacy_tasks(session.session_id), session.plan_version, None)


def new_run(services: Services, session: SessionRecord, tasks: list[PlanTask], status: RunStatus) -> RunRecord:
    """The run of a new session (its unit of work), ``awaiting_confirmation`` with its plan, or
    ``failed`` when no plan could be made."""
    settings = services.settings
    return RunRecord(run_id=new_id("run"), uid=session.uid, thread_id="", status=status, host=KIND,
                     budget_usd=session.budget_usd, model=services.model_factory().name,
                     max_steps=settings.plan_max_acts_per_task * settings.plan_max_tasks * 2,
                     system_instruction=planner.ACT_INSTRUCTION.format(objective=session.prompt[:4000]),
                     host_state=PlanRunState(session_id=session.session_id, objective=session.prompt,
                                             deadline=session.deadline, tools=session.tools, tasks=tasks,
                                             plan_version=session.plan_version))


@dataclass
class Change:
    """A change of a session's run before its execution (a refinement, the confirmation, an end):
    the run as read (``token``; None: created by this change) and the events it appends."""

    run: RunRecord
    token: str | None
    events: list[dict[str, Any]]

    @property
    def state(self) -> PlanRunState:
        return expect(self.run.host_state, PlanRunState)

    def emit(self, *events: RunEvent) -> None:
        """Append ``events`` to the run's log (numbered by its one counter)."""
        for ev in events:
            self.run.last_seq += 1
            ev.seq = self.run.last_seq
            self.events.append(event_to_doc(ev))

    def writes(self, services: Services, sessions: SessionsRepo, turns: Sequence[Turn] = ()) -> list[Write]:
        """The change's writes, for the session's conditional commit: the run (created, or written
        if still as read), its first ``turns`` and its new events."""
        runs = services.runs
        if self.token is None:
            return runs.unit_writes(self.run, turns=turns, events=self.events)
        return [sessions.unit_write(self.run, self.token),
                *(runs.turn_create_write(self.run.run_id, i, t) for i, t in enumerate(turns)),
                *runs.event_writes(self.run.run_id, self.events)]


def created(run: RunRecord) -> Change:
    return Change(run, None, [])


def unit_for(services: Services, sessions: SessionsRepo, session: SessionRecord) -> Change:
    """The session's run, to change it before its execution. A session an earlier version stored
    before confirmation has none: it is made now from its task documents (its own events stay
    where they are, ``lastSeq``; the run's follow them)."""
    if session.run_id is not None:
        snap = services.runs.get_run(session.run_id)
        if snap is None:
            raise Internal(f"the run {session.run_id} of session {session.session_id} is missing")
        return Change(snap.run, snap.token, [])
    run = new_run(services, session, sessions.legacy_tasks(session.session_id), "awaiting_confirmation")
    session.run_id = run.run_id
    return Change(run, None, [])
