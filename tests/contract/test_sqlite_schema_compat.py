"""An older SQLite store on a newer file (a local checkout moved back, or two versions sharing one
state file): the real schema-2 store, as the last commit of schema 2 had it (``git archive``,
loaded in a subprocess that sees only that commit's ``shared.state``), uses a file the current
store wrote, while the current store keeps it open: what it reads is what the current store wrote,
its writes are seen by the current store and refused where they should be, tokens stay unique
across both, and the file stays a current-schema file (docs/architecture.md, the state seam).

A file that needs a newer store than this one (its ``meta`` row ``readerSchema``) is refused with
a clear error before anything is written."""

from __future__ import annotations

import io
import json
import os
import sqlite3
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

from shared.state.docstore import PreconditionFailed, Query, StoreError, Write
from shared.state.sqlite_docstore import OLDEST_READER, SCHEMA_VERSION, SqliteDocStore

REPO = Path(__file__).resolve().parents[2]
SCHEMA_2_COMMIT = "e7ae86efb43de5f8207f3e2b1c0776081cb61ba5"
"""The last commit whose ``shared/state/sqlite_docstore.py`` is schema 2 (the parent of beccd74)."""
SCHEMA_2_FILES = ("shared/__init__.py", "shared/errors.py", "shared/state/__init__.py", "shared/state/docstore.py",
                  "shared/state/sqlite_docstore.py")

