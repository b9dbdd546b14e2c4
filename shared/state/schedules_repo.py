"""Schedules (``schedules/{scheduleId}``, the id derived from the owner and the name: names live
in the user's namespace) and the runs they started (``schedules/{id}/runs/{occurrence}``)."""

from __future__ import annotations

import hashlib
import logging
from typing import Any, Literal

from pydantic import Field

from shared.state import paths
from shared.state.docstore import DocStore, Query, Write
from shared.state.pages import Page, read_page, tolerant
from shared.state.record_base import SCHEMA_VERSION, Record, now

MAX_SCHEDULES_PER_USER = 20
log = logging.getLogger("agent_runtime.state")


def schedule_id(uid: str, name: str) -> str:
    return "sch_" + hashlib.sha256(f"{uid}/{name}".encode()).hexdigest()[:32]


class ScheduleRecord(Record):
    schedule_id: str
    uid: str
    name: str
    cron: str
    timezone: str
    prompt: str = ""
    session: dict[str, Any] | None = None
    """A session template (``ScheduleSession``'s fields): each occurrence creates a plan session."""
    thread_id: str | None = None
    multitask_strategy: Literal["reject", "enqueue", "interrupt", "rollback"] = "enqueue"
    next_run_at: float
    """The next occurrence (epoch seconds): a tick at or after it starts a run."""
    last_occurrence: float | None = None
    created_at: float = Field(default_factory=now)
    updated_at: float = Field(default_factory=now)
    schema_version: int = SCHEMA_VERSION


class ScheduleRun(Record):
    occurrence: float
    run_id: str = ""
    session_id: str | None = None
    created_at: float = Field(default_factory=now)


_schedule = tolerant(lambda d: ScheduleRecord.from_doc(d.data, d.path), log)
_run = tolerant(lambda d: ScheduleRun.from_doc(d.data, d.path), log)


class SchedulesRepo:
    def __init__(self, store: DocStore) -> None:
        self.store = store

    def get(self, uid: str, name: str) -> tuple[ScheduleRecord, str] | None:
        doc = self.store.get(paths.schedule(schedule_id(uid, name)))
        if doc is None:
            return None
        record: ScheduleRecord = ScheduleRecord.from_doc(doc.data, doc.path)
        return (record, doc.token) if record.uid == uid else None

    def get_by_id(self, sid: str) -> tuple[ScheduleRecord, str] | None:
        doc = self.store.get(paths.schedule(sid))
        return None if doc is None else (ScheduleRecord.from_doc(doc.data, doc.path), doc.token)

    def list_for(self, uid: str) -> list[ScheduleRecord]:
        docs = self.store.query(Query(paths.schedules(), where=(("uid", uid),), limit=MAX_SCHEDULES_PER_USER + 1))
        return sorted((r for d in docs if (r := _schedule(d)) is not None), key=lambda r: r.name)

    def put(self, record: ScheduleRecord) -> None:
        self.store.commit([Write("set", paths.schedule(record.schedule_id), record.to_doc())])

    def delete(self, uid: str, name: str) -> bool:
        existed = self.get(uid, name) is not None
        if existed:
            self.store.commit([Write("delete", paths.schedule(schedule_id(uid, name)))])
        return existed

    def due(self, before: float, limit: int) -> list[ScheduleRecord]:
        """Schedules whose next occurrence is at or before ``before``, earliest first."""
        docs = self.store.query(Query(paths.schedules(), order_by="nextRunAt", limit=limit))
        return [r for d in docs if (r := _schedule(d)) is not None and r.next_run_at <= before]

    def advance_writes(self, record: ScheduleRecord, token: str) -> list[Write]:
        """The write moving the schedule to its next occurrence (if unchanged since read)."""
        record.updated_at = now()
        return [Write("set", paths.schedule(record.schedule_id), record.to_doc(), if_token=token)]

    @staticmethod
    def run_write(sid: str, occurrence: float, run_id: str) -> Write:
        """Created in the run's own transaction: the occurrence started this run."""
        return Write("create", paths.schedule_run(sid, str(int(occurrence))),
                     ScheduleRun(occurrence=occurrence, run_id=run_id).to_doc())

    @staticmethod
    def session_write(sid: str, occurrence: float, session_id: str) -> Write:
        """Created in the session's creating commit: the occurrence created this plan session."""
        return Write("create", paths.schedule_run(sid, str(int(occurrence))),
                     ScheduleRun(occurrence=occurrence, session_id=session_id).to_doc())

    def page_runs(self, sid: str, limit: int, cursor: str | None = None) -> Page[ScheduleRun]:
        """One page of the runs the schedule started, newest first, after ``cursor``."""
        query = Query(paths.schedule_runs(sid), order_by="occurrence", descending=True)
        return read_page(self.store, query, cursor, limit, _run)
