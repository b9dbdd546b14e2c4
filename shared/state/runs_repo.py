"""Runs, their turns, actions and events, and threads: reads and the conditional writes that move them.

Every change to a run is one atomic commit conditioned on the token of the run document as it was
read (``commit``), so two invocations can never both move the same run forward.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic_core import to_json

from shared.errors import NotFound, StoredValueInvalid, Unprocessable
from shared.state import paths
from shared.state.batched_reads import BatchedReads, read, read_many
from shared.state.docstore import Doc, DocStore, Query, Transaction, Write
from shared.state.limits_repo import Guard, Slot, commit_guarded
from shared.state.pages import Page, after, as_records, merged, page_of, read_page
from shared.state.paused_runs import CloseReason, FailPaused, close_paused, pause_state
from shared.state.record_base import SchemaVersionError, events_of, finite, unreadable
from shared.state.records import (
    TERMINAL_ACTION_STATUSES,
    ActionRecord,
    ApprovalRecord,
    ApprovalStatus,
    AuditRecord,
    MessageRecord,
    QueuedStart,
    RunRecord,
    ThreadRecord,
    now,
)
from shared.state.thread_queue import Busy, QueueEntry, Strategy, busy_thread, run_messages_query, thread_path

if TYPE_CHECKING:
    from shared.models.base import Turn

__all__ = ["CloseReason", "FailPaused", "RunSnapshot", "RunsRepo", "StartOutcome", "thread_path"]


@dataclass(frozen=True)
class RunSnapshot:
    run: RunRecord
    token: str


@dataclass(frozen=True)
class StartOutcome:
    snapshot: RunSnapshot
    created: bool
    """False when an Idempotency-Key matched an earlier request: ``snapshot`` is that run."""
    queued: bool = False
    """The run waits in its thread's queue (``multitaskStrategy`` enqueue, interrupt, rollback)."""
    deliver: tuple[str, ...] = ()
    """Outbox entries to publish after the commit (the entry that starts the thread's next run)."""


log = logging.getLogger("agent_runtime.state")
EXPIRE_AT = "expireAt"
_HIDDEN = frozenset({EXPIRE_AT})
IDEMPOTENCY_KEY_TTL_S = 24 * 3600.0
"""How long an ``Idempotency-Key`` answers its run (and refuses another body): 24 h from its first
use, as Stripe's keys. Its document carries ``expireAt`` (Firestore's TTL policy deletes it later);
an expired key is a new key. Keys stored before issue 35 (no ``expireAt``) expire 24 h after
``createdAt`` and, having no fingerprint, replay their run whatever the body."""
TURNS_KEY = "turns"
ACTIONS_KEY = "actions"
"""In a turns document: the actions of the calls its turns answer (:func:`answered_here`)."""
SHARED_TURNS_MAX_CHARS = 256 * 1024
EVENTS_KEY = "events"
SHARED_EVENTS_MAX = 32
SHARED_EVENTS_MAX_CHARS = 256 * 1024
"""Consecutive turns of one commit share a document up to this JSON size (Firestore: 1 MiB each)."""
AUDIT_KEY = "audit"
"""In a step's turns document: the audit entries of the actions riding in it (:meth:`RunsRepo.commit_step`)."""
STEP_SEQ_KEY = "lastSeq"
"""In a step's turns document holding its events: the last one's ``seq`` (what :meth:`RunsRepo.list_events`
queries the turns by)."""
EVENTS_EXPIRE_KEY = "eventsExpireAt"
"""In a step's turns document holding its events: when they leave the replay (``EVENT_RETENTION_S``
after the commit, as an event document's ``expireAt``)."""
STEP_DOC_MAX_CHARS = 512 * 1024
"""A step's turns document with its events and audit entries stays under this JSON size (Firestore
allows 1 MiB); a larger step writes them as documents of their own."""


def _json_size(value: Any) -> int:
    """Bytes of ``value`` as compact UTF-8 JSON (pydantic-core's encoder: a step sizes ~6 values)."""
    return len(to_json(value, fallback=str))


def turn_doc(turn: Turn) -> dict[str, Any]:
    return turn.model_dump(mode="json", exclude_none=True, exclude_defaults=True)


def turn_writes(run_id: str, new_turns: Mapping[int, Turn]) -> list[Write]:
    """The documents of the turns one commit adds (:func:`step_writes` without actions)."""
    return step_writes(run_id, new_turns, ())[0]


def answered_here(action: ActionRecord, indexes: set[int]) -> bool:
    """Whether ``action`` may be stored inside the turns document of its step (issue 33: one
    document per step less): its call is answered by the next turn of the same document (both turns
    new in this commit, so the action was never a document of its own), it ended
    (``completed``/``failed``/``rejected``) and no approval names it. Anything a later read needs by
    id (a paused turn's calls, a side effect's claim, an approval's action) stays
    ``runs/{id}/actions/{actionId}``."""
    return (action.turn_index in indexes and action.turn_index + 1 in indexes
            and action.status in TERMINAL_ACTION_STATUSES and action.approval_id is None)


def step_writes(run_id: str, new_turns: Mapping[int, Turn], actions: Sequence[ActionRecord]
                ) -> tuple[list[Write], list[ActionRecord]]:
    """The documents of the turns one commit adds, and the actions left to be documents of their own.

    Consecutive turns (a step's model turn and its tool responses) share one document named by the
    first one's index, ``{"turns": [...]}``: one document per step instead of two. The actions of
    the calls those turns answer (:func:`answered_here`) ride in the same document,
    ``{"turns": [...], "actions": [...]}`` (:meth:`RunsRepo.list_actions` reads both places). Turns
    too large together get a document each, and their actions documents of their own."""
    docs = [(i, turn_doc(t)) for i, t in sorted(new_turns.items())]
    if len(docs) > 1 and docs[-1][0] - docs[0][0] == len(docs) - 1:  # sorted, distinct: consecutive
        indexes = {i for i, _ in docs}
        inline = [a for a in actions if answered_here(a, indexes)]
        shared: dict[str, Any] = {TURNS_KEY: [d for _, d in docs]}
        if inline:
            shared[ACTIONS_KEY] = [a.to_doc() for a in inline]
        if _json_size(shared) <= SHARED_TURNS_MAX_CHARS:
            return [Write("create", paths.turn(run_id, docs[0][0]), shared)], [a for a in actions if a not in inline]
        if inline:
            del shared[ACTIONS_KEY]
            if _json_size(shared) <= SHARED_TURNS_MAX_CHARS:
                return [Write("create", paths.turn(run_id, docs[0][0]), shared)], list(actions)
    return [Write("create", paths.turn(run_id, i), d) for i, d in docs], list(actions)


