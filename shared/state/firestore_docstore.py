"""``FirestoreDocStore``: the DocStore seam on Cloud Firestore (google-cloud-firestore, sync client).

The only module that imports the Firestore SDK; it maps the SDK's errors to the store's.

- Token: the document's ``update_time`` as ``"<seconds>.<nanos>"`` (lossless), turned back into
  a ``last_update_time`` precondition for conditional writes.
- ``commit``: one WriteBatch, one commit RPC, no reads. Writes are built as ``Write`` protos
  because the client's ``set()`` takes no precondition, and a whole-document replace guarded by
  the update time (``Write("set", ..., if_token=...)``) is the runtime's most common write.
- Values: Firestore cannot store an array directly inside an array, so such arrays are wrapped as
  ``{"@array": [...]}`` (and a map whose only key is ``@array`` or ``@map`` is wrapped as
  ``{"@map": {...}}``), which makes the encoding reversible: what you read equals what you wrote.
- Queries with equality filters and ``order_by`` on another field need a composite index in
  production (field order: the filtered fields, then the order field). A descending order by
  document id is served by reading the ascending order (see ``_run_query``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar, cast

from google.api_core import exceptions as gexc
from google.cloud import firestore
from google.cloud.firestore_v1 import types
from google.cloud.firestore_v1.base_query import FieldFilter
from google.cloud.firestore_v1.field_path import FieldPath

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
from shared.wire import MAX_EPOCH_S

T = TypeVar("T")
log = logging.getLogger(__name__)

ARRAY_KEY = "@array"
MAP_KEY = "@map"
_MARKERS = (ARRAY_KEY, MAP_KEY)
_DELETE_BATCH = 300


# -- values ------------------------------------------------------------------------------------


def _value(v: Any, *, in_array: bool = False) -> types.Value:
    """A JSON value as a Firestore Value, wrapping what Firestore cannot hold as is."""
    if v is None:
        return types.Value(null_value=0)  # google.protobuf.NullValue.NULL_VALUE
    if isinstance(v, bool):
        return types.Value(boolean_value=v)
    if isinstance(v, int):
        return types.Value(integer_value=v)
    if isinstance(v, float):
        return types.Value(double_value=v)
    if isinstance(v, str):
        return types.Value(string_value=v)
    if isinstance(v, list | tuple):
        array = types.Value(array_value=types.ArrayValue(values=[_value(x, in_array=True) for x in v]))
        if in_array:
            return types.Value(map_value=types.MapValue(fields={ARRAY_KEY: array}))
        return array
    if isinstance(v, dict):
        fields = _fields(v)
        if len(v) == 1 and next(iter(v)) in _MARKERS:
            inner = types.Value(map_value=types.MapValue(fields=fields))
            return types.Value(map_value=types.MapValue(fields={MAP_KEY: inner}))
        return types.Value(map_value=types.MapValue(fields=fields))
    raise TypeError(f"cannot store a value of type {type(v).__name__}")


def _fields(data: JsonDict) -> dict[str, types.Value]:
    if not isinstance(data, dict):
        raise TypeError(f"document data must be a dict, got {type(data).__name__}")
    out: dict[str, types.Value] = {}
    for key, val in data.items():
        if not isinstance(key, str):
            raise TypeError(f"document keys must be strings, got {key!r}")
        out[key] = _value(val)
    return out


EXPIRE_AT = "expireAt"
"""A top-level ``expireAt`` (epoch seconds) is stored as a Timestamp, the only type Firestore TTL
policies act on, and read back as epoch seconds (microsecond precision)."""


def _doc_fields(data: JsonDict) -> dict[str, types.Value]:
    fields = _fields(data)
    expire = data.get(EXPIRE_AT)
    if isinstance(expire, int | float) and not isinstance(expire, bool):
        if not 0 <= expire <= MAX_EPOCH_S:  # also NaN: a Timestamp holds years 1..9999 only
            raise ValueError(f"{EXPIRE_AT} must be epoch seconds within 0..{MAX_EPOCH_S:.0f}, got {expire}")
        fields[EXPIRE_AT] = types.Value(timestamp_value=datetime.fromtimestamp(expire, UTC))
    return fields


def _decode_doc(data: dict[str, Any]) -> JsonDict:
    out: JsonDict = _decode(data)
    expire = out.get(EXPIRE_AT)
    if isinstance(expire, datetime):
        out[EXPIRE_AT] = expire.timestamp()
    return out


def _decode(v: Any) -> Any:
    """Undo the wrapping of ``_value`` on a value the client library decoded."""
    if isinstance(v, list):
        return [_decode(x) for x in v]
    if isinstance(v, dict):
        if len(v) == 1:
            (key, inner), = v.items()
            if key == ARRAY_KEY and isinstance(inner, list):
                return [_decode(x) for x in inner]
            if key == MAP_KEY and isinstance(inner, dict):
                return {k: _decode(x) for k, x in inner.items()}
        return {k: _decode(x) for k, x in v.items()}
    return v


# -- tokens ------------------------------------------------------------------------------------


def _token(update_time: Any) -> str:
    """``"<seconds>.<nanos>"`` of an update time (a DatetimeWithNanoseconds)."""
    ts = update_time.timestamp_pb()
    return f"{ts.seconds}.{ts.nanos:09d}"


def _timestamp(token: str) -> str | None:
    """The RFC 3339 form of a token, nanoseconds kept (the client parses it into a Timestamp)."""
    seconds, _, nanos = token.partition(".")
    try:
        at = datetime.fromtimestamp(int(seconds), UTC)
        frac = int(nanos)
    except (ValueError, OverflowError, OSError):
        return None
    if not 0 <= frac < 10**9 or len(nanos) != 9:
        return None
    return f"{at:%Y-%m-%dT%H:%M:%S}.{nanos}Z"


# -- errors ------------------------------------------------------------------------------------


def _write_error(exc: gexc.GoogleAPIError) -> StoreError:
    if isinstance(exc, gexc.FailedPrecondition | gexc.AlreadyExists | gexc.NotFound):
        return PreconditionFailed(f"conditional write failed: {exc}")
    if isinstance(exc, gexc.Aborted):
        return TransactionContention(f"write aborted by contention: {exc}")
    return StoreError(f"Firestore write failed: {exc}")


def _read_error(exc: gexc.GoogleAPIError) -> StoreError:
    if isinstance(exc, gexc.Aborted):
        return TransactionContention(f"read aborted by contention: {exc}")
    return StoreError(f"Firestore read failed: {exc}")


class FirestoreDocStore:
    """The DocStore on a Firestore database (the emulator when FIRESTORE_EMULATOR_HOST is set).

    ``client`` is shared and thread-safe: create it once per process. ``close()`` closes it
    only when ``owns_client`` is true. A transaction is attempted at most ``max_attempts`` times
    before TransactionContention.
    """

    def __init__(self, client: firestore.Client, *, owns_client: bool = False, max_attempts: int = 5) -> None:
        self.client = client
        self._owns_client = owns_client
        self._max_attempts = max(1, max_attempts)

    # -- reads -----------------------------------------------------------------------------

    def get(self, path: str) -> Doc | None:
        split_doc_path(path)
        try:
            return _doc(self.client.document(path).get())
        except gexc.GoogleAPIError as exc:
            raise _read_error(exc) from exc

    def get_many(self, paths: Sequence[str]) -> list[Doc | None]:
        """Documents in the order of ``paths`` (``None`` for missing ones); one RPC."""
        if not paths:
            return []
        for p in paths:
            split_doc_path(p)
        try:
            snaps = self.client.get_all([self.client.document(p) for p in dict.fromkeys(paths)])
            found = {s.reference.path: _doc(s) for s in snaps}
        except gexc.GoogleAPIError as exc:
            raise _read_error(exc) from exc
        return [found.get(p) for p in paths]

    def query(self, query: Query) -> list[Doc]:
        try:
            return self._run_query(query, lambda q: q.stream())
        except gexc.GoogleAPIError as exc:
            raise _read_error(exc) from exc

    def sum_of(self, query: Query, field: str) -> float:
        """One aggregation query (``sum``): billed one read per 1,000 index entries it scans. An
        equality filter with the sum of another field needs a composite index (filter fields, then
        ``field``): order the query by ``field`` so infra/tests/test_indexes.py declares it."""
        if query.limit is not None and query.limit <= 0:
            return 0
        if query.order_by is None and query.start_after is None and query.limit is None:
            q = self._filtered(query)  # an order by id would ask for an index Firestore cannot build
        else:
            q, backwards_by_id = self._build(query)
            if backwards_by_id and query.limit is not None:
                raise ValueError("sum_of does not take a limit with a descending id order")
        try:
            results = q.sum(FieldPath(field).to_api_repr(), alias="total").get()
        except gexc.GoogleAPIError as exc:
            raise _read_error(exc) from exc
        value = results[0][0].value if results and results[0] else 0
        return value if isinstance(value, int | float) else 0

    # -- writes ----------------------------------------------------------------------------

    def commit(self, writes: Sequence[Write]) -> list[str]:
        """Apply ``writes`` atomically in one commit; the new token of each write ("" for deletes).

        Raises PreconditionFailed, and applies nothing, if any write's condition fails.
        """
        if not writes:
            return []
        batch = self.client.batch()
        # The batch's own create/set/update build the same protos but cannot guard a set.
        batch._add_write_pbs([self._write_pb(w) for w in writes])
        try:
            results = batch.commit()
        except gexc.GoogleAPIError as exc:
            raise _write_error(exc) from exc
        return ["" if w.op == "delete" else _token(r.update_time) for w, r in zip(writes, results, strict=True)]

    def run_transaction(self, fn: Callable[[Transaction], T]) -> T:
        """Run ``fn`` in a Firestore transaction, re-running it when a concurrent writer aborts it.

        Raises TransactionContention after ``max_attempts``; PreconditionFailed if a write's
        condition fails; an exception from ``fn`` rolls back and propagates unchanged.
        """
        last: gexc.GoogleAPIError | None = None
        for _ in range(self._max_attempts):

            @firestore.transactional
            def body(ftxn: firestore.Transaction) -> T:
                txn = _FirestoreTransaction(self, ftxn)
                result = fn(txn)
                ftxn._add_write_pbs(txn.write_pbs)
                return result

            try:
                # The library retries aborted commits itself (keeping its place in line);
                # an abort during a read surfaces here and is retried by this loop.
                return cast(T, body(self.client.transaction(max_attempts=self._max_attempts)))
            except ValueError as exc:
                if isinstance(exc.__cause__, gexc.Aborted):
                    raise TransactionContention(f"transaction gave up after retries: {exc.__cause__}") from exc
                raise
            except gexc.Aborted as exc:
                last = exc
                log.info("transaction aborted during its reads; retrying")
            except gexc.GoogleAPIError as exc:
                raise _write_error(exc) from exc
        raise TransactionContention(f"transaction gave up after {self._max_attempts} attempts: {last}")

    def delete_collection(self, collection: str) -> None:
        """Delete every document directly in ``collection`` (not recursive), in batches."""
        check_collection_path(collection)
        col = self.client.collection(collection)
        try:
            while True:
                snaps = list(col.select([]).limit(_DELETE_BATCH).stream())
                if not snaps:
                    return
                batch = self.client.batch()
                for s in snaps:
                    batch.delete(s.reference)
                batch.commit()
        except gexc.GoogleAPIError as exc:
            raise _write_error(exc) from exc

    def close(self) -> None:
        if self._owns_client:
            self.client.close()  # type: ignore[no-untyped-call]  # untyped in the SDK

    # -- internals -------------------------------------------------------------------------

    def _write_pb(self, w: Write) -> types.Write:
        split_doc_path(w.path)
        name = self.client.document(w.path)._document_path
        if w.op == "delete":
            pb = types.Write(delete=name)
        elif w.op == "create":
            if w.if_token is not None:
                raise ValueError("if_token is not allowed on create")
            pb = types.Write(update=types.Document(name=name, fields=_doc_fields(w.data)),
                             current_document=types.Precondition(exists=False))
        elif w.op in ("set", "update"):
            pb = types.Write(update=types.Document(name=name, fields=_doc_fields(w.data)))
            if w.op == "update" or w.merge:
                # A mask of the top-level keys merges them (an empty mask only touches the doc).
                pb.update_mask = types.DocumentMask(field_paths=[FieldPath(k).to_api_repr() for k in w.data])
            if w.op == "update":
                pb.current_document = types.Precondition(exists=True)
        elif w.op == "increment":
            check_increment(w)
            # An upsert of no field whose transforms add the numbers (Firestore's ``Increment``).
            adds = [types.DocumentTransform.FieldTransform(field_path=FieldPath(k).to_api_repr(), increment=_value(v))
                    for k, v in w.data.items()]
            pb = types.Write(update=types.Document(name=name), update_mask=types.DocumentMask(field_paths=[]),
                             update_transforms=adds)
        else:
            raise ValueError(f"unknown write op {w.op!r}")
        if w.if_token is not None:
            ts = _timestamp(w.if_token)
            if ts is None:
                raise PreconditionFailed(f"{w.path}: token {w.if_token!r} does not match any version")
            self.client.write_option(last_update_time=ts).modify_write(pb)
        return pb

    def _run_query(self, query: Query, fetch: Callable[[Any], Iterable[Any]]) -> list[Doc]:
        """Build ``query``, read its snapshots with ``fetch`` (plain or transactional), and shape them.

        Firestore cannot scan document ids backwards without a dedicated index, so a descending
        id order reads the ascending order and reverses it in memory: keep that to small collections.
        """
        if query.limit is not None and query.limit <= 0:
            return []
        q, backwards_by_id = self._build(query)
        docs = [d for d in (_doc(s) for s in fetch(q)) if d is not None]
        if backwards_by_id:
            docs.reverse()
            docs = docs[: query.limit]
        return docs

    def _filtered(self, query: Query) -> Any:
        """The collection of ``query`` with its equality filters (no order, cursor or limit)."""
        check_collection_path(query.collection)
        q: Any = self.client.collection(query.collection)
        for field, value in query.where:
            if value is not None and not isinstance(value, str | int | float):
                raise ValueError(f"query filters support str/int/float/bool/None values, got {type(value).__name__}")
            q = q.where(filter=FieldFilter(FieldPath(field).to_api_repr(), "==", value))
        return q

    def _build(self, query: Query) -> tuple[Any, bool]:
        """The client query of ``query``, and whether it reads a descending id order forwards (then
        without its limit: ``_run_query`` reverses and cuts)."""
        q = self._filtered(query)
        backwards_by_id = query.order_by is None and query.descending
        if query.order_by is None:
            q = q.order_by("__name__")
            if query.start_after is not None:
                cursor = {"__name__": str(query.start_after)}
                q = q.end_before(cursor) if backwards_by_id else q.start_after(cursor)
        else:
            key = FieldPath(query.order_by).to_api_repr()
            direction = firestore.Query.DESCENDING if query.descending else firestore.Query.ASCENDING
            q = q.order_by(key, direction=direction)
            if query.start_after is not None and query.start_after_id is not None:
                # Firestore's implicit last order is the document name in the same direction: made
                # explicit so the cursor can name both (the same index serves it).
                q = q.order_by("__name__", direction=direction).start_after(
                    {key: query.start_after, "__name__": self.client.collection(query.collection).document(
                        query.start_after_id)})
            elif query.start_after is not None:
                q = q.start_after({key: query.start_after})
        if query.limit is not None and not backwards_by_id:
            q = q.limit(query.limit)
        return q, backwards_by_id


def _doc(snap: Any) -> Doc | None:
    if not snap.exists:
        return None
    return Doc(snap.reference.path, _decode_doc(snap.to_dict() or {}), _token(snap.update_time))


class _FirestoreTransaction:
    """Reads go through the Firestore transaction; writes are collected and committed with it."""

    def __init__(self, store: FirestoreDocStore, ftxn: firestore.Transaction) -> None:
        self._store = store
        self._ftxn = ftxn
        self.write_pbs: list[types.Write] = []

    def get(self, path: str) -> Doc | None:
        split_doc_path(path)
        try:
            snaps = list(self._ftxn.get(self._store.client.document(path)))
        except gexc.Aborted:
            raise  # run_transaction retries
        except gexc.GoogleAPIError as exc:
            raise _read_error(exc) from exc
        return _doc(snaps[0]) if snaps else None

    def get_many(self, paths: Sequence[str]) -> list[Doc | None]:
        if not paths:
            return []
        for p in paths:
            split_doc_path(p)
        client = self._store.client
        try:
            found = {s.reference.path: _doc(s)
                     for s in self._ftxn.get_all([client.document(p) for p in dict.fromkeys(paths)])}
        except gexc.Aborted:
            raise  # run_transaction retries
        except gexc.GoogleAPIError as exc:
            raise _read_error(exc) from exc
        return [found.get(p) for p in paths]

    def query(self, query: Query) -> list[Doc]:
        try:
            return self._store._run_query(query, self._ftxn.get)
        except gexc.Aborted:
            raise  # run_transaction retries
        except gexc.GoogleAPIError as exc:
            raise _read_error(exc) from exc

    def write(self, write: Write) -> None:
        self.write_pbs.append(self._store._write_pb(write))
