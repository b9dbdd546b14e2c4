"""The A2A server's task store and push-notification configuration store on the DocStore
(docs/a2a.md): ``users/{uid}/a2aTasks/{taskId}`` (a task is one run: the id is the run's) and
``users/{uid}/a2aTasks/{taskId}/pushConfigs/{hash of the config id}``. Every read and write is the
owner's: another user's task is not found. Any instance may serve the next request: nothing is
kept in memory.

A task document holds what the run does not: the A2A ``contextId`` it belongs to, the messages the
caller sent (its history, bounded), the A2A message ids already accepted (a repeated message is
answered, never acted on twice), and the last push-notified state per configuration.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from typing import Any

from pydantic import Field

from shared.state import pages, paths
from shared.state.docstore import Doc, DocStore, Query, Transaction, Write
from shared.state.record_base import Record, now

log = logging.getLogger("agent_runtime.a2a")

MAX_HISTORY = 50
"""Messages a task keeps (the oldest are dropped first)."""
MAX_PUSH_CONFIGS = 10
"""Push notification configurations per task."""
SCHEMA_VERSION = 1


def config_doc_id(config_id: str) -> str:
    """A configuration's document id: its id hashed (A2A ids are any string; document ids are not)."""
    return hashlib.sha256(config_id.encode()).hexdigest()[:40]


class A2aTaskRecord(Record):
    """What a task document must hold to be read (issue 35: a corrupt one is refused naming it, not
    a 500 in the A2A binding); the document itself is kept and answered as a dict."""

    task_id: str
    run_id: str
    uid: str
    context_id: str
    thread_id: str
    history: list[dict[str, Any]] = []
    message_ids: list[str] = []
    created_at: float
    updated_at: float | None = None
    replied_as_message: bool | None = None
    accepted_output_modes: list[str] = []
    """The media types the caller takes (A2A ``acceptedOutputModes``; absent: anything)."""


class PushAuthentication(Record):
    scheme: str = ""
    credentials: str | None = None


class PushConfig(Record):
    """The A2A ``TaskPushNotificationConfig`` (JSON, its secrets sealed apart) a configuration holds."""

    id: str
    url: str = Field(pattern=r"^https?://")
    task_id: str | None = None
    token: str | None = None
    authentication: PushAuthentication | None = None


class PushConfigRecord(Record):
    """What a push notification configuration document must hold to be used: a corrupt one is left
    out of the task's configurations (no push is sent to it) and refused by name when asked for."""

    id: str
    config: PushConfig
    sealed: dict[str, Any] | None = None
    last_state: str | None = None
    created_at: float
    updated_at: float | None = None


def task_data(doc: Doc) -> dict[str, Any]:
    """The task document ``doc`` holds, checked (:class:`~shared.errors.StoredValueInvalid` naming it)."""
    A2aTaskRecord.from_doc(doc.data, doc.path)
    return doc.data