class RunsRepo:
    def __init__(self, store: DocStore, *, event_retention_s: float = 30 * 86400.0,
                 audit_retention_s: float = 400 * 86400.0) -> None:
        self.store = store
        self.event_retention_s = event_retention_s
        self.audit_retention_s = audit_retention_s

    def event_write(self, run_id: str, event: dict[str, Any]) -> Write:
        """The write persisting ``event`` (with its TTL field; replays strip it)."""
        return Write("create", paths.event(run_id, int(event["seq"])),
                     {**event, EXPIRE_AT: now() + self.event_retention_s})

    def event_writes(self, run_id: str, events: Sequence[dict[str, Any]]) -> list[Write]:
        """The writes persisting the events one commit adds. Consecutive events share one document,
        ``{"events": [...]}``, named by the *last* one's ``seq``: a tool step's four events are one
        document instead of four, and :meth:`list_events` still finds every event after ``N`` by
        reading the documents whose name is after ``N``. At most ``SHARED_EVENTS_MAX`` events and
        ``SHARED_EVENTS_MAX_CHARS`` of JSON share a document; an event alone is written as
        :meth:`event_write` writes it."""
        groups: list[list[dict[str, Any]]] = []
        chars = 0
        for ev in events:
            size = _json_size(ev)
            last = groups[-1] if groups else None
            if (last is not None and int(ev["seq"]) == int(last[-1]["seq"]) + 1 and len(last) < SHARED_EVENTS_MAX
                    and chars + size <= SHARED_EVENTS_MAX_CHARS):
                last.append(ev)
                chars += size
            else:
                groups.append([ev])
                chars = size
        return [self.event_write(run_id, group[0]) if len(group) == 1 else
                Write("create", paths.event(run_id, int(group[-1]["seq"])),
                      {EVENTS_KEY: list(group), EXPIRE_AT: now() + self.event_retention_s})
                for group in groups]

    def audit_write(self, record: AuditRecord) -> Write:
        if record.expire_at is None:
            record.expire_at = record.at + self.audit_retention_s
        return Write("create", paths.audit(record.audit_id), record.to_doc())

    @staticmethod
    def approval_write(approval: ApprovalRecord) -> Write:
        return Write("set", paths.approval(approval.uid, approval.approval_id), approval.to_doc())

    @staticmethod
    def action_write(action: ActionRecord) -> Write:
        return Write("set", paths.action(action.run_id, action.action_id), action.to_doc())

    @staticmethod
    def message_write(run: RunRecord, message: MessageRecord) -> Write:
        """A message of ``run``'s thread (where the run's thread is: :func:`thread_path`)."""
        return Write("create", f"{thread_path(run)}/messages/{message.id}", message.to_doc())

    @staticmethod
    def release_thread_write(run: RunRecord, *, mode: str | None = None,
                             execution_modes: list[str] | None = None) -> Write:
        """The thread has no active run any more (its run stopped for good). The planner state of
        the thread (seed 003 §5.1): ``mode`` (the last turn's contextType) and the execution modes
        its plans used, when the run says them."""
        fields: dict[str, Any] = {"activeRunId": None, "interruptRunId": None, "interruptMode": None,
                                  "interruptBy": None, "updatedAt": now()}
        if mode is not None:
            fields["mode"] = mode
        if execution_modes:
            fields["lastExecutionModes"] = execution_modes
        return Write("update", thread_path(run), fields)

    @staticmethod
    def touch_run_write(run_id: str, at: float) -> Write:
        """Changes the run document's token, so an invocation holding an older view cannot commit."""
        return Write("update", paths.run(run_id), {"updatedAt": at})

    # ---- reads -------------------------------------------------------------------------------
    @staticmethod
    def run_paths(run_id: str) -> list[str]:
        """What :meth:`get_run` reads (to be batched with other reads, ``BatchedReads``)."""
        return [paths.run(run_id)]

    def get_run(self, run_id: str, *, batch: BatchedReads | None = None) -> RunSnapshot | None:
        doc = read(self.store, paths.run(run_id), batch)
        if doc is None:
            return None
        return RunSnapshot(RunRecord.from_doc(doc.data, doc.path), doc.token)

    def get_run_for(self, uid: str, run_id: str) -> RunSnapshot:
        """The run if ``uid`` owns it; another user's run answers like a missing one (404)."""
        snap = self.get_run(run_id)
        if snap is None or snap.run.uid != uid:
            raise NotFound(f"run {run_id} not found", code="RUN_NOT_FOUND")
        return snap

    def list_runs_for(self, uid: str, limit: int) -> list[RunRecord]:
        """``uid``'s runs, newest first (only documents whose ``uid`` is the caller's are read)."""
        docs = self.store.query(Query(paths.runs(), where=(("uid", uid),), order_by="createdAt", descending=True,
                                      limit=limit))
        return [RunRecord.from_doc(d.data, d.path) for d in docs]

    def page_runs_for(self, uid: str, limit: int, cursor: str | None = None) -> Page[RunRecord]:
        """One page of ``uid``'s runs, newest first, after ``cursor`` (shared/state/pages.py). A run
        document that cannot be read is left out (and logged), not a 500 for the whole list."""
        query = Query(paths.runs(), where=(("uid", uid),), order_by="createdAt", descending=True)
        return read_page(self.store, query, cursor, limit, as_records(RunRecord, log))

    def load_turns(self, run_id: str) -> list[Turn]:
        turns: list[Turn] = []
        for d in self.store.query(Query(paths.turns(run_id))):  # by id: the first turn's index
            turns.extend(_turns_of(d))
        return turns

    @staticmethod
    def paused_paths(run_id: str, turn_count: int, action_ids: Sequence[str]) -> list[str]:
        """What :meth:`resume_reads` reads of a run with ``turn_count`` turns naming ``action_ids``:
        those actions, and every place a turn document may have (a document is named by its first
        turn's index, so one of ``0..turn_count - 1``; ``turn_count`` itself, which must be free,
        proves the count current). To be batched with the run's own read."""
        return [*(paths.action(run_id, a) for a in action_ids), *(paths.turn(run_id, i) for i in range(turn_count + 1))]

    @staticmethod
    def resume_hint(run: RunRecord) -> tuple[int, list[str]] | None:
        """What a resume of ``run`` as it is now reads by name (:meth:`paused_paths` of it): its turn
        count and the actions its pause names (none when it names none and none are needed); None
        when a resume of it queries (paused by older code)."""
        if run.paused_action_ids is None and (run.status == "awaiting_confirmation" or run.pending_turn is not None):
            return None
        return run.turn_count, list(run.paused_action_ids or [])

    def resume_reads(self, run: RunRecord, *, batch: BatchedReads | None = None
                     ) -> tuple[list[ActionRecord] | None, list[Turn] | None]:
        """The actions and turns a resume of ``run`` works from, read by id in one round trip (none
        when ``batch`` holds them: issue 33); None for what the caller must query instead
        (:meth:`open_actions`, :meth:`load_turns`).

        - A run that names its pause's actions (``pausedActionIds``: paused, or claimed after its
          pause and not past its paused turn yet): those actions (in turn and call order) and all
          its turns. Both None when a named action is missing or not the run's.
        - A run that names none and has no pause (a yield, a lease that expired mid-work): its turns;
          its actions are none when its last turn is answered (a resume needs only the last model
          turn's and the paused turn's), else None (the open turn's are queried).
        - A run paused by older code (no ``pausedActionIds``): both None.

        Turns are None (and so the actions of a pause) when the turn documents are not one chain of
        exactly ``turnCount`` turns. Every document read here is written only by commits that also
        write the run, so a claim conditioned on the run's token (read in the same batch, or
        earlier) never acts on a newer state than it read."""
        hint = self.resume_hint(run)
        if hint is None:
            return None, None
        count, ids = hint
        docs = read_many(self.store, self.paused_paths(run.run_id, count, ids), batch)
        actions: list[ActionRecord] = []
        for doc in docs[:len(ids)]:
            if doc is None:
                return None, None
            action = ActionRecord.from_doc(doc.data, doc.path)
            if action.run_id != run.run_id:
                return None, None
            actions.append(action)
        turns = _turn_chain(docs[len(ids):], count)
        if turns is None:
            log.warning("a run's turn documents are not as its turn count says; querying them",
                        extra={"fields": {"runId": run.run_id, "turnCount": count}})
            return None, None
        if run.paused_action_ids is None and turns and turns[-1].role == "model" and turns[-1].function_calls:
            return None, turns  # cut off inside a step: its open turn's actions are queried
        return sorted(actions, key=lambda a: (a.turn_index, a.call_index)), turns

    @staticmethod
    def user_thread_path(uid: str, thread_id: str) -> str:
        """Where ``uid``'s thread of that id is when it was begun since issue 35."""
        return paths.thread(uid, thread_id)

    @staticmethod
    def thread_paths(uid: str, thread_id: str) -> list[str]:
        """What :meth:`find_thread` reads (to be batched with other reads, ``BatchedReads``)."""
        return [paths.thread(uid, thread_id), paths.shared_thread(thread_id)]

    def find_thread(self, uid: str, thread_id: str, *, batch: BatchedReads | None = None
                    ) -> tuple[ThreadRecord, str] | None:
        """``uid``'s thread ``thread_id`` and its document path: the user's own
        (``users/{uid}/threads``), else one begun before issue 35 in the shared collection if ``uid``
        owns it. Another user's thread of the same id is not found (it is theirs). Both paths in
        one round trip (none when ``batch`` holds them)."""
        where = self.thread_paths(uid, thread_id)
        docs = [read(self.store, p, batch) for p in where] if batch is not None else self.store.get_many(where)
        return _owned_thread(uid, thread_id, docs)

    def page_threads(self, uid: str, limit: int, cursor: str | None = None) -> Page[ThreadRecord]:
        """One page of ``uid``'s threads, newest first: the user's own and those begun before issue
        35 in the shared collection, read as one list."""
        own = Query(paths.threads(uid), order_by="createdAt", descending=True, limit=limit + 1)
        older = Query(paths.shared_threads(), where=(("uid", uid),), order_by="createdAt", descending=True,
                      limit=limit + 1)
        docs = merged([self.store.query(after(q, cursor)) for q in (own, older)], "createdAt", descending=True)
        return page_of(docs[:limit + 1], limit, "createdAt", as_records(ThreadRecord, log))

    def page_messages(self, uid: str, thread_id: str, limit: int, cursor: str | None = None
                      ) -> tuple[ThreadRecord, Page[MessageRecord]]:
        """``uid``'s thread and one page of its messages, newest first (404 ``THREAD_NOT_FOUND``)."""
        found = self.find_thread(uid, thread_id)
        if found is None:
            raise NotFound(f"thread {thread_id} not found", code="THREAD_NOT_FOUND")
        if found[1] == paths.thread(uid, thread_id):
            query = Query(paths.messages(uid, thread_id), order_by="createdAt", descending=True)
        else:
            query = Query(paths.shared_messages(thread_id), order_by="createdAt", descending=True)
        return found[0], read_page(self.store, query, cursor, limit,
                                   as_records(MessageRecord, log))

    def thread_doc(self, uid: str, thread_id: str) -> Doc:
        """The document of ``uid``'s thread (404 ``THREAD_NOT_FOUND``)."""
        found = self.find_thread(uid, thread_id)
        doc = None if found is None else self.store.get(found[1])
        if doc is None:
            raise NotFound(f"thread {thread_id} not found", code="THREAD_NOT_FOUND")
        return doc

    def get_thread(self, uid: str, thread_id: str) -> ThreadRecord | None:
        found = self.find_thread(uid, thread_id)
        return None if found is None else found[0]

    def list_messages(self, uid: str, thread_id: str, limit: int = 30) -> list[MessageRecord]:
        """The last ``limit`` messages of ``uid``'s thread, oldest first (none for a thread not found)."""
        return self.thread_and_messages(uid, thread_id, limit)[1]

    def thread_and_messages(self, uid: str, thread_id: str, limit: int = 30
                            ) -> tuple[ThreadRecord | None, list[MessageRecord]]:
        """``uid``'s thread (None when not found) and its last ``limit`` messages, oldest first: the
        thread found once for both (a run start on a thread reads them)."""
        found, messages = self.found_thread_and_messages(uid, thread_id, limit)
        return (None if found is None else found[0]), messages

    def found_thread_and_messages(self, uid: str, thread_id: str, limit: int = 30, *,
                                  batch: BatchedReads | None = None
                                  ) -> tuple[tuple[ThreadRecord, str] | None, list[MessageRecord]]:
        """:meth:`thread_and_messages`, the thread with its document path (:meth:`find_thread`)."""
        found = self.find_thread(uid, thread_id, batch=batch)
        if found is None:
            return None, []
        if found[1] == paths.thread(uid, thread_id):
            query = Query(paths.messages(uid, thread_id), order_by="createdAt", descending=True, limit=limit)
        else:
            query = Query(paths.shared_messages(thread_id), order_by="createdAt", descending=True, limit=limit)
        docs = self.store.query(query)
        return found, [MessageRecord.from_doc(d.data, d.path) for d in reversed(docs)]

    def list_events(self, run_id: str, after: int = 0, limit: int | None = None) -> list[dict[str, Any]]:
        """The run's events with ``seq`` > ``after`` in order (at most ``limit``). A document is named
        by the last ``seq`` it holds (one event, or a commit's events, :meth:`event_writes`), so the
        documents named after ``after`` hold exactly those events, and every one holds at least one
        of them: ``limit`` documents are enough for ``limit`` events."""
        start = f"{after:08d}" if after > 0 else None
        at = now()
        docs = self.store.query(Query(paths.events(run_id), start_after=start, limit=limit))
        events = [ev for d in docs if _live(d.data.get(EXPIRE_AT), at) for ev in events_of(d, after, _HIDDEN)]
        # A tool step's events ride in its turns document (fold_step), found by their last seq.
        steps = self.store.query(Query(paths.turns(run_id), order_by=STEP_SEQ_KEY, start_after=after, limit=limit))
        held = [ev for d in steps if _live(d.data.get(EVENTS_EXPIRE_KEY), at) for ev in events_of(d, after)]
        if held:
            events = sorted([*events, *held], key=lambda ev: int(ev["seq"]))
        return events[:limit] if limit is not None else events

    def audit_of(self, run_id: str) -> list[dict[str, Any]]:
        """The run's audit entries as stored, in time order: the documents ``audit/*`` naming it and
        those riding in its steps' turns documents (:meth:`fold_step`), none past its ``expireAt``
        (two queries). An entry of a turns document that is not an object is left out and logged."""
        at = now()
        own = [d.data for d in self.store.query(Query("audit", where=(("runId", run_id),)))]
        held = [e for d in self.store.query(Query(paths.turns(run_id))) for e in step_audit(d)]
        return sorted((e for e in [*own, *held] if _live(e.get(EXPIRE_AT), at)),
                      key=lambda e: finite(e.get("at")) or 0.0)

    def approvals_by_id(self, uid: str, approval_ids: Sequence[str]) -> list[ApprovalRecord]:
        """``uid``'s approvals of these ids that exist (one round trip)."""
        docs = self.store.get_many([paths.approval(uid, i) for i in approval_ids]) if approval_ids else []
        return [ApprovalRecord.from_doc(d.data, d.path) for d in docs if d is not None]

    def run_and_action(self, run_id: str, action_id: str) -> tuple[RunRecord | None, ActionRecord | None]:
        """The run (None when missing or no valid run) and its action ``action_id`` as a document of
        its own (None when there is none: an answered call may sit in a turns document), in one
        round trip."""
        run_doc, action_doc = self.store.get_many([paths.run(run_id), paths.action(run_id, action_id)])
        run = None if run_doc is None else _run_or_none(run_doc)
        return run, None if action_doc is None else ActionRecord.from_doc(action_doc.data, action_doc.path)

    def list_actions(self, run_id: str) -> list[ActionRecord]:
        """Every action of the run in call order: those of the turns documents (the calls a step
        answered in its own commit, :func:`step_writes`) and the documents of their own (two
        queries). An action stored in both places (none is written so) is read from its own."""
        own = self.open_actions(run_id)
        seen = {a.action_id for a in own}
        acts = [*own, *(a for a in self.answered_actions(run_id) if a.action_id not in seen)]
        return sorted(acts, key=lambda a: (a.turn_index, a.call_index))

    def open_actions(self, run_id: str) -> list[ActionRecord]:
        """The run's actions stored as documents of their own (``runs/{id}/actions``), in call order:
        every action of a turn whose calls are not all answered yet (a paused turn, a claimed side
        effect, an approval's action), which is all a resume needs, and every action of runs
        written before issue 33's session 3. One query."""
        docs = self.store.query(Query(paths.actions(run_id)))
        acts = [ActionRecord.from_doc(d.data, d.path) for d in docs]
        return sorted(acts, key=lambda a: (a.turn_index, a.call_index))

    def answered_actions(self, run_id: str) -> list[ActionRecord]:
        """The actions stored inside the run's turns documents (one query of the turns)."""
        out: list[ActionRecord] = []
        for d in self.store.query(Query(paths.turns(run_id))):
            inline = d.data.get(ACTIONS_KEY)
            if inline is None:
                continue
            if not isinstance(inline, list) or not all(isinstance(a, dict) for a in inline):
                raise StoredValueInvalid(f"{d.path} cannot be read as a turns document ({ACTIONS_KEY}: not a list of "
                                         "actions): a corrupt or hand-edited document", details={
                                             "object": d.path,
                                             "errors": [{"field": ACTIONS_KEY, "message": "not a list of objects"}]})
            try:
                out.extend(ActionRecord.from_doc(a, f"{d.path} ({ACTIONS_KEY}[{i}])") for i, a in enumerate(inline))
            except StoredValueInvalid as exc:  # named by its document's path, like every refusal
                raise StoredValueInvalid(exc.message, details={**exc.details, "object": d.path}) from None
        return out

    def expired_leases(self, status: str, before: float, limit: int = 50) -> list[str]:
        """Ids of runs in ``status`` whose lease expired before ``before`` (recovery candidates)."""
        return [run_id for run_id, _ in self.expired_runs(status, before, limit)]

    def expired_runs(self, status: str, before: float, limit: int = 50) -> list[tuple[str, RunRecord | None]]:
        """:meth:`expired_leases` with each run as the query read it (None: a document that is no
        valid run; its recovery reads it again and refuses it): what its resume reads by name
        (:meth:`resume_hint`), to be read again with the run (issue 33)."""
        docs = self.store.query(Query(paths.runs(), where=(("status", status),), order_by="leaseExpiresAt",
                                      limit=limit))
        # a value that is not a number (corrupt) is no candidate: the sweep goes on with the others
        return [(d.id, _run_or_none(d)) for d in docs
                if (at := finite(d.data.get("leaseExpiresAt", 0))) is not None and at < before]

    def used_idempotency_key(self, uid: str, key: str) -> bool:
        """Whether ``uid`` started a run with this Idempotency-Key less than
        :data:`IDEMPOTENCY_KEY_TTL_S` ago (a repeat is answered with it)."""
        return _live_key(self.store.get(paths.idempotency(uid, key))) is not None

    def get_approval(self, uid: str, approval_id: str) -> tuple[ApprovalRecord, str] | None:
        doc = self.store.get(paths.approval(uid, approval_id))
        return None if doc is None else (ApprovalRecord.from_doc(doc.data, doc.path), doc.token)

    def page_approvals_for(self, uid: str, statuses: Sequence[ApprovalStatus] | None, limit: int,
                           cursor: str | None = None) -> Page[ApprovalRecord]:
        """One page of ``uid``'s approvals in ``statuses`` (``None``: any), newest first, after
        ``cursor``: one bounded query per status, merged in the one order."""
        base = Query(paths.approvals(uid), order_by="createdAt", descending=True, limit=limit + 1)
        queries = [base] if statuses is None else [
            Query(paths.approvals(uid), where=(("status", s),), order_by="createdAt", descending=True,
                  limit=limit + 1) for s in statuses]
        docs = merged([self.store.query(after(q, cursor)) for q in queries], "createdAt", descending=True)
        return page_of(docs[:limit + 1], limit, "createdAt",
                       as_records(ApprovalRecord, log))

    def list_approvals_for(self, uid: str, status: ApprovalStatus | None, limit: int) -> list[ApprovalRecord]:
        """``uid``'s approvals (in ``status``, or any), newest first: one bounded query."""
        if status is None:
            query = Query(paths.approvals(uid), order_by="createdAt", descending=True, limit=limit)
        else:
            query = Query(paths.approvals(uid), where=(("status", status),), order_by="createdAt", descending=True,
                          limit=limit)
        docs = self.store.query(query)
        return [ApprovalRecord.from_doc(d.data, d.path) for d in docs]

    # ---- writes ------------------------------------------------------------------------------
    def start_run(self, run: RunRecord, *, message: MessageRecord, turns: Sequence[Turn],
                  events: Sequence[dict[str, Any]], idempotency_key: str | None = None,
                  fingerprint: str | None = None, strategy: Strategy = "reject",
                  queue_entry: QueueEntry | None = None, queued_start: QueuedStart | None = None,
                  slot: Slot | None = None, fail_paused: FailPaused, extra_writes: Sequence[Write] = (),
                  new_thread: bool = False, guards: Sequence[Guard] = (), maybe_shared: bool = True
                  ) -> StartOutcome:
        """Create the run, claim its thread (one active run per thread) and persist the prompt, or
        queue it behind the thread's runs (``thread_queue.busy_thread``: what ``strategy`` does
        when the thread is busy; ``queue_entry`` makes the outbox write that starts a queued run).
        ``extra_writes``: documents created in the same transaction (e.g. the A2A task of the run).
        ``new_thread``: the thread id was minted for this run, so no thread of that id exists: the
        transaction creates it without reading its two possible paths first (two round trips less,
        issue 33; the ``create`` would still fail on a thread that existed).

        Raises NotFound for another user's thread and, with ``reject``, Conflict when the thread's
        current run is not finished: APPROVAL_PENDING (paused, a decision still open) or RUN_ACTIVE
        (working, every approval decided and the resume on its way, or runs queued). A paused run
        whose open approvals all expired is closed by ``fail_paused`` (the loop's stop) inside the
        same transaction. ``slot``: the user's limit on active runs, counted just before the
        transaction (429 ``TOO_MANY_ACTIVE_RUNS``, nothing written) and reserved by the creating
        transaction itself, its write conditioned on the slot document as counted (a rival
        reservation fails it and the count is made again): nothing to release when the run is not
        created. ``guards``: other limits written by the same commit (the request count, when the
        request's own was left to it); a replay writes none of them. ``maybe_shared``: False when
        the caller found the thread in the user's own collection, or nowhere (a thread of the
        shared collection predates issue 35: none is created there), so only that path is read.
        """
        interrupting = strategy in ("interrupt", "rollback")

        def txn(t: Transaction, guarded: Sequence[Write]) -> str | Busy | None:
            if idempotency_key:
                seen = _live_key(t.get(paths.idempotency(run.uid, idempotency_key)))
                if seen is not None:
                    stored = seen.get("fingerprint")
                    if fingerprint and stored and stored != fingerprint:
                        raise Unprocessable("this Idempotency-Key was used with a different request body (within "
                                            f"{IDEMPOTENCY_KEY_TTL_S / 3600:.0f} h); use a new key for a new "
                                            "request", code="IDEMPOTENCY_KEY_REUSED",
                                            details={"runId": str(seen["runId"])})
                    return str(seen["runId"])
            # The shared path is read only when the thread may be there (begun before issue 35, no
            # thread is created there any more): one read less on a thread of the user's own.
            found = None if new_thread else _owned_thread(
                run.uid, run.thread_id, [t.get(paths.thread(run.uid, run.thread_id)),
                                         *([t.get(paths.shared_thread(run.thread_id))] if maybe_shared else [])])
            record = run.model_copy(update={"thread_scope": "user" if found is None or found[1] == paths.thread(
                run.uid, run.thread_id) else "shared"})
            where = thread_path(record)
            busy: Busy | None = None
            if found is not None:
                busy = busy_thread(t, found[0], where, record, strategy, queue_entry, queued_start,
                                   fail_paused=fail_paused, event_write=self.event_write,
                                   audit_write=self.audit_write)
                if busy is not None:  # queued: its prompt is written when it starts
                    for w in guarded:
                        t.write(w)
                    t.write(Write("create", paths.run(run.run_id), record.to_doc()))
                    for w in self.event_writes(run.run_id, [{**ev, "status": "queued"} if ev.get("type") == "status"
                                                            else ev for ev in events]):
                        t.write(w)
                    self._write_key(t, run, idempotency_key, fingerprint)
                    for w in extra_writes:
                        t.write(w)
                    return busy
                t.write(Write("update", where, {"activeRunId": run.run_id, "updatedAt": now()}))
            else:
                t.write(Write("create", where, ThreadRecord(thread_id=run.thread_id, uid=run.uid,
                                                            active_run_id=run.run_id).to_doc()))
            for w in guarded:
                t.write(w)
            t.write(Write("create", paths.run(run.run_id), record.to_doc()))
            for i, turn in enumerate(turns):
                t.write(Write("create", paths.turn(run.run_id, i), turn_doc(turn)))
            t.write(self.message_write(record, message))
            for w in self.event_writes(run.run_id, events):
                t.write(w)
            self._write_key(t, run, idempotency_key, fingerprint)
            for w in extra_writes:
                t.write(w)
            return None

        if slot is not None and idempotency_key and self.used_idempotency_key(run.uid, idempotency_key):
            slot = None  # a replay: the transaction answers the run it started, nothing new counts
        if slot is not None:  # reserved by the creating commit itself (nothing to release)
            guards = [*guards, slot.reservation(run.run_id,
                                                also_ended=self._paused_on_thread(run) if interrupting else ())]
        if new_thread and not idempotency_key:
            return self._start_on_new_thread(run, message=message, turns=turns, events=events, guards=guards,
                                             extra_writes=extra_writes)
        out = commit_guarded(guards, lambda guarded: self.store.run_transaction(lambda t: txn(t, guarded)),
                             what=f"the limits of {run.uid}")
        existing = out if isinstance(out, str) else None
        run_id = existing or run.run_id
        snap = self.get_run(run_id)
        if snap is None:  # pragma: no cover - the transaction just wrote it
            raise NotFound(f"run {run_id} not found", code="RUN_NOT_FOUND")
        if existing and snap.run.uid != run.uid:  # pragma: no cover - keys are scoped per user
            raise NotFound(f"run {run_id} not found", code="RUN_NOT_FOUND")
        busy = out if isinstance(out, Busy) else None
        return StartOutcome(snap, created=existing is None, queued=snap.run.status == "queued",
                            deliver=busy.deliver if busy is not None else ())

    def _start_on_new_thread(self, run: RunRecord, *, message: MessageRecord, turns: Sequence[Turn],
                             events: Sequence[dict[str, Any]], guards: Sequence[Guard],
                             extra_writes: Sequence[Write]) -> StartOutcome:
        """:meth:`start_run` of a run on a thread minted for it, without an Idempotency-Key: nothing
        to read, so no transaction: the limits' writes (``guards``: the slot's reservation, the
        request count), the thread, the run, its turns, prompt and events are one commit (issue
        33), whose token of the run document is the snapshot's (no read-back). A rival start fails
        the guards' conditions; they are read again and the commit tried again (nothing of the run
        was written)."""
        record = run.model_copy(update={"thread_scope": "user"})
        writes = [Write("create", paths.run(run.run_id), record.to_doc()),
                  Write("create", thread_path(record), ThreadRecord(thread_id=run.thread_id, uid=run.uid,
                                                                    active_run_id=run.run_id).to_doc()),
                  *(Write("create", paths.turn(run.run_id, i), turn_doc(turn)) for i, turn in enumerate(turns)),
                  self.message_write(record, message), *self.event_writes(run.run_id, events), *extra_writes]
        tokens = commit_guarded(guards, lambda guarded: self.store.commit([*writes, *guarded]),
                                what=f"the limits of {run.uid}")
        return StartOutcome(RunSnapshot(record, tokens[0]), created=True)

    @staticmethod
    def _write_key(t: Transaction, run: RunRecord, key: str | None, fingerprint: str | None) -> None:
        if key:  # "set": an expired key of the same name is replaced
            at = now()
            t.write(Write("set", paths.idempotency(run.uid, key),
                          {"runId": run.run_id, "uid": run.uid, "createdAt": at,
                           "fingerprint": fingerprint or "", EXPIRE_AT: at + IDEMPOTENCY_KEY_TTL_S}))

    def _paused_on_thread(self, run: RunRecord) -> list[str]:
        """The paused run a superseding start closes: it does not count against the reservation (it
        stays listed, so it counts again should the transaction not close it)."""
        found = self.find_thread(run.uid, run.thread_id)
        active_id = found[0].active_run_id if found is not None else None
        if not active_id:
            return []
        active = self.store.get(paths.run(str(active_id)))
        return [str(active_id)] if active is not None and active.data.get("status") == "awaiting_confirmation" else []

    def unit_writes(self, run: RunRecord, *, turns: Sequence[Turn], events: Sequence[dict[str, Any]] = ()
                    ) -> list[Write]:
        """The writes creating a unit of work that is not a chat run (no thread): the run document,
        its first turns and events. Its host (``run.host``) says what its stops mean."""
        return [Write("create", paths.run(run.run_id), run.to_doc()),
                *(Write("create", paths.turn(run.run_id, i), turn_doc(t)) for i, t in enumerate(turns)),
                *self.event_writes(run.run_id, events)]

    def create_unit(self, run: RunRecord, *, turns: Sequence[Turn], events: Sequence[dict[str, Any]]) -> RunSnapshot:
        """Create a unit of work (``unit_writes``) in one commit."""
        tokens = self.store.commit(self.unit_writes(run, turns=turns, events=events))
        return RunSnapshot(run, tokens[0])

    def expired_pauses(self, before: float, limit: int = 50) -> list[str]:
        """Ids of runs paused for approvals that all expired before ``before`` (``pauseExpiresAt``),
        the earliest first: the sweep closes them. A run awaiting confirmation without anyone asked
        (a plan waiting for its confirmation) has no ``pauseExpiresAt``, so the query skips it."""
        docs = self.store.query(Query(paths.runs(), where=(("status", "awaiting_confirmation"),),
                                      order_by="pauseExpiresAt", limit=limit))
        # a value that is not a number (corrupt) is no candidate: the sweep goes on with the others
        return [d.id for d in docs if (at := finite(d.data.get("pauseExpiresAt"))) is not None and at < before]

    def legacy_pauses(self, limit: int = 50) -> list[str]:
        """Ids of runs paused for approval before ``pauseExpiresAt`` existed (issue 27c), longest
        waiting first: the sweep checks whether their approvals expired. Runs paused since carry the
        field (or ask nobody) and are left out. Every such run ends within ``APPROVAL_TTL_S`` of its
        pause (plus a sweep) after a deployment, after which this pass finds none and may go."""
        docs = self.store.query(Query(paths.runs(), where=(("status", "awaiting_confirmation"),),
                                      order_by="updatedAt", limit=limit))
        return [d.id for d in docs if "pauseExpiresAt" not in d.data and d.data.get("pendingApprovalIds")]

    def waiting_for_people(self, limit: int) -> list[tuple[int, float]]:
        """Of the runs paused for a person's decision (at most ``limit``, the earliest to expire
        first): how many approvals each waits on and since when (``updatedAt``: the pause's
        commit). One query, by ``pauseExpiresAt`` as :meth:`expired_pauses`: a run awaiting
        confirmation that asked nobody (a plan waiting for its confirmation, a chat run waiting on
        its plan) has none and is not counted, nor does it take a place of ``limit``."""
        docs = self.store.query(Query(paths.runs(), where=(("status", "awaiting_confirmation"),),
                                      order_by="pauseExpiresAt", limit=limit))
        out: list[tuple[int, float]] = []
        for d in docs:
            ids, at = d.data.get("pendingApprovalIds"), d.data.get("updatedAt")
            if isinstance(ids, list) and ids:
                out.append((len(ids), float(at) if isinstance(at, int | float) and not isinstance(at, bool) else 0.0))
        return out

    def close_expired_pause(self, run_id: str, fail: FailPaused) -> bool:
        """Close a pause whose open approvals all expired (the sweep; before, only the next run on the
        thread or an approve call noticed): approvals ``expired``, actions rejected, audited, the run
        ended by ``fail`` (the loop's stop) and its thread released, in one transaction."""
        return self._close_pause(run_id, fail, "expired")

    def cancel_paused(self, run_id: str, fail: FailPaused) -> bool:
        """Cancel a run paused for a decision (an A2A ``tasks/cancel``): its open approvals rejected,
        actions rejected, audited, the run ended by ``fail`` (``CANCELLED``) and its thread released,
        in one transaction. ``False`` (nothing written) when it is not paused for a decision."""
        return self._close_pause(run_id, fail, "cancelled")

    def _close_pause(self, run_id: str, fail: FailPaused, reason: CloseReason) -> bool:

        def txn(t: Transaction) -> bool:
            doc = t.get(paths.run(run_id))
            if doc is None:
                return False
            run = RunRecord.from_doc(doc.data, doc.path)
            state = pause_state(t, run)
            if state != "expired" and not (reason == "cancelled" and state == "open"):
                return False
            thread = t.get(thread_path(run)) if run.thread_id else None
            close_paused(t, run, doc.token, "", reason, fail=fail, event_write=self.event_write,
                         audit_write=self.audit_write)
            if thread is not None and thread.data.get("activeRunId") == run_id:
                t.write(self.release_thread_write(run))
            return True

        return self.store.run_transaction(txn)

    @staticmethod
    def turn_create_write(run_id: str, index: int, turn: Turn) -> Write:
        return Write("create", paths.turn(run_id, index), turn_doc(turn))

    def message_deletes(self, run: RunRecord) -> list[Write]:
        """The writes removing ``run``'s messages from its thread's history (``rollback``)."""
        return [Write("delete", d.path) for d in self.store.query(run_messages_query(run))]

    def threads_with_queued_runs(self, limit: int = 50) -> list[RunRecord]:
        """One queued run of each thread that has some (among ``limit``): the sweep's queue recovery."""
        docs = self.store.query(Query(paths.runs(), where=(("status", "queued"),), limit=limit))
        runs: dict[str, RunRecord] = {}
        for d in docs:
            run = RunRecord.from_doc(d.data, d.path)
            runs.setdefault(thread_path(run), run)
        return list(runs.values())

    def commit_step(self, snap: RunSnapshot, run: RunRecord, *, new_turns: Mapping[int, Turn],
                    actions: Sequence[ActionRecord], writes: Sequence[Write],
                    events: Sequence[dict[str, Any]]) -> RunSnapshot:
        """One step of a run in one atomic commit: the run, its new turns (by index), the actions'
        current state, other writes (approvals, audit, ledger, outbox...) and the events. A step
        whose turns share one document (:func:`step_writes`) carries its events and the audit
        entries of the actions riding in it there too (:meth:`fold_step`, issue 33)."""
        batch, own = step_writes(run.run_id, new_turns, actions)
        rest, evs = list(writes), list(events)
        if len(batch) == 1 and TURNS_KEY in batch[0].data:
            own_ids = {a.action_id for a in own}
            batch[0], rest, evs = self.fold_step(batch[0], rest, evs,
                                                 {a.action_id for a in actions if a.action_id not in own_ids})
        batch.extend(self.action_write(a) for a in own)
        batch.extend(rest)
        batch.extend(self.event_writes(run.run_id, evs))
        return self.commit(snap, run, batch)

    def fold_step(self, doc: Write, writes: list[Write], events: list[dict[str, Any]], inline: set[str]
                  ) -> tuple[Write, list[Write], list[dict[str, Any]]]:
        """A step's shared turns document ``doc`` with the step's ``events`` (``{"events": [...],
        "lastSeq": N, "eventsExpireAt": T}``) and the audit entries (among ``writes``) of the actions
        riding in it (``inline``: their ids) as ``{"audit": [...]}``: two documents per step less
        (issue 33). Nothing a query needs apart: :meth:`list_events` queries the turns by
        ``lastSeq``, :meth:`audit_of` reads both places. Returns the document and what is left to
        write on its own (everything, when the document would grow past ``STEP_DOC_MAX_CHARS``)."""
        audit = [w for w in writes if w.op == "create" and w.path.startswith("audit/")
                 and w.data.get("actionId") in inline]
        if not audit and not events:
            return doc, writes, events
        data = dict(doc.data)
        if events:
            data.update({EVENTS_KEY: events, STEP_SEQ_KEY: int(events[-1]["seq"]),
                         EVENTS_EXPIRE_KEY: now() + self.event_retention_s})
        if audit:
            data[AUDIT_KEY] = [w.data for w in audit]
        if _json_size(data) > STEP_DOC_MAX_CHARS:
            return doc, writes, events
        folded = {id(w) for w in audit}
        return Write("create", doc.path, data), [w for w in writes if id(w) not in folded], []

    def adopt_stop(self, run: RunRecord, committed_at: float, owner: str) -> str | None:
        """After a commit of ``run`` failed its condition: the run document's new token if the only
        change since this invocation's last commit (whose ``updatedAt`` was ``committed_at``) is a
        stop request (``thread_queue.stop_request_write``) or the notice of a run queued behind it
        (``thread_queue.busy_thread``), which set no ``updatedAt``, and ``owner`` still holds its
        lease; ``run`` then carries them. None: another invocation moved it."""
        snap = self.get_run(run.run_id)
        if snap is None or snap.run.updated_at != committed_at:
            return None
        if snap.run.stop_requested is None and not snap.run.queued_behind:
            return None
        lease = snap.run.lease
        if lease is None or lease.owner != owner:
            return None
        run.stop_requested = snap.run.stop_requested
        run.queued_behind = snap.run.queued_behind
        return snap.token

    def commit(self, snap: RunSnapshot, run: RunRecord, writes: Sequence[Write] = ()) -> RunSnapshot:
        """Write ``run`` and ``writes`` atomically if the run is still as ``snap`` read it.

        Raises PreconditionFailed (nothing written) when another invocation moved the run.
        """
        run.updated_at = now()
        tokens = self.store.commit([Write("set", paths.run(run.run_id), run.to_doc(), if_token=snap.token),
                                    *writes])
        return RunSnapshot(run, tokens[0])


