"""Cursor pagination: every list of the API reads one page and answers where the next one starts.

A cursor names the last item of a page by its position in the list's order: the value of the order
field and the document id (equal values are ordered by id, ``Query.start_after_id``), so a page
never skips nor repeats an item however many share a creation time, and items created after the
first page do not shift the later pages. On the wire it is opaque: base64url of ``[value, id]``
(no padding). It is not signed: every list is filtered by the caller's uid, so a forged cursor
only moves within the caller's own items. A cursor that does not decode is a 400
``INVALID_CURSOR``.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

from shared.errors import InvalidInput
from shared.state.docstore import Doc, DocStore, Query

T = TypeVar("T")
Position = tuple[float | str, str]
"""Where a page ends: the order field's value and the document id."""


def encode(position: Position) -> str:
    raw = json.dumps([position[0], position[1]], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode(cursor: str) -> Position:
    """The position a cursor names; a 400 ``INVALID_CURSOR`` when it is not one of ours."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        value, doc_id = json.loads(raw)
    except (binascii.Error, ValueError, TypeError, UnicodeDecodeError):
        value, doc_id = None, None
    if not isinstance(value, int | float | str) or isinstance(value, bool) or not isinstance(doc_id, str) \
            or not doc_id or "/" in doc_id:
        raise InvalidInput("query parameter cursor is not a cursor of this list (pass the nextCursor of the "
                           "previous page as it was)", code="INVALID_CURSOR", details={"field": "cursor"})
    return value, doc_id


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    next_cursor: str | None
    """Where the next page starts; ``None`` on the last page."""


def after(query: Query, cursor: str | None) -> Query:
    """``query`` (ordered by a field) resumed after ``cursor``."""
    if cursor is None:
        return query
    value, doc_id = decode(cursor)
    return replace(query, start_after=value, start_after_id=doc_id)


def position(doc: Doc, order_by: str) -> Position:
    value = doc.data.get(order_by)
    return (value if isinstance(value, int | float | str) and not isinstance(value, bool) else 0.0), doc.id


def read_page(store: DocStore, query: Query, cursor: str | None, limit: int,
              parse: Callable[[Doc], T | None]) -> Page[T]:
    """One page of ``query`` (ordered by a field) after ``cursor``: ``limit`` documents read (one
    more to know whether a next page exists), each turned into an item by ``parse`` (``None`` drops a
    document that cannot be read: the page goes on, the cursor still moves past it)."""
    assert query.order_by is not None
    docs = store.query(replace(after(query, cursor), limit=limit + 1))
    return page_of(docs, limit, query.order_by, parse)


def page_of(docs: Sequence[Doc], limit: int, order_by: str, parse: Callable[[Doc], T | None]) -> Page[T]:
    """The page of ``docs`` (in the list's order, up to ``limit + 1`` of them)."""
    shown = docs[:limit]
    items = [item for d in shown if (item := parse(d)) is not None]
    more = len(docs) > limit and bool(shown)
    return Page(items, encode(position(shown[-1], order_by)) if more else None)


def page_in_memory(items: Sequence[T], key: Callable[[T], Position], cursor: str | None, limit: int, *,
                   descending: bool = False) -> Page[T]:
    """One page of a short list read whole (a user's webhooks, schedules, MCP servers, A2A agents,
    live workspaces: at most a few dozen, read with one query), with the same cursors as the lists
    paged by the store: ``key`` is an item's position (its order value and id)."""
    ordered = sorted(items, key=key, reverse=descending)
    if cursor is not None:
        start = decode(cursor)
        if ordered and type(start[0]) is not type(key(ordered[0])[0]):
            raise InvalidInput("query parameter cursor is not a cursor of this list (pass the nextCursor of the "
                               "previous page as it was)", code="INVALID_CURSOR", details={"field": "cursor"})
        ordered = [i for i in ordered if (key(i) < start if descending else key(i) > start)]
    shown = ordered[:limit]
    return Page(shown, encode(key(shown[-1])) if len(ordered) > limit else None)


def merged(sources: Sequence[Sequence[Doc]], order_by: str, *, descending: bool) -> list[Doc]:
    """Documents of several queries of one order (each resumed after the same cursor) as one list
    in that order: a list read from several queries (statuses, two collections) pages like one."""
    docs = [d for source in sources for d in source]
    return sorted(docs, key=lambda d: _typed(position(d, order_by)), reverse=descending)


def _typed(at: Position) -> tuple[tuple[int, float | str], str]:
    """A position that sorts as the stores order values of mixed types (numbers before strings), so
    a document whose order field holds a string (corrupt) sorts instead of failing the sort."""
    value, doc_id = at
    return ((1, value) if isinstance(value, str) else (0, value)), doc_id


def tolerant(read: Callable[[Doc], T], log: logging.Logger) -> Callable[[Doc], T | None]:
    """``read`` that answers ``None`` for a document it cannot read (a value out of the range the
    record accepts, a missing field, a newer schema version), naming it in the log at WARNING: one
    bad stored document must not make a whole list answer 500."""

    def parse(doc: Doc) -> T | None:
        try:
            return read(doc)
        except Exception as exc:
            log.warning("left out of a list: %s cannot be read (%s: %s)", doc.path, type(exc).__name__,
                        str(exc).splitlines()[0][:300] if str(exc) else "")
            return None

    return parse


def as_records(record: Any, log: logging.Logger) -> Callable[[Doc], Any]:
    """:func:`tolerant` reading each document as ``record`` (a ``Record`` class: ``from_doc``)."""
    return tolerant(lambda d: record.from_doc(d.data, d.path), log)
