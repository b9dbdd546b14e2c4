"""The base of every persisted record: camelCase documents, ``schemaVersion`` refused when newer
than this runtime knows (a rollback reading a newer writer's document), and every value checked to
the range the code reading it accepts, on the way in and on the way out.

Stored values (issue 35): a record refuses NaN and infinities in any number field, and a time (a
``float`` field named ``at`` or ``*_at``: epoch seconds) outside ``0..MAX_EPOCH_S`` (9999-12-31, the last
instant the API can write as RFC 3339). So a value that could not be answered is never stored (a
record is validated when it is built, before it is written), and a stored document that is not a
valid record (corrupt, hand-edited, written before a check existed) is refused when it is read:
:meth:`Record.from_doc` raises :class:`~shared.errors.StoredValueInvalid` naming the document, which
a list leaves out (``shared/state/pages.py`` ``tolerant``) and a single read answers as a 409
``STORED_VALUE_INVALID`` instead of a 500. Documents kept as dicts (not records) are read field by
field with the helpers at the end ("raw documents").
"""

from __future__ import annotations

import functools
import logging
import math
import time
from collections.abc import Mapping
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator
from pydantic.alias_generators import to_camel

from shared.errors import Internal, StoredValueInvalid
from shared.formats import validation_problems
from shared.state.docstore import Doc
from shared.wire import MAX_EPOCH_S, MAX_INT64, epoch_or_none

log = logging.getLogger("agent_runtime.state")

SCHEMA_VERSION = 1
"""Versions: 1 = first layout (runs with a turns subcollection, actions, events, approvals)."""


class SchemaVersionError(Internal):
    """A stored record was written by a newer version of the runtime (read by an older instance,
    e.g. after a rollback). Nothing is written; the HTTP edge logs it and answers 500
    ``SCHEMA_VERSION_UNSUPPORTED`` with this message instead of an anonymous internal error."""

    code = "SCHEMA_VERSION_UNSUPPORTED"


def now() -> float:
    return time.time()


@functools.cache
def _time_fields(cls: type[BaseModel]) -> tuple[str, ...]:
    """The fields of ``cls`` that hold a time: ``float`` (or optional) fields named ``at`` or ``*_at``."""
    return tuple(name for name, f in cls.model_fields.items()
                 if (name == "at" or name.endswith("_at")) and f.annotation in (float, float | None))


def stored_problems(exc: ValidationError) -> list[dict[str, str]]:
    """What a ValidationError says, as ``[{field, message}]`` (field names as stored: camelCase)."""
    return [{"field": field, "message": message.removeprefix("Value error, ")}
            for field, message in validation_problems(exc, root="(document)")]


class Record(BaseModel):
    # defer_build: a record's validator is built when it is first used, not when its module is
    # imported, so a cold start pays only for the records its first request touches (issue 20).
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore", defer_build=True,
                              allow_inf_nan=False)

    @model_validator(mode="after")
    def _times_in_range(self) -> Self:
        for name in _time_fields(type(self)):
            value = getattr(self, name)
            if value is not None and not 0 <= value <= MAX_EPOCH_S:
                raise ValueError(f"{to_camel(name)} is {value}: a time is epoch seconds within 0..{MAX_EPOCH_S:.0f} "
                                 "(9999-12-31)")
        return self

    def to_doc(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    @classmethod
    def from_doc(cls, data: dict[str, Any], path: str | None = None) -> Any:
        """The record ``data`` (the document at ``path``) holds; :class:`StoredValueInvalid` naming the
        document and its bad fields when it holds none."""
        version = data.get("schemaVersion")
        if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{cls.__name__} has schemaVersion {version}; this runtime knows up to {SCHEMA_VERSION}")
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise unreadable(path or f"a stored {cls.__name__}", cls.__name__, exc) from None


def unreadable(where: str, kind: str, exc: ValidationError) -> StoredValueInvalid:
    """The refusal of the document at ``where`` that is no valid ``kind`` (``exc`` says why):
    :class:`StoredValueInvalid` naming it and its bad fields. For stored values read as models other
    than records (a run's turns)."""
    problems = stored_problems(exc)
    said = "; ".join(p["message"] if p["field"] == "(document)" else f"{p['field']}: {p['message']}"
                     for p in problems[:3])
    return StoredValueInvalid(f"{where} cannot be read as a {kind} ({said}): a corrupt or hand-edited document",
                              details={"object": where, "errors": problems[:20]})


# ---- raw documents ----------------------------------------------------------------------------------
# Typed reads of the fields of a stored document kept as a dict, not a record (a user's MCP servers,
# remote A2A agents and webhooks, whose sealed parts only their adapter opens; counters; events):
# each answers the field when it holds a value of its type and range, else ``None`` (or empty, or 0):
# a corrupt or hand-edited value reads as unknown instead of failing the read (issue 35).


def field_text(doc: Mapping[str, Any], key: str) -> str | None:
    value = doc.get(key)
    return value if isinstance(value, str) else None


def field_texts(doc: Mapping[str, Any], key: str) -> list[str]:
    """The strings of a list field (anything else in it, or a field that is no list: left out)."""
    value = doc.get(key)
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def field_flag(doc: Mapping[str, Any], key: str) -> bool:
    return doc.get(key) is True


def finite(value: Any) -> float | None:
    """``value`` if it is a finite number (not a boolean)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def field_count(doc: Mapping[str, Any] | None, key: str) -> int:
    """A counter field (an increment's sum): its integer value, 0 when absent or not a finite number
    (within the int64 the stores keep)."""
    value = finite(doc.get(key)) if doc is not None else None
    return int(max(-MAX_INT64, min(MAX_INT64, value))) if value is not None else 0


def field_instant(doc: Mapping[str, Any], key: str) -> float | None:
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


def json_safe(value: Any) -> Any:
    """``value`` with every number JSON cannot write (NaN, infinities: Firestore holds them) as
    ``None``: what the export answers of a document as stored."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_safe(v) for v in value]
    return value
