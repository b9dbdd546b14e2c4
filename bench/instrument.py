"""A thin measuring wrapper around a real DocStore: counts calls and commits, times them.

It is measurement, not a mock: every call goes to the wrapped store unchanged. Optional hooks run
before and after each commit (``commit`` or ``run_transaction``); the reliability scenario uses
them to inject crashes at a chosen commit.

Documents read are counted per collection id (``runs``, ``usage``, ``usageDays``...): one per
document a ``get``/``get_many`` asks for (found or not: Firestore bills a missing one too) and one
per document a query returns (at least one per query) or an aggregation sums. Documents written are counted per
collection id too, one per write of a commit or transaction that applied.

Sequential round trips (issue 33) are counted per calling thread too: each ``get``, ``get_many``,
``query``, ``sum_of`` and ``commit`` is one, a transaction is one for its commit plus one per read
inside it (``Transaction.get``/``get_many``/``query``, again on each attempt). Firestore's ``BeginTransaction``
RPC is not counted (the client may send it with the first read). ``latency_s`` sleeps that long on
each round trip: a real Firestore's ~5-30 ms per call, injected on the emulator or SQLite.

Store CPU time is thread CPU time (``time.thread_time``) of the calling thread spent inside store
calls. For ``run_transaction`` the time spent in the caller's callback is excluded (it is domain
work), except the transaction's own reads (``Transaction.get``/``query``), which are store I/O.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from shared.state.docstore import Doc, DocStore, Query, Transaction, Write

T = TypeVar("T")
CommitHook = Callable[[str, int], None]
"""``hook(kind, index)``: kind is ``commit`` or ``transaction``; index counts this thread's commits."""


class _ThreadStats(threading.local):
    def __init__(self) -> None:
        self.store_cpu_s = 0.0
        self.store_wall_s = 0.0
        self.commits = 0
        self.round_trips = 0
        self.trips: list[str] | None = None
        """When a list (``InstrumentedStore.record_trips``): each round trip as ``call what``."""
        self.calls: Counter[str] = Counter()
        self.docs_read: Counter[str] = Counter()
        self.docs_written: Counter[str] = Counter()


def collection_id(path: str) -> str:
    """The collection id of a document path (``users/u/usage/e1`` -> ``usage``)."""
    parts = path.split("/")
    return parts[-2] if len(parts) >= 2 else path


def _round_trip(stats: _ThreadStats, latency_s: float, name: str, what: str) -> None:
    stats.round_trips += 1
    if stats.trips is not None:
        stats.trips.append(f"{name} {what}")
    if latency_s > 0:
        time.sleep(latency_s)


def _count_read(stats: _ThreadStats, paths: Sequence[str]) -> None:
    for p in paths:
        stats.docs_read[collection_id(p)] += 1


def _count_query(stats: _ThreadStats, query: Query, docs: list[Doc]) -> list[Doc]:
    stats.docs_read[query.collection.rsplit("/", 1)[-1]] += max(1, len(docs))
    return docs


class _TimedReads:
    """The reads a store and a transaction count and time alike: one round trip each, the documents
    asked for (or returned) counted; a transaction's calls are named ``txn_<call>``."""

    _reader: DocStore | Transaction
    _stats: _ThreadStats
    _latency_s: float
    _prefix = ""

    def _timed(self, name: str, fn: Callable[[], T], what: str = "") -> T:
        s = self._stats
        s.calls[name] += 1
        c0, w0 = time.thread_time(), time.perf_counter()
        try:
            _round_trip(s, self._latency_s, name, what)
            return fn()
        finally:
            s.store_cpu_s += time.thread_time() - c0
            s.store_wall_s += time.perf_counter() - w0

    def get(self, path: str) -> Doc | None:
        _count_read(self._stats, (path,))
        return self._timed(self._prefix + "get", lambda: self._reader.get(path), path)

    def get_many(self, paths: Sequence[str]) -> list[Doc | None]:
        _count_read(self._stats, paths)
        return self._timed(self._prefix + "get_many", lambda: self._reader.get_many(paths), " ".join(paths))

    def query(self, query: Query) -> list[Doc]:
        return _count_query(self._stats, query, self._timed(self._prefix + "query", lambda: self._reader.query(query),
                                                            query.collection))


