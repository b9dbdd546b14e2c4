"""The usage ledger's documents: ``users/{uid}/usage/{entryId}``, one per model call, and the
per-day counters ``users/{uid}/usageDays/{YYYY-MM-DD}`` = ``{tokens, calls}``.

Entries live under their user, so a user's figures are read from their own collection only
(another user's entries are never even queried). Entry ids start with the unit of work and the
step (``run_x-0003-...``), so a unit's calls read back in order.

Every entry is written together with an increment of its day's counter, in the same commit
(``entry_writes``): the counter is the sum of that day's entries written since the counter
existed, and the daily token limit reads that one document (O(1) in the user's history) instead
of aggregating the ledger. An entry written twice fails its ``create``, and the increment with it.
"""

from __future__ import annotations

import logging
import math
from datetime import UTC, datetime

from shared.state import paths
from shared.state.batched_reads import BatchedReads, read
from shared.state.docstore import DocStore, Query, Write
from shared.state.pages import tolerant
from shared.state.record_base import field_count
from shared.state.records import UsageEntry

log = logging.getLogger("agent_runtime.state")
_entry = tolerant(lambda d: UsageEntry.from_doc(d.data, d.path), log)
"""An entry, or ``None`` (logged) for a document that is not one: the figures are the readable entries'."""

PAGE = 500


def entry_day(entry: UsageEntry) -> str:
    """The UTC day (``YYYY-MM-DD``) whose counter counts ``entry``: its own ``day``, else its time's."""
    return entry.day or datetime.fromtimestamp(entry.at, UTC).date().isoformat()


class UsageRepo:
    def __init__(self, store: DocStore) -> None:
        self.store = store

    @staticmethod
    def entry_writes(entry: UsageEntry) -> tuple[Write, Write]:
        """The entry (``create``: written once, so a replayed commit cannot count a call twice) and
        the increment of its day's counter (``costMicroUsd`` too: the money budgets, whose month is
        the sum of its days, docs/budgets.md); both belong in the same commit."""
        micro = round(entry.cost_usd * 1_000_000)
        return (Write("create", paths.usage_entry(entry.uid, entry.entry_id), entry.to_doc()),
                Write("increment", paths.usage_day(entry.uid, entry_day(entry)),
                      {"tokens": entry.tokens, "calls": 1, "costMicroUsd": micro}))

    def record(self, entry: UsageEntry) -> None:
        """Write one entry on its own (callers outside a unit's commit, e.g. the goals planner)."""
        self.store.commit(self.entry_writes(entry))

    def for_unit(self, uid: str, unit_id: str) -> list[UsageEntry]:
        docs = self.store.query(Query(paths.usage_entries(uid), where=(("unitId", unit_id),)))
        return sorted((e for d in docs if (e := _entry(d)) is not None), key=lambda e: (e.at, e.entry_id))

    def tokens_on(self, uid: str, day: str, *, batch: BatchedReads | None = None) -> int:
        """The user's model tokens (``totalTokens``) of one UTC day (``YYYY-MM-DD``): one document
        read (the day's counter), however many calls the day had. A day without a counter has
        none (counters started with the deploy that introduced them, docs/limits.md)."""
        doc = read(self.store, paths.usage_day(uid, day), batch)
        return field_count(doc.data if doc is not None else None, "tokens")

    def between(self, uid: str, start: float, end: float, *, max_entries: int = 50_000) -> list[UsageEntry]:
        """The user's entries with ``start <= at < end``, oldest first (read in pages)."""
        out: list[UsageEntry] = []
        cursor: float | None = None
        while len(out) < max_entries:
            after = cursor if cursor is not None else start - 1e-6
            docs = self.store.query(Query(paths.usage_entries(uid), order_by="at", start_after=after, limit=PAGE))
            for d in docs:
                entry = _entry(d)
                if entry is None:
                    continue
                if entry.at >= end:
                    return out
                out.append(entry)
            last = docs[-1].data.get("at") if docs else None
            if len(docs) < PAGE or not isinstance(last, int | float) or isinstance(last, bool) \
                    or not math.isfinite(last):
                return out  # the last page, or past the numbers (the order puts other types after them)
            cursor = float(last)
        return out
