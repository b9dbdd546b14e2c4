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
``STORED_VALUE_INVALID`` instead of a 500.
"""

from __future__ import annotations

import functools
import time
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator
from pydantic.alias_generators import to_camel

from shared.errors import Internal, StoredValueInvalid
from shared.formats import validation_problems
from shared.wire import MAX_EPOCH_S

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
            problems = stored_problems(exc)
            where = path or f"a stored {cls.__name__}"
            said = "; ".join(p["message"] if p["field"] == "(document)" else f"{p['field']}: {p['message']}"
                             for p in problems[:3])
            raise StoredValueInvalid(f"{where} cannot be read as a {cls.__name__} ({said}): a corrupt or hand-edited "
                                     "document", details={"object": where, "errors": problems[:20]}) from None