DRIVER = """
import json, sys
from shared.state.docstore import PreconditionFailed, Query, Write
from shared.state import sqlite_docstore

path, ops = sys.argv[1], json.loads(sys.stdin.read())
store = sqlite_docstore.SqliteDocStore(path)
out = []
for op in ops:
    kind = op["op"]
    if kind == "schema":
        out.append(sqlite_docstore.SCHEMA_VERSION)
    elif kind == "get":
        doc = store.get(op["path"])
        out.append(None if doc is None else [doc.data, doc.token])
    elif kind == "query":
        out.append([[d.id, d.data, d.token] for d in store.query(Query(op["collection"], order_by=op.get("order_by")))])
    elif kind == "commit":
        try:
            out.append(store.commit([Write(**w) for w in op["writes"]]))
        except PreconditionFailed as exc:
            out.append({"refused": type(exc).__name__})
    elif kind == "bump":  # a read-modify-write transaction
        def bump(txn):
            doc = txn.get(op["path"])
            txn.write(Write("set", op["path"], {"n": (doc.data["n"] if doc else 0) + 1}))
            return (doc.data["n"] if doc else 0) + 1
        out.append(store.run_transaction(bump))
store.close()
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def schema_2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """That commit's store package, extracted from the repository's history (no git, or a clone
    without that commit: the test fails, it does not skip)."""
    root = tmp_path_factory.mktemp("schema2")
    archive = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", SCHEMA_2_COMMIT, *SCHEMA_2_FILES],
                             capture_output=True, check=False)
    assert archive.returncode == 0, f"git archive {SCHEMA_2_COMMIT}: {archive.stderr.decode()}"
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(root, filter="data")
    return root


def old_store(root: Path, path: Path, *ops: dict[str, Any]) -> list[Any]:
    """``ops`` run by the schema-2 store on ``path`` in a process of its own; their answers."""
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONSAFEPATH": "1"}
    done = subprocess.run([sys.executable, "-c", DRIVER, str(path)], input=json.dumps(list(ops)), cwd=root,
                          env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    answers: list[Any] = json.loads(done.stdout)
    return answers


def table_sql(path: Path) -> str:
    with sqlite3.connect(path) as conn:
        row = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'docs'").fetchone()
    return str(row[0])


def test_a_schema_2_store_works_on_a_schema_3_file_beside_the_current_store(schema_2: Path, tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite3"
    store = SqliteDocStore(str(path))
    try:
        t_user, t_run, *t_turns = store.commit(
            [Write("create", "users/alice", {"name": "Alice", "n": 1.5}), Write("set", "runs/r1", {"status": "queued"})]
            + [Write("create", f"runs/r1/turns/t{i}", {"i": i, "text": "é" * 600 * i}) for i in range(3)])
        (t_day,) = store.commit([Write("increment", "users/alice/usageDays/d1", {"tokens": 5})])
        assert "WITHOUT ROWID" not in table_sql(path).upper()  # a schema-3 file

        schema, user, turns, again, moved, created, bumped = old_store(
            schema_2, path,
            {"op": "schema"},
            {"op": "get", "path": "users/alice"},
            {"op": "query", "collection": "runs/r1/turns", "order_by": "i"},
            {"op": "commit", "writes": [{"op": "create", "path": "users/alice", "data": {"name": "Mallory"}}]},
            {"op": "commit", "writes": [{"op": "update", "path": "runs/r1", "data": {"status": "executing"},
                                         "if_token": t_run}]},
            {"op": "commit", "writes": [
                {"op": "create", "path": "runs/r1/turns/t3", "data": {"i": 3}},
                {"op": "delete", "path": "runs/r1/turns/t0"},
                {"op": "increment", "path": "users/alice/usageDays/d1", "data": {"tokens": 7}}]},
            {"op": "bump", "path": "counters/c"})
        assert schema == 2  # the old code ran, not this checkout's
        # It reads what the current store wrote, tokens included.
        assert user == [{"name": "Alice", "n": 1.5}, t_user]
        assert turns == [[f"t{i}", {"i": i, "text": "é" * 600 * i}, t_turns[i]] for i in range(3)]
        # Its create of an existing document is refused (by the unique index, as by its key).
        assert again == {"refused": "PreconditionFailed"}
        assert bumped == 1

        # The current store, open all along, sees the old store's writes and their tokens.
        with pytest.raises(PreconditionFailed):
            store.commit([Write("update", "runs/r1", {"status": "failed"}, if_token=t_run)])
        run = store.get("runs/r1")
        assert run is not None and run.data == {"status": "executing"} and [run.token] == moved
        assert [(d.id, d.token) for d in store.query(Query("runs/r1/turns", order_by="i"))] == [
            ("t1", t_turns[1]), ("t2", t_turns[2]), ("t3", created[0])]
        day = store.get("users/alice/usageDays/d1")
        assert day is not None and day.data == {"tokens": 12}
        mine = store.commit([Write("update", "runs/r1", {"status": "completed"}, if_token=run.token),
                             Write("increment", "counters/c", {"n": 1})])

        # And the old store sees those in turn (a second process of it, after the current store wrote).
        final, counter = old_store(schema_2, path, {"op": "get", "path": "runs/r1"},
                                   {"op": "bump", "path": "counters/c"})
        assert final == [{"status": "completed"}, mine[0]]
        assert counter == 3
        last = store.get("counters/c")
        assert last is not None and last.data == {"n": 3}
        # Every commit of either store got a token of its own (a commit's documents share its token).
        assert {t_user, t_run, *t_turns} == {t_user}
        tokens = [t_user, t_day, moved[0], created[0], mine[0], last.token]
        assert len(set(tokens)) == len(tokens), tokens
    finally:
        store.close()

    # The old store left the file a schema-3 file: reopened, nothing to convert, nothing lost.
    assert "WITHOUT ROWID" not in table_sql(path).upper()
    reopened = SqliteDocStore(str(path))
    try:
        assert reopened._conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert reopened._conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert [d.id for d in reopened.query(Query("runs/r1/turns"))] == ["t1", "t2", "t3"]
        (t_new,) = reopened.commit([Write("create", "runs/r1/turns/t4", {"i": 4})])
        assert t_new not in tokens
    finally:
        reopened.close()


def test_a_file_that_needs_a_newer_store_is_refused_untouched(tmp_path: Path) -> None:
    """A later schema that older stores must not use says so in ``meta`` (``readerSchema``: the
    oldest schema whose store may open the file); this store refuses such a file, naming both
    schemas, and writes nothing to it."""
    path = tmp_path / "state.sqlite3"
    SqliteDocStore(str(path)).close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'readerSchema'").fetchone() == (OLDEST_READER,)
        conn.execute("UPDATE meta SET value = ? WHERE key = 'readerSchema'", (SCHEMA_VERSION + 1,))
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    before = path.read_bytes()

    with pytest.raises(StoreError, match=rf"needs a store of schema {SCHEMA_VERSION + 1} or later.*"
                                         rf"this code's store is schema {SCHEMA_VERSION}"):
        SqliteDocStore(str(path))
    assert path.read_bytes() == before
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1


def test_a_newer_but_compatible_file_keeps_its_version(tmp_path: Path) -> None:
    """A later schema that this store may still use (``readerSchema`` not above this one's) is
    opened, and its ``user_version`` is not lowered to this store's."""
    path = tmp_path / "state.sqlite3"
    SqliteDocStore(str(path)).close()
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    store = SqliteDocStore(str(path))
    try:
        store.commit([Write("create", "a/1", {})])
        assert store._conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1
    finally:
        store.close()
