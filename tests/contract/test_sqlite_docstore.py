"""SqliteDocStore specifics beyond the shared contract: files, re-opening, settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared.state.docstore import PreconditionFailed, Query, StoreError, Write
from shared.state.sqlite_docstore import SqliteDocStore


def test_data_and_tokens_survive_reopening(tmp_path: Path) -> None:
    path = str(tmp_path / "state.sqlite3")
    store = SqliteDocStore(path)
    t1, _ = store.commit([Write("create", "runs/r", {"v": [[1]]}), Write("create", "runs/r/events/1", {})])
    store.commit([Write("delete", "runs/r/events/1")])
    store.close()

    reopened = SqliteDocStore(path)
    try:
        doc = reopened.get("runs/r")
        assert doc is not None and doc.data == {"v": [[1]]} and doc.token == t1
        # The revision counter carries on: a re-created document never gets an old token back.
        (t_new,) = reopened.commit([Write("create", "runs/r/events/1", {})])
        assert int(t_new) > int(t1)
        reopened.commit([Write("set", "runs/r", {"v": 2}, if_token=t1)])
        with pytest.raises(PreconditionFailed):
            reopened.commit([Write("set", "runs/r", {"v": 3}, if_token=t1)])
    finally:
        reopened.close()


def test_in_memory_store(tmp_path: Path) -> None:
    store = SqliteDocStore(":memory:")
    store.commit([Write("set", "a/1", {"x": 1}), Write("set", "a/2", {"x": 2})])
    assert [d.id for d in store.query(Query("a", order_by="x", descending=True))] == ["2", "1"]
    store.close()


def test_wal_mode_and_synchronous_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = SqliteDocStore(str(tmp_path / "a.sqlite3"), synchronous="full")
    assert store.synchronous == "FULL"
    assert store._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store._conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    store.close()
    monkeypatch.setenv("SQLITE_SYNCHRONOUS", "normal")
    store = SqliteDocStore(str(tmp_path / "b.sqlite3"))
    assert store._conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    store.close()
    with pytest.raises(ValueError, match="synchronous"):
        SqliteDocStore(str(tmp_path / "c.sqlite3"), synchronous="sometimes")


def test_commit_inside_transaction_is_refused(sqlite_docstore: SqliteDocStore) -> None:
    def nested(t: object) -> None:
        sqlite_docstore.commit([Write("set", "a/1", {})])

    with pytest.raises(StoreError, match="inside run_transaction"):
        sqlite_docstore.run_transaction(nested)
    assert sqlite_docstore.get("a/1") is None


def test_unopenable_file_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError):
        SqliteDocStore(str(tmp_path / "missing-dir" / "state.sqlite3"))
