"""The usage ledger's documents: ``users/{uid}/usage/{entryId}``, one per model call.

Entries live under their user, so a user's figures are read from their own collection only
(another user's entries are never even queried). Entry ids start with the unit of work and the
step (``run_x-0003-...``), so a unit's calls read back in order.
"""

from __future__ import annotations

from shared.state import paths
from shared.state.docstore import DocStore, Query, Write
from shared.state.records import UsageEntry

PAGE = 500


class UsageRepo:
    def __init__(self, store: DocStore) -> None:
        self.store = store

    @staticmethod
    def entry_write(entry: UsageEntry) -> Write:
        """``create``: an entry is written once (a replayed commit cannot count a call twice)."""
        return Write("create", paths.usage_entry(entry.uid, entry.entry_id), entry.to_doc())

    def record(self, entry: UsageEntry) -> None:
        """Write one entry on its own (callers outside a unit's commit, e.g. the goals planner)."""
        self.store.commit([self.entry_write(entry)])

    def for_unit(self, uid: str, unit_id: str) -> list[UsageEntry]:
        docs = self.store.query(Query(paths.usage_entries(uid), where=(("unitId", unit_id),)))
        return sorted((UsageEntry.from_doc(d.data) for d in docs), key=lambda e: (e.at, e.entry_id))

    def tokens_on(self, uid: str, day: str) -> int:
        """The user's model tokens (``totalTokens``) of one UTC day (``YYYY-MM-DD``), summed by the
        store: one aggregation query (Firestore bills one read per 1,000 entries; index: usage by
        ``day``, ``tokens``), whatever the number of calls."""
        return int(self.store.sum_of(Query(paths.usage_entries(uid), where=(("day", day),), order_by="tokens"),
                                     "tokens"))

    def between(self, uid: str, start: float, end: float, *, max_entries: int = 50_000) -> list[UsageEntry]:
        """The user's entries with ``start <= at < end``, oldest first (read in pages)."""
        out: list[UsageEntry] = []
        cursor: float | None = None
        while len(out) < max_entries:
            after = cursor if cursor is not None else start - 1e-6
            docs = self.store.query(Query(paths.usage_entries(uid), order_by="at", start_after=after, limit=PAGE))
            for d in docs:
                entry = UsageEntry.from_doc(d.data)
                if entry.at >= end:
                    return out
                out.append(entry)
            if len(docs) < PAGE:
                return out
            cursor = float(docs[-1].data["at"])
        return out
