"""Starting a run reads a bounded number of documents, whatever the user's history (issue 20).

The store is the real one (SQLite, the Firestore emulator) behind ``bench.instrument``'s counting
wrapper: every read goes to it unchanged and is counted per collection. Counts only, no timings.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from flask.testing import FlaskClient

from bench.growth import ledger_writes
from bench.instrument import InstrumentedStore
from shared.auth import LocalAuthenticator
from shared.durable.dispatcher import RecordingDispatcher
from shared.models.scripted import FunctionModel, text_turn
from shared.runtime import Runtime, set_runtime
from shared.state.docstore import DocStore
from tests.agent.conftest import make_settings
from tests.limits.conftest import ALICE, Clock

DAY = "2031-03-04"
ENTRIES = 500
TOKENS_EACH = 10


def _fill_ledger(store: DocStore) -> None:
    """``ENTRIES`` earlier calls of alice on ``DAY``, written as the loop writes them (entry and
    counter increment in one commit)."""
    for batch in ledger_writes("alice", DAY, ENTRIES, tokens_each=TOKENS_EACH):
        store.commit(batch)


def _start_reads(client: FlaskClient, store: InstrumentedStore) -> dict[str, Any]:
    """The store reads of one ``POST /api/agent/run`` of alice (start, one model call, stop)."""
    before = store.snapshot()
    resp = client.post("/api/agent/run", json={"prompt": "hello"}, headers=ALICE)
    assert resp.status_code == 200, resp.get_json()
    assert resp.get_json()["status"] == "completed"
    delta = InstrumentedStore.delta(store.snapshot(), before)
    return {"calls": {k: v for k, v in delta["calls"].items() if k not in ("commit", "run_transaction")},
            "docs_read": delta["docs_read"]}


def test_starting_a_run_reads_as_much_with_500_ledger_entries_as_with_none(store: DocStore,
                                                                           client: FlaskClient) -> None:
    counted = InstrumentedStore(store)
    # Every limit on: the request counter, the active-run slot and the daily tokens are all read.
    rt = Runtime(make_settings(limit_requests_per_minute=1000, limit_active_runs=5, limit_daily_tokens=1_000_000),
                 store=counted, model=FunctionModel(lambda r: text_turn("hi")), authenticator=LocalAuthenticator(),
                 dispatcher=RecordingDispatcher())
    rt.limits.clock = Clock(datetime.fromisoformat(f"{DAY}T12:00:00+00:00").timestamp())
    set_runtime(rt)
    try:
        _start_reads(client, counted)  # the first start creates the user's limit documents
        empty = _start_reads(client, counted)  # nothing in the ledger of DAY
        assert rt.usage.tokens_on("alice", DAY) == 0
        _fill_ledger(store)
        assert rt.usage.tokens_on("alice", DAY) == ENTRIES * TOKENS_EACH
        full = _start_reads(client, counted)
    finally:
        set_runtime(None)
    assert full == empty, (empty, full)
    # The daily limit reads one counter document, never the ledger (no aggregation query either).
    assert empty["docs_read"].get("usageDays") == 1
    assert "usage" not in empty["docs_read"] and "sum_of" not in empty["calls"]
    assert sum(empty["docs_read"].values()) <= 20, empty


def test_the_day_counter_is_the_sum_of_the_days_entries(store: DocStore, client: FlaskClient) -> None:
    rt = Runtime(make_settings(limit_daily_tokens=1_000_000), store=store,
                 model=FunctionModel(lambda r: text_turn("hello there")), authenticator=LocalAuthenticator(),
                 dispatcher=RecordingDispatcher())
    set_runtime(rt)
    try:
        for _ in range(3):
            assert client.post("/api/agent/run", json={"prompt": "hi"}, headers=ALICE).status_code == 200
    finally:
        set_runtime(None)
    entries = rt.usage.between("alice", 0, 1e12)
    assert len(entries) == 3 and len({e.day for e in entries}) in (1, 2)  # (a run across midnight UTC)
    for day in {e.day for e in entries}:
        total = sum(e.usage.total_tokens for e in entries if e.day == day)
        assert total > 0 and rt.usage.tokens_on("alice", day) == total
