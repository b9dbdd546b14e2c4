"""create_docstore picks and configures the backend named by the settings."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from shared.config import Settings
from shared.state.docstore import Write
from shared.state.factory import create_docstore
from shared.state.firestore_docstore import FirestoreDocStore
from shared.state.sqlite_docstore import SqliteDocStore
from tests.emulators import TEST_PROJECT, Emulator, reset_firestore


def test_sqlite_backend_creates_the_directory(tmp_path: Path) -> None:
    path = tmp_path / "var" / "deep" / "state.sqlite3"
    store = create_docstore(dataclasses.replace(Settings(), state_backend="sqlite", sqlite_path=str(path)))
    try:
        assert isinstance(store, SqliteDocStore)
        store.commit([Write("set", "a/1", {"x": 1})])
        assert path.exists()
    finally:
        store.close()


@pytest.mark.firestore
def test_firestore_backend_uses_the_emulator(firestore_emulator: Emulator) -> None:
    reset_firestore(firestore_emulator.host, TEST_PROJECT)
    settings = dataclasses.replace(Settings(), state_backend="firestore", google_cloud_project=TEST_PROJECT)
    store = create_docstore(settings)
    try:
        assert isinstance(store, FirestoreDocStore)
        (token,) = store.commit([Write("create", "a/1", {"x": [[1]]})])
        doc = store.get("a/1")
        assert doc is not None and doc.data == {"x": [[1]]} and doc.token == token
    finally:
        store.close()
