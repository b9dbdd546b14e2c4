"""The stores the benchmarks run on: SQLite files, and Firestore on the official emulator.

The emulator is the one named by ``FIRESTORE_EMULATOR_HOST`` if set, else one started (and
stopped) here with the test suite's helpers (tests/emulators.py).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import tempfile
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from shared.state.docstore import DocStore

PROJECT = "demo-agent-bench"


@contextlib.contextmanager
def _emulator(variable: str, name: str) -> Iterator[str]:
    """``host:port`` of the emulator ``variable`` names, else of one started (``start_<name>`` of
    tests/emulators.py) and stopped after the block."""
    host = os.environ.get(variable, "").strip()
    if host:
        yield host
        return
    from tests import emulators

    emulator = getattr(emulators, f"start_{name}")()
    try:
        yield emulator.host
    finally:
        emulator.stop()


def firestore_emulator() -> contextlib.AbstractContextManager[str]:
    """``host:port`` of a running Firestore emulator for the duration of the block."""
    return _emulator("FIRESTORE_EMULATOR_HOST", "firestore")


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
def store_of(kind: str) -> Iterator[DocStore]:
    """``sqlite``: a new file in a temporary directory; ``firestore``: the emulator (``--store``)."""
    if kind == "firestore":
        with firestore_store() as store:
            yield store
        return
    with tempfile.TemporaryDirectory(prefix="bench-") as folder, \
            sqlite_store(os.path.join(folder, "state.sqlite3")) as store:
        yield store


def reliability_parser(doc: str | None, *, max_rounds: int) -> argparse.ArgumentParser:
    """The options a reliability run shares: ``--seed``, ``--lease``, ``--max-rounds``, ``--store``."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--lease", type=float, default=0.2)
    p.add_argument("--max-rounds", type=int, default=max_rounds)
    p.add_argument("--store", choices=["sqlite", "firestore"], default="sqlite")
    return p


def run_on_store(run: Callable[[argparse.Namespace, DocStore], dict[str, Any]], opts: argparse.Namespace) -> int:
    """``run(opts, store)`` on the ``--store`` asked for; its figures printed (JSON); 0 when ``ok``."""
    with store_of(opts.store) as store:
        out = run(opts, store)
    print(json.dumps(out, indent=2))
    return 0 if out["ok"] else 1


def pubsub_emulator() -> contextlib.AbstractContextManager[str]:
    """``host:port`` of a running Pub/Sub emulator for the duration of the block."""
    return _emulator("PUBSUB_EMULATOR_HOST", "pubsub")
