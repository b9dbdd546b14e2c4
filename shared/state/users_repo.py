"""Users, their profile/trust level and their memories (``users/{uid}``, ``users/{uid}/memories``)."""

from __future__ import annotations

from shared.state import paths
from shared.state.docstore import DocStore, Query, Write
from shared.state.records import MemoryRecord, UserRecord


class UsersRepo:
    def __init__(self, store: DocStore) -> None:
        self.store = store

    def get_user(self, uid: str) -> UserRecord:
        """The stored user, or the defaults (supervised, empty profile) when none is stored."""
        doc = self.store.get(paths.user(uid))
        if doc is None:
            return UserRecord(uid=uid)
        user: UserRecord = UserRecord.from_doc(doc.data)
        return user

    def put_user(self, user: UserRecord) -> None:
        self.store.commit([Write("set", paths.user(user.uid), user.to_doc())])

    def save_memory(self, uid: str, memory: MemoryRecord) -> None:
        """Idempotent for a given memory id (a retried save writes the same document)."""
        self.store.commit([Write("set", paths.memory(uid, memory.id), memory.to_doc())])

    def list_memories(self, uid: str, limit: int = 50) -> list[MemoryRecord]:
        docs = self.store.query(Query(paths.memories(uid), order_by="createdAt", descending=True, limit=limit))
        return [MemoryRecord.from_doc(d.data) for d in docs]
