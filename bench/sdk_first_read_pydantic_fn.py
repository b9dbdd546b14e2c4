"""Firestore's first read validated by pydantic, as a function: a reference for the cold start of
``approve``, ``resume`` and ``runs`` (bench/coldstart.py ``vs_first_read_with_pydantic``; not their
target, which stays :mod:`bench.sdk_first_read_fn`).

Our functions validate every document they read and every request body with pydantic (the
records), so part of what they pay beyond Firestore's first read is pydantic itself: its import,
the definition of one model and the build of its validator on first use. This function pays exactly
that and nothing of ours: :mod:`bench.sdk_first_read_fn` plus pydantic imported at module load, one
model defined as our records are (camelCase aliases, validator built on first use), and the document
read validated into it and written back as JSON. The part of our overhead that remains against it
is our own code's.
"""

from __future__ import annotations

import os
from typing import Any

from google.cloud import firestore
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")  # as main.py does (no plugin installed)


class Doc(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore", defer_build=True)

    doc_id: str | None = None
    created_at: float | None = None


def first_read_pydantic(request: Any) -> str:
    db = firestore.Client(project=os.environ["GOOGLE_CLOUD_PROJECT"])
    snap = db.collection("benchFirstRead").document("doc").get()
    return Doc.model_validate({"docId": snap.id, **(snap.to_dict() or {})}).model_dump_json(by_alias=True)
