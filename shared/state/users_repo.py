"""Users, their profile/trust level and their memories (``users/{uid}``, ``users/{uid}/memories``), and
the version stamps of the user's collections a run's start reads (``users/{uid}/stamps/config``).

Stamps (issue 33): a run needs the user's memories (its system instruction) and their own MCP
servers and A2A agents (its tools): three queries, each a sequential round trip before the first
model call, and for most users all three find nothing; at its end it needs the user's webhooks
(the deliveries of its ``run.*`` event), another query that usually finds nothing. The stamp
document holds one number per collection (``memories``, ``mcpServers``, ``a2aAgents``,
``webhooks``), moved by every write to the collection in that write's own commit (:func:`bump`: an
increment, no read, never contended away). The start (and a resumed invocation) reads it with its
other documents (one ``get_many``); then, for each collection:

- ``0``: the collection is empty: no query;
- ``n > 0``: written since; its query's result is kept in this process under ``(uid, collection,
  n)`` (:class:`StampedCache`), so a later start with the same number reuses it;
- absent: unknown (written before stamps existed, or never): queried; found empty, the run's next
  commit records ``0`` (:meth:`Stamps.zero_write`: an increment by 0, which leaves a number a
  write moved meanwhile as it is).

Erasing a user deletes the stamp before the collections (``user_data_repo``'s tree order), so no
number outlives the data it stood for.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeVar

from shared.errors import NotFound
from shared.state import paths
from shared.state.batched_reads import BatchedReads, read
from shared.state.docstore import Doc, DocStore, Query, Write
from shared.state.pages import Page, as_records, read_page
from shared.state.records import MemoryRecord, UserRecord

log = logging.getLogger("agent_runtime.state")

StampKind = Literal["memories", "mcpServers", "a2aAgents", "webhooks"]
T = TypeVar("T")


def bump(uid: str, kind: StampKind) -> Write:
    """The write that goes with every change of ``kind``'s collection of ``uid`` (same commit)."""
    return Write("increment", paths.stamps(uid), {kind: 1})


class Stamps:
    """The stamp document of one user as a start read it (``None``: missing), and the collections
    found empty without a number (to be recorded as 0 by the run's next commit)."""

    def __init__(self, uid: str, doc: Doc | None) -> None:
        self.uid = uid
        self._versions: dict[str, int] = {}
        for kind, value in (doc.data.items() if doc is not None else ()):
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                self._versions[kind] = value
        self._learned: set[str] = set()

    def version(self, kind: StampKind) -> int | None:
        return self._versions.get(kind)

    def learned_empty(self, kind: StampKind) -> None:
        if kind not in self._versions:
            self._learned.add(kind)

    def zero_write(self) -> Write | None:
        """Once: the 0s of the collections found empty that had no number (None: nothing to record)."""
        if not self._learned:
            return None
        learned, self._learned = self._learned, set()
        return Write("increment", paths.stamps(self.uid), {kind: 0 for kind in sorted(learned)})


class StampedCache:
    """Per process: query results of a user's stamped collections, under the stamp's number."""

    MAX_ENTRIES = 10_000

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[str, str], tuple[int, Any]] = OrderedDict()

    def read(self, stamps: Stamps | None, kind: StampKind, query: Callable[[], Sequence[T]]) -> list[T]:
        """What ``query`` returns for ``stamps``' user (see the module docstring); ``stamps`` None:
        nothing known, ``query`` is run."""
        if stamps is None:
            return list(query())
        version = stamps.version(kind)
        if version == 0:
            return []
        key = (stamps.uid, kind)
        if version is not None:
            with self._lock:
                hit = self._entries.get(key)
            if hit is not None and hit[0] == version:
                return list(hit[1])
        found = list(query())
        if version is None:
            if not found:
                stamps.learned_empty(kind)
            return found
        with self._lock:
            self._entries[key] = (version, tuple(found))
            self._entries.move_to_end(key)
            while len(self._entries) > self.MAX_ENTRIES:
                self._entries.popitem(last=False)
        return found


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
        """Idempotent for a given memory id (a retried save writes the same document). Moves the
        user's ``memories`` stamp in the same commit (shared/state/users_repo.py)."""
        self.store.commit([Write("set", paths.memory(uid, memory.id), memory.to_doc()), bump(uid, "memories")])

    def page_memories(self, uid: str, limit: int, cursor: str | None = None) -> Page[MemoryRecord]:
        """One page of the user's memories, newest first."""
        query = Query(paths.memories(uid), order_by="createdAt", descending=True)
        return read_page(self.store, query, cursor, limit, as_records(MemoryRecord, log))

    def delete_memory(self, uid: str, memory_id: str) -> None:
        """Forget one of the user's memories (404 ``MEMORY_NOT_FOUND`` when there is none)."""
        if self.store.get(paths.memory(uid, memory_id)) is None:
            raise NotFound(f"memory {memory_id} not found", code="MEMORY_NOT_FOUND")
        self.store.commit([Write("delete", paths.memory(uid, memory_id)), bump(uid, "memories")])

    @staticmethod
    def stamp_paths(uid: str) -> list[str]:
        """The stamps of the user's collections a run's start reads (to be batched with its reads)."""
        return [paths.stamps(uid)]

    def stamps(self, uid: str, batch: BatchedReads | None) -> Stamps:
        return Stamps(uid, read(self.store, paths.stamps(uid), batch))

    def list_memories(self, uid: str, limit: int = 50) -> list[MemoryRecord]:
        docs = self.store.query(Query(paths.memories(uid), order_by="createdAt", descending=True, limit=limit))
        return [MemoryRecord.from_doc(d.data, d.path) for d in docs]