class InstrumentedStore(_TimedReads):
    """Wraps ``inner``; statistics are kept per calling thread (read them from that thread)."""

    def __init__(self, inner: DocStore, *, before_commit: CommitHook | None = None,
                 after_commit: CommitHook | None = None, latency_s: float = 0.0) -> None:
        self.inner = self._reader = inner
        self.latency_s = self._latency_s = latency_s
        self.before_commit = before_commit
        self.after_commit = after_commit
        self._stats = _ThreadStats()

    # ---- statistics (of the calling thread) ---------------------------------------------------
    def record_trips(self) -> list[str]:
        """Start noting this thread's round trips (``call what``); the list they go to."""
        self._stats.trips = []
        return self._stats.trips

    def snapshot(self) -> dict[str, Any]:
        s = self._stats
        return {"store_cpu_s": s.store_cpu_s, "store_wall_s": s.store_wall_s, "commits": s.commits,
                "round_trips": s.round_trips, "calls": dict(s.calls), "docs_read": dict(s.docs_read),
                "docs_written": dict(s.docs_written)}

    @staticmethod
    def delta(after: dict[str, Any], before: dict[str, Any]) -> dict[str, Any]:
        def minus(key: str) -> dict[str, int]:
            out = Counter(after[key])
            out.subtract(before[key])
            return {k: v for k, v in out.items() if v}

        return {"store_cpu_s": after["store_cpu_s"] - before["store_cpu_s"],
                "store_wall_s": after["store_wall_s"] - before["store_wall_s"],
                "commits": after["commits"] - before["commits"],
                "round_trips": after["round_trips"] - before["round_trips"],
                "calls": minus("calls"), "docs_read": minus("docs_read"), "docs_written": minus("docs_written")}

    # ---- DocStore (get, get_many, query: _TimedReads) -------------------------------------------
    def sum_of(self, query: Query, field: str) -> float:
        total = self._timed("sum_of", lambda: self.inner.sum_of(query, field), query.collection)
        # The documents an aggregation sums are what it reads (Firestore: their index entries, billed
        # per 1,000), counted with an untimed query of the same documents.
        _count_query(self._stats, query, self.inner.query(query))
        return total

    def commit(self, writes: Sequence[Write]) -> list[str]:
        s = self._stats
        s.commits += 1
        index = s.commits
        if self.before_commit is not None:
            self.before_commit("commit", index)
        what = " ".join(sorted({collection_id(w.path) for w in writes})) if s.trips is not None else ""
        tokens = self._timed("commit", lambda: self.inner.commit(writes), what)
        for w in writes:
            s.docs_written[collection_id(w.path)] += 1
        if self.after_commit is not None:
            self.after_commit("commit", index)
        return tokens

    def run_transaction(self, fn: Callable[[Transaction], T]) -> T:
        s = self._stats
        s.commits += 1
        index = s.commits
        if self.before_commit is not None:
            self.before_commit("transaction", index)
        callback_cpu = 0.0
        callback_wall = 0.0

        written: list[str] = []  # of the last attempt (a re-run transaction starts afresh)

        def callback(t: Transaction) -> T:
            nonlocal callback_cpu, callback_wall
            c0, w0 = time.thread_time(), time.perf_counter()
            written.clear()
            try:
                return fn(_InstrumentedTransaction(t, s, written, self.latency_s))
            finally:
                callback_cpu += time.thread_time() - c0
                callback_wall += time.perf_counter() - w0

        s.calls["run_transaction"] += 1
        c0, w0 = time.thread_time(), time.perf_counter()
        try:
            _round_trip(s, self.latency_s, "run_transaction", "")  # its commit
            out = self.inner.run_transaction(callback)
        finally:
            s.store_cpu_s += time.thread_time() - c0 - callback_cpu
            s.store_wall_s += time.perf_counter() - w0 - callback_wall
        for p in written:
            s.docs_written[collection_id(p)] += 1
        if self.after_commit is not None:
            self.after_commit("transaction", index)
        return out

    def delete_collection(self, collection: str) -> None:
        self._timed("delete_collection", lambda: self.inner.delete_collection(collection), collection)

    def close(self) -> None:
        self.inner.close()


class _InstrumentedTransaction(_TimedReads):
    _prefix = "txn_"

    def __init__(self, inner: Transaction, stats: _ThreadStats, written: list[str], latency_s: float) -> None:
        self._inner = self._reader = inner
        self._stats = stats
        self._written = written
        self._latency_s = latency_s

    def write(self, write: Write) -> None:
        self._written.append(write.path)
        self._inner.write(write)


class Crash(BaseException):
    """The process dying: not an Exception, so nothing in the runtime catches it."""


class CrashAt:
    """Arms one crash at the k-th commit (counted from arming), before or after it applies
    (``arm(None)`` disarms)."""

    def __init__(self, inner: DocStore) -> None:
        self.store = InstrumentedStore(inner, before_commit=self._before, after_commit=self._after)
        self._plan: tuple[str, int] | None = None
        self._commits = 0

    def arm(self, when: str | None, index: int = 0) -> None:
        self._plan, self._commits = (None if when is None else (when, index)), 0

    def _before(self, kind: str, index: int) -> None:
        self._commits += 1
        self._hit("before")

    def _after(self, kind: str, index: int) -> None:
        self._hit("after")

    def _hit(self, when: str) -> None:
        if self._plan == (when, self._commits):
            self._plan = None
            raise Crash(f"{when} commit {self._commits}")
