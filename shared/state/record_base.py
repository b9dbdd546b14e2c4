"""The base of every persisted record: camelCase documents, ``schemaVersion`` refused when newer
than this runtime knows (a rollback reading a newer writer's document)."""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from shared.errors import Internal

SCHEMA_VERSION = 1
"""Versions: 1 = first layout (runs with a turns subcollection, actions, events, approvals)."""


class SchemaVersionError(Internal):
    """A stored record was written by a newer version of the runtime (read by an older instance,
    e.g. after a rollback). Nothing is written; the HTTP edge logs it and answers 500
    ``SCHEMA_VERSION_UNSUPPORTED`` with this message instead of an anonymous internal error."""

    code = "SCHEMA_VERSION_UNSUPPORTED"


def now() -> float:
    return time.time()


class Record(BaseModel):
    # defer_build: a record's validator is built when it is first used, not when its module is
    # imported, so a cold start pays only for the records its first request touches (issue 20).
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore", defer_build=True)

    def to_doc(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    @classmethod
    def from_doc(cls, data: dict[str, Any]) -> Any:
        version = data.get("schemaVersion")
        if isinstance(version, int) and version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{cls.__name__} has schemaVersion {version}; this runtime knows up to {SCHEMA_VERSION}")
        return cls.model_validate(data)