def _turns_of(doc: Doc) -> list[Turn]:
    """The turns a turn document holds: several (``{"turns": [...]}``) or itself.
    :class:`StoredValueInvalid` naming the document when one of them is no valid turn (issue 35)."""
    from pydantic import ValidationError

    from shared.models.base import Turn  # the model contract: reading a run record never needs it

    shared = doc.data.get(TURNS_KEY)
    try:
        if isinstance(shared, list):
            return [Turn.model_validate(t) for t in shared]
        return [Turn.model_validate(doc.data)]
    except ValidationError as exc:
        raise unreadable(doc.path, "turns document", exc) from None


def step_audit(doc: Doc) -> list[dict[str, Any]]:
    """The audit entries a turns document holds (:meth:`RunsRepo.fold_step`; none in one written
    before issue 33's session 4). One that is not an object is left out and named in the log."""
    held = doc.data.get(AUDIT_KEY)
    if held is None:
        return []
    entries = held if isinstance(held, list) else [held]
    out = [e for e in entries if isinstance(e, dict)]
    if len(out) != len(entries):
        log.warning("left out of the audit entries: %s holds %s that are not audit entries", doc.path,
                    len(entries) - len(out))
    return out


def live_step_parts(data: dict[str, Any], at: float | None = None) -> dict[str, Any]:
    """A turns document without its parts past their retention (``events`` past
    ``eventsExpireAt``, audit entries past their ``expireAt``): what the export shows of it, as a
    replay and :meth:`RunsRepo.audit_of` show them."""
    at = now() if at is None else at
    out = dict(data)
    if EVENTS_KEY in out and not _live(out.get(EVENTS_EXPIRE_KEY), at):
        del out[EVENTS_KEY]
    audit = out.get(AUDIT_KEY)
    if isinstance(audit, list):
        live = [e for e in audit if not isinstance(e, dict) or _live(e.get(EXPIRE_AT), at)]
        if live:
            out[AUDIT_KEY] = live
        else:
            del out[AUDIT_KEY]
    return out


