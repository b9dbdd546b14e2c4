"""``create_docstore``: the DocStore a process uses, chosen by ``Settings.state_backend``."""

from __future__ import annotations

import os

from shared.config import Settings
from shared.state.docstore import DocStore


def create_docstore(settings: Settings) -> DocStore:
    """A new store for ``settings``; create one per process and ``close()`` it at exit.

    - ``sqlite``: ``SqliteDocStore`` on ``settings.sqlite_path`` (its directory is created).
    - ``firestore``: ``FirestoreDocStore`` on project ``settings.google_cloud_project``; the
      client library talks to the emulator by itself when FIRESTORE_EMULATOR_HOST is set.
    """
    if settings.state_backend == "firestore":
        # Imported here so that processes on the SQLite backend never pay for the SDK import.
        from google.cloud import firestore

        from shared.state.firestore_docstore import FirestoreDocStore

        client = firestore.Client(project=settings.google_cloud_project)
        return FirestoreDocStore(client, owns_client=True)

    from shared.state.sqlite_docstore import SqliteDocStore

    path = settings.sqlite_path
    if path != ":memory:":
        parent = os.path.dirname(os.path.abspath(path))
        os.makedirs(parent, exist_ok=True)
    return SqliteDocStore(path)
