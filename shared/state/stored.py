"""Typed reads of the fields of a raw stored document (one kept as a dict, not a record: a user's MCP
servers, remote A2A agents and webhooks, whose sealed parts only their adapter opens).

Each answers the field when it holds a value of its type and range, else ``None`` (or empty): a
corrupt or hand-edited value is answered as unknown instead of failing the read (issue 35). Records
(``shared/state/record_base.py``) are checked whole instead.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Any

from shared.state.docstore import Doc
from shared.wire import MAX_INT64, epoch_or_none

log = logging.getLogger("agent_runtime.state")


def text(doc: Mapping[str, Any], key: str) -> str | None:
    value = doc.get(key)
    return value if isinstance(value, str) else None


def texts(doc: Mapping[str, Any], key: str) -> list[str]:
    """The strings of a list field (anything else in it, or a field that is no list: left out)."""
    value = doc.get(key)
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def flag(doc: Mapping[str, Any], key: str) -> bool:
    return doc.get(key) is True


def number(value: Any) -> float | None:
    """``value`` if it is a finite number (not a boolean)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def count(doc: Mapping[str, Any] | None, key: str) -> int:
    """A counter field (an increment's sum): its integer value, 0 when absent or not a finite number
    (within the int64 the stores keep)."""
    value = number(doc.get(key)) if doc is not None else None
    return int(max(-MAX_INT64, min(MAX_INT64, value))) if value is not None else 0


def instant(doc: Mapping[str, Any], key: str) -> float | None:
    """A time (epoch seconds within ``0..MAX_EPOCH_S``)."""
    return epoch_or_none(doc.get(key))


def event_seq(event: Any) -> int | None:
    """The ``seq`` of a stored event: a positive integer (``None``: not an event one can replay)."""
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        return None
    seq = event.get("seq")
    return seq if isinstance(seq, int) and not isinstance(seq, bool) and 0 < seq <= MAX_INT64 else None


def events_of(doc: Doc, after: int, hidden: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """The events a stored event document holds with ``seq`` > ``after``: one event (the document
    itself) or a commit's events (``{"events": [...]}``), without the ``hidden`` fields (a TTL). One
    that is not an event (no integer ``seq``, no ``type``) is left out and named in the log, so a
    replay goes on past it."""
    shared = doc.data.get("events") if "seq" not in doc.data else None
    candidates = shared if isinstance(shared, list) else [doc.data]
    out: list[dict[str, Any]] = []
    for i, ev in enumerate(candidates):
        seq = event_seq(ev)
        if seq is None:
            log.warning("left out of an event replay: %s (event %d) is not an event (no integer seq or no type)",
                        doc.path, i)
        elif seq > after:
            out.append({k: v for k, v in ev.items() if k not in hidden} if hidden else ev)
    return out
