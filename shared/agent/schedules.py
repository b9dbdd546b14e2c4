"""Scheduled runs (docs/run-control.md, "Schedules").

A tick (``schedule_tick``: Cloud Scheduler → Pub/Sub → the ``resume`` function every minute in
production; ``make dev``'s ticker thread through the same dispatcher and router) finds the
schedules whose next occurrence has come. For each, one commit moves the schedule to its next
occurrence and records a ``schedule_fire`` outbox entry named by the schedule and the occurrence;
the fire message then starts the run with the Idempotency-Key ``schedule-{id}-{occurrence}`` and
records the occurrence with the run, in the run's own transaction. So a tick delivered twice finds
nothing due the second time, and a fire message delivered twice answers the run the first one
started: one run per occurrence. Missed occurrences (no tick for a while) start one run, for the
latest; earlier ones are skipped.
"""

from __future__ import annotations

import hashlib
import logging
import time
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, Strict, ValidationError

from shared.agent.webhooks import named
from shared.api import ID_PATTERN, MAX_PROMPT_CHARS, RunRequest
from shared.durable.kinds import SCHEDULE_FIRE
from shared.durable.messages import WorkMessage
from shared.durable.router import Disposition
from shared.errors import Conflict, DomainError, InvalidInput, LimitExceeded, NotFound
from shared.formats import validation_problems
from shared.loop.context import Services
from shared.responses import PageBody, RemovedResponse, ResponseBody
from shared.schedules.cron import next_after, parse_cron, zone
from shared.state.docstore import PreconditionFailed
from shared.state.pages import decode, page_in_memory
from shared.state.schedules_repo import MAX_SCHEDULES_PER_USER, ScheduleRecord, SchedulesRepo, schedule_id
from shared.state.sessions_repo import SessionsRepo
from shared.wire import INTEGRAL, NOT_BLANK_PATTERN, UtcTime, is_blank

log = logging.getLogger("agent_runtime.schedules")
MAX_RUNS_LISTED = 100
TICK_DUE_LIMIT = 200


def schedule_name(segment: str) -> str:
    """The ``{name}`` of ``/api/agent/schedules/{name}``."""
    return named(segment, "schedule", "INVALID_SCHEDULE_NAME")


class ScheduleSession(BaseModel):
    """A session template: what ``POST /api/agent/sessions`` takes, with a time to live instead of
    a deadline (each occurrence's session has ``ttlS`` from its creation)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    prompt: str = Field(min_length=1, max_length=MAX_PROMPT_CHARS, json_schema_extra={"pattern": NOT_BLANK_PATTERN},
                        description="the objective each occurrence's plan session is planned for")
    ttlS: Annotated[int, Strict(), Field(ge=60, le=7 * 86400), INTEGRAL] | None = Field(
        default=None, description="the session's deadline, this many seconds after it is created "
                                  "(default PLAN_DEFAULT_DEADLINE_S; at most PLAN_MAX_DEADLINE_S)")
    tools: list[str] | None = Field(default=None, max_length=100,
                                    description="tool names this deployment registers (400 UNKNOWN_TOOLS otherwise)")
    keepWorkspaces: bool = False
    budgetUsd: float | None = Field(default=None, gt=0, le=10_000)


class ScheduleRequest(BaseModel):
    """Body of ``PUT /api/agent/schedules/{name}`` (unknown fields refused)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    cron: str = Field(min_length=9, max_length=200, description="five fields: minute hour day-of-month month "
                                                                "day-of-week, e.g. '0 8 * * 1-5'")
    timezone: str = Field(default="UTC", min_length=1, max_length=64, description="an IANA name, e.g. Europe/Paris")
    prompt: str | None = Field(default=None, min_length=1, max_length=MAX_PROMPT_CHARS,
                               json_schema_extra={"pattern": NOT_BLANK_PATTERN},
                               description="what each run is asked (this or session, not both)")
    session: ScheduleSession | None = Field(default=None, description="a session template: each occurrence "
                                            "creates a plan session (this or prompt, not both)")
    threadId: str | None = Field(default=None, pattern=ID_PATTERN,
                                 description="runs on this thread (its history); absent: a new thread each run")
    multitaskStrategy: Literal["reject", "enqueue", "interrupt", "rollback"] = Field(
        default="enqueue", description="when the thread is busy at an occurrence (enqueue by default)")


class ScheduleBody(ResponseBody):
    name: str
    declared: bool = True
    cron: str | None = None
    timezone: str | None = None
    prompt: str | None = None
    session: ScheduleSession | None = None
    threadId: str | None = None
    multitaskStrategy: str | None = None
    nextRunAt: UtcTime | None = None
    updatedAt: UtcTime | None = None


class ScheduleResponse(ScheduleBody):
    ok: bool = True


class SchedulesResponse(PageBody):
    ok: bool = True
    schedules: list[ScheduleBody]


class ScheduleRemovedResponse(RemovedResponse):
    """``DELETE /api/agent/schedules/{name}``."""