def _turn_chain(docs: Sequence[Doc | None], count: int) -> list[Turn] | None:
    """The turns of the documents at places ``0..count`` (``docs[i]``: the document named ``i``, or
    None): each document begins where the one before ends, the last ends at ``count`` and no
    document is at ``count``. None when they do not (a count older than the documents, a layout
    other than :func:`turn_writes`')."""
    turns: list[Turn] = []
    at = 0
    while at < count:
        doc = docs[at]
        if doc is None:
            return None
        held = _turns_of(doc)
        if not held or any(docs[i] is not None for i in range(at + 1, min(at + len(held), count + 1))):
            return None
        turns.extend(held)
        at += len(held)
    return turns if at == count and docs[count] is None else None


def _run_or_none(doc: Doc) -> RunRecord | None:
    try:
        run: RunRecord = RunRecord.from_doc(doc.data, doc.path)
        return run
    except (StoredValueInvalid, SchemaVersionError):
        return None


def _owned_thread(uid: str, thread_id: str, docs: Sequence[Doc | None]) -> tuple[ThreadRecord, str] | None:
    """The first of ``docs`` (the user's thread, then the shared one) that is ``uid``'s, with its path."""
    for doc in docs:
        if doc is not None:
            thread = ThreadRecord.from_doc(doc.data, doc.path)
            if thread.uid == uid:
                return thread, doc.path
    return None


def _live(expire_at: Any, at: float) -> bool:
    """Whether a part stored with this ``expireAt`` is still served at ``at``: a replay or an audit
    read never answers what the retention (``EVENT_RETENTION_S``, ``AUDIT_RETENTION_S``) ended, be it
    a document Firestore's TTL has not deleted yet or a part of a turns document, which lives as long
    as the run. A value that is not a number (none, corrupt) never expires."""
    return not isinstance(expire_at, int | float) or isinstance(expire_at, bool) or expire_at > at


def _live_key(doc: Doc | None) -> dict[str, Any] | None:
    """An Idempotency-Key document's data while the key is live (:data:`IDEMPOTENCY_KEY_TTL_S`)."""
    if doc is None:
        return None
    expire = doc.data.get(EXPIRE_AT)
    if not isinstance(expire, int | float):
        created = doc.data.get("createdAt")
        expire = (created if isinstance(created, int | float) else 0.0) + IDEMPOTENCY_KEY_TTL_S
    return doc.data if expire > now() else None
