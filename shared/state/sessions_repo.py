"""Plan sessions: reads, the writes hosts and routes commit, and conditional session commits.

A session is one unit of work: ``sessions/{id}`` is its index (owner, prompt, deadline, ``runId``,
``status`` and ``planVersion`` for the list and the sweep, what the user asked: cancel, reason) and
``runs/{runId}`` (host ``plan``, from creation) its record of truth: its tasks (``hostState``), its
one log and counter. ``legacy_tasks`` and ``legacy_events`` read what sessions stored by earlier
versions kept beside it (docs/plan-sessions.md, "Layout")."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, Literal

from shared.errors import Conflict, NotFound, PreconditionFailed
from shared.state import paths
from shared.state.docstore import DocStore, Query, Transaction, Write
from shared.state.limits_repo import Slot
from shared.state.pages import Page, as_records, read_page
from shared.state.paused_runs import FailPaused, close_paused
from shared.state.plan_records import PlanTask, PlanVersionRecord, ReactStep, SessionRecord
from shared.state.record_base import events_of
from shared.state.records import AuditRecord, RunError, RunRecord, StopRequest, now
from shared.state.thread_queue import stop_request_write

EXPIRE_AT = "expireAt"

log = logging.getLogger("agent_runtime.state")


class SessionsRepo:
    def __init__(self, store: DocStore) -> None:
        self.store = store

    # ---- reads -------------------------------------------------------------------------------
    def get(self, session_id: str) -> tuple[SessionRecord, str] | None:
        doc = self.store.get(paths.session(session_id))
        return None if doc is None else (SessionRecord.from_doc(doc.data, doc.path), doc.token)

    def get_for(self, uid: str, session_id: str) -> tuple[SessionRecord, str]:
        """The session if ``uid`` owns it; another user's answers like a missing one (404)."""
        got = self.get(session_id)
        if got is None or got[0].uid != uid:
            raise NotFound(f"session {session_id} not found", code="SESSION_NOT_FOUND")
        return got

    def legacy_tasks(self, session_id: str) -> list[PlanTask]:
        """The task documents of a session stored by an earlier version (``sessions/{id}/tasks``;
        a session made since keeps its tasks once, in its run's ``hostState``)."""
        docs = self.store.query(Query(paths.session_tasks(session_id)))
        return sorted((PlanTask.from_doc(d.data, d.path) for d in docs), key=lambda t: t.order)

    def react(self, session_id: str, task_id: str) -> list[ReactStep]:
        docs = self.store.query(Query(paths.task_react(session_id, task_id)))
        return [ReactStep.from_doc(d.data, d.path) for d in docs]

    def plan_versions(self, session_id: str) -> list[PlanVersionRecord]:
        docs = self.store.query(Query(paths.session_plans(session_id)))
        return [PlanVersionRecord.from_doc(d.data, d.path) for d in docs]

    def legacy_events(self, session_id: str, after: int = 0) -> list[dict[str, Any]]:
        """The session's own log of an earlier version (``sessions/{id}/events``, 1..``lastSeq``)."""
        start = f"{after:08d}" if after > 0 else None
        docs = self.store.query(Query(paths.session_events(session_id), start_after=start))
        return [ev for d in docs for ev in events_of(d, after, frozenset({EXPIRE_AT}))]

    def list_for(self, uid: str, limit: int = 50) -> list[SessionRecord]:
        """The user's sessions, newest first."""
        docs = self.store.query(Query(paths.sessions(), where=(("uid", uid),), order_by="createdAt",
                                      descending=True, limit=limit))
        return [SessionRecord.from_doc(d.data, d.path) for d in docs]

    def page_for(self, uid: str, limit: int, cursor: str | None = None) -> Page[SessionRecord]:
        """One page of the user's sessions, newest first, after ``cursor`` (a session document that
        cannot be read is left out and logged)."""
        query = Query(paths.sessions(), where=(("uid", uid),), order_by="createdAt", descending=True)
        return read_page(self.store, query, cursor, limit, as_records(SessionRecord, log))

    def by_status(self, status: str, limit: int = 50) -> list[SessionRecord]:
        """Sessions in ``status``, earliest deadline first (the sweep ends those past it)."""
        docs = self.store.query(Query(paths.sessions(), where=(("status", status),), order_by="deadline",
                                      limit=limit))
        return [SessionRecord.from_doc(d.data, d.path) for d in docs]

    # ---- writes to commit --------------------------------------------------------------------
    @staticmethod
    def update_write(session_id: str, fields: dict[str, Any]) -> Write:
        """Merge ``fields`` (camelCase) into the session: the execution never overwrites what a
        route writes (``cancelRequested``) and vice versa."""
        return Write("update", paths.session(session_id), {**fields, "updatedAt": now()})

    @staticmethod
    def plan_write(session_id: str, plan: PlanVersionRecord) -> Write:
        return Write("create", paths.session_plan(session_id, plan.version), plan.to_doc())

    @staticmethod
    def react_write(session_id: str, step: ReactStep) -> Write:
        return Write("create", paths.task_react_step(session_id, step.task_id, step.n), step.to_doc())

    @staticmethod
    def unit_write(run: RunRecord, token: str) -> Write:
        """The session's run (its unit of work) written whole if it is still as read (``token``):
        the plan's steps before its execution (a refinement, the confirmation, an end)."""
        run.updated_at = now()
        return Write("set", paths.run(run.run_id), run.to_doc(), if_token=token)

    def request_cancel(self, session_id: str, reason: str | None = None, *, run_id: str | None = None) -> None:
        """Record the user's cancel on the session and, in the same commit, ask its executing run
        ``run_id`` to stop (``RunRecord.stopRequested``, as a chat run's cancel: the invocation
        driving it adopts the request from the commit it makes fail, and the next claim reads it
        with the run), so the plan host checks it before every act without reading the session."""
        fields: dict[str, Any] = {"cancelRequested": True}
        if reason is not None:
            fields["cancelReason"] = reason
        stop = [stop_request_write(run_id, StopRequest(mode="cancel"))] if run_id else []
        self.store.commit([self.update_write(session_id, fields), *stop])

    def end_paused(self, session: SessionRecord, run_id: str, closing: list[dict[str, Any]], *,
                   reason: Literal["cancelled", "deadline_exceeded"], error: RunError, fail: FailPaused,
                   event_write: Callable[[str, dict[str, Any]], Write],
                   audit_write: Callable[[AuditRecord], Write], extra: Sequence[Write] = ()) -> bool:
        """A session whose execution waits for approvals ends now (``cancelled`` by the user, or
        ``deadline_exceeded`` found by the sweep): its open approvals are rejected, its run is ended
        by ``fail`` (the loop's stop), the session records ``error``, in one transaction. False when
        the run is not paused (it then stops by itself before its next act). ``fail`` also ends the
        tasks in the run's state (the one place they are kept). ``closing``: the events that close
        the session, appended to the run's log (the session's events are its run's), filled and
        numbered by ``fail`` after the run's own closing event. ``extra``: more writes of the same
        transaction (its webhook deliveries)."""

        def txn(t: Transaction) -> bool:
            doc = t.get(paths.run(run_id))
            if doc is None:
                return False
            run = RunRecord.from_doc(doc.data, doc.path)
            if run.status != "awaiting_confirmation":
                return False
            close_paused(t, run, doc.token, run_id, reason, fail=fail, event_write=event_write,
                         audit_write=audit_write)
            t.write(self.update_write(session.session_id, {
                "status": reason, "result": {"status": reason, "log": []}, "error": error.to_doc()}))
            for event in closing:
                t.write(event_write(run_id, event))
            for write in extra:
                t.write(write)
            return True

        return self.store.run_transaction(txn)

    # ---- commits -----------------------------------------------------------------------------
    def create(self, session: SessionRecord, writes: Sequence[Write], *, slot: Slot | None = None) -> None:
        """Create the session with ``writes`` in one commit; with ``slot`` (the user's limit on active
        sessions) reserved first (429 ``TOO_MANY_ACTIVE_SESSIONS``: nothing is written) and released
        if the commit fails."""
        batch = [Write("create", paths.session(session.session_id), session.to_doc()), *writes]
        if slot is not None:
            slot.reserve(session.session_id)
        try:
            self.store.commit(batch)
        except Exception:
            if slot is not None:
                slot.release(session.session_id)
            raise

    def commit(self, session: SessionRecord, token: str, writes: Sequence[Write] = ()) -> str:
        """Write ``session`` whole with ``writes`` if it is still as read, and every conditional
        write of ``writes`` too (its run: ``unit_write``) (else 409 ``SESSION_BUSY``: another
        request changed it meanwhile; nothing was written)."""
        session.updated_at = now()
        try:
            return self.store.commit([Write("set", paths.session(session.session_id), session.to_doc(),
                                            if_token=token), *writes])[0]
        except PreconditionFailed:
            raise Conflict(f"session {session.session_id} changed meanwhile; retry", code="SESSION_BUSY") from None