class ScheduleRunBody(ResponseBody):
    occurrence: UtcTime
    runId: str | None = Field(default=None, description="the run a prompt schedule started")
    sessionId: str | None = Field(default=None, description="the plan session a session schedule created")
    status: str | None = None


class ScheduleRunsResponse(PageBody):
    ok: bool = True
    name: str
    runs: list[ScheduleRunBody]


def _body(r: ScheduleRecord) -> ScheduleBody:
    return ScheduleBody(name=r.name, cron=r.cron, timezone=r.timezone, prompt=None if r.session else r.prompt,
                        session=ScheduleSession.model_validate(r.session, strict=False) if r.session else None,
                        threadId=r.thread_id,
                        multitaskStrategy=r.multitask_strategy, nextRunAt=r.next_run_at, updatedAt=r.updated_at)


def _fire_id(sid: str, occurrence: float) -> str:
    return f"{sid}.{int(occurrence)}"


class Schedules:
    def __init__(self, services: Services) -> None:
        self.services = services
        self.repo = SchedulesRepo(services.runs.store)

    # ---- the API ------------------------------------------------------------------------------
    def put(self, uid: str, name: str, request: ScheduleRequest, *, at: float | None = None) -> ScheduleBody:
        cron, tz = parse_cron(request.cron), zone(request.timezone)
        if (request.prompt is None) == (request.session is None):
            raise InvalidInput("a schedule takes either prompt (a run each occurrence) or session (a plan "
                               "session each occurrence)", code="INVALID_SCHEDULE", details={"field": "prompt"})
        if request.prompt is not None:
            try:
                RunRequest(prompt=request.prompt)  # the prompt a run will get is valid
            except ValidationError as exc:
                raise InvalidInput("invalid request: prompt", code="INVALID_REQUEST", details={"errors": [
                    {"field": "prompt", "message": message} for _, message in validation_problems(exc)]}) from None
        elif request.session is not None and is_blank(request.session.prompt):
            raise InvalidInput("invalid request: session.prompt", code="INVALID_REQUEST", details={"errors": [
                {"field": "session.prompt", "message": "prompt must not be blank"}]})
        elif request.threadId is not None:
            raise InvalidInput("threadId applies to prompt schedules only (a plan session has no thread)",
                               code="INVALID_SCHEDULE", details={"field": "threadId"})
        else:
            from shared.plans.sessions import check_tools

            check_tools(self.services, uid, request.session.tools if request.session else None)
        existing = self.repo.get(uid, name)
        if existing is None and len(self.repo.list_for(uid)) >= MAX_SCHEDULES_PER_USER:
            raise Conflict(f"at most {MAX_SCHEDULES_PER_USER} schedules per user; delete one first",
                           code="TOO_MANY_SCHEDULES")
        record = ScheduleRecord(schedule_id=schedule_id(uid, name), uid=uid, name=name, cron=request.cron,
                                timezone=request.timezone, prompt=request.prompt or "",
                                session=request.session.model_dump() if request.session else None,
                                thread_id=request.threadId,
                                multitask_strategy=request.multitaskStrategy,
                                next_run_at=next_after(cron, tz, time.time() if at is None else at),
                                created_at=existing[0].created_at if existing else time.time())
        self.repo.put(record)
        return _body(record)

    def get(self, uid: str, name: str) -> ScheduleBody:
        got = self.repo.get(uid, name)
        return ScheduleBody(name=name, declared=False) if got is None else _body(got[0])

    def listed(self, uid: str, limit: int, cursor: str | None = None) -> SchedulesResponse:
        """One page of the caller's schedules, by name (a schedule that cannot be read is left out)."""
        page = page_in_memory(self.repo.list_for(uid), lambda r: (r.name, r.name), cursor, limit)
        return SchedulesResponse(schedules=[_body(r) for r in page.items], nextCursor=page.next_cursor)

    def delete(self, uid: str, name: str) -> bool:
        return self.repo.delete(uid, name)

    def runs(self, uid: str, name: str, limit: int = MAX_RUNS_LISTED, cursor: str | None = None
             ) -> ScheduleRunsResponse:
        """One page of the runs the schedule started, newest first (each with its status now)."""
        got = self.repo.get(uid, name)
        if got is None:
            if cursor is not None:
                decode(cursor)  # 400 INVALID_CURSOR for one that is not a cursor, as for a schedule that exists
            return ScheduleRunsResponse(name=name, runs=[], nextCursor=None)
        page = self.repo.page_runs(got[0].schedule_id, limit, cursor)
        out: list[ScheduleRunBody] = []
        for r in page.items:
            if r.session_id is not None:
                ses = SessionsRepo(self.services.runs.store).get(r.session_id)
                out.append(ScheduleRunBody(occurrence=r.occurrence, sessionId=r.session_id,
                                           status=ses[0].status if ses is not None else None))
                continue
            snap = self.services.runs.get_run(r.run_id)
            out.append(ScheduleRunBody(occurrence=r.occurrence, runId=r.run_id,
                                       status=snap.run.status if snap is not None else None))
        return ScheduleRunsResponse(name=name, runs=out, nextCursor=page.next_cursor)

    # ---- ticks and fires ----------------------------------------------------------------------------
    def tick(self, at: float) -> int:
        """Handle a tick at ``at``: every due schedule moves to its next occurrence and records the
        fire of this one (one commit each); the fires are published after. Returns how many."""
        outbox = self.services.outbox
        fired: list[str] = []
        for record in self.repo.due(at, TICK_DUE_LIMIT):
            got = self.repo.get_by_id(record.schedule_id)
            if got is None or got[0].next_run_at > at:
                continue
            record, token = got
            occurrence = record.next_run_at
            try:
                record.next_run_at = next_after(parse_cron(record.cron), zone(record.timezone), at)
            except InvalidInput:
                log.error("a stored schedule cannot be evaluated", extra={"fields": {"scheduleId": record.schedule_id}})
                continue
            record.last_occurrence = occurrence
            fire = _fire_id(record.schedule_id, occurrence)
            message = WorkMessage(kind=SCHEDULE_FIRE, unitId=fire, uid=record.uid)
            try:
                self.services.runs.store.commit([*self.repo.advance_writes(record, token),
                                                 outbox.record(message, f"fire-{fire}")])
            except PreconditionFailed:
                continue  # another tick moved it
            fired.append(f"fire-{fire}")
        for entry_id in fired:
            outbox.deliver(entry_id)
        return len(fired)

    def fire(self, message: WorkMessage) -> Disposition:
        """Start (and drive, when it starts at once) the run of one occurrence."""
        if message.unitId is None or "." not in message.unitId:
            return "done"
        sid, _, minute = message.unitId.rpartition(".")
        got = self.repo.get_by_id(sid)
        if got is None or got[0].uid != message.uid:
            return "done"  # deleted since
        record = got[0]
        occurrence = float(minute)
        if record.session is not None:
            self._create_session(record, occurrence)
            return "done"
        request = RunRequest(prompt=record.prompt, threadId=record.thread_id,
                             multitaskStrategy=record.multitask_strategy)
        from shared.agent.service import AgentService

        service = AgentService(self.services)
        try:
            started = service.start(record.uid, request, idempotency_key=f"schedule-{_fire_id(sid, occurrence)}",
                                    extra_writes=lambda run_id: [self.repo.run_write(sid, occurrence, run_id)])
        except (Conflict, NotFound, InvalidInput, LimitExceeded) as exc:
            # The user's limits (too many active runs, the daily tokens) refuse it like a session
            # template's: nothing starts, and the message is done (never retried into a late start).
            log.warning("a scheduled run was refused: %s", exc.code, extra={"fields": {"scheduleId": sid}})
            return "done"
        if started.outcome.created and not started.outcome.queued:
            service.run(service.context(started))
        return "done"

    def _create_session(self, record: ScheduleRecord, occurrence: float) -> None:
        """The plan session of one occurrence (planned, ``awaiting_confirmation``): its id derives
        from the occurrence, so a fire delivered twice finds it and plans nothing again."""
        from shared.plans.sessions import start_planning

        template = ScheduleSession.model_validate(record.session, strict=False)
        fire = _fire_id(record.schedule_id, occurrence)
        session_id = "ses_" + hashlib.sha256(fire.encode()).hexdigest()[:32]
        sessions = SessionsRepo(self.services.runs.store)
        if sessions.get(session_id) is not None:
            return  # this occurrence's session exists: a duplicate fire
        settings = self.services.settings
        ttl = min(float(template.ttlS or settings.plan_default_deadline_s), settings.plan_max_deadline_s)
        try:
            start_planning(self.services, sessions, record.uid, template.prompt, deadline=time.time() + ttl,
                           tools=template.tools, keep_workspaces=template.keepWorkspaces,
                           budget_usd=template.budgetUsd, session_id=session_id,
                           extra_writes=[self.repo.session_write(record.schedule_id, occurrence, session_id)])
        except PreconditionFailed:
            return  # another delivery of this fire created it meanwhile
        except DomainError as exc:
            log.warning("a scheduled session was refused: %s", exc.code,
                        extra={"fields": {"scheduleId": record.schedule_id}})


def tick_time(message: WorkMessage) -> float:
    """The tick's time: ``unitId`` ``t<epoch minute>`` when the publisher says it (``make dev``,
    tests), else the minute the message is handled in (Cloud Scheduler's fixed message)."""
    if message.unitId and message.unitId.startswith("t") and message.unitId[1:].isdigit():
        return int(message.unitId[1:]) * 60.0
    return float(int(time.time() // 60) * 60)


def tick_message(at: float) -> WorkMessage:
    from shared.durable.kinds import SCHEDULE_TICK

    return WorkMessage(kind=SCHEDULE_TICK, unitId=f"t{int(at // 60)}")
