"""``SqliteDocStore``: the DocStore seam on stdlib sqlite3, the local default backend.

One table holds every document, with a unique index on (collection path, id), so a collection is
one key range of the index (schema 3; a file of schema 1 or 2, WITHOUT ROWID tables, is converted
when opened); data is JSON text. A document's token is the revision of the commit that
last wrote it, drawn from a counter that only grows (so a deleted and re-created document never
gets an old token back). A store takes the counter's values ``REV_BLOCK`` at a time (the counter's
row is written by one commit in ``REV_BLOCK``, not by every commit: one WAL page and one statement
less per commit), so each revision is used once by one store whatever the processes sharing the
file; a store's revisions grow, those of two stores interleave (tokens are only ever compared for
equality). Values reserved and not used (a store closed, a process gone) are skipped.

Concurrency: one connection guarded by a re-entrant lock serialises all access in a process;
writes run in ``BEGIN IMMEDIATE`` transactions, so several processes sharing one file wait for
each other (``busy_timeout``) instead of interleaving. Because a transaction holds the write
lock from its first read, transactions never conflict here and are never re-run.

Durability: WAL mode; ``synchronous`` defaults to ``NORMAL`` (env ``SQLITE_SYNCHRONOUS``): a
commit survives a crash of the process but may be lost on power failure or an OS crash, which
suits a local default and keeps a commit far below a millisecond. ``FULL`` also survives power
loss at the price of one fsync per commit.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pydantic_core import PydanticSerializationError, from_json, to_json

from shared.state.docstore import (
    Doc,
    JsonDict,
    PreconditionFailed,
    Query,
    StoreError,
    Transaction,
    TransactionContention,
    Write,
    check_collection_path,
    check_increment,
    split_doc_path,
)

T = TypeVar("T")

SCHEMA_VERSION = 3
REV_BLOCK = 100
"""Revisions a store reserves at a time (one write of the counter's row per ``REV_BLOCK`` commits)."""
OLDEST_READER = 2
"""The oldest schema whose store may use a file of this schema, kept in the file (``meta`` row
``readerSchema``, never lowered): schema 2's store works on a schema-3 file as it is (same columns,
same statements, its ``create`` refused by the unique index as by its key:
tests/contract/test_sqlite_schema_compat.py runs it). A schema that older stores must not use
raises it; a store refuses a file whose ``readerSchema`` is above its own schema."""
SYNCHRONOUS_MODES = ("OFF", "NORMAL", "FULL", "EXTRA")
DEFAULT_SYNCHRONOUS = "NORMAL"

# A table of documents (a rowid table: a document's data, up to ~4 KB, lives in its row) and one
# unique index on (collection path, id): a document's path is ``parent/id``, and a collection's
# documents are one contiguous key range of the index in id order. New documents append to the
# table's last page, so the documents one commit creates share a page or two; a document rewritten
# stays in its row (schema 3). Schema 2 keyed a WITHOUT ROWID table by (parent, id): a row there
# holds at most ~1 KB before the rest spills to overflow pages, so a step's run, turns and events
# documents (~2 KB each) each wrote one more page and freed another (16 WAL pages per step against
# 11). Schema 1 keyed the table by the full path with a second index on (parent, id).
_DOCS_TABLE = """
CREATE TABLE {name} (
    parent TEXT NOT NULL,
    id TEXT NOT NULL,
    data TEXT NOT NULL,
    rev INTEGER NOT NULL
)
"""
_DOCS_KEY = "CREATE UNIQUE INDEX IF NOT EXISTS docs_key ON docs (parent, id)"
_META_TABLE = "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID"


def _prepare(conn: sqlite3.Connection) -> None:
    """Create the tables, or bring a schema-1 or schema-2 file to schema 3 (same documents, same
    tokens), in one write transaction: several processes opening one file at once do it once. A
    schema-3 file opened by code of schema 2 works as it is (``OLDEST_READER``); a file that needs a
    newer store than this one is refused (``StoreError``) with nothing written. ``user_version`` is
    never lowered (schema 2's store sets it to 2; this store sets it back)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        _check_reader(conn)
        row = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'docs'").fetchone()
        if row is None:
            conn.execute(_DOCS_TABLE.format(name="docs"))
        elif "WITHOUT ROWID" in str(row[0]).upper():  # schema 1 or 2: same documents, same tokens
            conn.execute(_DOCS_TABLE.format(name="docs_v3"))
            conn.execute("INSERT INTO docs_v3 (parent, id, data, rev) SELECT parent, id, data, rev FROM docs "
                         "ORDER BY parent, id")
            conn.execute("DROP TABLE docs")  # drops schema 1's index docs_parent_id too
            conn.execute("ALTER TABLE docs_v3 RENAME TO docs")
        conn.execute(_DOCS_KEY)
        conn.execute(_META_TABLE)
        conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('rev', 0)")
        conn.execute("INSERT INTO meta (key, value) VALUES ('readerSchema', ?) "
                     "ON CONFLICT (key) DO UPDATE SET value = max(value, excluded.value)", (OLDEST_READER,))
        if int(conn.execute("PRAGMA user_version").fetchone()[0]) < SCHEMA_VERSION:
            conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _check_reader(conn: sqlite3.Connection) -> None:
    """Refuse a file whose ``readerSchema`` names a newer store than this one (before any write)."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone() is None:
        return
    row = conn.execute("SELECT value FROM meta WHERE key = 'readerSchema'").fetchone()
    if row is not None and int(row[0]) > SCHEMA_VERSION:
        raise StoreError(f"the file needs a store of schema {int(row[0])} or later (written by newer code); "
                         f"this code's store is schema {SCHEMA_VERSION}. Run newer code on it, or move the "
                         "file away to start with an empty store.")


def _dumps(data: JsonDict) -> str:
    """Compact JSON text of a document. pydantic-core's encoder (3-5x faster than the json module's:
    a step encodes 7 documents); a NaN or an infinity is refused as the json module refuses it
    (SQLite's JSON functions cannot read them), and what pydantic-core cannot encode goes to the
    json module for its error. Values the json module refused but pydantic-core encodes (``datetime``,
    ``bytes``) are stored as JSON strings; documents are meant to hold JSON values only."""
    if not isinstance(data, dict):
        raise TypeError(f"document data must be a dict, got {type(data).__name__}")
    try:
        text = to_json(data, inf_nan_mode="constants")
    except PydanticSerializationError:
        text = b""
    if not text or b"NaN" in text or b"Infinity" in text:  # a bare token, or only inside a string?
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.decode()


def _stored(text: str) -> Any:
    """A stored document's JSON decoded for a write to compare with or to change (``_apply``):
    pydantic-core's decoder (2-3x faster than the json module's on a step's ~2 KB run document), the
    json module's for what it refuses (a lone surrogate escape); both give equal values."""
    try:
        return from_json(text)
    except ValueError:
        return json.loads(text)


def _same(a: JsonDict, b: JsonDict) -> bool:
    """Equal as stored JSON (1 and 1.0, or True and 1, differ; key order does not matter)."""
    return a == b and json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _json_path(field: str) -> str:
    if not field or '"' in field:
        raise ValueError(f"unsupported query field name: {field!r}")
    return f'$."{field}"'


def _equality(field: str, value: Any) -> tuple[str, list[Any]]:
    """SQL for ``field == value`` with Firestore's typing: 1 == 1.0, but True != 1."""
    jp = _json_path(field)
    if value is None:
        return "json_type(data, ?) = 'null'", [jp]
    if isinstance(value, bool):
        return "json_type(data, ?) = ?", [jp, "true" if value else "false"]
    if isinstance(value, int | float):
        return "json_type(data, ?) IN ('integer', 'real') AND json_extract(data, ?) = ?", [jp, jp, value]
    if isinstance(value, str):
        return "json_type(data, ?) = 'text' AND json_extract(data, ?) = ?", [jp, jp, value]
    raise ValueError(f"query filters support str/int/float/bool/None values, got {type(value).__name__}")


def _select(query: Query, columns: str) -> tuple[str, list[Any]]:
    """The SQL selecting ``columns`` of the documents ``query`` matches, in its order, and its parameters."""
    check_collection_path(query.collection)
    sql = [f"SELECT {columns} FROM docs WHERE parent = ?"]
    params: list[Any] = [query.collection]
    for field, value in query.where:
        clause, args = _equality(field, value)
        sql.append(f"AND {clause}")
        params += args
    direction = "DESC" if query.descending else "ASC"
    if query.order_by is None:
        if query.start_after is not None:
            sql.append("AND id < ?" if query.descending else "AND id > ?")
            params.append(str(query.start_after))
        sql.append(f"ORDER BY id {direction}")
    else:
        jp = _json_path(query.order_by)
        sql.append("AND json_type(data, ?) IS NOT NULL")  # Firestore skips docs lacking the field
        params.append(jp)
        if query.start_after is not None and query.start_after_id is not None:
            op = "<" if query.descending else ">"
            sql.append(f"AND (json_extract(data, ?) {op} ? OR (json_extract(data, ?) = ? AND id {op} ?))")
            params += [jp, query.start_after, jp, query.start_after, query.start_after_id]
        elif query.start_after is not None:
            sql.append("AND json_extract(data, ?) " + ("< ?" if query.descending else "> ?"))
            params += [jp, query.start_after]
        sql.append(f"ORDER BY json_extract(data, ?) {direction}, id {direction}")
        params.append(jp)
    if query.limit is not None:
        sql.append("LIMIT ?")
        params.append(query.limit)
    return " ".join(sql), params


class SqliteDocStore:
    """The DocStore on a SQLite file (``":memory:"`` for a throw-away store).

    Thread-safe; create one per process and ``close()`` it at the end.
    """

    def __init__(self, path: str, *, synchronous: str | None = None, busy_timeout_s: float = 10.0) -> None:
        mode = (synchronous or os.environ.get("SQLITE_SYNCHRONOUS", "") or DEFAULT_SYNCHRONOUS).strip().upper()
        if mode not in SYNCHRONOUS_MODES:
            raise ValueError(f"synchronous must be one of {', '.join(SYNCHRONOUS_MODES)}, got {mode!r}")
        self.path = path
        self.synchronous = mode
        self._lock = threading.RLock()
        self._rev_next = self._rev_end = 0
        """The revisions this store reserved and has not used: ``_rev_next`` up to ``_rev_end`` (excluded)."""
        self._rev_reserved = False
        """The open transaction reserved them (a rollback takes the reservation back: forget them)."""
        try:
            # isolation_level=None: we issue BEGIN/COMMIT ourselves.
            self._conn = sqlite3.connect(path, timeout=busy_timeout_s, isolation_level=None,
                                         check_same_thread=False)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute(f"PRAGMA synchronous={mode}")
            _prepare(self._conn)
        except (sqlite3.Error, StoreError) as exc:
            if hasattr(self, "_conn"):
                self._conn.close()
            raise StoreError(f"cannot open SQLite store {path!r}: {exc}") from exc

    # -- reads -----------------------------------------------------------------------------

    def get(self, path: str) -> Doc | None:
        parent, doc_id = split_doc_path(path)
        with self._guard():
            row = self._conn.execute("SELECT data, rev FROM docs WHERE parent = ? AND id = ?",
                                     (parent, doc_id)).fetchone()
        return None if row is None else Doc(path, json.loads(row[0]), str(row[1]))

    def get_many(self, paths: Sequence[str]) -> list[Doc | None]:
        """Documents in the order of ``paths`` (``None`` for missing ones), read in one read
        transaction: one snapshot, as Firestore's batch get (a commit of another process cannot
        fall between two of them; a resume relies on it, ``RunsRepo.resume_reads``)."""
        with self._guard():
            if len(paths) < 2 or self._conn.in_transaction:
                return [self.get(p) for p in paths]
            self._conn.execute("BEGIN")
            try:
                return [self.get(p) for p in paths]
            finally:
                self._conn.execute("COMMIT")

    def query(self, query: Query) -> list[Doc]:
        sql, params = _select(query, "id, data, rev")
        with self._guard():
            rows = self._conn.execute(sql, params).fetchall()
        prefix = query.collection + "/"
        return [Doc(prefix + r[0], json.loads(r[1]), str(r[2])) for r in rows]

    def sum_of(self, query: Query, field: str) -> float:
        """``SUM`` over the rows ``query`` selects; only JSON numbers count, as in Firestore."""
        jp = _json_path(field)
        inner, params = _select(query, "data")
        sql = (f"SELECT TOTAL(CASE WHEN json_type(data, ?) IN ('integer', 'real') THEN json_extract(data, ?) END) "
               f"FROM ({inner})")
        with self._guard():
            total = self._conn.execute(sql, [jp, jp, *params]).fetchone()[0]
        return int(total) if float(total).is_integer() else float(total)

    # -- writes ----------------------------------------------------------------------------

    def commit(self, writes: Sequence[Write]) -> list[str]:
        """Apply ``writes`` atomically; the new token of each write ("" for deletes).

        Raises PreconditionFailed, and applies nothing, if any write's condition fails.
        """
        if not writes:
            return []
        with self._guard():
            if self._conn.in_transaction:
                raise StoreError("commit() called inside run_transaction(); write through the transaction")
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                tokens = self._apply(writes)
                self._conn.execute("COMMIT")
            except BaseException:
                self._rollback()
                raise
            self._rev_reserved = False
            return tokens

    def run_transaction(self, fn: Callable[[Transaction], T]) -> T:
        """Run ``fn`` holding the write lock; its writes apply atomically when it returns.

        An exception from ``fn`` (or a failed precondition of its writes) applies nothing.
        """
        with self._guard():
            if self._conn.in_transaction:
                raise StoreError("run_transaction() cannot be nested")
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                txn = _SqliteTransaction(self)
                result = fn(txn)
                self._apply(txn.writes)
                self._conn.execute("COMMIT")
            except BaseException:
                self._rollback()
                raise
            self._rev_reserved = False
            return result

    def delete_collection(self, collection: str) -> None:
        """Delete every document directly in ``collection`` (not recursive)."""
        check_collection_path(collection)
        with self._guard():
            self._conn.execute("DELETE FROM docs WHERE parent = ?", (collection,))

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # -- internals -------------------------------------------------------------------------

    def _guard(self) -> _Guard:
        return _Guard(self._lock)

    def _rollback(self) -> None:
        """Roll the open write transaction back; revisions it reserved are forgotten with it (the
        counter's row is back where it was: another store may reserve them)."""
        self._conn.execute("ROLLBACK")
        if self._rev_reserved:
            self._rev_next = self._rev_end = 0
            self._rev_reserved = False

    def _next_rev(self) -> int:
        """The revision of the commit in progress (inside its write transaction): the next one this
        store reserved, reserving ``REV_BLOCK`` more from the counter when none is left."""
        if self._rev_next >= self._rev_end:
            end = int(self._conn.execute("UPDATE meta SET value = value + ? WHERE key = 'rev' RETURNING value",
                                         (REV_BLOCK,)).fetchone()[0])
            self._rev_next, self._rev_end = end - REV_BLOCK + 1, end + 1
            self._rev_reserved = True
        rev = self._rev_next
        self._rev_next += 1
        return rev

    def _apply(self, writes: Sequence[Write]) -> list[str]:
        """Apply ``writes`` in order inside the open transaction; raise on the first failure."""
        if not writes:
            return []
        conn = self._conn
        rev = self._next_rev()
        token = str(rev)
        tokens: list[str] = []
        for w in writes:
            parent, doc_id = split_doc_path(w.path)
            if w.op == "create" and w.if_token is None:
                # One statement: the primary key refuses an existing document (most writes of a
                # step are creates: events, turns, ledger and audit entries).
                try:
                    conn.execute("INSERT INTO docs (parent, id, data, rev) VALUES (?, ?, ?, ?)",
                                 (parent, doc_id, _dumps(w.data), rev))
                except sqlite3.IntegrityError:
                    raise PreconditionFailed(f"{w.path} already exists") from None
                tokens.append(token)
                continue
            row = conn.execute("SELECT data, rev FROM docs WHERE parent = ? AND id = ?", (parent, doc_id)).fetchone()
            current = None if row is None else str(row[1])
            _check(w, current)
            if w.op == "delete":
                conn.execute("DELETE FROM docs WHERE parent = ? AND id = ?", (parent, doc_id))
                tokens.append("")
                continue
            if row is None:
                data = _incremented({}, w.data) if w.op == "increment" else w.data
                conn.execute("INSERT INTO docs (parent, id, data, rev) VALUES (?, ?, ?, ?)",
                             (parent, doc_id, _dumps(data), rev))
                tokens.append(token)
                continue
            if w.op == "set" and not w.merge:
                # A replaced document is unchanged only if its JSON has the same length (both texts
                # are ``_dumps``': equal values encode to members of equal lengths, in any order), so
                # the old one is decoded only then (a step's run document, whose ``updatedAt`` moves,
                # mostly not). A text written otherwise (older code) of equal values may differ in
                # length: the document then gets a new token, as a changed one (never the reverse).
                text = _dumps(w.data)
                if len(text) == len(row[0]) and (text == row[0] or _same(_stored(row[0]), w.data)):
                    tokens.append(str(row[1]))  # Firestore keeps the update time of an unchanged document
                    continue
            else:
                old = _stored(row[0])
                data = _incremented(old, w.data) if w.op == "increment" else {**old, **w.data}
                if _same(old, data):
                    tokens.append(str(row[1]))  # Firestore keeps the update time of an unchanged document
                    continue
                text = _dumps(data)
            # rewritten in its row (in place)
            conn.execute("UPDATE docs SET data = ?, rev = ? WHERE parent = ? AND id = ?", (text, rev, parent, doc_id))
            tokens.append(token)
        return tokens


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _incremented(old: JsonDict, by: JsonDict) -> JsonDict:
    """``old`` with each number of ``by`` added to its field (Firestore's increment: a field that is
    missing or not a number counts as 0; integers stay integers unless a float is added)."""
    out = dict(old)
    for key, v in by.items():
        current = out.get(key)
        out[key] = (current if _is_number(current) else 0) + v
    return out


def _check(w: Write, current: str | None) -> None:
    """Raise PreconditionFailed if ``w`` cannot apply to a document whose token is ``current``."""
    if w.op == "create":
        if w.if_token is not None:
            raise ValueError("if_token is not allowed on create")
        if current is not None:
            raise PreconditionFailed(f"{w.path} already exists")
    elif w.op == "update" and current is None:
        raise PreconditionFailed(f"{w.path} does not exist")
    elif w.op == "increment":
        check_increment(w)
    elif w.op not in ("set", "update", "delete"):
        raise ValueError(f"unknown write op {w.op!r}")
    if w.if_token is not None and w.if_token != current:
        raise PreconditionFailed(f"{w.path} changed (token {current!r}, expected {w.if_token!r})")


class _Guard:
    """The store lock, with sqlite3 errors mapped to the store's errors."""

    __slots__ = ("_lock",)

    def __init__(self, lock: threading.RLock) -> None:
        self._lock = lock

    def __enter__(self) -> None:
        self._lock.acquire()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        self._lock.release()
        if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
            raise TransactionContention(f"SQLite store is locked by another process: {exc}") from exc
        if isinstance(exc, sqlite3.Error):
            raise StoreError(f"SQLite store failed: {exc}") from exc


class _SqliteTransaction:
    """Reads see the database; writes are buffered and applied when the callback returns."""

    def __init__(self, store: SqliteDocStore) -> None:
        self._store = store
        self.writes: list[Write] = []

    def get(self, path: str) -> Doc | None:
        return self._store.get(path)

    def get_many(self, paths: Sequence[str]) -> list[Doc | None]:
        return self._store.get_many(paths)

    def query(self, query: Query) -> list[Doc]:
        return self._store.query(query)

    def write(self, write: Write) -> None:
        self.writes.append(write)
