"""Session-wide fixtures: the emulators (one of each per test session) and the document stores.

- ``firestore_emulator`` / ``pubsub_emulator``: started on first use, stopped at session end;
  they set FIRESTORE_EMULATOR_HOST / PUBSUB_EMULATOR_HOST and GOOGLE_CLOUD_PROJECT. An emulator
  already named by FIRESTORE_EMULATOR_HOST (or PUBSUB_EMULATOR_HOST) at session start is reused.
  If one cannot start the tests using it ERROR; they are never skipped.
- ``firestore_docstore``: a FirestoreDocStore on emptied emulator data (client shared per session).
- ``sqlite_docstore``: a SqliteDocStore on a fresh file.
- ``docstore``: both, for the contract suite.

Sub-directory conftest files add their own fixtures; keep this one to processes and stores.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from shared.state.docstore import DocStore
from shared.state.sqlite_docstore import SqliteDocStore
from tests.emulators import TEST_PROJECT, Emulator, reset_firestore, start_firestore, start_pubsub

if TYPE_CHECKING:
    from google.cloud import firestore

    from shared.state.firestore_docstore import FirestoreDocStore


def _emulator(name: str, env_var: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    existing = os.environ.get(env_var, "").strip()
    with pytest.MonkeyPatch.context() as mp:
        if existing:
            emu = Emulator(name, existing)
        else:
            log_dir = tmp_path_factory.mktemp(f"{name}-emulator")
            emu = start_firestore(log_dir=log_dir) if name == "firestore" else start_pubsub(log_dir=log_dir)
        mp.setenv(env_var, emu.host)
        mp.setenv("GOOGLE_CLOUD_PROJECT", TEST_PROJECT)
        try:
            yield emu
        finally:
            emu.stop()


@pytest.fixture(scope="session")
def firestore_emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    """The Firestore emulator of this session (FIRESTORE_EMULATOR_HOST points at it)."""
    yield from _emulator("firestore", "FIRESTORE_EMULATOR_HOST", tmp_path_factory)


@pytest.fixture(scope="session")
def pubsub_emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    """The Pub/Sub emulator of this session (PUBSUB_EMULATOR_HOST points at it)."""
    yield from _emulator("pubsub", "PUBSUB_EMULATOR_HOST", tmp_path_factory)


@pytest.fixture(scope="session")
def firestore_client(firestore_emulator: Emulator) -> Iterator[firestore.Client]:
    """One Firestore client per session, on the emulator's test project."""
    from google.cloud import firestore

    client = firestore.Client(project=TEST_PROJECT)
    yield client
    client.close()  # type: ignore[no-untyped-call]


@pytest.fixture
def firestore_docstore(firestore_emulator: Emulator, firestore_client: firestore.Client) -> FirestoreDocStore:
    """A FirestoreDocStore on an emptied emulator database."""
    from shared.state.firestore_docstore import FirestoreDocStore

    reset_firestore(firestore_emulator.host, TEST_PROJECT)
    return FirestoreDocStore(firestore_client)


@pytest.fixture
def sqlite_docstore(tmp_path: Path) -> Iterator[SqliteDocStore]:
    """A SqliteDocStore on a new file in the test's temporary directory."""
    store = SqliteDocStore(str(tmp_path / "state.sqlite3"))
    yield store
    store.close()


@pytest.fixture(params=["sqlite", pytest.param("firestore", marks=pytest.mark.firestore)])
def docstore(request: pytest.FixtureRequest) -> DocStore:
    """Each DocStore implementation in turn (for the contract suite)."""
    store: DocStore = request.getfixturevalue(f"{request.param}_docstore")
    return store