class A2aTasksRepo:
    def __init__(self, store: DocStore) -> None:
        self.store = store

    # ---- tasks -------------------------------------------------------------------------------
    def get(self, uid: str, task_id: str) -> dict[str, Any] | None:
        if not task_id or "/" in task_id:
            return None
        doc = self.store.get(paths.a2a_task(uid, task_id))
        return None if doc is None else task_data(doc)

    def readable(self, uid: str, task_id: str) -> dict[str, Any] | None:
        """:meth:`get`, but an unreadable task document is ``None`` (logged): for the run's own
        bookkeeping (push notifications at a stop), which a corrupt task must not make fail."""
        doc = self.store.get(paths.a2a_task(uid, task_id)) if task_id and "/" not in task_id else None
        return None if doc is None else pages.tolerant(task_data, log)(doc)

    def create_write(self, uid: str, task_id: str, *, context_id: str, thread_id: str,
                     message: dict[str, Any], modes: Sequence[str] = ()) -> Write:
        """The task's document, written in the same commit as nothing else: the run is created first
        (its id is the task's), then this; a crash in between leaves a run no A2A client sees.
        ``modes``: the media types the caller takes (``acceptedOutputModes``), when it said."""
        at = now()
        data: dict[str, Any] = {
            "schemaVersion": SCHEMA_VERSION, "taskId": task_id, "runId": task_id, "uid": uid,
            "contextId": context_id, "threadId": thread_id, "history": [message],
            "messageIds": [message.get("messageId", "")], "createdAt": at, "updatedAt": at}
        if modes:
            data["acceptedOutputModes"] = list(modes)
        return Write("create", paths.a2a_task(uid, task_id), data)

    def mark_replied(self, uid: str, task_id: str) -> None:
        """The caller was answered with a message, not this task: it is no task of theirs any more
        (``shared/agent/a2a_convert.py``, ``answered_directly``)."""
        self.store.commit([Write("update", paths.a2a_task(uid, task_id), {"repliedAsMessage": True,
                                                                          "updatedAt": now()})])

    def create(self, uid: str, task_id: str, *, context_id: str, thread_id: str, message: dict[str, Any]) -> None:
        self.store.commit([self.create_write(uid, task_id, context_id=context_id, thread_id=thread_id,
                                             message=message)])

    def add_message(self, uid: str, task_id: str, message: dict[str, Any], modes: Sequence[str] = ()) -> bool:
        """Append a caller's follow-up message to the task's history (``modes``, when it says them:
        the media types the caller takes from now on); ``False`` (nothing written) when a message
        with its id was already accepted (a retried request)."""
        path = paths.a2a_task(uid, task_id)
        message_id = str(message.get("messageId", ""))

        def txn(t: Transaction) -> bool:
            doc = t.get(path)
            if doc is None:
                return False
            task_data(doc)
            seen = list(doc.data.get("messageIds") or [])
            if message_id and message_id in seen:
                return False
            history = [*list(doc.data.get("history") or []), message][-MAX_HISTORY:]
            update: dict[str, Any] = {"history": history, "messageIds": [*seen, message_id][-MAX_HISTORY:],
                                      "updatedAt": now()}
            if modes:
                update["acceptedOutputModes"] = list(modes)
            t.write(Write("update", path, update, if_token=doc.token))
            return True

        return self.store.run_transaction(txn)

    def list_tasks(self, uid: str, *, context_id: str | None, limit: int,
             before: float | None = None) -> list[dict[str, Any]]:
        """The owner's tasks, newest first (``createdAt``), optionally of one context, after a cursor."""
        if context_id:
            query = Query(paths.a2a_tasks(uid), where=(("contextId", context_id),), order_by="createdAt",
                          descending=True, start_after=before, limit=limit)
        else:
            query = Query(paths.a2a_tasks(uid), order_by="createdAt", descending=True, start_after=before, limit=limit)
        read = pages.tolerant(task_data, log)
        return [data for d in self.store.query(query) if (data := read(d)) is not None]

    def mark_pushed(self, uid: str, task_id: str, config_doc: str, state: str) -> None:
        self.store.commit([Write("update", paths.a2a_push_config(uid, task_id, config_doc),
                                 {"lastState": state, "updatedAt": now()})])

    # ---- push notification configurations ------------------------------------------------------
    def push_config_location(self, uid: str, task_id: str, config_id: str) -> str:
        return paths.a2a_push_config(uid, task_id, config_doc_id(config_id))

    def put_push_config(self, uid: str, task_id: str, config: dict[str, Any],
                        sealed: dict[str, Any] | None = None) -> None:
        """The configuration (A2A JSON, without its secrets) and its secrets ``sealed`` (for the
        document's path: :meth:`push_config_location`)."""
        config_id = str(config["id"])
        existing = self.list_push_configs(uid, task_id)
        if len(existing) >= MAX_PUSH_CONFIGS and all(c.get("id") != config_id for c in existing):
            from shared.errors import Conflict

            raise Conflict(f"at most {MAX_PUSH_CONFIGS} push notification configurations per task",
                           code="TOO_MANY_PUSH_CONFIGS")
        self.store.commit([Write("set", paths.a2a_push_config(uid, task_id, config_doc_id(config_id)),
                                 {"config": config, "id": config_id, "createdAt": now(),
                                  **({"sealed": sealed} if sealed else {})})])

    def list_push_configs(self, uid: str, task_id: str) -> list[dict[str, Any]]:
        """The task's configurations (A2A JSON) with their document's ``_doc``, ``_lastState``,
        ``_sealed`` and ``_path``; one that cannot be read is left out (logged)."""
        docs = self.store.query(Query(paths.a2a_push_configs(uid, task_id), limit=MAX_PUSH_CONFIGS + 1))
        read = pages.as_records(PushConfigRecord, log)
        return [_config_entry(d) for d in docs if read(d) is not None]

    def get_push_config(self, uid: str, task_id: str, config_id: str) -> dict[str, Any] | None:
        """One configuration as :meth:`list_push_configs` answers it (``StoredValueInvalid`` naming
        its document when it cannot be read)."""
        doc = self.store.get(self.push_config_location(uid, task_id, config_id))
        if doc is None:
            return None
        PushConfigRecord.from_doc(doc.data, doc.path)
        return _config_entry(doc)

    def push_config_at(self, path: str) -> tuple[dict[str, Any], dict[str, Any] | None] | None:
        """The configuration at ``path`` (a delivery's ``headersFrom``) and its sealed secrets (None:
        gone, or it cannot be read)."""
        if not path.startswith("users/") or "/pushConfigs/" not in path:
            return None
        doc = self.store.get(path)
        if doc is None or pages.as_records(PushConfigRecord, log)(doc) is None:
            return None
        entry = _config_entry(doc)
        return {k: v for k, v in entry.items() if not k.startswith("_")}, entry["_sealed"]

    def delete_push_config(self, uid: str, task_id: str, config_id: str) -> None:
        self.store.commit([Write("delete", paths.a2a_push_config(uid, task_id, config_doc_id(config_id)))])


def _config_entry(doc: Doc) -> dict[str, Any]:
    return {**dict(doc.data["config"]), "_doc": doc.id, "_lastState": doc.data.get("lastState"),
            "_sealed": doc.data.get("sealed"), "_path": doc.path}
