"""The stores the benchmarks run on: SQLite files, and Firestore on the official emulator.

The emulator is the one named by ``FIRESTORE_EMULATOR_HOST`` if set, else one started (and
stopped) here with the test suite's helpers (tests/emulators.py).
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator

from shared.state.docstore import DocStore

PROJECT = "demo-agent-bench"


@contextlib.contextmanager
def firestore_emulator() -> Iterator[str]:
    """``host:port`` of a running Firestore emulator for the duration of the block."""
    host = os.environ.get("FIRESTORE_EMULATOR_HOST", "").strip()
    if host:
        yield host
        return
    from tests.emulators import start_firestore

    emulator = start_firestore()
    try:
        yield emulator.host
    finally:
        emulator.stop()


@contextlib.contextmanager
def firestore_store(host: str | None = None) -> Iterator[DocStore]:
    """A FirestoreDocStore on the emulator, in a fresh project so earlier data never interferes."""
    from shared.state.firestore_docstore import FirestoreDocStore

    with contextlib.ExitStack() as stack:
        if host is None:
            host = stack.enter_context(firestore_emulator())
        os.environ["FIRESTORE_EMULATOR_HOST"] = host
        from google.cloud import firestore

        client = firestore.Client(project=f"{PROJECT}-{uuid.uuid4().hex[:8]}")
        store = FirestoreDocStore(client, owns_client=True)
        stack.callback(store.close)
        yield store


@contextlib.contextmanager
def sqlite_store(path: str) -> Iterator[DocStore]:
    from shared.state.sqlite_docstore import SqliteDocStore

    store = SqliteDocStore(path)
    try:
        yield store
    finally:
        store.close()


@contextlib.contextmanager
def pubsub_emulator() -> Iterator[str]:
    """``host:port`` of a running Pub/Sub emulator for the duration of the block."""
    host = os.environ.get("PUBSUB_EMULATOR_HOST", "").strip()
    if host:
        yield host
        return
    from tests.emulators import start_pubsub

    emulator = start_pubsub()
    try:
        yield emulator.host
    finally:
        emulator.stop()
