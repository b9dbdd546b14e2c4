"""The outbox collection (``outbox/{entryId}``): messages waiting to be published or handled.

An entry is written in the same commit (or transaction) as the state change that needs the
message, so no message can be lost between the commit and the publish. The durability layer
(``shared/durable/outbox.py``) publishes entries and deletes the ones whose message was handled.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

from shared.errors import PreconditionFailed
from shared.state import paths
from shared.state.docstore import DocStore, Query, Write
from shared.state.records import OutboxEntry, OutboxStatus, now


class OutboxRepo:
    def __init__(self, store: DocStore) -> None:
        self.store = store

    @staticmethod
    def create_write(entry: OutboxEntry) -> Write:
        """The write that records ``entry`` (replacing an earlier entry of the same id)."""
        return Write("set", paths.outbox(entry.entry_id), entry.to_doc())

    @staticmethod
    def delete_write(entry_id: str) -> Write:
        return Write("delete", paths.outbox(entry_id))

    @staticmethod
    def deleted_by(writes: Sequence[Write]) -> set[str]:
        """The ids of the entries ``writes`` delete (:meth:`delete_write`)."""
        return {w.path.rsplit("/", 1)[-1] for w in writes
                if w.op == "delete" and w.path == paths.outbox(w.path.rsplit("/", 1)[-1])}

    def get(self, entry_id: str) -> tuple[OutboxEntry, str] | None:
        doc = self.store.get(paths.outbox(entry_id))
        return None if doc is None else (OutboxEntry.from_stored(doc.id, doc.data), doc.token)

    def mark_published(self, entry_id: str, publish_count: int) -> None:
        """Record a publication. Nothing happens when the handler already deleted the entry: there
        is nothing left to track (it is never recreated)."""
        with contextlib.suppress(PreconditionFailed):
            self.store.commit([Write("update", paths.outbox(entry_id),
                                     {"status": "published", "publishedAt": now(), "publishCount": publish_count})])

    def delete_if_unchanged(self, entry_id: str, token: str) -> None:
        with contextlib.suppress(PreconditionFailed):
            self.store.commit([Write("delete", paths.outbox(entry_id), if_token=token)])

    def by_status(self, status: OutboxStatus, limit: int = 100) -> list[OutboxEntry]:
        docs = self.store.query(Query(paths.outbox_entries(), where=(("status", status),), order_by="createdAt",
                                      limit=limit))
        return [OutboxEntry.from_stored(d.id, d.data) for d in docs]

    def all(self) -> list[OutboxEntry]:
        """Every entry (tests and the reliability harness check that none outlives its work)."""
        return [OutboxEntry.from_stored(d.id, d.data) for d in self.store.query(Query(paths.outbox_entries()))]
