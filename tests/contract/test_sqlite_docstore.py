"""SqliteDocStore specifics beyond the shared contract: files, re-opening, settings."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from shared.state.docstore import PreconditionFailed, Query, StoreError, Transaction, Write
from shared.state.sqlite_docstore import REV_BLOCK, SqliteDocStore, _stored


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


_SCHEMA_1 = """
CREATE TABLE docs (path TEXT PRIMARY KEY, parent TEXT NOT NULL, id TEXT NOT NULL, data TEXT NOT NULL,
                   rev INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX docs_parent_id ON docs (parent, id);
CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
INSERT INTO meta (key, value) VALUES ('rev', 7);
INSERT INTO docs VALUES ('runs/r', 'runs', 'r', '{"v":1}', 5);
INSERT INTO docs VALUES ('runs/r/events/1', 'runs/r/events', '1', '{"seq":1}', 6);
INSERT INTO docs VALUES ('runs/s', 'runs', 's', '{"v":2}', 7);
PRAGMA user_version=1;
"""


def _old_file(tmp_path: Path, script: str) -> str:
    """A store file as an earlier schema wrote it (``script``: its tables and documents)."""
    import sqlite3

    path = str(tmp_path / "old.sqlite3")
    old = sqlite3.connect(path)
    old.executescript(script)
    old.close()
    return path


def test_a_schema_1_file_is_converted_with_its_documents_and_tokens(tmp_path: Path) -> None:
    path = _old_file(tmp_path, _SCHEMA_1)
    store = SqliteDocStore(path)
    try:
        doc = store.get("runs/r")
        assert doc is not None and doc.data == {"v": 1} and doc.token == "5"
        assert [(d.path, d.token) for d in store.query(Query("runs"))] == [("runs/r", "5"), ("runs/s", "7")]
        assert [d.path for d in store.query(Query("runs/r/events"))] == ["runs/r/events/1"]
        store.commit([Write("set", "runs/r", {"v": 3}, if_token="5")])  # the old token still holds
        (created,) = store.commit([Write("create", "runs/t", {})])
        assert int(created) > 7  # the revision counter carries on
        tables = store._conn.execute("SELECT name FROM sqlite_master ORDER BY name").fetchall()
        assert [t[0] for t in tables] == ["docs", "docs_key", "meta"]  # one index, no leftover table
        assert store._conn.execute("PRAGMA user_version").fetchone()[0] == 3
    finally:
        store.close()
    again = SqliteDocStore(path)  # opening a converted file changes nothing
    try:
        doc = again.get("runs/r")
        assert doc is not None and doc.data == {"v": 3}
    finally:
        again.close()


_SCHEMA_2 = """
CREATE TABLE docs (parent TEXT NOT NULL, id TEXT NOT NULL, data TEXT NOT NULL, rev INTEGER NOT NULL,
                   PRIMARY KEY (parent, id)) WITHOUT ROWID;
CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
INSERT INTO meta (key, value) VALUES ('rev', 9);
INSERT INTO docs VALUES ('runs', 'r', '{"v":1}', 5);
INSERT INTO docs VALUES ('runs/r/events', '00000002', '{"seq":2}', 9);
INSERT INTO docs VALUES ('runs/r/events', '00000001', '{"seq":1}', 6);
INSERT INTO docs VALUES ('runs', 's', '{"v":2}', 7);
PRAGMA user_version=2;
"""


def test_a_schema_2_file_is_converted_with_its_documents_and_tokens(tmp_path: Path) -> None:
    """Schema 3 (issue 33, session 3): a rowid table whose rows hold documents of up to ~4 KB and
    one unique index on (parent, id); a schema-2 file (WITHOUT ROWID) is converted when opened, and
    a converted file is not converted again."""
    path = _old_file(tmp_path, _SCHEMA_2)
    store = SqliteDocStore(path)
    try:
        assert [(d.path, d.token) for d in store.query(Query("runs"))] == [("runs/r", "5"), ("runs/s", "7")]
        assert [d.data["seq"] for d in store.query(Query("runs/r/events", start_after="00000001"))] == [2]
        store.commit([Write("set", "runs/r", {"v": 3}, if_token="5")])  # the old token still holds
        with pytest.raises(PreconditionFailed):
            store.commit([Write("create", "runs/s", {})])  # the unique key still refuses a second one
        (created,) = store.commit([Write("create", "runs/t", {})])
        assert int(created) > 9  # the revision counter carries on
        sql = store._conn.execute("SELECT sql FROM sqlite_master WHERE name = 'docs'").fetchone()[0]
        assert "WITHOUT ROWID" not in sql.upper()
        assert store._conn.execute("PRAGMA user_version").fetchone()[0] == 3
    finally:
        store.close()
    again = SqliteDocStore(path)
    try:
        doc = again.get("runs/r")
        assert doc is not None and doc.data == {"v": 3}
        assert [d.path for d in again.query(Query("runs"))] == ["runs/r", "runs/s", "runs/t"]
    finally:
        again.close()


def test_a_document_rewritten_keeps_its_row_and_writes_one_page(tmp_path: Path) -> None:
    """A step's documents (~2 KB) fit in their rows: rewriting the run document changes its row in
    place (same rowid) and the commit writes one page to the WAL (the row's page; the revision
    counter's row is written once per ``REV_BLOCK`` commits, the first of them here), where schema 2
    also wrote an overflow page and freed another, and wrote the counter's page (4)."""
    path = tmp_path / "rows.sqlite3"
    store = SqliteDocStore(str(path))
    try:
        store._conn.execute("PRAGMA wal_autocheckpoint=0")
        (token,) = store.commit([Write("create", "runs/r", {"text": "x" * 2000})])
        rowid = store._conn.execute("SELECT rowid FROM docs WHERE parent = 'runs' AND id = 'r'").fetchone()[0]
        wal = Path(f"{path}-wal")
        before = wal.stat().st_size
        store.commit([Write("set", "runs/r", {"text": "y" * 2100}, if_token=token)])
        frames = (wal.stat().st_size - before) // (4096 + 24)
        again = store._conn.execute("SELECT rowid FROM docs WHERE parent = 'runs' AND id = 'r'").fetchone()[0]
        assert again == rowid and frames == 1, (rowid, again, frames)
    finally:
        store.close()


def _counter(store: SqliteDocStore) -> int:
    return int(store._conn.execute("SELECT value FROM meta WHERE key = 'rev'").fetchone()[0])


def test_revisions_are_reserved_a_block_at_a_time(tmp_path: Path) -> None:
    """The counter's row is written by the first commit of each ``REV_BLOCK``, not by every commit;
    a store's tokens grow by one per commit."""
    store = SqliteDocStore(str(tmp_path / "revs.sqlite3"))
    try:
        start = _counter(store)
        tokens = [store.commit([Write("set", f"a/{i}", {"i": i})])[0] for i in range(REV_BLOCK + 1)]
        assert [int(t) for t in tokens] == list(range(start + 1, start + REV_BLOCK + 2))
        assert _counter(store) == start + 2 * REV_BLOCK  # reserved twice in REV_BLOCK + 1 commits
    finally:
        store.close()


def _writing(*writes: Write) -> Callable[[Transaction], None]:
    def fn(t: Transaction) -> None:
        for w in writes:
            t.write(w)
    return fn


def test_two_stores_on_one_file_never_share_a_token(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.sqlite3")
    a, b = SqliteDocStore(path), SqliteDocStore(path)
    try:
        tokens = []
        for i in range(5):
            tokens += a.commit([Write("set", f"a/{i}", {"i": i})])
            tokens += b.commit([Write("set", f"b/{i}", {"i": i})])
            b.run_transaction(_writing(Write("set", f"c/{i}", {"i": i})))
            written = a.get(f"c/{i}")
            assert written is not None
            tokens.append(written.token)
        assert len(set(tokens)) == len(tokens), tokens
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize("how", ["commit", "run_transaction"])
def test_revisions_reserved_by_a_rolled_back_commit_are_not_used(tmp_path: Path, how: str) -> None:
    """A rollback takes the counter's row back: the block it reserved may be reserved by another
    store, so the store that rolled back reserves a new one."""
    path = str(tmp_path / "rollback.sqlite3")
    a, b = SqliteDocStore(path), SqliteDocStore(path)
    try:
        with pytest.raises(PreconditionFailed):  # a's first commit reserves a block, then fails
            if how == "commit":
                a.commit([Write("set", "x/1", {}), Write("update", "x/missing", {"v": 1})])
            else:
                a.run_transaction(_writing(Write("set", "x/1", {}), Write("update", "x/missing", {"v": 1})))
        assert a.get("x/1") is None
        tokens = [b.commit([Write("set", f"b/{i}", {})])[0] for i in range(3)]
        tokens += [a.commit([Write("set", f"a/{i}", {})])[0] for i in range(3)]
        assert len(set(tokens)) == len(tokens), tokens
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize("text", ['{"a":1E2,"b":-0,"c":0.0,"d":1e-7,"e":1.7976931348623157e308,"f":5e-324}',
                                  '{"big":18446744073709551616,"neg":-9223372036854775809,"x":123.456e-2}',
                                  '{"s":"\\u00e9\\n\\"","l":[1,{"b":[true,null]}],"a":1,"a":2}',
                                  '{"lone":"\\ud800"}'])
def test_stored_text_decodes_as_the_json_module_decodes_it(text: str) -> None:
    """What a write compares with or changes is decoded by pydantic-core (the json module for a lone
    surrogate, which it refuses): the same values, of the same types, as ``json.loads``."""
    got, want = _stored(text), json.loads(text)
    assert got == want and json.dumps(got) == json.dumps(want)
