"""Users, their profile/trust level and their memories (``users/{uid}``, ``users/{uid}/memories``)."""

from __future__ import annotations

import logging

from shared.errors import NotFound
from shared.state import paths
from shared.state.batched_reads import BatchedReads, read
from shared.state.docstore import DocStore, Query, Write
from shared.state.pages import Page, as_records, read_page
from shared.state.records import MemoryRecord, UserRecord

log = logging.getLogger("agent_runtime.state")


class UsersRepo:
    def __init__(self, store: DocStore) -> None:
        self.store = store

    @staticmethod
    def user_paths(uid: str) -> list[str]:
        """What :meth:`get_user` reads (to be batched with other reads, ``BatchedReads``)."""
        return [paths.user(uid)]

    def get_user(self, uid: str, *, batch: BatchedReads | None = None) -> UserRecord:
        """The stored user, or the defaults (supervised, empty profile) when none is stored."""
        doc = read(self.store, paths.user(uid), batch)
        if doc is None:
            return UserRecord(uid=uid)
        user: UserRecord = UserRecord.from_doc(doc.data, doc.path)
        return user

    def put_user(self, user: UserRecord, *, audit: Write | None = None) -> None:
        """Store the user (with ``audit``, the entry recording the change, in the same commit)."""
        self.store.commit([Write("set", paths.user(user.uid), user.to_doc()), *([audit] if audit else [])])

    def save_memory(self, uid: str, memory: MemoryRecord) -> None:
        """Idempotent for a given memory id (a retried save writes the same document)."""
        self.store.commit([Write("set", paths.memory(uid, memory.id), memory.to_doc())])

    def page_memories(self, uid: str, limit: int, cursor: str | None = None) -> Page[MemoryRecord]:
        """One page of the user's memories, newest first."""
        query = Query(paths.memories(uid), order_by="createdAt", descending=True)
        return read_page(self.store, query, cursor, limit, as_records(MemoryRecord, log))

    def delete_memory(self, uid: str, memory_id: str) -> None:
        """Forget one of the user's memories (404 ``MEMORY_NOT_FOUND`` when there is none)."""
        if self.store.get(paths.memory(uid, memory_id)) is None:
            raise NotFound(f"memory {memory_id} not found", code="MEMORY_NOT_FOUND")
        self.store.commit([Write("delete", paths.memory(uid, memory_id))])

    def list_memories(self, uid: str, limit: int = 50) -> list[MemoryRecord]:
        docs = self.store.query(Query(paths.memories(uid), order_by="createdAt", descending=True, limit=limit))
        return [MemoryRecord.from_doc(d.data, d.path) for d in docs]
