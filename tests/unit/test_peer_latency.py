"""Issue 33: what ``bench/peer_latency.py`` counts in a peer's start (it runs in the peers' venv;
here its counting runs on stand-in store classes over real SQLite): each store API call is one
round trip, the calls before the first model call are the start's, a write that returned before it
means the input was stored first, and an SQL statement run outside every counted call is caught."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from bench import peer_latency
from bench.peer_latency import Trace


@pytest.fixture
def trace(monkeypatch: pytest.MonkeyPatch) -> Trace:
    monkeypatch.setattr(sqlite3, "connect", sqlite3.connect)  # put back after the test
    fresh = Trace()
    monkeypatch.setattr(peer_latency, "TRACE", fresh)
    peer_latency.trace_sqlite()
    return fresh


class Saver:
    """A checkpointer-like store: a read, and a write of two statements in one transaction."""

    def __init__(self, path: Path) -> None:
        self.conn = sqlite3.connect(path)
        self.conn.execute("CREATE TABLE IF NOT EXISTS cp (k TEXT PRIMARY KEY, v TEXT)")

    def get(self, key: str) -> Any:
        return self.conn.execute("SELECT v FROM cp WHERE k = ?", (key,)).fetchone()

    def put(self, key: str, value: str) -> None:
        with self.conn:
            self.conn.execute("INSERT OR REPLACE INTO cp VALUES (?, ?)", (key, value))
            self.conn.execute("SELECT count(*) FROM cp")


class Session(Saver):
    async def get_items(self) -> Any:
        return self.get("s")

    async def add_items(self, value: str) -> None:
        self.put("s", value)


def test_a_start_counts_the_store_calls_before_the_first_model_call(trace: Trace, tmp_path: Path) -> None:
    class Counted(Saver):
        pass

    peer_latency._wrap(Counted, ("get", "put"), writes=("put",), is_async=False)
    store = Counted(tmp_path / "s.sqlite")  # built before the clock, as the script does
    trace.latency_s = 0.001
    trace.begin()
    store.get("t")
    store.put("t", "input")
    trace.model_called()
    store.put("t", "answer")  # after the first model call: not the start's
    trace.model_called()  # a second model call changes nothing
    assert trace.calls_before_model == ["Counted.get", "Counted.put"] and len(trace.calls) == 3
    assert trace.writes_done == ["Counted.put"]
    assert trace.sql_before_model >= 3 and trace.sql_outside == 0


def test_a_read_only_start_has_not_stored_its_input(trace: Trace, tmp_path: Path) -> None:
    class Counted(Saver):
        pass

    peer_latency._wrap(Counted, ("get", "put"), writes=("put",), is_async=False)
    store = Counted(tmp_path / "s.sqlite")
    trace.begin()
    store.get("t")
    trace.model_called()
    assert trace.calls_before_model == ["Counted.get"] and trace.writes_done == []


def test_database_work_outside_the_counted_calls_is_caught(trace: Trace, tmp_path: Path) -> None:
    class Counted(Saver):
        pass

    peer_latency._wrap(Counted, ("get",), writes=(), is_async=False)  # put left uncounted
    store = Counted(tmp_path / "s.sqlite")
    trace.begin()
    store.get("t")
    store.put("t", "input")
    trace.model_called()
    assert trace.calls_before_model == ["Counted.get"] and trace.sql_outside >= 2


def test_async_store_calls_are_counted_and_awaited(trace: Trace, tmp_path: Path) -> None:
    class Counted(Session):
        pass

    peer_latency._wrap(Counted, ("get_items", "add_items"), writes=("add_items",), is_async=True)
    session = Counted(tmp_path / "s.sqlite")

    async def start() -> None:
        trace.latency_s = 0.001
        trace.begin()
        await session.get_items()
        await session.add_items("input")
        trace.model_called()

    asyncio.run(start())
    assert trace.calls_before_model == ["Counted.get_items", "Counted.add_items"]
    assert trace.writes_done == ["Counted.add_items"] and trace.sql_outside == 0
    assert session.get("s") == ("input",)
