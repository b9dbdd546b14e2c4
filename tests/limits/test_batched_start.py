"""A start reads the documents of its limit checks and the user's profile in one round trip
(``BatchedReads``, issue 33), without weakening the checks those reads feed: a slot taken after
the batch was read still refuses, the daily-token limit still refuses, and a failed batched read
falls back to reading each document on its own."""

from __future__ import annotations

from flask.testing import FlaskClient

from bench.growth import ledger_writes
from shared.state.docstore import DocStore
from tests.limits.conftest import ALICE, DAY, MakeWrapped
from tests.limits.support import refused, snapshot


def test_a_slot_taken_after_the_batched_read_still_refuses_the_start(make_wrapped: MakeWrapped, store: DocStore,
                                                                     client: FlaskClient) -> None:
    rt, wrapped = make_wrapped(limit_active_runs=1, limit_daily_tokens=1_000_000)
    # A rival start of alice reserves the only slot between the batch and this start's reservation.
    wrapped.hook = lambda: rt.limits.slot("alice", "runs").reserve("run_rival")  # type: ignore[union-attr]
    before = snapshot(store, "alice")
    resp = client.post("/api/agent/run", json={"prompt": "hi"}, headers=ALICE)
    refused(client, resp, "TOO_MANY_ACTIVE_RUNS", path="/api/agent/run", method="post")
    assert snapshot(store, "alice") == before
    # The batch did hold the slot document (its stale token failed the reservation's write).
    assert wrapped.batches == [["users/alice", "users/alice/stamps/config", f"users/alice/usageDays/{DAY}",
                                "users/alice/limits/runs"]]


def test_the_daily_token_limit_still_refuses_with_the_batched_read(make_wrapped: MakeWrapped, store: DocStore,
                                                                   client: FlaskClient) -> None:
    _, wrapped = make_wrapped(limit_daily_tokens=100)
    for batch in ledger_writes("alice", DAY, 10, tokens_each=10):
        store.commit(batch)
    before = snapshot(store, "alice")
    resp = client.post("/api/agent/run", json={"prompt": "hi"}, headers=ALICE)
    refused(client, resp, "DAILY_TOKEN_LIMIT", path="/api/agent/run", method="post")
    assert snapshot(store, "alice") == before
    assert wrapped.batches == [["users/alice", "users/alice/stamps/config", f"users/alice/usageDays/{DAY}"]]


def test_a_failed_batched_read_falls_back_to_reading_each_document(make_wrapped: MakeWrapped,
                                                                   client: FlaskClient) -> None:
    _, wrapped = make_wrapped(limit_active_runs=1, limit_daily_tokens=1_000_000)
    wrapped.fail = True
    resp = client.post("/api/agent/run", json={"prompt": "hi"}, headers=ALICE)
    assert resp.status_code == 200, resp.get_json()
    assert resp.get_json()["status"] == "completed"
    assert len(wrapped.batches) == 1  # tried once; then each read on its own
    # The slot was reserved and released as without the batch: a second run gets the one slot.
    assert client.post("/api/agent/run", json={"prompt": "again"}, headers=ALICE).status_code == 200
