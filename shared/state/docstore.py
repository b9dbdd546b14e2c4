"""The state-store seam: a small document store with Firestore's shape and semantics.

Paths are Firestore paths (``runs/r1``, ``runs/r1/events/00000001``): an even number of
segments names a document, an odd number a collection. Documents are JSON objects (str keys;
values str/int/float/bool/None/list/dict). Every document carries an opaque ``token`` that
changes on each write that changes it (Firestore: its update time; SQLite: a revision number;
a write leaving the document exactly as it was keeps the token, as Firestore does); a write may
be conditioned on it, which is how every state transition is made conditional.

Two implementations prove equal by one contract suite (tests/contract):
- ``FirestoreDocStore`` (google-cloud-firestore; the emulator in tests),
- ``SqliteDocStore`` (stdlib sqlite3, the local default).

Both are thread-safe and meant to be created once per process.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar

# Re-exported: the store errors are defined with the other error families.
from shared.errors import PreconditionFailed as PreconditionFailed
from shared.errors import StoreError as StoreError
from shared.errors import TransactionContention as TransactionContention

JsonDict = dict[str, Any]
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Doc:
    """A document as read: its path, data and the token of its current version."""

    path: str
    data: JsonDict
    token: str

    @property
    def id(self) -> str:
        return self.path.rsplit("/", 1)[-1]


@dataclass(frozen=True, slots=True)
class Write:
    """One write of an atomic batch.

    - ``create``: fails (PreconditionFailed) if the document exists.
    - ``set``: creates or replaces the whole document (``merge=True``: top-level fields merged).
    - ``update``: merges top-level fields into an existing document; fails if it is missing.
    - ``delete``: removes the document (no error if missing unless ``if_token`` is given).
    - ``increment``: adds each number of ``data`` to that top-level field (a missing document or
      field, or one that is not a number, counts as 0), creating the document if missing; other
      fields are kept. Concurrent increments of one document all apply (none is lost and none
      fails: Firestore's field-increment transform, no read). Counters kept in the commit that
      changes what they count use it.

    ``if_token`` (update/set/delete only): the write applies only if the document's current
    token equals it; otherwise the batch fails with PreconditionFailed.
    """

    op: Literal["create", "set", "update", "delete", "increment"]
    path: str
    data: JsonDict = field(default_factory=dict)
    merge: bool = False
    if_token: str | None = None


@dataclass(frozen=True, slots=True)
class Query:
    """A collection query: equality filters, one order field, a cursor and a limit.

    ``order_by=None`` orders by document id. ``start_after`` is a value of the order field
    (or an id when ordering by id). ``descending`` reverses the order. Documents with equal values
    of the order field are ordered by id (in the same direction); ``start_after_id`` (with
    ``order_by`` and ``start_after``) starts after the document of that id among them, so a page
    cursor ``(value, id)`` never skips nor repeats a document (shared/state/pages.py).
    """

    collection: str
    where: tuple[tuple[str, Any], ...] = ()
    order_by: str | None = None
    descending: bool = False
    start_after: Any = None
    limit: int | None = None
    start_after_id: str | None = None


class Transaction(Protocol):
    """Reads first, then writes; the writes apply atomically when the callback returns.

    If another writer changed a document read in the transaction before it commits, the
    callback is re-run (a bounded number of times) from a fresh start, so it must not have
    side effects outside the transaction.
    """

    def get(self, path: str) -> Doc | None: ...

    def get_many(self, paths: Sequence[str]) -> list[Doc | None]:
        """Documents in the order of ``paths`` (``None`` for missing ones), read by the transaction
        in one round trip (Firestore: one batch get inside the transaction)."""
        ...

    def query(self, query: Query) -> list[Doc]: ...

    def write(self, write: Write) -> None: ...


class DocStore(Protocol):
    """The seam every repository of the runtime is built on."""

    def get(self, path: str) -> Doc | None: ...

    def get_many(self, paths: Sequence[str]) -> list[Doc | None]:
        """Documents in the order of ``paths`` (``None`` for missing ones)."""
        ...

    def query(self, query: Query) -> list[Doc]: ...

    def sum_of(self, query: Query, field: str) -> float:
        """The sum of ``field`` over the documents ``query`` matches, computed by the store (Firestore:
        an aggregation query, billed one read per 1,000 index entries; no document is transferred).
        Values that are not numbers, and documents without the field, add nothing; no match sums to 0."""
        ...

    def commit(self, writes: Sequence[Write]) -> list[str]:
        """Apply ``writes`` atomically (one commit); return the new token of each write
        (empty string for deletes). Raises PreconditionFailed and applies nothing if any
        write's condition fails."""
        ...

    def run_transaction(self, fn: Callable[[Transaction], T]) -> T: ...

    def delete_collection(self, collection: str) -> None:
        """Delete every document directly in ``collection`` (not recursive). For tests/tools."""
        ...

    def close(self) -> None: ...


def split_doc_path(path: str) -> tuple[str, str]:
    """``(collection path, document id)`` of a document path; ValueError if it names no document.

    Shared by the implementations so both refuse the same malformed paths.
    """
    # An even number of non-empty segments: an odd number of "/", none doubled, none at either end
    # (a commit splits each of its writes' paths: no list of segments built).
    if path.count("/") % 2 == 0 or "//" in path or path[0] == "/" or path[-1] == "/":
        raise ValueError(f"not a document path: {path!r}")
    parent, _, doc_id = path.rpartition("/")
    return parent, doc_id


def check_collection_path(path: str) -> str:
    """``path`` itself if it names a collection; ValueError otherwise."""
    parts = path.split("/")
    if len(parts) % 2 == 0 or not all(parts):
        raise ValueError(f"not a collection path: {path!r}")
    return path


def check_increment(write: Write) -> None:
    """ValueError unless ``write`` is a valid ``increment``: numbers only, no ``if_token``, no merge.

    Shared by the implementations so both refuse the same malformed increments."""
    if write.if_token is not None or write.merge:
        raise ValueError("increment takes no if_token and no merge")
    for key, v in write.data.items():
        if not isinstance(v, int | float) or isinstance(v, bool):
            raise ValueError(f"increment of {key!r} must be a number, got {type(v).__name__}")
