"""Firestore's own first use, as a function: the second cold-start baseline of ``approve``,
``resume`` and ``runs`` (bench/coldstart.py, docs/benchmarks.md ``cold_start``).

The import-time baseline (the trivial function's start plus the SDK's import time) leaves out what
any function answering from Firestore pays on its first request before doing anything of its own:
creating the client and opening its gRPC channel on the first RPC. This function does exactly that
and nothing else: it imports the SDK at module load, and its first request creates a client and
reads one document, served through the same functions-framework CLI.
"""

from __future__ import annotations

import os
from typing import Any

from google.cloud import firestore


def first_read(request: Any) -> str:
    db = firestore.Client(project=os.environ["GOOGLE_CLOUD_PROJECT"])
    db.collection("benchFirstRead").document("doc").get()
    return "ok"
